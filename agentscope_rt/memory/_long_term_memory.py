"""The long-term memory interface the ReAct agent talks to, and how each mode uses it.

A long-term memory outlives a conversation: facts about a user recorded in one reply (or one
process) are recalled in a later one. :class:`~agentscope_rt.agent.ReActAgent` uses it in one of
three ``long_term_memory_mode``\\ s:

* ``"static_control"``: the agent calls :meth:`LongTermMemoryBase.retrieve` with the input at
  the start of each reply (a non-empty answer is added to memory as a ``<long_term_memory>``
  message) and :meth:`LongTermMemoryBase.record` with the uncompressed memory at the end;
* ``"agent_control"``: :meth:`~LongTermMemoryBase.record_to_memory` and
  :meth:`~LongTermMemoryBase.retrieve_from_memory` are registered as tools the model may call;
* ``"both"`` (the default): both of the above.

As in AgentScope, every method raises ``NotImplementedError`` unless overridden, so a memory
may implement only what its mode needs. Unlike AgentScope, the agent checks that when it is
built (:func:`check_long_term_memory_mode`): a memory without ``record``/``retrieve`` under
the default mode is a ``TypeError`` naming them, not a failure of every reply.

Two memories come with the package: :class:`~agentscope_rt.memory.VectorLongTermMemory`
(offline, on an embedding model and a vector store) and
:class:`~agentscope_rt.memory.Mem0LongTermMemory` (the mem0 library).
"""

from __future__ import annotations

from typing import Any

from ..message import Msg
from ..module import StateModule
from ..tool import ToolResponse

__all__ = ["LongTermMemoryBase"]

# What each mode calls on the memory.
_STATIC_METHODS = ("record", "retrieve")
_TOOL_METHODS = ("record_to_memory", "retrieve_from_memory")
_MODE_METHODS: dict[str, tuple[str, ...]] = {
    "static_control": _STATIC_METHODS,
    "agent_control": _TOOL_METHODS,
    "both": _STATIC_METHODS + _TOOL_METHODS,
}


def query_texts(msg: Msg | list[Msg] | None) -> list[str]:
    """The non-empty texts of *msg* (one message, a list of them, or ``None`` for none): what
    a long-term memory searches for.

    :raises TypeError: for something that is not a ``Msg`` or a list of them.
    """
    if msg is None:
        return []
    msgs = [msg] if isinstance(msg, Msg) else msg
    if not isinstance(msgs, list) or not all(isinstance(m, Msg) for m in msgs):
        raise TypeError("The input message must be a Msg or a list of Msg objects.")
    return [t for t in (m.get_text_content() for m in msgs) if t]


class LongTermMemoryBase(StateModule):
    """Base class of long-term memories (a time-ordered store that outlives a conversation).

    :meth:`record` and :meth:`retrieve` are for the agent's static control (and for
    developers); the two tool methods are what the model calls under agent control, and their
    docstrings become the tool descriptions, so keep the ``Args`` sections when overriding.
    Each method raises ``NotImplementedError`` unless a subclass implements it: implement the
    ones your ``long_term_memory_mode`` uses (see :func:`check_long_term_memory_mode`).
    """

    async def record(self, msgs: list[Msg | None], **kwargs: Any) -> Any:
        """Record what is worth keeping from *msgs* (``None`` items are skipped).

        The ReAct agent calls it at the end of each reply under ``"static_control"`` and
        ``"both"``, with the whole uncompressed memory.

        :raises NotImplementedError: unless a subclass implements it.
        """
        raise NotImplementedError("The `record` method is not implemented. ")

    async def retrieve(self, msg: Msg | list[Msg] | None, limit: int = 5, **kwargs: Any) -> str:
        """Text recalled for *msg*, or ``""`` when nothing is relevant.

        The ReAct agent calls it with the input at the start of each reply under
        ``"static_control"`` and ``"both"``, and shows a non-empty answer to the model.

        :raises NotImplementedError: unless a subclass implements it.
        """
        raise NotImplementedError("The `retrieve` method is not implemented. ")

    async def record_to_memory(
        self,
        thinking: str,
        content: list[str],
        **kwargs: Any,
    ) -> ToolResponse:
        """Use this function to record important information that you may
        need later. The target content should be specific and concise, e.g.
        who, when, where, do what, why, how, etc.

        Args:
            thinking (`str`):
                Your thinking and reasoning about what to record
            content (`list[str]`):
                The content to remember, which is a list of strings.
        """
        raise NotImplementedError(
            "The `record_to_memory` method is not implemented. "
            "You can implement it in your own long-term memory class."
        )

    async def retrieve_from_memory(
        self,
        keywords: list[str],
        limit: int = 5,
        **kwargs: Any,
    ) -> ToolResponse:
        """Retrieve the memory based on the given keywords.

        Args:
            keywords (`list[str]`):
                The keywords to search for in the memory, which should be
                specific and concise, e.g. the person's name, the date, the
                location, etc.
            limit (`int`, optional):
                The maximum number of memories to retrieve per search, i.e.,
                the number of memories to retrieve for each keyword. Defaults
                to 5.
        """
        raise NotImplementedError(
            "The `retrieve_from_memory` method is not implemented. "
            "You can implement it in your own long-term memory class."
        )


def _missing_methods(memory: LongTermMemoryBase, names: tuple[str, ...]) -> list[str]:
    cls = type(memory)
    return [name for name in names if getattr(cls, name) is getattr(LongTermMemoryBase, name)]


def check_long_term_memory_mode(memory: LongTermMemoryBase, mode: str) -> None:
    """Check that *memory* implements every method *mode* calls.

    ``"static_control"`` calls ``record`` and ``retrieve``; ``"agent_control"`` registers
    ``record_to_memory`` and ``retrieve_from_memory`` as tools; ``"both"`` needs all four.
    A method counts as implemented when the memory's class overrides the base class's.

    :raises ValueError: for an unknown *mode*.
    :raises TypeError: naming the missing methods, the mode, and the mode that would work.
    """
    if mode not in _MODE_METHODS:
        raise ValueError(
            f"long_term_memory_mode must be one of {', '.join(_MODE_METHODS)}, not {mode!r}"
        )
    missing = _missing_methods(memory, _MODE_METHODS[mode])
    if not missing:
        return
    name = type(memory).__name__
    hint = ""
    if mode == "both":
        if not _missing_methods(memory, _TOOL_METHODS):
            hint = "; pass long_term_memory_mode='agent_control' to use only its tools"
        elif not _missing_methods(memory, _STATIC_METHODS):
            hint = (
                "; pass long_term_memory_mode='static_control' to retrieve and record around "
                "each reply without tools"
            )
    raise TypeError(
        f"{name} does not implement {', '.join(missing)}, which long_term_memory_mode="
        f"{mode!r} calls: implement {'it' if len(missing) == 1 else 'them'} in {name}{hint}"
    )
