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

import logging
import os
import uuid
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import anyio
import anyio.abc

from .. import _intercept
from .._schema import StructuredModel
from ..exception import StateError, ToolError, ToolGroupError, ToolRegistrationError
from ..message import ToolUseBlock
from ..module import StateModule
from ._background import BackgroundTasks
from ._calling import (
    MCP_ERROR_PREFIX,
    CallStream,
    Middleware,
    ToolResponseStream,
    through_middlewares,
)
from ._execution import interrupted_response, text_response
from ._registration import MCPClientLike, NamesakeStrategy, extend_schema, registered_tool
from ._response import ToolResponse
from ._skill import (
    DEFAULT_AGENT_SKILL_INSTRUCTION,
    DEFAULT_AGENT_SKILL_TEMPLATE,
    AgentSkill,
    check_agent_skill_template,
    read_agent_skill,
)
from ._types import PostprocessFunc, RegisteredToolFunction, ToolGroup

__all__ = [
    "MCP_ERROR_PREFIX",
    "MCPClientLike",
    "Middleware",
    "NamesakeStrategy",
    "ToolResponseStream",
    "Toolkit",
]

logger = logging.getLogger(__name__)


class Toolkit(StateModule, _intercept.Routed):
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
        self._middlewares: tuple[Middleware, ...] = ()
        self._groups_version = 0
        self._meta_schema_version = -1
        self._task_group: anyio.abc.TaskGroup | None = None
        self._background_tasks: BackgroundTasks | None = None  # made by the first background call

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
        inline: bool = False,
    ) -> None:
        """Register a tool function (sync, async, sync or async generator, bound method,
        ``functools.partial``, or an MCP tool function).

        The JSON schema comes from the signature and docstring unless *json_schema* is given;
        preset kwargs (and ``partial`` arguments) are hidden from the model and always win over
        arguments the model sends.

        :param timeout: this tool's timeout in seconds (overrides the toolkit's).
        :param inline: call a plain synchronous function in the caller's task instead of a
            worker thread: for a quick function that never blocks (no I/O, microseconds of
            work), where the thread hop (tens of microseconds, and a thread per call in
            flight) would be most of the call's cost. The ReAct agent registers its finish
            function so. A blocking inline tool stalls every task of the event loop, and a
            timeout cannot cut it short. Other kinds of function are unaffected.
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
        registered = registered_tool(
            tool_func,
            self,
            group_name=group_name,
            preset_kwargs=preset_kwargs,
            func_name=func_name,
            func_description=func_description,
            json_schema=json_schema,
            include_long_description=include_long_description,
            include_var_positional=include_var_positional,
            include_var_keyword=include_var_keyword,
            postprocess_func=postprocess_func,
            async_execution=async_execution,
            timeout=timeout,
            inline=inline,
        )
        name = registered.name
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
                # A new schema: the one registered may be shared with other toolkits.
                schema = registered.json_schema
                registered.json_schema = registered.extended_json_schema = {
                    **schema,
                    "function": {**schema["function"], "name": new_name},
                }
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
        extend_schema(tool, func_name, model)

    @property
    def _background(self) -> BackgroundTasks:
        """The background calls of this toolkit (made on first use)."""
        tasks = self._background_tasks
        if tasks is None:
            tasks = self._background_tasks = BackgroundTasks()
        return tasks

    # -- middleware --------------------------------------------------------------------------

    def register_middleware(self, middleware: Middleware) -> None:
        """Wrap every tool call in *middleware* (onion model: the first registered is the
        outermost).

        ``middleware(kwargs, next_handler)`` is an async generator of ToolResponse chunks;
        ``kwargs`` holds ``tool_call``, and ``async for r in await next_handler(**kwargs)``
        runs the next layer. A middleware may change the chunks, or skip the call entirely.
        """
        self._middlewares = (*self._middlewares, middleware)

    # -- calling -----------------------------------------------------------------------------

    @staticmethod
    def interrupted_response(last_chunk: ToolResponse | None = None) -> ToolResponse:
        """The final chunk for a call interrupted after *last_chunk* (see the module doc).

        Returns *last_chunk* unchanged if it is already marked interrupted.
        """
        return interrupted_response(last_chunk)

    def call_tool_function(self, tool_call: ToolUseBlock) -> ToolResponseStream:
        """Call the tool named by *tool_call*; iterate the result for its chunks.

        This is the one route of every call (the ReAct agent's included), so a subclass that
        overrides it sees them all. Never raises for tool failures: each becomes a final
        chunk (see the module doc).
        """
        if self._middlewares:
            return ToolResponseStream(through_middlewares(self, tool_call))
        return CallStream(self, tool_call)

    # -- background execution ----------------------------------------------------------------

    async def view_task(self, task_id: str) -> ToolResponse:
        """View the status of an async tool task by its task ID.

        Args:
            task_id (`str`):
                The ID of the async tool task.
        """
        return self._background.view(task_id)

    async def cancel_task(self, task_id: str) -> ToolResponse:
        """Cancel an async tool task by its task ID.

        Args:
            task_id (`str`):
                The ID of the async tool task.
        """
        return await self._background.cancel(task_id)

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
        return await self._background.wait(task_id, timeout)

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


# Every call of these goes through its route (see agentscope_rt._intercept).
_intercept.declare(Toolkit, "call_tool_function", "tool", is_async=False)
