"""The Toolkit: registering tool functions and calling them on behalf of a model.

Concurrency contract
--------------------
* ``call_tool_function(tool_call)`` returns an async iterator of :class:`ToolResponse` chunks
  (it may also be awaited first, as in AgentScope: ``async for c in await tk.call_tool_function(
  tc)``). Calls share no per-call state, so any number may run concurrently.
* Coroutine and async-generator tools run in the caller's task. Sync functions run in a worker
  thread (``anyio.to_thread.run_sync``), sync generators fetch each chunk in a worker thread,
  so a blocking tool never stalls other agents.
* Every failure is a final chunk the model can read, never an exception: unknown tool
  (``FunctionNotFoundError: ...``), inactive group (``FunctionInactiveError: ...``), invalid
  arguments (``InvalidArgumentsError: ...`` naming the argument), the tool raising
  (``Error: <Type>: <message>``) and timeouts (``TimeoutError: ...``). The one exception is a
  background tool (``async_execution=True``) called outside ``async with toolkit:`` — a
  programming error, raised as :class:`~agentscope_rt.exception.ToolError`.
* Timeouts (per tool, else per toolkit) bound the time spent inside the tool, from the start
  of the call; the tool is cancelled when it runs out.

Interrupts
----------
An interrupt is a cancellation of the caller's scope. Two cases, one rule for the consumer:

1. The cancellation lands while the tool is running (inside the iterator): the iterator
   yields one final chunk with ``is_interrupted=True`` — the output so far followed by
   ``<system-info>The tool call has been interrupted by the user.</system-info>`` — and
   re-raises the same cancellation on the next iteration.
2. The cancellation lands in the consumer's own code between chunks: the consumer gets the
   cancellation directly and builds the same final chunk with
   :meth:`Toolkit.interrupted_response` from the last chunk it received.

So a consumer that must record a result for every call writes::

    last = None
    try:
        async for chunk in toolkit.call_tool_function(tool_call):
            last = chunk
            ...                                   # may await
    except anyio.get_cancelled_exc_class():
        last = Toolkit.interrupted_response(last)  # returns `last` if already interrupted
        record(tool_call, last)                    # synchronously, or in a shielded scope
        raise

A sync tool's worker thread cannot be killed: on interrupt or timeout the call returns at
once with its final chunk, and the thread finishes in the background (its result is dropped).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import aclosing
from types import TracebackType
from typing import Any, Literal, Protocol, Self

import anyio
import attrs
import jsonschema

from .._json import MAX_TOOL_INPUT_DEPTH, tool_input_problem
from .._schema import StructuredModel, structured_model_schema
from ..exception import MCPError, StateError, ToolError, ToolGroupError, ToolRegistrationError
from ..message import ToolUseBlock
from ..module import StateModule
from ._execution import (
    execute_tool,
    failure_response,
    interrupted_response,
    text_response,
    timeout_text,
)
from ._function_schema import (
    arguments_validator,
    build_function_schema,
    normalize_parameters_schema,
)
from ._quick_check import compile_quick_check
from ._response import ToolResponse
from ._skill import (
    DEFAULT_AGENT_SKILL_INSTRUCTION,
    DEFAULT_AGENT_SKILL_TEMPLATE,
    AgentSkill,
    check_agent_skill_template,
    read_agent_skill,
)
from ._types import PostprocessFunc, RegisteredToolFunction, ToolGroup, ToolKind, tool_kind

__all__ = ["MCP_ERROR_PREFIX", "Middleware", "ToolResponseStream", "Toolkit"]

logger = logging.getLogger(__name__)

MCP_ERROR_PREFIX = "Error occurred when calling MCP tool: "
"""How the model sees an MCP tool call that failed with an MCPError (AgentScope's text)."""

NamesakeStrategy = Literal["override", "skip", "raise", "rename"]

Middleware = Callable[..., AsyncGenerator[ToolResponse, None] | Awaitable[Any]]
"""``middleware(kwargs, next_handler)``: an async generator of ToolResponse chunks.

``kwargs`` holds ``tool_call``; ``await next_handler(**kwargs)`` returns the inner stream."""


class MCPClientLike(Protocol):
    """What :meth:`Toolkit.register_mcp_client` needs from an MCP client."""

    name: str

    async def list_tools(self) -> list[Any]:
        """The server's tools (``mcp.types.Tool``)."""

    async def get_callable_function(
        self,
        func_name: str,
        wrap_tool_result: bool = True,
        execution_timeout: float | None = None,
    ) -> Any:
        """A callable with ``name``, ``description``, ``json_schema`` for *func_name*.

        The toolkit passes ``execution_timeout=`` only when one is given to
        :meth:`Toolkit.register_mcp_client`, so clients without that parameter still work.
        """


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

    @property
    def exhausted(self) -> bool:
        """Whether the stream is known to hold no more chunks: a caller that sees ``True``
        may stop iterating (the next ``__anext__`` would only raise ``StopAsyncIteration``).
        ``False`` means there may be more."""
        return False

    async def aclose(self) -> None:
        """Stop the call early (the tool is cancelled and its generator closed)."""
        await self._agen.aclose()


class _CallStream(ToolResponseStream):
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

    async def __anext__(self) -> ToolResponse:
        agen = self._inner
        if agen is not None:
            return await agen.__anext__()
        if self._started:
            pending = self._pending
            if pending is not None:
                self._pending = None
                raise pending
            raise StopAsyncIteration
        self._started = True
        try:
            outcome = await self._toolkit._run_call(self._tool_call)
        except anyio.get_cancelled_exc_class() as exc:
            # Landed in a coroutine tool (the general path handles its own).
            self._pending = exc
            return interrupted_response(None)
        if outcome.__class__ is ToolResponse or isinstance(outcome, ToolResponse):
            return outcome
        agen = self._inner = outcome
        return await agen.__anext__()

    @property
    def exhausted(self) -> bool:
        """True once a single-chunk call has given its chunk and has no cancellation left to
        re-raise."""
        return self._started and self._inner is None and self._pending is None

    async def aclose(self) -> None:
        """Stop the call early (a streaming tool is cancelled and its generator closed)."""
        self._started = True
        self._pending = None
        agen = self._inner
        if agen is not None:
            await agen.aclose()


@attrs.define(eq=False)
class _BackgroundTask:
    scope: anyio.CancelScope
    done: anyio.Event
    result: ToolResponse | None = None


def _function_name(func: Any) -> str:
    return str(getattr(func, "__name__", None) or type(func).__name__)


def _is_mcp_function(func: Any) -> bool:
    return (
        not inspect.isroutine(func)
        and not isinstance(func, functools.partial)
        and isinstance(getattr(func, "json_schema", None), dict)
        and isinstance(getattr(func, "name", None), str)
    )


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


class Toolkit(StateModule):
    """Tool functions in groups, their JSON schemas, and calling them.

    Use it as an async context manager (``async with Toolkit() as toolkit:``) when tools are
    registered with ``async_execution=True``: background calls run in a task group the
    toolkit owns and are cancelled when it closes. Otherwise no context is needed.

    Agent skills (:meth:`register_agent_skill`) are directories with a ``SKILL.md`` file;
    :meth:`get_agent_skill_prompt` describes them for the system prompt, which is how a
    :class:`~agentscope_rt.agent.ReActAgent` tells its model about them.

    :param agent_skill_instruction: the heading of the skills prompt (empty or ``None``:
        AgentScope's default text).
    :param agent_skill_template: how one skill is shown, a format string with ``{name}``,
        ``{description}`` and ``{dir}`` (empty or ``None``: AgentScope's default).
    :param timeout: default timeout in seconds for every tool call (``None``: no limit);
        a tool's own ``timeout`` takes precedence.
    :raises TypeError: if the instruction or template is not a string.
    :raises ValueError: if the template is not a valid format string or uses other
        placeholders, or *timeout* is not positive.
    """

    _DEFAULT_AGENT_SKILL_INSTRUCTION = DEFAULT_AGENT_SKILL_INSTRUCTION
    _DEFAULT_AGENT_SKILL_TEMPLATE = DEFAULT_AGENT_SKILL_TEMPLATE

    def __init__(
        self,
        agent_skill_instruction: str | None = None,
        agent_skill_template: str | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        super().__init__()
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if agent_skill_instruction is not None and not isinstance(agent_skill_instruction, str):
            raise TypeError(
                "agent_skill_instruction must be a string or None, not "
                f"{agent_skill_instruction!r} (the default tool timeout is the keyword "
                "argument timeout=)"
            )
        if agent_skill_template:
            check_agent_skill_template(agent_skill_template)
        self.tools: dict[str, RegisteredToolFunction] = {}
        self.groups: dict[str, ToolGroup] = {}
        self.skills: dict[str, AgentSkill] = {}
        self._agent_skill_instruction = (
            agent_skill_instruction or self._DEFAULT_AGENT_SKILL_INSTRUCTION
        )
        self._agent_skill_template = agent_skill_template or self._DEFAULT_AGENT_SKILL_TEMPLATE
        self.timeout = timeout
        self._middlewares: list[Middleware] = []
        self._groups_version = 0
        self._meta_schema_version = -1
        self._task_group: anyio.abc.TaskGroup | None = None
        self._background: dict[str, _BackgroundTask] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._task_group is not None:
            raise ToolError("this Toolkit is already open; enter `async with toolkit` once")
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        task_group, self._task_group = self._task_group, None
        if task_group is None:
            return None
        # Background calls end with the toolkit: they are cancelled, not awaited.
        task_group.cancel_scope.cancel()
        return await task_group.__aexit__(exc_type, exc, tb)

    # -- groups ------------------------------------------------------------------------------

    def create_tool_group(
        self,
        group_name: str,
        description: str,
        active: bool = False,
        notes: str | None = None,
    ) -> None:
        """Create a tool group; its tools are shown to the model only while it is active.

        :raises ToolGroupError: (a ValueError) if the group exists or is named "basic".
        """
        if group_name in self.groups or group_name == "basic":
            raise ToolGroupError(f"Tool group '{group_name}' is already registered in the toolkit.")
        self.groups[group_name] = ToolGroup(
            name=group_name, active=active, description=description, notes=notes
        )
        self._groups_version += 1

    def update_tool_groups(self, group_names: list[str], active: bool) -> None:
        """Activate or deactivate the named groups ("basic" is always active; unknown names
        are ignored, as in AgentScope)."""
        for group_name in group_names:
            group = self.groups.get(group_name)
            if group is not None:
                group.active = active

    def remove_tool_groups(self, group_names: str | list[str]) -> None:
        """Remove groups and every tool in them.

        :raises TypeError: if *group_names* is not a string or a list of strings.
        :raises ToolGroupError: if asked to remove "basic".
        """
        if isinstance(group_names, str):
            group_names = [group_names]
        if not isinstance(group_names, list) or not all(isinstance(g, str) for g in group_names):
            raise TypeError(f"group_names must be a list of strings, not {group_names!r}")
        if "basic" in group_names:
            raise ToolGroupError("Cannot remove the default 'basic' tool group.")
        for group_name in group_names:
            self.groups.pop(group_name, None)
        self.tools = {n: t for n, t in self.tools.items() if t.group not in group_names}
        self._groups_version += 1

    def get_activated_notes(self) -> str:
        """The notes of the active groups, for the system prompt."""
        return "\n".join(
            f"## About Tool Group '{name}'\n{group.notes}"
            for name, group in self.groups.items()
            if group.active and group.notes
        )

    def reset_equipped_tools(self, **kwargs: Any) -> ToolResponse:
        """This function allows you to activate or deactivate tool groups
        dynamically based on your current task requirements.
        **Important: Each call sets the absolute final state of ALL tool
        groups, not incremental changes**. Any group not explicitly set to True
        will be deactivated, regardless of its previous state.

        **Best practice**: Actively manage your tool groups——activate only
        what you need for the current task, and promptly deactivate groups as
        soon as they are no longer needed to conserve context space.

        The function will return the usage instructions for the activated tool
        groups, which you **MUST pay attention to and follow**. You can also
        reuse this function to check the notes of the tool groups."""
        for key, value in kwargs.items():
            if not isinstance(value, bool):
                return text_response(
                    f"Invalid arguments: the argument {key} should be a bool value, but got "
                    f"{type(value)}."
                )
        self.update_tool_groups(list(self.groups), active=False)
        to_activate = [key for key, value in kwargs.items() if value]
        self.update_tool_groups(to_activate, active=True)
        text = ""
        if to_activate:
            text += (
                "Now tool groups " + ", ".join(f"'{g}'" for g in to_activate) + " are activated."
            )
        notes = self.get_activated_notes()
        if notes:
            text += f" You MUST follow these notes to use these tools:\n<notes>{notes}</notes>"
        return text_response(text or "All tool groups are now deactivated currently.")

    # -- registration ------------------------------------------------------------------------

    def register_tool_function(
        self,
        tool_func: Callable[..., Any],
        group_name: str = "basic",
        preset_kwargs: dict[str, Any] | None = None,
        func_name: str | None = None,
        func_description: str | None = None,
        json_schema: dict[str, Any] | None = None,
        include_long_description: bool = True,
        include_var_positional: bool = False,
        include_var_keyword: bool = False,
        postprocess_func: PostprocessFunc | None = None,
        namesake_strategy: NamesakeStrategy = "raise",
        async_execution: bool = False,
        *,
        timeout: float | None = None,
    ) -> None:
        """Register a tool function (sync, async, sync or async generator, bound method,
        ``functools.partial``, or an MCP tool function).

        The JSON schema comes from the signature and docstring unless *json_schema* is given;
        preset kwargs (and ``partial`` arguments) are hidden from the model and always win over
        arguments the model sends.

        :param timeout: this tool's timeout in seconds (overrides the toolkit's).
        :raises ToolGroupError: (a ValueError) if *group_name* does not exist.
        :raises ToolRegistrationError: (a ValueError) for a name clash under
            ``namesake_strategy="raise"``, an invalid *json_schema*, or a parameter type with
            no JSON schema.
        """
        if group_name != "basic" and group_name not in self.groups:
            raise ToolGroupError(
                f"Tool group '{group_name}' not found; create it with create_tool_group() first."
            )
        if namesake_strategy not in ("override", "skip", "raise", "rename"):
            raise ToolRegistrationError(
                f"Invalid namesake_strategy: {namesake_strategy!r}. Supported strategies are "
                "'raise', 'override', 'skip' and 'rename'."
            )
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if json_schema is not None:
            _check_function_schema(json_schema)

        presets = dict(preset_kwargs or {})
        func: Any = tool_func
        mcp_name: str | None = None
        source: Literal["function", "mcp_server"] = "function"
        if _is_mcp_function(tool_func):
            input_name = str(tool_func.name)  # type: ignore[attr-defined]
            json_schema = json_schema or tool_func.json_schema  # type: ignore[attr-defined]
            mcp_name = getattr(tool_func, "mcp_name", None)
            source = "mcp_server"
        elif isinstance(tool_func, functools.partial):
            func = tool_func.func
            bound: dict[str, Any] = dict(tool_func.keywords)
            if tool_func.args:
                names = list(inspect.signature(func).parameters)
                bound.update(zip(names, tool_func.args, strict=False))
            presets = {**bound, **presets}
            input_name = _function_name(func)
        else:
            input_name = _function_name(func)

        name = func_name or input_name
        if json_schema is not None:
            schema = _schema_from_given(json_schema, name, presets)
            accepted: frozenset[str] | None = None
        else:
            schema = build_function_schema(
                func,
                name=name,
                skip=presets,
                include_long_description=include_long_description,
                include_var_positional=include_var_positional,
                include_var_keyword=include_var_keyword,
            )
            accepted = _accepted_names(func, presets, include_var_keyword)
        if func_description:
            schema["function"]["description"] = func_description

        parameters = schema["function"]["parameters"]
        try:
            # A validator in which a number is finite: Python's json reads NaN and Infinity.
            validator = arguments_validator(parameters)
        except jsonschema.SchemaError as exc:
            raise ToolRegistrationError(
                f"the parameters schema of tool {name!r} is not a valid JSON schema: {exc.message}"
            ) from None

        kind = tool_kind(func)
        if kind is ToolKind.SYNC and getattr(func, "__self__", None) is self:
            kind = ToolKind.INLINE  # the toolkit's own meta tool: quick, touches toolkit state
        registered = RegisteredToolFunction(
            name=name,
            group=group_name,
            source=source,
            original_func=func,
            json_schema=schema,
            kind=kind,
            validator=validator,
            quick_check=compile_quick_check(parameters),
            preset_kwargs=presets,
            accepted_names=accepted,
            original_name=input_name if func_name else None,
            mcp_name=mcp_name,
            postprocess_func=postprocess_func,
            async_execution=async_execution,
            timeout=timeout,
        )

        if name in self.tools:
            if namesake_strategy == "raise":
                raise ToolRegistrationError(
                    f"A function with name '{name}' is already registered in the toolkit; "
                    "pass func_name= or namesake_strategy='override'|'skip'|'rename'."
                )
            if namesake_strategy == "skip":
                return
            if namesake_strategy == "rename":
                new_name = name
                while new_name in self.tools:
                    new_name = f"{name}_{uuid.uuid4().hex[:5]}"
                registered.original_name = registered.original_name or name
                registered.name = new_name
                schema["function"]["name"] = new_name
                name = new_name
        self.tools[name] = registered
        if async_execution:
            self._register_task_tools()

    def _register_task_tools(self) -> None:
        for method in (self.view_task, self.wait_task, self.cancel_task):
            if method.__name__ not in self.tools:
                self.register_tool_function(method)

    def remove_tool_function(self, tool_name: str, allow_not_exist: bool = True) -> None:
        """Remove a tool function by name.

        :raises ToolRegistrationError: if it does not exist and *allow_not_exist* is false.
        """
        if tool_name not in self.tools and not allow_not_exist:
            raise ToolRegistrationError(
                f"Tool function '{tool_name}' does not exist in the toolkit."
            )
        self.tools.pop(tool_name, None)

    async def register_mcp_client(
        self,
        mcp_client: MCPClientLike,
        group_name: str = "basic",
        enable_funcs: list[str] | None = None,
        disable_funcs: list[str] | None = None,
        preset_kwargs_mapping: dict[str, dict[str, Any]] | None = None,
        postprocess_func: PostprocessFunc | None = None,
        namesake_strategy: NamesakeStrategy = "raise",
        execution_timeout: float | None = None,
    ) -> None:
        """Register the tools an MCP client's server offers (all, or a chosen subset).

        A call of such a tool that fails with an :class:`~agentscope_rt.exception.MCPError`
        (lost connection, protocol error, *execution_timeout* reached) gives the model
        ``Error occurred when calling MCP tool: <message>``, as in AgentScope.

        :param enable_funcs: register only these tools (``None``: all).
        :param disable_funcs: never register these tools.
        :param preset_kwargs_mapping: tool name → preset kwargs for that tool.
        :param execution_timeout: seconds each call of these tools may wait for the server's
            answer (``None``: no limit). When it runs out the call is cancelled (the server is
            told so) and the model reads ``Error occurred when calling MCP tool: Timed out
            while waiting for response to ClientRequest. Waited <seconds> seconds.``
        :raises ValueError: if *enable_funcs* and *disable_funcs* overlap, an enabled name
            is not offered by the server, or *execution_timeout* is not a positive number.
        :raises TypeError: for arguments of the wrong type.
        """
        if execution_timeout is not None and (
            isinstance(execution_timeout, bool)
            or not isinstance(execution_timeout, int | float)
            or not 0 < execution_timeout < float("inf")
        ):
            raise ValueError(
                "execution_timeout must be a positive number of seconds or None, got "
                f"{execution_timeout!r}"
            )
        for label, names in (("enable_funcs", enable_funcs), ("disable_funcs", disable_funcs)):
            if names is not None and (
                not isinstance(names, list) or not all(isinstance(n, str) for n in names)
            ):
                raise TypeError(f"{label} must be a list of strings or None, not {names!r}")
        if enable_funcs is not None and disable_funcs is not None:
            overlap = set(enable_funcs) & set(disable_funcs)
            if overlap:
                raise ValueError(
                    f"enable_funcs and disable_funcs must not overlap, both name {sorted(overlap)}"
                )
        if preset_kwargs_mapping is not None and not isinstance(preset_kwargs_mapping, dict):
            raise TypeError(
                f"preset_kwargs_mapping must be a dict or None, not {type(preset_kwargs_mapping)}"
            )
        if group_name != "basic" and group_name not in self.groups:
            raise ToolGroupError(
                f"Tool group '{group_name}' not found; create it with create_tool_group() first."
            )
        offered = [tool.name for tool in await mcp_client.list_tools()]
        if enable_funcs is not None:
            missing = sorted(set(enable_funcs) - set(offered))
            if missing:
                raise ValueError(
                    f"MCP server '{mcp_client.name}' offers no tool named {missing}; it offers "
                    f"{sorted(offered)}"
                )
        for tool_name in offered:
            if enable_funcs is not None and tool_name not in enable_funcs:
                continue
            if disable_funcs is not None and tool_name in disable_funcs:
                continue
            if execution_timeout is None:
                func = await mcp_client.get_callable_function(tool_name, wrap_tool_result=True)
            else:
                func = await mcp_client.get_callable_function(
                    tool_name, wrap_tool_result=True, execution_timeout=execution_timeout
                )
            self.register_tool_function(
                func,
                group_name=group_name,
                preset_kwargs=(preset_kwargs_mapping or {}).get(tool_name),
                postprocess_func=postprocess_func,
                namesake_strategy=namesake_strategy,
            )
            for candidate in self.tools.values():
                if candidate.original_func is func:
                    candidate.mcp_name = mcp_client.name

    async def remove_mcp_clients(self, client_names: str | list[str]) -> None:
        """Remove every tool registered from the named MCP clients.

        :raises TypeError: if *client_names* is not a string or a list of strings.
        """
        if isinstance(client_names, str):
            client_names = [client_names]
        if not isinstance(client_names, list) or not all(isinstance(n, str) for n in client_names):
            raise TypeError(f"client_names must be a list of strings, not {client_names!r}")
        self.tools = {n: t for n, t in self.tools.items() if t.mcp_name not in client_names}

    def clear(self) -> None:
        """Remove every tool function and group."""
        self.tools.clear()
        self.groups.clear()
        self._groups_version += 1

    # -- agent skills ------------------------------------------------------------------------

    def register_agent_skill(self, skill_dir: str | os.PathLike[str]) -> None:
        """Register the agent skill in *skill_dir*, read from its ``SKILL.md`` front matter.

        The directory must hold a ``SKILL.md`` file at its top level whose YAML front matter
        has non-empty ``name`` and ``description`` fields. Only that front matter is read;
        the agent reads the rest of the file when it uses the skill. On any error nothing is
        registered.

        :param skill_dir: the skill's directory (kept as given, and shown to the model).
        :raises TypeError: if *skill_dir* is not a string or path.
        :raises ToolRegistrationError: (a ValueError, as AgentScope raises) if the directory
            or its ``SKILL.md`` is missing, the front matter is malformed or lacks ``name`` or
            ``description``, or a skill with the same name is already registered.
        """
        skill = read_agent_skill(skill_dir)
        if skill.name in self.skills:
            raise ToolRegistrationError(
                f"An agent skill with name '{skill.name}' is already registered in the toolkit."
            )
        self.skills[skill.name] = skill
        logger.info("Registered agent skill '%s' from directory '%s'.", skill.name, skill.dir)

    def remove_agent_skill(self, name: str) -> None:
        """Remove the agent skill named *name* (a warning is logged if there is none)."""
        if self.skills.pop(name, None) is None:
            logger.warning("Agent skill '%s' not found in the toolkit, skipping removal.", name)

    def get_agent_skill_prompt(self) -> str | None:
        """The skills part of the system prompt, or ``None`` when no skill is registered.

        It is the instruction followed by the template filled in for each skill, in
        registration order, joined by newlines (AgentScope's format).
        """
        skills = self.skills
        if not skills:
            return None
        template = self._agent_skill_template
        return "\n".join(
            [
                self._agent_skill_instruction,
                *(
                    template.format(name=s.name, description=s.description, dir=s.dir)
                    for s in skills.values()
                ),
            ]
        )

    # -- schemas -----------------------------------------------------------------------------

    def get_json_schemas(self) -> list[dict[str, Any]]:
        """The OpenAI function schemas of the tools in "basic" and in active groups.

        The dicts are the toolkit's own (built at registration): do not modify them.
        """
        if (
            "reset_equipped_tools" in self.tools
            and self._meta_schema_version != self._groups_version
        ):
            self._meta_schema_version = self._groups_version
            self.set_extended_model(
                "reset_equipped_tools",
                {
                    "type": "object",
                    "properties": {
                        name: {"type": "boolean", "default": False, "description": g.description}
                        for name, g in self.groups.items()
                    },
                },
            )
        schemas = []
        for tool in self.tools.values():  # a loop: a comprehension is one more frame per call
            if tool.group == "basic" or self.groups[tool.group].active:
                schemas.append(tool.extended_json_schema)
        return schemas

    def set_extended_model(self, func_name: str, model: StructuredModel | None) -> None:
        """Extend a tool's schema with the fields of a structured model (``None`` removes it).

        :param model: a pydantic model class, an attrs class or an object JSON schema.
        :raises ValueError: if the tool does not exist or a field clashes with a parameter.
        :raises TypeError: if *model* is not a structured model.
        """
        tool = self.tools.get(func_name)
        if tool is None:
            raise ValueError(f"Tool function '{func_name}' not found in the toolkit.")
        if model is None:
            tool.extended_model = None
            tool.extended_json_schema = tool.json_schema
            tool.accepted_names = tool.base_accepted_names
            return
        extension = normalize_parameters_schema(structured_model_schema(model))
        merged = {**tool.json_schema, "function": dict(tool.json_schema["function"])}
        params = dict(merged["function"]["parameters"])
        properties = dict(params.get("properties", {}))
        required = list(params.get("required", []))
        for key, value in extension.get("properties", {}).items():
            if key in properties:
                raise ValueError(
                    f"The field `{key}` already exists in the original function schema of "
                    f"`{func_name}`. Try to use a different name."
                )
            properties[key] = value
        required += [key for key in extension.get("required", []) if key not in required]
        params["properties"] = properties
        if required:
            params["required"] = required
        if extension.get("$defs"):
            defs = dict(params.get("$defs", {}))
            for key, value in extension["$defs"].items():
                if key in defs and defs[key] != value:
                    raise ValueError(
                        f"The $defs key `{key}` conflicts with an existing definition in the "
                        f"function schema of `{func_name}`."
                    )
                defs[key] = value
            params["$defs"] = defs
        merged["function"]["parameters"] = params
        tool.extended_model = model
        tool.extended_json_schema = merged
        if _admits_any_key(extension, tool.original_func):
            # A model with extra fields allowed (pydantic's extra="allow") says so in its
            # schema: then any key is the structured model's to judge.
            tool.accepted_names = None
        elif tool.base_accepted_names is not None:
            tool.accepted_names = tool.base_accepted_names | set(extension.get("properties", {}))

    # -- middleware --------------------------------------------------------------------------

    def register_middleware(self, middleware: Middleware) -> None:
        """Wrap every tool call in *middleware* (onion model: the first registered is the
        outermost).

        ``middleware(kwargs, next_handler)`` is an async generator of ToolResponse chunks;
        ``kwargs`` holds ``tool_call``, and ``async for r in await next_handler(**kwargs)``
        runs the next layer. A middleware may change the chunks, or skip the call entirely.
        """
        self._middlewares.append(middleware)

    # -- calling -----------------------------------------------------------------------------

    @staticmethod
    def interrupted_response(last_chunk: ToolResponse | None = None) -> ToolResponse:
        """The final chunk for a call interrupted after *last_chunk* (see the module doc).

        Returns *last_chunk* unchanged if it is already marked interrupted.
        """
        return interrupted_response(last_chunk)

    def call_tool_function(self, tool_call: ToolUseBlock) -> ToolResponseStream:
        """Call the tool named by *tool_call*; iterate the result for its chunks.

        Never raises for tool failures: each becomes a final chunk (see the module doc).
        """
        if self._middlewares:
            return ToolResponseStream(self._through_middlewares(tool_call))
        return _CallStream(self, tool_call)

    async def _through_middlewares(
        self, tool_call: ToolUseBlock
    ) -> AsyncGenerator[ToolResponse, None]:
        # Every stream a layer opens, outermost first. A middleware's `async for` does not
        # close the inner stream when the call stops early, so they are all closed here.
        opened: list[Any] = []

        async def innermost(tool_call: ToolUseBlock) -> ToolResponseStream:
            stream = _CallStream(self, tool_call)
            opened.append(stream)
            return stream

        handler: Callable[..., Awaitable[Any]] = innermost
        for middleware in reversed(self._middlewares):
            handler = _layer(middleware, handler, opened)
        try:
            stream = await handler(tool_call=tool_call)
            async for chunk in stream:
                yield chunk
        finally:
            for opened_stream in opened:
                await opened_stream.aclose()

    def _calls_plainly(self) -> bool:
        """Whether a call is just :meth:`_run_call`: no middleware, and
        :meth:`call_tool_function` not overridden."""
        return not self._middlewares and type(self).call_tool_function is _CALL_TOOL_FUNCTION

    async def _run_call(
        self, tool_call: ToolUseBlock
    ) -> ToolResponse | AsyncGenerator[ToolResponse, None]:
        """Run *tool_call* without middleware: the call's one chunk when it has one (a call
        that cannot run, a background start, a coroutine tool with no postprocess function),
        else the generator of its chunks, not started yet.

        Unlike a stream, this lets a cancellation landing in a coroutine tool propagate: the
        caller records the interrupt. The ReAct agent calls it directly on its hot path, which
        saves the stream's frames for the common single-chunk call.
        """
        prepared = self._prepare(tool_call)
        if prepared.__class__ is ToolResponse:
            return prepared
        tool, kwargs = prepared  # type: ignore[misc]
        if tool.async_execution:
            return self._start_background(tool, kwargs, tool_call)
        limit = tool.timeout if tool.timeout is not None else self.timeout
        postprocess = tool.postprocess_func
        if tool.kind is not ToolKind.COROUTINE or (
            # MCP tools are awaited here even then, so their MCPError reads the same.
            postprocess is not None and tool.source != "mcp_server"
        ):
            return execute_tool(tool, kwargs, tool_call, limit)
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
        except MCPError as exc:
            # AgentScope's wording for a failed MCP call (timeouts included).
            result = text_response(f"{MCP_ERROR_PREFIX}{exc}", is_last=True)
        except Exception as exc:
            result = failure_response(exc)
        if postprocess is None and isinstance(result, ToolResponse):
            return result
        # A coroutine that hands back a stream or another awaitable (or a wrong type): the
        # general path takes it from here, under the same deadline.
        return execute_tool(tool, kwargs, tool_call, limit, initial=result, deadline=deadline)

    def _prepare(
        self, tool_call: ToolUseBlock
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
        tool = self.tools.get(name)
        if tool is None:
            return text_response(f"FunctionNotFoundError: Cannot find the function named {name}")
        if tool.group != "basic" and not self.groups[tool.group].active:
            return text_response(
                f"FunctionInactiveError: The function '{name}' is in the inactive group "
                f"'{tool.group}'. Activate the tool group by calling 'reset_equipped_tools' "
                "first to use this tool."
            )
        problem = _check_arguments(tool, args, raw_input)
        if problem is not None:
            return text_response(
                f"InvalidArgumentsError: Invalid arguments for '{name}': {problem}"
            )
        presets = tool.preset_kwargs
        return tool, {**args, **presets} if presets else dict(args)

    # -- background execution ----------------------------------------------------------------

    def _start_background(
        self, tool: RegisteredToolFunction, kwargs: dict[str, Any], tool_call: ToolUseBlock
    ) -> ToolResponse:
        if self._task_group is None:
            raise ToolError(
                f"tool '{tool.name}' runs in the background (async_execution=True), which "
                "needs an open toolkit: use `async with toolkit:` around the calls"
            )
        task_id = uuid.uuid4().hex[:12]
        task = _BackgroundTask(scope=anyio.CancelScope(), done=anyio.Event())
        self._background[task_id] = task
        self._task_group.start_soon(self._run_background, task, tool, kwargs, tool_call)
        return text_response(
            f"<system-reminder>Tool '{tool.name}' is executing asynchronously. Task ID: "
            f"{task_id}. Use view_task('{task_id}') to check status, wait_task('{task_id}') "
            f"to wait for completion, or cancel_task('{task_id}') to cancel the task."
            "</system-reminder>"
        )

    async def _run_background(
        self,
        task: _BackgroundTask,
        tool: RegisteredToolFunction,
        kwargs: dict[str, Any],
        tool_call: ToolUseBlock,
    ) -> None:
        last: ToolResponse | None = None
        timeout = tool.timeout if tool.timeout is not None else self.timeout
        try:
            with task.scope:
                async with aclosing(execute_tool(tool, kwargs, tool_call, timeout)) as chunks:
                    async for chunk in chunks:
                        last = chunk
        finally:
            final = last if last is not None else interrupted_response(None)
            task.result = attrs.evolve(final, stream=False, is_last=True)
            task.done.set()

    def _unknown_task(self, task_id: str) -> ToolResponse:
        return text_response(f"InvalidTaskIdError: Cannot find async task with ID {task_id}.")

    async def view_task(self, task_id: str) -> ToolResponse:
        """View the status of an async tool task by its task ID.

        Args:
            task_id (`str`):
                The ID of the async tool task.
        """
        task = self._background.get(task_id)
        if task is None:
            return self._unknown_task(task_id)
        if not task.done.is_set():
            return text_response(f"Task {task_id} is still running.")
        return self._take_result(task_id, task)

    async def cancel_task(self, task_id: str) -> ToolResponse:
        """Cancel an async tool task by its task ID.

        Args:
            task_id (`str`):
                The ID of the async tool task.
        """
        task = self._background.get(task_id)
        if task is None:
            return self._unknown_task(task_id)
        if task.done.is_set():
            return text_response(f"Task {task_id} has already completed and cannot be cancelled.")
        task.scope.cancel()
        await task.done.wait()
        return text_response(f"Task {task_id} has been cancelled.")

    async def wait_task(self, task_id: str, timeout: float = 10) -> ToolResponse:  # noqa: ASYNC109
        """Wait for an async tool execution to complete by its task ID. Note
        the timeout shouldn't be too large, you can check the task status
        by this tool every short period of time to avoid long waiting time.

        Args:
            task_id (`str`):
                The ID of the async tool task.
            timeout (`float`, defaults to `10`):
                The maximum time to wait for the task to complete, in seconds.
        """
        task = self._background.get(task_id)
        if task is None:
            return self._unknown_task(task_id)
        with anyio.move_on_after(timeout):
            await task.done.wait()
        if not task.done.is_set():
            return text_response(
                f"Task {task_id} is still running after waiting for {timeout} seconds."
            )
        return self._take_result(task_id, task)

    def _take_result(self, task_id: str, task: _BackgroundTask) -> ToolResponse:
        # A finished task's id is forgotten once its result is handed out; callers already
        # waiting on it (parallel wait_task calls) still get the result.
        self._background.pop(task_id, None)
        assert task.result is not None
        return task.result

    # -- state -------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """``{"active_groups": [...]}``: which groups are active."""
        return {"active_groups": [name for name, g in self.groups.items() if g.active]}

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Activate exactly the groups listed in ``state_dict["active_groups"]``.

        Names of groups this toolkit does not have are ignored (tools are code, not state).

        :raises StateError: if the state is malformed, or (when *strict*) has other keys.
        """
        if (
            not isinstance(state_dict, dict)
            or not isinstance(state_dict.get("active_groups"), list)
            or not all(isinstance(n, str) for n in state_dict["active_groups"])
        ):
            raise StateError(
                "Toolkit state must be a dict with key 'active_groups' holding a list of group "
                f"names, got {state_dict!r}"
            )
        if strict and set(state_dict) != {"active_groups"}:
            raise StateError(
                f"Toolkit state has unexpected keys {sorted(set(state_dict) - {'active_groups'})}"
                " (pass strict=False to ignore them)"
            )
        active = set(state_dict["active_groups"])
        for name, group in self.groups.items():
            group.active = name in active


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


def _check_function_schema(json_schema: Any) -> None:
    if not (
        isinstance(json_schema, dict)
        and json_schema.get("type") == "function"
        and isinstance(json_schema.get("function"), dict)
    ):
        raise ToolRegistrationError(
            "json_schema must be an OpenAI function schema: {'type': 'function', 'function': "
            f"{{'name': ..., 'description': ..., 'parameters': {{...}}}}}}, got {json_schema!r}"
        )
    parameters = json_schema["function"].get("parameters")
    if parameters is not None and (
        not isinstance(parameters, dict)
        or parameters.get("type", "object") != "object"
        or not isinstance(parameters.get("properties", {}), dict)
        or not isinstance(parameters.get("required", []), list)
    ):
        raise ToolRegistrationError(
            "json_schema['function']['parameters'] must be an object schema with a "
            f"'properties' dict, got {parameters!r}"
        )


def _schema_from_given(
    json_schema: dict[str, Any], name: str, presets: dict[str, Any]
) -> dict[str, Any]:
    function = dict(json_schema["function"])
    params = dict(function.get("parameters") or {"type": "object", "properties": {}})
    params.setdefault("type", "object")
    params["properties"] = {
        k: v for k, v in (params.get("properties") or {}).items() if k not in presets
    }
    required = [r for r in params.get("required", []) if r not in presets]
    if required:
        params["required"] = required
    else:
        params.pop("required", None)
    function["name"] = name
    function["parameters"] = params
    return {**json_schema, "function": function}


def _accepted_names(
    func: Any, presets: dict[str, Any], include_var_keyword: bool
) -> frozenset[str] | None:
    """The argument names a model may send to *func*: the parameters its schema shows.

    A ``**kwargs`` parameter left out of the schema (the default) accepts nothing from the
    model: what it would collect is not in the schema, and the built-in tools hand it to
    libraries (mem0, vector stores), so a model could set what the application fixed (a
    ``user_id``, a search filter). Shown in the schema (*include_var_keyword*), only its own
    name is accepted. ``None`` when the signature cannot be read (then the schema decides).
    """
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    return frozenset(
        p.name
        for p in parameters
        if p.kind is not inspect.Parameter.VAR_POSITIONAL
        and (p.kind is not inspect.Parameter.VAR_KEYWORD or include_var_keyword)
        and p.name not in presets
    )


def _admits_any_key(extension: dict[str, Any], func: Any) -> bool:
    """Whether an extended model's schema explicitly admits keys it does not name (a bare
    schema without ``additionalProperties`` does not count) and *func* takes ``**kwargs``."""
    additional = extension.get("additionalProperties", False)
    if additional is False or additional is None:
        return False
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


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


_CALL_TOOL_FUNCTION = Toolkit.call_tool_function
