"""Memory: the short-term message store every agent keeps, and the long-term interface.

:class:`InMemoryMemory` is the default short-term memory (messages with string marks and an
optional compressed summary); :class:`MemoryBase` is what other storages implement.
:class:`LongTermMemoryBase` is the interface a long-term memory offers the ReAct agent.
"""

from ._in_memory_memory import InMemoryMemory
from ._long_term_memory import LongTermMemoryBase
from ._memory_base import MemoryBase, MemoryMark

__all__ = ["InMemoryMemory", "LongTermMemoryBase", "MemoryBase", "MemoryMark"]
