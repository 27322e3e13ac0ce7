"""Test doubles: chat models whose answers are decided by the test, not by a provider.

Use them to test agents, tools and pipelines deterministically and offline:

* :class:`ScriptedChatModel` replays a list of responses, one per call, and records every
  call in :attr:`~ScriptedChatModel.calls`.
* :class:`FunctionChatModel` asks a function ``fn(messages, tools)`` (sync or async) for each
  response.

A response may be given as a :class:`ChatResponse`, a string (one text block), or a list of
blocks (attrs blocks or AgentScope-style dicts). The helpers :func:`tool_call`,
:func:`thinking`, :func:`text` and :func:`reply` build them tersely::

    model = ScriptedChatModel([
        reply(thinking("Look it up."), tool_call("get_weather", {"city": "Paris"})),
        "It is sunny in Paris.",
    ])

With ``stream=True`` each call returns an async generator of cumulative chunks: text and
thinking are revealed in a few pieces, tool calls whole; the last chunk has ``is_last=True``.
With a ``structured_model`` the response's ``metadata`` (or, failing that, its text parsed as
JSON, or the input of its first tool call) is validated and returned in ``metadata``.

Both doubles are free of sleeps and copies: a scripted :class:`ChatResponse` is returned as
the very object the test supplied (its ``usage`` filled in when it has none; a structured call
returns a new response carrying the validated ``metadata``), and the recorded ``messages`` are
the caller's list.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from typing import Any

import attrs

from .._schema import StructuredModel
from ..exception import ModelError
from ..message import BLOCK_TYPES, TextBlock, ThinkingBlock, ToolUseBlock
from ..message.serde import structure
from ._common import parse_tool_input, validated_metadata
from ._model_base import ChatModelBase, ToolChoice, validate_tool_choice
from ._model_response import ChatResponse, ChatUsage, ResponseBlock

__all__ = [
    "FunctionChatModel",
    "ModelCall",
    "ScriptExhaustedError",
    "ScriptItem",
    "ScriptedChatModel",
    "reply",
    "text",
    "thinking",
    "tool_call",
]

ScriptItem = ChatResponse | str | Sequence[ResponseBlock | dict[str, Any]]
"""What a double may answer: a response, a text, or a list of blocks."""

STREAM_PIECES = 3
"""Into how many cumulative chunks a streamed text or thinking block is split."""


class ScriptExhaustedError(ModelError, LookupError):
    """A :class:`ScriptedChatModel` was called more often than it has responses."""


@attrs.define(slots=True)
class ModelCall:
    """One recorded call of a test double (arguments as passed, not copied)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    tool_choice: ToolChoice | None
    structured_model: StructuredModel | None
    kwargs: dict[str, Any]

    @property
    def tool_names(self) -> list[str]:
        """Names of the offered tools, in order."""
        return [t.get("function", {}).get("name", "") for t in self.tools or []]


_counter = 0


def _next_id(prefix: str) -> str:
    global _counter
    _counter += 1
    return f"{prefix}_{_counter}"


def tool_call(
    name: str, input: dict[str, Any] | None = None, *, id: str | None = None
) -> ToolUseBlock:
    """A tool-use block calling *name* with *input* (a fresh id unless given)."""
    return ToolUseBlock(id or _next_id("call"), name, dict(input or {}))


def thinking(content: str) -> ThinkingBlock:
    """A thinking block."""
    return ThinkingBlock(content)


def text(content: str) -> TextBlock:
    """A text block."""
    return TextBlock(content)


def reply(
    *blocks: ResponseBlock | str,
    metadata: dict[str, Any] | None = None,
    usage: ChatUsage | None = None,
) -> ChatResponse:
    """A response made of *blocks* (strings become text blocks).

    :param metadata: structured output to return (validated when the call asks for it).
    :param usage: the usage to report; defaults to zero tokens.
    """
    content: list[ResponseBlock] = [TextBlock(b) if isinstance(b, str) else b for b in blocks]
    return ChatResponse(content, metadata=metadata, usage=usage)


def _as_response(item: Any, source: str) -> ChatResponse:
    if isinstance(item, ChatResponse):
        return item
    if isinstance(item, str):
        return ChatResponse([TextBlock(item)])
    if isinstance(item, (TextBlock, ThinkingBlock, ToolUseBlock)):
        # One block is a response of one block: `[tool_call(...), "done"]` reads naturally.
        return ChatResponse([item])
    if isinstance(item, (list, tuple)):
        blocks: list[ResponseBlock] = []
        for index, block in enumerate(item):
            if isinstance(block, (TextBlock, ThinkingBlock, ToolUseBlock)):
                blocks.append(block)
            elif isinstance(block, str):
                blocks.append(TextBlock(block))
            elif isinstance(block, dict) and block.get("type") in (
                "text",
                "thinking",
                "tool_use",
            ):
                blocks.append(structure(block, BLOCK_TYPES[block["type"]]))
            else:
                raise TypeError(
                    f"{source}: block {index} must be a text, thinking or tool_use block "
                    f"(attrs block or dict), got {block!r}"
                )
        return ChatResponse(blocks)
    raise TypeError(
        f"{source} must be a ChatResponse, a str, a block or a list of blocks, "
        f"got {type(item).__name__}"
    )


def _structured(response: ChatResponse, model: StructuredModel, source: str) -> ChatResponse:
    if response.metadata is not None:
        data: Any = response.metadata
    else:
        content = response.get_text()
        calls = response.tool_calls
        if content.strip():
            parsed, raw = parse_tool_input(content)
            data = parsed if raw is None else content
        elif calls:
            data = calls[0].input if calls[0].raw_input is None else calls[0].raw_input
        else:
            raise ModelError(
                f"{source} has no structured output: give it metadata=..., JSON text or a tool call"
            )
    metadata = validated_metadata(model, data, source)
    return ChatResponse(
        response.content,
        id=response.id,
        created_at=response.created_at,
        usage=response.usage,
        metadata=metadata,
    )


def _pieces(value: str) -> list[str]:
    """Cumulative prefixes of *value*, at most :data:`STREAM_PIECES`, ending with *value*."""
    if len(value) <= 1:
        return [value]
    step = max(1, -(-len(value) // STREAM_PIECES))
    cuts = list(range(step, len(value), step))
    return [value[:cut] for cut in cuts] + [value]


async def _stream(response: ChatResponse, start: float) -> AsyncGenerator[ChatResponse, None]:
    done: list[ResponseBlock] = []
    for block in response.content:
        if isinstance(block, (TextBlock, ThinkingBlock)):
            field = block.text if isinstance(block, TextBlock) else block.thinking
            kind = type(block)
            for prefix in _pieces(field)[:-1]:
                yield ChatResponse(
                    [*done, kind(prefix)],
                    id=response.id,
                    created_at=response.created_at,
                    stream=True,
                    is_last=False,
                )
        done.append(block)
        yield ChatResponse(
            list(done),
            id=response.id,
            created_at=response.created_at,
            stream=True,
            is_last=False,
        )
    usage = response.usage or ChatUsage(time=time.perf_counter() - start)
    yield ChatResponse(
        list(done),
        id=response.id,
        created_at=response.created_at,
        stream=True,
        is_last=True,
        usage=usage,
        metadata=response.metadata,
    )


class _DoubleBase(ChatModelBase):
    calls: list[ModelCall]

    def __init__(self, model_name: str, stream: bool) -> None:
        super().__init__(model_name, stream)
        self.calls = []

    def _finish(
        self,
        item: Any,
        structured_model: StructuredModel | None,
        source: str,
        start: float,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        response = _as_response(item, source)
        if structured_model is not None:
            response = _structured(response, structured_model, source)
        if self.stream:
            return _stream(response, start)
        if response.usage is None:
            response.usage = ChatUsage(time=time.perf_counter() - start)
        return response

    def _record(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        kwargs: dict[str, Any],
    ) -> None:
        if tool_choice is not None and structured_model is None:
            validate_tool_choice(tool_choice, tools)
        self.calls.append(ModelCall(messages, tools, tool_choice, structured_model, kwargs))


class ScriptedChatModel(_DoubleBase):
    """A chat model that replays *responses*, one per call, in order.

    :param responses: what to answer; each a :class:`ChatResponse`, a string or a list of
        blocks (see :func:`reply`, :func:`tool_call`, :func:`thinking`).
    :param stream: return async generators of cumulative chunks instead of responses.
    :param model_name: reported as :attr:`model_name`.
    :raises TypeError: (at call time) for a script item of an unsupported kind, naming its
        position.
    """

    def __init__(
        self,
        responses: Iterable[ScriptItem],
        stream: bool = False,
        model_name: str = "scripted",
    ) -> None:
        super().__init__(model_name, stream)
        self.responses: list[ScriptItem] = list(responses)
        self._position = 0

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been used yet."""
        return len(self.responses) - self._position

    def add(self, *responses: ScriptItem) -> None:
        """Append more responses to the script."""
        self.responses.extend(responses)

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        structured_model: StructuredModel | None = None,
        **generate_kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Record the call and answer with the next scripted response.

        :raises ScriptExhaustedError: when every response has been used.
        :raises ValueError: for a tool_choice that names no offered tool.
        :raises ModelResponseError: when structured output does not validate.
        """
        start = time.perf_counter()
        self._record(messages, tools, tool_choice, structured_model, generate_kwargs)
        position = self._position
        if position >= len(self.responses):
            raise ScriptExhaustedError(
                f"ScriptedChatModel has only {len(self.responses)} response(s) but was called "
                f"{len(self.calls)} times; add more responses to the script (last messages: "
                f"{_summary(messages)})"
            )
        self._position = position + 1
        return self._finish(
            self.responses[position],
            structured_model,
            f"scripted response {position}",
            start,
        )


def _summary(messages: list[dict[str, Any]]) -> str:
    tail = messages[-2:] if isinstance(messages, list) else messages
    shown = json.dumps(tail, ensure_ascii=False, default=str)
    return shown if len(shown) <= 300 else shown[:300] + "..."


ResponseFunction = Callable[
    [list[dict[str, Any]], list[dict[str, Any]] | None],
    ScriptItem | Awaitable[ScriptItem],
]


class FunctionChatModel(_DoubleBase):
    """A chat model whose responses come from ``fn(messages, tools)``.

    :param fn: a sync or async function returning a :class:`ChatResponse`, a string or a list
        of blocks. It receives the formatted messages and the offered tool schemas.
    :param stream: return async generators of cumulative chunks instead of responses.
    :param model_name: reported as :attr:`model_name`.
    :raises TypeError: if *fn* is not callable.
    """

    def __init__(
        self, fn: ResponseFunction, stream: bool = False, model_name: str = "function"
    ) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionChatModel needs a callable, got {fn!r}")
        super().__init__(model_name, stream)
        self.fn = fn
        # Decided once here so calls need no introspection.
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004
        )

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        structured_model: StructuredModel | None = None,
        **generate_kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Record the call and answer with what ``fn(messages, tools)`` returns.

        :raises TypeError: when *fn* returns something that is not a response.
        :raises ValueError: for a tool_choice that names no offered tool.
        :raises ModelResponseError: when structured output does not validate.
        """
        start = time.perf_counter()
        self._record(messages, tools, tool_choice, structured_model, generate_kwargs)
        result = self.fn(messages, tools)
        if self._is_async or inspect.isawaitable(result):
            result = await result  # type: ignore[misc]
        return self._finish(result, structured_model, "FunctionChatModel's function", start)
