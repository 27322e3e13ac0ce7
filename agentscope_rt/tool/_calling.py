"""One tool call: the stream of its chunks, the checks before it runs, and middleware.

:meth:`Toolkit.call_tool_function` is the one route every call takes (the agent's too): it
returns a :class:`ToolResponseStream`. Without middleware that is a :class:`CallStream`, which
awaits a coroutine tool (the common case) right in its first ``__anext__``; any other tool
runs through :func:`~._execution.execute_tool`. The contract (failures as final chunks,
timeouts, interrupts) is stated in the toolkit's module documentation.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, Self

import anyio
import jsonschema

from .._json import MAX_TOOL_INPUT_DEPTH, tool_input_problem
from ..exception import MCPError
from ..message import ToolUseBlock
from ._execution import (
    execute_tool,
    failure_response,
    interrupted_response,
    text_response,
    timeout_text,
)
from ._response import ToolResponse
from ._types import RegisteredToolFunction, ToolKind

if TYPE_CHECKING:
    from ._toolkit import Toolkit

__all__ = [
    "MCP_ERROR_PREFIX",
    "CallStream",
    "Middleware",
    "ToolResponseStream",
    "through_middlewares",
]


MCP_ERROR_PREFIX = "Error occurred when calling MCP tool: "
"""How the model sees an MCP tool call that failed with an MCPError (AgentScope's text)."""

Middleware = Callable[..., AsyncGenerator[ToolResponse, None] | Awaitable[Any]]
"""``middleware(kwargs, next_handler)``: an async generator of ToolResponse chunks.

``kwargs`` holds ``tool_call``; ``await next_handler(**kwargs)`` returns the inner stream."""


class ToolResponseStream:
    """The chunks of one tool call: iterate with ``async for``; awaiting returns itself.

    Awaiting is supported so that AgentScope code (``async for c in await tk.call_tool_
    function(tc)``) and middlewares (``await next_handler(**kwargs)``) work unchanged.
    """

    __slots__ = ("_agen",)

    def __init__(self, agen: AsyncGenerator[ToolResponse, None]) -> None:
        self._agen = agen

    def __await__(self) -> Generator[Any, None, ToolResponse | Self]:
        return self
        yield  # makes this a generator; awaiting never suspends

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> ToolResponse:
        return await self._agen.__anext__()

    async def aclose(self) -> None:
        """Stop the call early (the tool is cancelled and its generator closed)."""
        await self._agen.aclose()


class CallStream(ToolResponseStream):
    """The chunks of one call, without middleware.

    A coroutine tool with no postprocess function — the common case — is awaited right in
    the first ``__anext__``: no generator layers, and a cancel scope only when a timeout is
    set. Any other tool runs through :func:`execute_tool`. Both follow the same contract (see
    the module doc): failures and timeouts become the final chunk, and a cancellation landing
    in the tool yields the ``is_interrupted`` chunk and is re-raised on the next iteration.
    """

    # ``_inner`` (not the base class's ``_agen``) holds the execute_tool stream, when used.
    __slots__ = ("_inner", "_pending", "_started", "_tool_call", "_toolkit")

    def __init__(self, toolkit: Toolkit, tool_call: ToolUseBlock) -> None:
        self._inner: AsyncGenerator[ToolResponse, None] | None = None
        self._toolkit = toolkit
        self._tool_call = tool_call
        self._started = False
        self._pending: BaseException | None = None

    def __anext__(self) -> Coroutine[Any, Any, ToolResponse]:
        # A plain method: the end of a call, and each chunk of a streaming tool, cost no
        # coroutine of their own (``async for`` takes StopAsyncIteration raised right here).
        agen = self._inner
        if agen is not None:
            return agen.__anext__()
        if self._started:
            pending = self._pending
            if pending is not None:
                self._pending = None
                raise pending
            raise StopAsyncIteration
        self._started = True
        return self._first()

    async def _first(self) -> ToolResponse:
        """The call's first chunk: the only one of a coroutine tool."""
        toolkit = self._toolkit
        tool_call = self._tool_call
        prepared = _prepare(toolkit, tool_call)
        if prepared.__class__ is ToolResponse:
            return prepared
        tool, kwargs = prepared  # type: ignore[misc]
        limit = tool.timeout if tool.timeout is not None else toolkit.timeout
        if tool.async_execution:
            return toolkit._background.start(toolkit._task_group, tool, kwargs, tool_call, limit)
        postprocess = tool.postprocess_func
        if tool.kind is ToolKind.INLINE and postprocess is None:
            # A quick sync function called right here: no checkpoint, so nothing to time out
            # or interrupt; what is not a response (a generator, an awaitable, a wrong type)
            # goes on through the general path, as if it had called the function itself.
            try:
                result = tool.original_func(**kwargs)
            except Exception as exc:
                return failure_response(exc)
            if isinstance(result, ToolResponse):
                return result
            agen = self._inner = execute_tool(tool, kwargs, tool_call, limit, initial=result)
            return await agen.__anext__()
        if tool.kind is not ToolKind.COROUTINE or (
            # MCP tools are awaited here even then, so their MCPError reads the same.
            postprocess is not None and tool.source != "mcp_server"
        ):
            agen = self._inner = execute_tool(tool, kwargs, tool_call, limit)
            return await agen.__anext__()
        deadline: float | None = None
        try:
            if limit is None:
                result = await tool.original_func(**kwargs)
            else:
                deadline = anyio.current_time() + limit
                with anyio.CancelScope(deadline=deadline) as scope:
                    result = await tool.original_func(**kwargs)
                if scope.cancelled_caught:
                    result = text_response(timeout_text(tool.name, limit), is_last=True)
        except anyio.get_cancelled_exc_class() as exc:
            # Landed in the tool: the interrupted chunk now, the cancellation next time.
            self._pending = exc
            return interrupted_response(None)
        except MCPError as exc:
            # AgentScope's wording for a failed MCP call (timeouts included).
            result = text_response(f"{MCP_ERROR_PREFIX}{exc}", is_last=True)
        except Exception as exc:
            result = failure_response(exc)
        if postprocess is None and isinstance(result, ToolResponse):
            return result
        # A coroutine that hands back a stream or another awaitable (or a wrong type): the
        # general path takes it from here, under the same deadline.
        agen = self._inner = execute_tool(
            tool, kwargs, tool_call, limit, initial=result, deadline=deadline
        )
        return await agen.__anext__()

    async def aclose(self) -> None:
        """Stop the call early (a streaming tool is cancelled and its generator closed)."""
        self._started = True
        self._pending = None
        agen = self._inner
        if agen is not None:
            await agen.aclose()


async def through_middlewares(
    toolkit: Toolkit, tool_call: ToolUseBlock
) -> AsyncGenerator[ToolResponse, None]:
    """The chunks of *tool_call* with every middleware of *toolkit* around it (the first
    registered outermost); every stream a layer opened is closed when the call ends."""
    # Every stream a layer opens, outermost first. A middleware's `async for` does not
    # close the inner stream when the call stops early, so they are all closed here.
    opened: list[Any] = []

    async def innermost(tool_call: ToolUseBlock) -> ToolResponseStream:
        stream = CallStream(toolkit, tool_call)
        opened.append(stream)
        return stream

    handler: Callable[..., Awaitable[Any]] = innermost
    for middleware in reversed(toolkit._middlewares):
        handler = _layer(middleware, handler, opened)
    try:
        stream = await handler(tool_call=tool_call)
        async for chunk in stream:
            yield chunk
    finally:
        for opened_stream in opened:
            await opened_stream.aclose()


def _layer(
    middleware: Middleware, inner: Callable[..., Awaitable[Any]], opened: list[Any]
) -> Callable[..., Awaitable[Any]]:
    async def handler(**kwargs: Any) -> Any:
        result = middleware(kwargs, inner)
        if inspect.isawaitable(result) and not hasattr(result, "__aiter__"):
            result = await result
        if hasattr(result, "aclose"):
            opened.append(result)
        return result

    return handler


def _prepare(
    toolkit: Toolkit, tool_call: ToolUseBlock
) -> ToolResponse | tuple[RegisteredToolFunction, dict[str, Any]]:
    """The tool and the arguments to call it with, or the chunk saying why it cannot run."""
    if tool_call.__class__ is ToolUseBlock:
        # Attribute reads: the mapping view (for dict-style callers) costs more.
        name = tool_call.name
        args: Any = tool_call.input or {}
        raw_input = tool_call.raw_input
    else:
        name = tool_call["name"]
        args = tool_call.get("input") or {}
        raw_input = tool_call.get("raw_input")
    tool = toolkit.tools.get(name)
    if tool is None:
        return text_response(f"FunctionNotFoundError: Cannot find the function named {name}")
    if tool.group != "basic" and not toolkit.groups[tool.group].active:
        return text_response(
            f"FunctionInactiveError: The function '{name}' is in the inactive group "
            f"'{tool.group}'. Activate the tool group by calling 'reset_equipped_tools' "
            "first to use this tool."
        )
    problem = _check_arguments(tool, args, raw_input)
    if problem is not None:
        return text_response(f"InvalidArgumentsError: Invalid arguments for '{name}': {problem}")
    presets = tool.preset_kwargs
    return tool, {**args, **presets} if presets else dict(args)


def _describe_validation_errors(validator: jsonschema.protocols.Validator, args: Any) -> str:
    parts = []
    for error in sorted(validator.iter_errors(args), key=lambda e: [str(p) for p in e.path]):
        path = ".".join(str(p) for p in error.path)
        if error.validator == "required" and not path:
            parts.append(error.message.replace("property", "argument"))
        elif path:
            parts.append(f"argument '{path}': {error.message}")
        else:
            parts.append(error.message)
    return "; ".join(parts)


def _raw_input_problem(raw_input: str) -> str:
    """What the model is told about arguments that were kept only as text: why they are not
    usable when they are JSON beyond the tool-input rule, else that they are not JSON."""
    problem: str | None = None
    try:
        value = json.loads(raw_input)
    except RecursionError:
        value = None
        problem = f"nested deeper than {MAX_TOOL_INPUT_DEPTH} levels"
    except ValueError:
        value = None
    if isinstance(value, dict):
        problem = tool_input_problem(value)
    if problem is not None:
        return f"the arguments are not kept: {problem}"
    return f"the arguments are not a valid JSON object: {raw_input[:200]!r}"


def _check_arguments(tool: RegisteredToolFunction, args: Any, raw_input: str | None) -> str | None:
    """A description of what is wrong with *args*, or ``None`` if they are fine."""
    if not isinstance(args, dict):
        return f"the arguments must be a JSON object, got {type(args).__name__}"
    if raw_input and not args:
        return _raw_input_problem(raw_input)
    accepted = tool.accepted_names
    if accepted is not None and not accepted.issuperset(args):
        unexpected = sorted(set(args) - accepted)
        allowed = ", ".join(sorted(accepted)) or "none"
        return f"unexpected argument(s) {unexpected} (accepted: {allowed})"
    quick_check = tool.quick_check
    if quick_check is not None and quick_check(args):
        return None
    # Invalid, or beyond what the quick check models: jsonschema decides and explains.
    if not tool.validator.is_valid(args):
        return _describe_validation_errors(tool.validator, args)
    return None
