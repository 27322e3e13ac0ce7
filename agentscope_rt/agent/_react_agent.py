"""ReActAgent: the reasoning-acting loop most applications use.

(About 900 lines: the reply, reasoning and acting steps share the reply state and the
interrupt guarantees below, so they stay together; the blocks a step builds, retrieval, the
summary, compression and speech are their own modules.)

One reply records the input, then alternates *reasoning* (format the memory, call the model,
print its answer as it streams) and *acting* (run the tool calls it asked for, sequentially
or concurrently), until the model answers without tool calls, the structured-output finish
function succeeds, a hook asks to stop, or ``max_iters`` runs out (then one more model call,
without tools, summarises the situation).

Guarantees:

* **Memory stays consistent under interrupts.** Interrupting (cancelling the reply's scope)
  during reasoning records the part of the answer streamed so far; during acting, every
  running tool is cancelled. In every case each ``tool_use`` in memory is followed by exactly
  one ``tool_result`` — the real one, or one saying the call was interrupted — followed by
  :meth:`ReActAgent.handle_interrupt`'s answer. The next call continues normally.
* **Results are recorded in call order**, also when ``parallel_tool_calls=True`` runs the calls
  concurrently in one task group (the group ends before the step does; no task outlives it).
* **The hot path stays lean.** Nothing is deep-copied: memory copies the input (``Msg.copy``)
  and keeps the messages the agent builds itself (tool results, intermediate reasoning)
  without copying, and the caller gets its own copy of the final reply. No signature is
  inspected per call; hooks cost nothing unless registered; per-reply state lives in a
  slotted object; the system message is rebuilt only when the system prompt changes.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncGenerator, Awaitable
from typing import Any, ClassVar, Literal

import anyio
import anyio.lowlevel

from .._schema import (
    StructuredModel,
    StructuredOutputError,
    is_structured_model,
    validate_structured_output,
)
from ..exception import ModelError
from ..formatter import FormatterBase, TruncatedFormatterBase
from ..memory import (
    InMemoryMemory,
    LongTermMemoryBase,
    MemoryBase,
    MemoryMark,
    check_long_term_memory_mode,
)
from ..message import AudioBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock
from ..model import ChatModelBase, ChatResponse, ChatUsage
from ..tool import Toolkit, ToolResponse
from ..tts import SpeechPlayer, TTSModelBase
from ._checks import _check_memory_compresses, _check_msg, _check_type
from ._compression import CompressionConfig as _CompressionConfig
from ._compression import compress_memory_if_needed
from ._durable import DurableReplies, SessionLike, unanswered_calls
from ._extensions import KnowledgeLike, PlanNotebookLike
from ._generate_reason import GenerateReason
from ._memory_calls import adding, deleting_mark
from ._react_agent_base import ReActAgentBase
from ._react_blocks import (
    _has_text,
    _interrupted_output,
    _interrupted_result,
    _model_blocks,
    _result_msg,
    _structured_hint,
    _success_metadata,
    _system_msg_of,
    _tool_blocks,
    _tool_calls,
)
from ._react_retrieval import retrieve_from_knowledge, retrieve_from_long_term_memory, rewrite_query
from ._react_speech import receive_stream, speak_rest
from ._react_state import NOT_ACTING, ReplyState
from ._react_summary import summarize

__all__ = ["ReActAgent"]

logger = logging.getLogger("agentscope_rt.agent")

FINISH_FUNCTION_NAME = "generate_response"

_HINT = MemoryMark.HINT.value
_COMPRESSED = MemoryMark.COMPRESSED.value
_MODEL_STOP = GenerateReason.MODEL_STOP
_MAX_ITERATIONS = GenerateReason.MAX_ITERATIONS
_REASONING_STOP = GenerateReason.REASONING_STOP_REQUESTED
_ACTING_STOP = GenerateReason.ACTING_STOP_REQUESTED

_STRUCTURED_TEXT_HINT = (
    "<system-hint>Now generate a text response based on your current situation</system-hint>"
)
_INTERRUPT_REPLY = "I noticed that you have interrupted me. What can I do for you?"
_REASONING_INTERRUPTED_OUTPUT = "The tool call has been interrupted by the user."
_SKIPPED_OUTPUT = (
    "<system-info>The tool call was not executed: the user sent a new message instead of "
    "letting it run.</system-info>"
)
_LTM_MODES = ("agent_control", "static_control", "both")


class ReActAgent(ReActAgentBase):
    """An agent that reasons with a chat model and acts with tools (AgentScope's ReActAgent).

    :param name: the agent's name (the speaker of its messages).
    :param sys_prompt: the system prompt.
    :param model: the chat model.
    :param formatter: turns messages into *model*'s payload.
    :param toolkit: the tools (an empty :class:`Toolkit` when omitted).
    :param memory: short-term memory (a new :class:`InMemoryMemory` when omitted).
    :param long_term_memory: a long-term memory (see :class:`LongTermMemoryBase`).
    :param long_term_memory_mode: ``"agent_control"`` (its two tools are registered),
        ``"static_control"`` (retrieve at the start of each reply, record at the end) or
        ``"both"``.
    :param enable_meta_tool: register the toolkit's ``reset_equipped_tools`` so the model can
        switch tool groups on and off.
    :param parallel_tool_calls: run the tool calls of one reasoning step concurrently.
    :param knowledge: knowledge base(s) searched with the input at the start of each reply.
    :param enable_rewrite_query: let the model rewrite the query before searching knowledge.
    :param plan_notebook: a :class:`~agentscope_rt.plan.PlanNotebook`: its tools are
        registered (in a ``"plan_related"`` group when *enable_meta_tool* is true) and its
        hint is shown before each reasoning step, then removed from memory.
    :param print_hint_msg: also print hint and retrieval messages.
    :param max_iters: the most reasoning-acting rounds per reply.
    :param tts_model: speaks each reasoning step's text as it streams (see ``docs/tts.md``);
        the audio goes with the printed chunks (``print(msg, last, speech=...)``).
    :param compression_config: memory compression (see :class:`CompressionConfig`).
    :param speech_player: plays the speech in the background (a running
        :class:`~agentscope_rt.tts.SpeechPlayer`); :meth:`interrupt` cuts it off.
    :raises TypeError: for arguments of the wrong type.
    :raises ValueError: for an unknown *long_term_memory_mode* or a *max_iters* below 1.
    :raises TypeError: if *long_term_memory* lacks a method its mode calls (``record`` and
        ``retrieve`` for ``"static_control"``, the two tool methods for ``"agent_control"``,
        all four for ``"both"``).

    Hooks (``pre_``/``post_`` ``reasoning`` and ``acting``, besides the reply, print and
    observe hooks): reasoning hooks get ``{"tool_choice": ...}`` and the reasoning Msg as
    output; acting hooks get ``{"tool_call": ToolUseBlock}`` and the structured output (a
    dict, or ``None``) as output. A ``pre_acting`` hook may change a call's name and input but
    must keep its ``id`` (the result answers the call the model made). A hook may call
    :meth:`request_stop` to end the reply after the current step.

    The reply's ``metadata`` is AgentScope's: the validated fields with a structured model,
    else empty (``{"_is_interrupted": True}`` on an interrupt reply). Why the reply ended is
    :attr:`generate_reason` (see :class:`GenerateReason`) and the summed token usage of every
    model call of the reply is :attr:`usage`, both on the agent.
    """

    _durable: DurableReplies | None = None
    """Set by :meth:`checkpoint_to`."""

    CompressionConfig: ClassVar[type[_CompressionConfig]] = _CompressionConfig
    """The compression configuration class, also reachable as ``ReActAgent.CompressionConfig``
    as in AgentScope."""

    finish_function_name: str = FINISH_FUNCTION_NAME
    """The finish function registered while a structured model is requested."""

    def __init__(
        self,
        name: str,
        sys_prompt: str,
        model: ChatModelBase,
        formatter: FormatterBase,
        toolkit: Toolkit | None = None,
        memory: MemoryBase | None = None,
        long_term_memory: LongTermMemoryBase | None = None,
        long_term_memory_mode: Literal["agent_control", "static_control", "both"] = "both",
        enable_meta_tool: bool = False,
        parallel_tool_calls: bool = False,
        knowledge: KnowledgeLike | list[KnowledgeLike] | None = None,
        enable_rewrite_query: bool = True,
        plan_notebook: PlanNotebookLike | None = None,
        print_hint_msg: bool = False,
        max_iters: int = 10,
        tts_model: TTSModelBase | None = None,
        compression_config: _CompressionConfig | None = None,
        *,
        speech_player: SpeechPlayer | None = None,
    ) -> None:
        super().__init__()
        _check_type("name", name, str)
        _check_type("sys_prompt", sys_prompt, str)
        _check_type("model", model, ChatModelBase)
        _check_type("formatter", formatter, FormatterBase)
        _check_type("toolkit", toolkit, Toolkit, optional=True)
        _check_type("memory", memory, MemoryBase, optional=True)
        _check_type("long_term_memory", long_term_memory, LongTermMemoryBase, optional=True)
        _check_type(
            "plan_notebook", plan_notebook, PlanNotebookLike, optional=True, shown="PlanNotebook"
        )
        if plan_notebook is not None and not inspect.iscoroutinefunction(
            plan_notebook.get_current_hint
        ):
            # As for knowledge below: the protocol checks names only.
            raise TypeError(
                "ReActAgent plan_notebook must be a PlanNotebook (its get_current_hint is a "
                f"coroutine function), not {type(plan_notebook).__name__} with a synchronous one"
            )
        _check_type("compression_config", compression_config, _CompressionConfig, optional=True)
        _check_type("tts_model", tts_model, TTSModelBase, optional=True)
        _check_type("speech_player", speech_player, SpeechPlayer, optional=True)
        if long_term_memory_mode not in _LTM_MODES:
            raise ValueError(
                f"long_term_memory_mode must be one of {', '.join(_LTM_MODES)}, not "
                f"{long_term_memory_mode!r}"
            )
        if long_term_memory is not None:
            # AgentScope finds a missing record/retrieve only when every reply fails.
            check_long_term_memory_mode(long_term_memory, long_term_memory_mode)
        if isinstance(max_iters, bool) or not isinstance(max_iters, int) or max_iters < 1:
            raise ValueError(f"max_iters must be a positive integer, not {max_iters!r}")
        # None and lists first: a check against the runtime protocol costs tens of
        # microseconds, which many agents built at once would pay for nothing.
        if knowledge is None or isinstance(knowledge, list | tuple):
            pass
        elif isinstance(knowledge, KnowledgeLike):
            knowledge = [knowledge]
        else:
            raise TypeError(
                "ReActAgent knowledge must be a KnowledgeBase, a list of them or None, not "
                f"{type(knowledge).__name__}"
            )
        for index, kb in enumerate(knowledge or []):
            # The protocol checks the name only: another library's retriever with a
            # synchronous retrieve would fail at the first reply instead.
            if not isinstance(kb, KnowledgeLike) or not inspect.iscoroutinefunction(kb.retrieve):
                raise TypeError(
                    f"knowledge[{index}] must be a KnowledgeBase (an object with an async "
                    f"retrieve(query, limit, score_threshold)), not {type(kb).__name__}"
                )

        self.name = name
        self._sys_prompt = sys_prompt
        self.model = model
        self.formatter = formatter
        # A model that knows its context window (the local model) lends its budget to a
        # formatter that has none: a long conversation then drops its oldest turns instead of
        # overflowing the window.
        self._fit_to_context = (
            isinstance(formatter, TruncatedFormatterBase)
            and formatter.max_tokens is None
            and getattr(model, "context_window", None) is not None
        )
        self.max_iters = max_iters
        self.compression_config = compression_config
        self.tts_model = tts_model
        self.speech_player = speech_player
        self.memory = memory if memory is not None else InMemoryMemory()
        _check_memory_compresses(self.memory, compression_config)
        self.toolkit = toolkit if toolkit is not None else Toolkit()
        self.parallel_tool_calls = bool(parallel_tool_calls)
        self.knowledge: list[KnowledgeLike] = list(knowledge or [])
        self.enable_rewrite_query = bool(enable_rewrite_query)
        self.print_hint_msg = bool(print_hint_msg)

        self.long_term_memory = long_term_memory
        self._static_control = long_term_memory is not None and long_term_memory_mode in (
            "static_control",
            "both",
        )
        # A local, not an attribute: 30 instance attributes at most keep the agents' dicts
        # sharing one key table (CPython's limit), about a kilobyte less per agent.
        agent_control = long_term_memory is not None and long_term_memory_mode in (
            "agent_control",
            "both",
        )
        if agent_control:
            assert long_term_memory is not None
            self.toolkit.register_tool_function(long_term_memory.record_to_memory)
            self.toolkit.register_tool_function(long_term_memory.retrieve_from_memory)
        if enable_meta_tool:
            self.toolkit.register_tool_function(self.toolkit.reset_equipped_tools)

        self.plan_notebook = plan_notebook
        if plan_notebook is not None:
            if enable_meta_tool:
                self.toolkit.create_tool_group(
                    "plan_related", description=plan_notebook.description
                )
                for tool in plan_notebook.list_tools():
                    self.toolkit.register_tool_function(tool, group_name="plan_related")
            else:
                for tool in plan_notebook.list_tools():
                    self.toolkit.register_tool_function(tool)

        self._run = ReplyState()
        self._sys_msg: Msg | None = None

        self.register_state("name")
        self.register_state("_sys_prompt")

    # -- configuration -----------------------------------------------------------------------

    @property
    def sys_prompt(self) -> str:
        """The system prompt, followed (after a blank line) by the toolkit's agent skill
        prompt when skills are registered, as in AgentScope."""
        toolkit = self.toolkit
        # Read on every model call: a plain Toolkit without skills costs no method call.
        if toolkit.skills or toolkit.__class__ is not Toolkit:
            skill_prompt = toolkit.get_agent_skill_prompt()
            if skill_prompt:
                return self._sys_prompt + "\n\n" + skill_prompt
        return self._sys_prompt

    def request_stop(self) -> None:
        """Ask the reply in progress to stop after the current step (human in the loop).

        Call it from a reasoning or acting hook. After reasoning, the reply returns the
        reasoning Msg (``agent.generate_reason == "reasoning_stop_requested"``) and its tool calls
        are left pending: calling the agent again with no message runs them and goes on;
        calling it with a new message records them as not executed instead. After acting, the
        reply returns with ``"acting_stop_requested"`` (the tool results are in memory) and
        the next call goes on reasoning.
        """
        self._run.stop_requested = True

    @property
    def usage(self) -> ChatUsage | None:
        """The summed token usage of every model call of the current or latest reply
        (reasoning, summary, compression, query rewriting), or ``None`` before any model call
        reported usage. Reset when a reply starts; read it after ``await agent(...)`` returns
        (or in a hook). Kept on the agent, not in the reply's ``metadata``, as AgentScope's
        replies carry none."""
        return self._run.usage

    # -- what the step helpers use (retrieval, summary, compression, speech) -----------------
    # These protected methods are the whole of the agent the helper modules call beyond its
    # public attributes; a subclass may override them.

    def _system_msg(self) -> Msg:
        """The system message of :attr:`sys_prompt`, the first message of every prompt.

        The same Msg is returned until the prompt changes: formatters only read it."""
        # Built once and reused: a Msg costs a uuid and a timestamp.
        prompt = self.sys_prompt
        sys_msg = self._sys_msg
        if sys_msg is None or sys_msg.content != prompt:
            sys_msg = self._sys_msg = _system_msg_of(prompt)
        return sys_msg

    async def _prompt_with(self, request: Msg) -> list[dict[str, Any]]:
        """The model's payload for a side request: the system message, the memory the model
        sees when reasoning (without the compressed messages when compression is on) and
        *request* last (a summary or query-rewriting instruction, not recorded)."""
        history = self._reading_history()
        if not isinstance(history, list):
            history = await history
        return await self.formatter.format([self._system_msg(), *history, request])

    def _add_usage(self, usage: ChatUsage | None) -> None:
        """Add *usage* (``None``: nothing reported) to the reply's :attr:`usage`."""
        if usage is not None:
            run = self._run
            run.usage = usage if run.usage is None else run.usage + usage

    def _finish(self, msg: Msg, reason: GenerateReason, extra: dict[str, Any] | None = None) -> Msg:
        # The metadata is AgentScope's (the structured output, if any); the reason stays on
        # the agent (AgentBase.generate_reason).
        if extra:
            msg.metadata = dict(extra)
        self._call.reason = reason
        return msg

    async def _record(self, msg: Msg) -> None:
        """Record a message of a step (a reasoning answer, a tool result).

        A memory whose ``add`` may wait (:attr:`MemoryBase.add_may_wait`: I/O) is written in a
        shielded scope: a step's record must not be cut short by an interrupt, or a tool call
        could end up with no result or two. A :attr:`MemoryBase.synchronous` memory is handed
        the message itself (the agent never changes a message after recording it), unchecked:
        a step is built to :func:`~agentscope_rt.memory.check_storable`'s rule (each tool
        call's arguments are checked as the step is built), and new, so no stored message can
        have its id.
        """
        memory = self.memory
        if memory.synchronous:
            memory.add_sync(msg, allow_duplicates=True, copy=False, check=False)
        elif memory.add_may_wait:
            with anyio.CancelScope(shield=True):
                await memory.add(msg)
        else:
            await memory.add(msg)

    def _reading_history(self) -> list[Msg] | Awaitable[list[Msg]]:
        """The memory the model sees (without the compressed messages when compression is
        on), or the awaitable giving it."""
        config = self.compression_config
        exclude = _COMPRESSED if config is not None and config.enable else None
        memory = self.memory
        if memory.synchronous:  # see _memory_calls: no coroutine where the memory allows it
            return memory.get_memory_sync(None, exclude, read_only=True)
        return memory.get_memory(exclude_mark=exclude)

    # -- the reply ---------------------------------------------------------------------------

    def checkpoint_to(self, session: SessionLike, session_id: str, user_id: str = "") -> None:
        """Make every reply durable: checkpoint it to *session* as it goes, and resume it there
        after the process running it died.

        A checkpoint (the agent's whole state plus where the reply stands) is saved as the
        reply starts, after every completed reasoning step and tool result, and when the reply
        ends. The first reply after this call loads the checkpoint: if a reply was under way
        and this call has the same input (or none), it resumes that reply — the input is
        recorded once, completed steps and tool calls are not done again, a tool call that was
        running gets a result saying it was cut off by a restart, and the reply then finishes
        normally; if the last reply had ended with an answer, that answer is returned. This
        holds with a memory kept in a database too. See ``docs/react_agent.md`` ("Durable
        replies") for the exact guarantee.

        :param session: a ``JSONSession``, ``SQLiteSession``, ``RedisSession`` or any session
            with AgentScope's ``save_session_state`` / ``load_session_state``.
        :param session_id: the id under which the checkpoints are kept; use it for nothing
            else (every checkpoint replaces what is stored under it).
        :param user_id: the session's user id.
        :raises TypeError: when *session* lacks the session methods.
        :raises ValueError: for an empty *session_id*.
        """
        if self._durable is not None:
            self._durable.remove()
        self._durable = DurableReplies(self, self._run, session, session_id, user_id)

    async def reply(
        self,
        msg: Msg | list[Msg] | None = None,
        structured_model: StructuredModel | None = None,
    ) -> Msg:
        """Answer *msg* (recorded in memory first) by reasoning and acting.

        :param msg: the input message(s); ``None`` continues from memory (e.g. to resume after
            a stop requested by a hook).
        :param structured_model: a pydantic model class, attrs class or JSON schema; the model
            must then call the finish function ``generate_response`` with valid fields, which
            land in the reply's metadata.
        :raises TypeError: when *msg* is not a Msg, a list of Msg or None, or
            *structured_model* is not a structured model.
        """
        if msg is not None and msg.__class__ is not Msg:
            _check_msg(msg)
        if structured_model is not None and not is_structured_model(structured_model):
            raise TypeError(
                "structured_model must be a pydantic model class, an attrs class or a JSON "
                f"schema dict, not {structured_model!r}"
            )
        durable = self._durable
        if durable is not None:
            msg, finished, reason = await durable.begin(msg)
            if finished is not None:  # the dead process had answered already
                return self._finish(finished, reason, None)
        run = self._run
        if run.after_load:
            await self._answer_loaded_calls()
        run.usage = None
        run.stop_requested = False
        pending = run.pending
        run.pending = None
        if pending is not None and msg is not None:
            # The user moved on instead of letting the held tool calls run.
            for call in _tool_calls(pending):
                await self.memory.add(_result_msg(call, _SKIPPED_OUTPUT))
            pending = None

        if (added := adding(self.memory, msg)) is not None:
            await added
        if self._static_control:
            await self._retrieve_from_long_term_memory(msg)
        if self.knowledge:
            await self._retrieve_from_knowledge(msg)

        toolkit = self.toolkit
        finish_name = self.finish_function_name
        tool_choice: str | None = None
        run.structured_model = structured_model
        if structured_model is not None:
            if finish_name not in toolkit.tools:
                toolkit.register_tool_function(self.generate_response, inline=True)
            toolkit.set_extended_model(finish_name, structured_model)
            tool_choice = "required"
        elif finish_name in toolkit.tools:
            toolkit.remove_tool_function(finish_name)

        structured_output: dict[str, Any] | None = None
        reply_msg: Msg | None = None
        compress = self.compression_config is not None and self.compression_config.enable
        for _ in range(self.max_iters):
            if pending is not None:
                msg_reasoning, pending = pending, None
            else:
                if compress:
                    await self._compress_memory_if_needed()
                msg_reasoning = await self._reasoning(tool_choice=tool_choice)
                if msg_reasoning is not run.recorded_reasoning:
                    await self._replace_reasoning(msg_reasoning)
                if run.stop_requested:
                    if _tool_calls(msg_reasoning):
                        run.pending = msg_reasoning
                    return self._finish(msg_reasoning.copy(), _REASONING_STOP, structured_output)

            calls = _tool_calls(msg_reasoning)
            outputs = await self._act(calls) if calls else []
            if run.stop_requested:
                return self._finish(msg_reasoning.copy(), _ACTING_STOP, structured_output)

            if run.structured_model is not None:
                produced = [o for o in outputs if o]
                hint: Msg | None = None
                if produced:
                    structured_output = produced[-1]
                    if _has_text(msg_reasoning):
                        # Reuse the text already generated instead of asking for more.
                        reply_msg = Msg(
                            self.name,
                            msg_reasoning.get_content_blocks("text"),
                            "assistant",
                        )
                        break
                    hint = Msg("user", _STRUCTURED_TEXT_HINT, "user")
                    await self.memory.add(hint, marks=_HINT)
                    tool_choice = "none"
                    run.structured_model = None
                elif not calls:
                    hint = Msg("user", _structured_hint(finish_name), "user")
                    await self.memory.add(hint, marks=_HINT)
                    tool_choice = "required"
                if hint is not None and self.print_hint_msg:
                    await self.print(hint, True)
            elif not calls:
                # Memory keeps the recorded message itself: the caller gets a copy.
                reply_msg = msg_reasoning.copy()
                break

        if reply_msg is None:
            reply_msg = await self._summarizing()
            self._finish(reply_msg, _MAX_ITERATIONS, structured_output)
            await self.memory.add(reply_msg)
        else:
            self._finish(reply_msg, _MODEL_STOP, structured_output)

        if self._static_control:
            assert self.long_term_memory is not None
            # An interrupt requested during the last step (a hook, another task) lands here,
            # before anything of the interrupted reply is recorded.
            await anyio.lowlevel.checkpoint_if_cancelled()
            await self.long_term_memory.record(
                list(await self.memory.get_memory(exclude_mark=_COMPRESSED))
            )
        return reply_msg

    async def _replace_reasoning(self, msg_reasoning: Msg) -> None:
        """A post_reasoning hook returned another Msg: store that one instead, so that the
        model later sees the tool calls that actually ran."""
        recorded = self._run.recorded_reasoning
        if recorded is not None:
            await self.memory.delete([recorded.id])
        _tool_calls(msg_reasoning)  # repeated call ids made unique before they are recorded
        await self.memory.add(msg_reasoning)
        self._run.recorded_reasoning = msg_reasoning

    # -- reasoning ---------------------------------------------------------------------------

    async def _reasoning(self, tool_choice: str | None = None) -> Msg:
        """One model call over the memory (plus hints); the answer is printed as it streams
        and recorded in memory, also when interrupted part-way.

        :param tool_choice: ``"auto"``, ``"none"``, ``"required"`` or a tool name.
        """
        memory = self.memory
        if self.plan_notebook is not None:
            plan_hint = await self.plan_notebook.get_current_hint()
            if plan_hint is not None:
                if self.print_hint_msg:
                    await self.print(plan_hint, True)
                await memory.add(plan_hint, marks=_HINT)

        history = self._reading_history()
        if not isinstance(history, list):
            history = await history
        if self._fit_to_context:
            prompt = await self._format_within_context([self._system_msg(), *history])
        else:
            prompt = await self.formatter.format([self._system_msg(), *history])
        if (deleted := deleting_mark(self.memory, _HINT)) is not None:
            await deleted

        schemas = self.toolkit.get_json_schemas()
        res = await self.model(prompt, tools=schemas or None, tool_choice=tool_choice)

        msg = Msg(self.name, [], "assistant")
        completed: bool | None = False
        try:
            await self._receive(res, msg)
            completed = True
        except ModelError:
            # The provider failed mid-answer (a stream cut or broken after output): what
            # arrived is not an answer of the model's, so none of it is recorded.
            completed = None
            self._run.recorded_reasoning = None
            raise
        finally:
            if completed:
                _tool_calls(msg)  # repeated call ids made unique before they are recorded
                await self._record(msg)
                self._run.recorded_reasoning = msg
            elif completed is False:
                with anyio.CancelScope(shield=True):
                    await self._record_partial_reasoning(msg)
        return msg

    async def _format_within_context(self, msgs: list[Msg]) -> list[dict[str, Any]]:
        """*msgs* formatted within the model's context window (its :meth:`prompt_budget`,
        tools counted), for a formatter without a budget of its own."""
        budget = self.model.prompt_budget()
        formatter = self.formatter
        if budget is None or not isinstance(formatter, TruncatedFormatterBase):
            return await formatter.format(msgs)
        return await formatter.format_within(msgs, self.toolkit.get_json_schemas() or None, *budget)

    async def _record_partial_reasoning(self, msg: Msg) -> None:
        """Record what was generated before an interrupt, and close its tool calls."""
        self._run.recorded_reasoning = None
        if msg.content.__class__ is str or not msg.content:
            return
        calls = _tool_calls(msg)  # repeated call ids made unique before they are recorded
        await self._record(msg)
        self._run.recorded_reasoning = msg
        for call in calls:
            result = _result_msg(call, _REASONING_INTERRUPTED_OUTPUT)
            await self._record(result)
            await self.print(result, True)

    # -- acting ------------------------------------------------------------------------------

    async def _act(self, calls: list[ToolUseBlock]) -> list[dict[str, Any] | None]:
        """Run *calls* (one acting step each) and make sure each ends with a result in memory,
        in call order, whatever happens."""
        run = self._run
        recorded: set[str] = set()
        run.recorded_ids = recorded
        try:
            if not self.parallel_tool_calls or len(calls) == 1:
                outputs: list[dict[str, Any] | None] = []
                try:
                    for call in calls:
                        outputs.append(await self._acting(tool_call=call))
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        for call in calls:
                            if call.id not in recorded:
                                await self._record(_interrupted_result(call))
                    raise
                return outputs

            deferred: dict[str, Msg] = {}
            slots: list[dict[str, Any] | None] = [None] * len(calls)
            run.deferred = deferred

            async def act_one(index: int, call: ToolUseBlock) -> None:
                slots[index] = await self._acting(tool_call=call)

            try:
                async with anyio.create_task_group() as tg:
                    for index, call in enumerate(calls):
                        tg.start_soon(act_one, index, call)
            except BaseException as exc:
                run.deferred = None
                with anyio.CancelScope(shield=True):
                    await self._record_in_order(calls, deferred)
                if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                    raise exc.exceptions[0] from None
                raise
            run.deferred = None
            await self._record_in_order(calls, deferred)
            return slots
        finally:
            run.recorded_ids = NOT_ACTING

    async def _record_in_order(self, calls: list[ToolUseBlock], deferred: dict[str, Msg]) -> None:
        for call in calls:
            result = deferred.get(call.id)
            await self._record(result if result is not None else _interrupted_result(call))

    async def _acting(self, tool_call: ToolUseBlock) -> dict[str, Any] | None:
        """Run one tool call, print its result chunks and record the result (also when the
        call is interrupted, with the interrupt notice).

        :returns: the validated structured output when this was a successful call of the
            finish function, else ``None``.
        """
        res_msg = _result_msg(tool_call, [])
        block: ToolResultBlock = res_msg.content[0]  # type: ignore[assignment]
        is_finish = tool_call.name == self.finish_function_name
        structured: dict[str, Any] | None = None
        last: ToolResponse | None = None
        completed = False
        try:
            async for chunk in self.toolkit.call_tool_function(tool_call):
                last = chunk
                block.output = _tool_blocks(chunk.content)
                await self.print(res_msg, chunk.is_last)
                if is_finish and (metadata := _success_metadata(chunk)) is not None:
                    structured = metadata.get("structured_output")
            completed = True
        finally:
            if completed:
                await self._record_result(tool_call, res_msg)
            else:
                block.output = _interrupted_output(last)
                with anyio.CancelScope(shield=True):
                    await self._record_result(tool_call, res_msg)
        if last is not None and last.is_interrupted:
            # A tool reported an interrupt by itself: treat it as the user's, as AgentScope does.
            self.interrupt()
            await anyio.lowlevel.checkpoint()
        return structured

    async def _record_result(self, tool_call: ToolUseBlock, res_msg: Msg) -> None:
        run = self._run
        deferred = run.deferred
        if deferred is not None:
            deferred[tool_call.id] = res_msg
        else:
            await self._record(res_msg)
        if run.recorded_ids is not NOT_ACTING:
            run.recorded_ids.add(tool_call.id)

    # -- the finish function -------------------------------------------------------------

    def generate_response(self, **kwargs: Any) -> ToolResponse:
        """Generate the required structured output by calling this function with its fields;
        it checks them and ends the task."""
        model = self._run.structured_model
        if model is None:
            logger.warning(
                "%s: %s was called while no structured output is required",
                self.name,
                self.finish_function_name,
            )
            structured_output = None
        else:
            try:
                structured_output = validate_structured_output(model, kwargs)
            except StructuredOutputError as exc:
                return ToolResponse(
                    content=[TextBlock(text=f"Arguments Validation Error: {exc}")],
                    metadata={"success": False, "structured_output": {}},
                )
        return ToolResponse(
            content=[TextBlock(text="Successfully generated response.")],
            metadata={"success": True, "structured_output": structured_output},
            is_last=True,
        )

    # -- summarising, interrupts, observing ----------------------------------------------

    async def _summarizing(self) -> Msg:
        """One model call without tools asking for a summary of the situation (used when
        ``max_iters`` is exhausted); see :func:`._react_summary.summarize`."""
        return await summarize(self)

    async def _receive(
        self, res: ChatResponse | AsyncGenerator[ChatResponse, None], msg: Msg
    ) -> None:
        """Fill *msg* from a model response, printing stream chunks as they arrive and adding
        the usage; with a TTS model the text is also spoken (see
        :func:`._react_speech.speak_rest`). *msg* holds everything received so far even if
        this is cancelled part-way, so an interrupted reasoning step can record it."""
        tts = self.tts_model
        speech: AudioBlock | list[AudioBlock] | None = None
        if tts is None:
            if isinstance(res, ChatResponse):
                # A whole (not streamed) response: its content and id go to msg, its usage is
                # added (written out twice: a method would be one more call per reply).
                msg.invocation_id = res.id
                msg.content = _model_blocks(res.content)
                self._add_usage(res.usage)
            else:
                speech = await receive_stream(self, res, msg, None)
            # As in AgentScope, the last chunk's audio goes with the final print of a stream
            # (a whole response prints without speech).
            if speech is None:
                await self.print(msg, True)
            else:
                await self.print(msg, True, speech=speech)
            return
        # An interrupt cancels the synthesis with the reply (the TTS model's connection closes
        # on the way out of ``async with``).
        async with tts:
            if isinstance(res, ChatResponse):
                msg.invocation_id = res.id
                msg.content = _model_blocks(res.content)
                self._add_usage(res.usage)
            else:
                speech = await receive_stream(self, res, msg, tts)
            await speak_rest(self, msg, tts, speech)

    def interrupt(self, msg: Msg | list[Msg] | None = None) -> Any:
        """Interrupt the reply in progress (see :meth:`AgentBase.interrupt`), which stops its
        speech synthesis, and cut off the speech player's audio, also when the reply has
        ended but its speech still plays."""
        requested = super().interrupt(msg)
        player = self.speech_player
        if player is not None:
            player.stop()
        return requested

    async def handle_interrupt(
        self,
        msg: Msg | list[Msg] | None = None,
        structured_model: StructuredModel | None = None,
    ) -> Msg:
        """The answer to an interrupted reply, as AgentScope's: "I noticed that you have
        interrupted me. What can I do for you?" with ``metadata`` ``{"_is_interrupted": True}``,
        printed and recorded in memory. *msg* and *structured_model* are the interrupted
        call's arguments (unused here, as in AgentScope). Override it to answer differently."""
        response = Msg(self.name, _INTERRUPT_REPLY, "assistant", metadata={"_is_interrupted": True})
        await self.print(response, True)
        await self.memory.add(response)
        if self._durable is not None:
            await self._durable.finish()
        return response

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Restore a saved state (see :meth:`StateModule.load_state_dict`).

        A state saved while a tool call ran holds the call without its result, which
        providers reject. The next reply therefore first gives each such call in memory the
        result an interrupted call gets (through the memory's public API, so a database memory
        is settled too); calls held back by :meth:`request_stop` in this process are left.
        """
        super().load_state_dict(state_dict, strict)
        self._run.after_load = True

    async def _answer_loaded_calls(self) -> None:
        """Answer the tool calls a loaded memory holds without result, as an interrupt does."""
        run = self._run
        held = {call.id for call in _tool_calls(run.pending)} if run.pending is not None else ()
        calls = [c for c in unanswered_calls(await self.memory.get_memory()) if c.id not in held]
        if calls:
            logger.info(
                "%s: %d tool call(s) in the loaded memory had no result; recording them as "
                "interrupted",
                self.name,
                len(calls),
            )
            await self.memory.add([_interrupted_result(call) for call in calls])
        # Only once they are recorded: a reply cancelled before then checks again.
        run.after_load = False

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        """Record *msg* in memory without replying."""
        await self.memory.add(msg)

    # -- retrieval and compression (AgentScope's method names, overridable) --------------

    async def _retrieve_from_long_term_memory(self, msg: Msg | list[Msg] | None) -> None:
        await retrieve_from_long_term_memory(self, msg)

    async def _retrieve_from_knowledge(self, msg: Msg | list[Msg] | None) -> None:
        await retrieve_from_knowledge(self, msg)

    async def _rewrite_query(self, query: str) -> str:
        """Ask the model for a more specific query; keep *query* if that fails."""
        return await rewrite_query(self, query)

    async def _compress_memory_if_needed(self) -> None:
        """Summarise the older uncompressed messages when they exceed the token threshold."""
        await compress_memory_if_needed(self, self.compression_config)
