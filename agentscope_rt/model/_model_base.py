"""The chat model interface every provider implements.

A call is ``await model(messages, tools=None, tool_choice=None, structured_model=None, **kw)``
where *messages* are the provider-shaped dicts a formatter produced. Without streaming it
returns one :class:`ChatResponse`; with streaming it returns an async generator of cumulative
chunks. Close a stream you stop early (``async with contextlib.aclosing(stream)``) — under trio
an unclosed async generator is only finalised by the garbage collector; every provider here
closes its HTTP response when the generator is closed or cancelled.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator
from typing import Any, Literal

from .. import _intercept
from .._provider import TokenCounterBase
from .._schema import StructuredModel
from ._model_response import ChatResponse

__all__ = ["ChatModelBase", "ToolChoice", "validate_tool_choice"]

ToolChoice = Literal["auto", "none", "required"] | str


def validate_tool_choice(tool_choice: str | None, tools: list[dict[str, Any]] | None) -> None:
    """Check *tool_choice* against the offered *tools* (OpenAI function-schema dicts).

    :raises ValueError: for an unknown mode or a tool name that is not offered.
    """
    if tool_choice is None or tool_choice in ("auto", "none", "required"):
        return
    if not isinstance(tool_choice, str):
        raise TypeError(f"tool_choice must be a string, not {type(tool_choice).__name__}")
    names = [t.get("function", {}).get("name") for t in tools or []]
    if tool_choice not in names:
        raise ValueError(
            f"tool_choice {tool_choice!r} is neither 'auto', 'none', 'required' nor the name of "
            f"an offered tool (offered: {names})"
        )


class ChatModelBase(_intercept.Routed, ABC):
    """Base class of chat models.

    :param model_name: the provider's model name.
    :param stream: whether calls return an async generator of cumulative chunks.
    """

    model_name: str
    stream: bool

    def __init__(self, model_name: str, stream: bool) -> None:
        self.model_name = model_name
        self.stream = stream

    @abstractmethod
    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        structured_model: StructuredModel | None = None,
        **generate_kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Call the model.

        :param messages: provider-shaped messages, as produced by the matching formatter.
        :param tools: tool JSON schemas in OpenAI's function format
            (``{"type": "function", "function": {...}}``); providers convert as needed.
        :param tool_choice: ``"auto"``, ``"none"``, ``"required"`` or a tool name.
        :param structured_model: a pydantic model class, attrs class or JSON schema; the
            validated object is returned in ``ChatResponse.metadata``.
        :raises ModelAPIError: when the provider fails after all retries.
        """

    @property
    def context_window(self) -> int | None:
        """The model's context window in tokens, when the model knows it (a local model);
        ``None`` when it does not (a provider's model: the provider enforces its own)."""
        return None

    def prompt_budget(self) -> tuple[TokenCounterBase, int] | None:
        """How to keep a prompt within :attr:`context_window`: a token counter that counts
        formatted messages (and tools) as this model sees them, and the most prompt tokens
        that leave room for the answer; ``None`` when the model does not know its window.

        ``ReActAgent`` gives it to a formatter that has no budget of its own
        (:meth:`~agentscope_rt.formatter.TruncatedFormatterBase.format_within`), so the oldest
        turns are dropped instead of the model failing on a prompt that does not fit.
        """
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_name={self.model_name!r}, stream={self.stream!r})"


# Every call of these goes through its route (see agentscope_rt._intercept).
_intercept.declare(ChatModelBase, "__call__", "chat")
