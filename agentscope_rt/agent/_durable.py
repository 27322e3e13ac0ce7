"""Durable replies: a ReAct agent that survives the death of its process mid-reply.

``agent.checkpoint_to(session, session_id)`` makes every reply of the agent save the agent's
state to *session* as it starts (before its input is recorded), after every completed
reasoning step, after every completed tool result, and when it ends (normally or
interrupted). A new process that builds the same agent, calls ``checkpoint_to`` with the same
session and id, and calls the agent with the same input (or with none) resumes the reply where
the dead one stopped:

* what was recorded stays recorded: the input is recorded once, a completed reasoning step is
  not asked for again and a completed tool call is not run again;
* a tool call that was running when the process died gets a result saying it was cut off by a
  restart (it may or may not have taken effect), so every tool call in memory keeps exactly one
  result;
* tool calls of that step that had not started yet are run; the loop then goes on as usual;
* a reply that had ended with an answer (the process died before the caller got it) is not
  started again: its answer is returned.

A memory kept outside the checkpoint (a database memory) may hold more than the last
checkpoint: what it holds is taken as recorded (a tool result it holds answers its call, which
is not run again), and the checkpoint adds only what it is missing.

What a checkpoint holds: the agent's whole state (memory, toolkit groups, name, system prompt,
and any sub-module such as a plan notebook) and a small progress record (whether a reply is
under way, its input, the results of parallel tool calls that finished before their siblings
and are recorded in memory only when all are done, in call order, and the last reply's answer).
Each save goes through the session, so it is atomic: a kill during a save leaves the previous
checkpoint.

Costs and limits: each checkpoint saves the whole agent state, so a step costs one session
save and a reply one more (see ``bench/bench_persistence.py`` for the figure); the session id
is the durable reply's own (a checkpoint replaces everything stored under it); a resumed reply
counts its iterations (``max_iters``) afresh; a resumed call with a structured model must pass
it again.

This module sits in the agent layer and imports no session class: *session* is anything with
AgentScope's ``save_session_state`` / ``load_session_state`` coroutine methods.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from .._locks import FairLock
from ..message import Msg, ToolResultBlock, ToolUseBlock
from ..module import StateModule
from ._generate_reason import GenerateReason
from ._react_state import ReplyState

if TYPE_CHECKING:
    from ._react_agent import ReActAgent

__all__ = ["CUT_OFF_TEXT", "DurableReplies", "SessionLike", "unanswered_calls"]

logger = logging.getLogger("agentscope_rt.agent")

CUT_OFF_TEXT = (
    "<system-info>This tool call was cut off by a restart of the agent's process before it "
    "returned; it may or may not have taken effect. Check before calling it again."
    "</system-info>"
)
"""The result recorded for a tool call that was running when the process died."""

AGENT_KEY = "agent"
PROGRESS_KEY = "_reply_progress"
_HOOK_NAME = "durable_checkpoint"


class SessionLike(Protocol):
    """What a durable agent needs of a session (every ``SessionBase`` has it)."""

    async def save_session_state(
        self, session_id: str, user_id: str = "", **state_modules_mapping: StateModule
    ) -> None: ...

    async def load_session_state(
        self,
        session_id: str,
        user_id: str = "",
        allow_not_exist: bool = True,
        **state_modules_mapping: StateModule,
    ) -> None: ...


class ReplyProgress(StateModule):
    """Where a reply stands, saved beside the agent at every checkpoint."""

    def __init__(self) -> None:
        super().__init__()
        self.in_progress = False
        # The input of the reply under way, or of the last one once it ended.
        self.input: list[dict[str, Any]] = []
        self.completed_results: list[dict[str, Any]] = []
        # The last reply's answer and why it ended ({"reply": Msg dict, "reason": str}) once
        # it ended with one; None while a reply is under way or after an interrupt.
        self.answer: dict[str, Any] | None = None
        self.register_state("in_progress")
        self.register_state("input")
        self.register_state("completed_results")
        self.register_state("answer")

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Load a saved progress record; one saved before answers were kept has no answer."""
        if isinstance(state_dict, dict) and "answer" not in state_dict:
            state_dict = {**state_dict, "answer": None}
        super().load_state_dict(state_dict, strict)


def _content_key(msg: dict[str, Any]) -> tuple[Any, ...]:
    # Who said what: a rebuilt input message has a new id and timestamp but the same content.
    return (msg.get("name"), msg.get("role"), msg.get("content"))


def _as_list(msg: Msg | list[Msg] | None) -> list[Msg]:
    if msg is None:
        return []
    return list(msg) if isinstance(msg, list) else [msg]


class DurableReplies:
    """The checkpointing of one agent (built by :meth:`ReActAgent.checkpoint_to`, which hands
    over *run*, the agent's :class:`ReplyState`: the results of parallel calls not yet recorded
    are read there, and the calls a resumed reply still has to run are left there)."""

    def __init__(
        self,
        agent: ReActAgent,
        run: ReplyState,
        session: SessionLike,
        session_id: str,
        user_id: str,
    ):
        for method in ("save_session_state", "load_session_state"):
            if not callable(getattr(session, method, None)):
                raise TypeError(
                    f"checkpoint_to needs a session with an async {method}() (JSONSession, "
                    f"SQLiteSession, RedisSession, ...), not {type(session).__name__}"
                )
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("checkpoint_to needs a non-empty session_id")
        self.agent = agent
        self.run = run
        self.session = session
        self.session_id = session_id
        self.user_id = user_id
        self.progress = ReplyProgress()
        self.loaded = False
        self._lock = FairLock()
        self._install_hooks()

    def _arguments(self, **arguments: Any) -> dict[str, Any]:
        """*arguments* for a session call, with ``user_id`` only when one was given: a session
        written for AgentScope may take none (its SQLite example's takes ``session_id`` and the
        modules only)."""
        return {"user_id": self.user_id, **arguments} if self.user_id else arguments

    # -- saving ------------------------------------------------------------------------

    def _install_hooks(self) -> None:
        agent = self.agent

        async def after_step(_agent: Any, _kwargs: dict[str, Any], _output: Any) -> None:
            await self.checkpoint()

        async def after_reply(_agent: Any, _kwargs: dict[str, Any], output: Any) -> None:
            await self.finish(output if isinstance(output, Msg) else None)

        agent.register_instance_hook("post_reasoning", _HOOK_NAME, after_step)
        agent.register_instance_hook("post_acting", _HOOK_NAME, after_step)
        agent.register_instance_hook("post_reply", _HOOK_NAME, after_reply)

    def remove(self) -> None:
        """Stop checkpointing (the hooks are removed; what was saved stays)."""
        for hook_type in ("post_reasoning", "post_acting", "post_reply"):
            self.agent.remove_instance_hook(hook_type, _HOOK_NAME)

    async def checkpoint(self) -> None:
        """Save the agent and the reply's progress, one save at a time and in order."""
        async with self._lock:
            deferred = self.run.deferred
            self.progress.completed_results = (
                [msg.to_dict() for msg in deferred.values()] if deferred else []
            )
            # A kill must never find half a checkpoint: the save is atomic, and it is finished
            # even when the reply is being cancelled meanwhile.
            with anyio.CancelScope(shield=True):
                await self.session.save_session_state(
                    self.session_id,
                    **self._arguments(**{AGENT_KEY: self.agent, PROGRESS_KEY: self.progress}),
                )

    async def finish(self, answer: Msg | None = None) -> None:
        """The reply ended, with *answer* or interrupted (``None``): nothing is left to resume.

        The answer is kept (until the next reply starts) so that a new process calling the
        agent with the same input gets it back instead of starting the reply again.
        """
        progress = self.progress
        progress.in_progress = False
        progress.answer = (
            None
            if answer is None
            else {
                "reply": answer.to_dict(),
                "reason": str(self.agent.generate_reason or GenerateReason.MODEL_STOP),
            }
        )
        await self.checkpoint()

    # -- starting and resuming -----------------------------------------------------------

    async def begin(
        self, msg: Msg | list[Msg] | None
    ) -> tuple[Msg | list[Msg] | None, Msg | None, GenerateReason]:
        """Called as a reply starts; returns ``(msg_to_use, finished_reply, its_reason)``.

        The first reply after :meth:`ReActAgent.checkpoint_to` loads the checkpoint. When it
        shows a reply under way whose input is *msg* (or *msg* is None), that reply is resumed:
        the input is not recorded again (``msg_to_use`` is None; when the dead process had not
        recorded it yet, the reply starts again with it), dangling tool calls are settled, and
        the calls still to run are handed to the loop; if the dead process had already recorded
        the final answer, or the last reply ended with an answer and *msg* is its input (or
        None), that answer is returned as ``finished_reply`` and nothing runs again. Otherwise a
        stale unfinished reply is closed (its dangling calls get the cut-off result) and *msg*
        starts a new reply, which is checkpointed before its input is recorded: a memory kept
        outside the checkpoint (a database) then never records the input twice.
        """
        if not self.loaded:
            self.loaded = True
            modules: dict[str, StateModule] = {AGENT_KEY: self.agent, PROGRESS_KEY: self.progress}
            await self.session.load_session_state(
                self.session_id, **self._arguments(allow_not_exist=True, **modules)
            )
            progress = self.progress
            same_input = msg is None or self._is_recorded_input(msg)
            if progress.in_progress and same_input:
                resumed, finished = await self._resume()
                if resumed:
                    return None, finished and finished.copy(), GenerateReason.MODEL_STOP
                msg = self._recorded_input()
            elif progress.in_progress:
                await self._settle(run_remaining=False)
            elif progress.answer is not None and same_input:
                answer = progress.answer
                logger.info(
                    "%s: the reply saved in session %r had ended; returning its answer",
                    self.agent.name,
                    self.session_id,
                )
                return None, Msg.from_dict(answer["reply"]), GenerateReason(answer["reason"])
        progress = self.progress
        progress.in_progress = True
        progress.input = [m.to_dict() for m in _as_list(msg)]
        progress.answer = None
        await self.checkpoint()
        return msg, None, GenerateReason.MODEL_STOP

    def _is_recorded_input(self, msg: Msg | list[Msg]) -> bool:
        recorded = [_content_key(m) for m in self.progress.input]
        return [_content_key(m.to_dict()) for m in _as_list(msg)] == recorded

    def _recorded_input(self) -> Msg | list[Msg] | None:
        """The input of the saved reply, with its ids (so a memory skips copies it holds)."""
        msgs = [Msg.from_dict(data) for data in self.progress.input]
        if not msgs:
            return None
        return msgs[0] if len(msgs) == 1 else msgs

    async def _resume(self) -> tuple[bool, Msg | None]:
        """Resume the saved reply: ``(True, its final answer or None)``; ``(False, None)``
        when its input is not in memory (the process died before the input was recorded, or
        before the first step with a memory saved in the checkpoint): nothing of the reply
        was kept, and it is to start again."""
        recorded = {data.get("id") for data in self.progress.input}
        if recorded:
            stored = {m.id for m in await self.agent.memory.get_memory()}
            if not recorded <= stored:
                return False, None
        await self._settle(run_remaining=True)
        logger.info("%s: resuming the reply saved in session %r", self.agent.name, self.session_id)
        return True, await self._final_answer()

    async def _final_answer(self) -> Msg | None:
        """The agent's last message when it is a final answer (no tool call), else None."""
        if self.run.pending is not None:
            return None
        messages = await self.agent.memory.get_memory()
        if not messages:
            return None
        last = messages[-1]
        is_answer = last.role == "assistant" and last.name == self.agent.name
        return last if is_answer and not last.has_content_blocks("tool_use") else None

    async def _settle(self, run_remaining: bool) -> None:
        """Give every tool call in memory a result, except those left for the loop to run.

        The memory may hold more than the checkpoint (a database memory keeps what was written
        after it): a call whose result it holds is answered and is not run again; results
        kept in the checkpoint only (parallel calls that finished before their siblings) are
        recorded in call order, each for a call still without one.
        """
        agent = self.agent
        memory = agent.memory
        completed: dict[str, Msg] = {}
        for data in self.progress.completed_results:
            result = Msg.from_dict(data)
            for block in result.get_content_blocks("tool_result"):
                if isinstance(block, ToolResultBlock):
                    completed.setdefault(block.id, result)
        self.progress.completed_results = []
        dangling = unanswered_calls(await memory.get_memory())
        finished = [completed[call.id] for call in dangling if call.id in completed]
        if finished:
            await memory.add(finished)
            dangling = [call for call in dangling if call.id not in completed]
        if not dangling:
            return
        # Sequential calls run in order, so only the first unanswered one can have been
        # running; parallel calls may all have been.
        running = dangling if agent.parallel_tool_calls or not run_remaining else dangling[:1]
        await memory.add(
            [
                Msg(
                    "system",
                    [ToolResultBlock(id=call.id, name=call.name, output=CUT_OFF_TEXT)],
                    "system",
                )
                for call in running
            ]
        )
        remaining = dangling[len(running) :]
        if remaining:
            self.run.pending = Msg(agent.name, list(remaining), "assistant")


def unanswered_calls(messages: list[Msg]) -> list[ToolUseBlock]:
    """The tool calls in *messages* that no tool result answers, in call order."""
    answered = {
        block.id
        for m in messages
        for block in m.get_content_blocks("tool_result")
        if isinstance(block, ToolResultBlock)
    }
    return [
        block
        for m in messages
        for block in m.get_content_blocks("tool_use")
        if isinstance(block, ToolUseBlock) and block.id not in answered
    ]
