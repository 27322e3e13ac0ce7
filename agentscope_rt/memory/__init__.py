"""Memory: the short-term message store every agent keeps, and the long-term interface.

:class:`InMemoryMemory` is the default short-term memory (messages with string marks and an
optional compressed summary); :class:`MemoryBase` is what other storages implement.
:class:`AsyncSQLAlchemyMemory` (SQLite, PostgreSQL, ...) and :class:`RedisMemory` keep the same
messages and marks outside the process, in AgentScope's tables and keys.
:class:`LongTermMemoryBase` is the interface a long-term memory offers the ReAct agent;
:class:`VectorLongTermMemory` keeps facts per user in a vector store (offline by default) and
:class:`Mem0LongTermMemory` adapts the mem0 library; :func:`check_long_term_memory_mode` tells
whether a long-term memory implements what an agent's ``long_term_memory_mode`` calls.
"""

from ._in_memory_memory import INDEX_FROM, InMemoryMemory
from ._long_term_memory import LongTermMemoryBase, check_long_term_memory_mode
from ._mem0_long_term_memory import Mem0LongTermMemory
from ._memory_base import MemoryBase, MemoryMark, check_storable

# These two import SQLAlchemy / redis only when a memory is built, so importing this package
# stays cheap and works without the optional extras.
from ._redis_memory import RedisMemory
from ._sqlalchemy_memory import AsyncSQLAlchemyMemory

# Imports the embedding models and stores only when built.
from ._vector_long_term_memory import VectorLongTermMemory

__all__ = [
    "INDEX_FROM",
    "AsyncSQLAlchemyMemory",
    "InMemoryMemory",
    "LongTermMemoryBase",
    "Mem0LongTermMemory",
    "MemoryBase",
    "MemoryMark",
    "RedisMemory",
    "VectorLongTermMemory",
    "check_long_term_memory_mode",
    "check_storable",
]
