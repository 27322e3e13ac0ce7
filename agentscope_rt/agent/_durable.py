"""Durable replies: a ReAct agent that survives the death of its process mid-reply.

``agent.checkpoint_to(session, session_id)`` makes every reply of the agent save the agent's
state to *session* after every completed reasoning step, after every completed tool result,
and when it ends (normally or interrupted). A new process that builds
the same agent, calls ``checkpoint_to`` with the same session and id, and calls the agent with
the same input (or with none) resumes the reply where the dead one stopped:

* what was recorded stays recorded: a completed reasoning step is not asked for again and a
  completed tool call is not run again;
* a tool call that was running when the process died gets a result saying it was cut off by a
  restart (it may or may not have taken effect), so every tool call in memory keeps its result;
* tool calls of that step that had not started yet are run; the loop then goes on as usual.

What a checkpoint holds: the agent's whole state (memory, toolkit groups, name, system prompt,
and any sub-module such as a plan notebook) and a small progress record (whether a reply is
under way, its input, and the results of parallel tool calls that finished before their
siblings and are recorded in memory only when all are done, in call order). Each save goes
through the session, so it is atomic: a kill during a save leaves the previous checkpoint.

Costs and limits: each checkpoint saves the whole agent state, so a step costs one session
save (see ``bench/bench_persistence.py`` for the figure); the session id is the durable
reply's own (a checkpoint replaces everything stored under it); a resumed reply counts its
iterations (``max_iters``) afresh; a resumed call with a structured model must pass it again.

This module sits in the agent layer and imports no session class: *session* is anything with
AgentScope's ``save_session_state`` / ``load_session_state`` coroutine methods.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..message import Msg, ToolResultBlock, ToolUseBlock
from ..message._msg import owned_msg
from ..module import StateModule

if TYPE_CHECKING:
    from ._react_agent import ReActAgent

__all__ = ["CUT_OFF_TEXT", "DurableReplies", "SessionLike"]

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
        self.input: list[dict[str, Any]] = []
        self.completed_results: list[dict[str, Any]] = []
        self.register_state("in_progress")
        self.register_state("input")
        self.register_state("completed_results")


def _content_key(msg: dict[str, Any]) -> tuple[Any, ...]:
    # Who said what: a rebuilt input message has a new id and timestamp but the same content.
    return (msg.get("name"), msg.get("role"), msg.get("content"))


def _as_list(msg: Msg | list[Msg] | None) -> list[Msg]:
    if msg is None:
        return []
    return list(msg) if isinstance(msg, list) else [msg]


class DurableReplies:
    """The checkpointing of one agent (built by :meth:`ReActAgent.checkpoint_to`)."""

    def __init__(self, agent: ReActAgent, session: SessionLike, session_id: str, user_id: str):
        for method in ("save_session_state", "load_session_state"):
            if not callable(getattr(session, method, None)):
                raise TypeError(
                    f"checkpoint_to needs a session with an async {method}() (JSONSession, "
                    f"SQLiteSession, RedisSession, ...), not {type(session).__name__}"
                )
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("checkpoint_to needs a non-empty session_id")
        self.agent = agent
        self.session = session
        self.session_id = session_id
        self.user_id = user_id
        self.progress = ReplyProgress()
        self.loaded = False
        self._lock: anyio.Lock | None = None
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

        async def after_reply(_agent: Any, _kwargs: dict[str, Any], _output: Any) -> None:
            await self.finish()

        agent.register_instance_hook("post_reasoning", _HOOK_NAME, after_step)
        agent.register_instance_hook("post_acting", _HOOK_NAME, after_step)
        agent.register_instance_hook("post_reply", _HOOK_NAME, after_reply)

    def remove(self) -> None:
        """Stop checkpointing (the hooks are removed; what was saved stays)."""
        for hook_type in ("post_reasoning", "post_acting", "post_reply"):
            self.agent.remove_instance_hook(hook_type, _HOOK_NAME)

    async def checkpoint(self) -> None:
        """Save the agent and the reply's progress, one save at a time and in order."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            deferred = self.agent._run.deferred
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

    async def finish(self) -> None:
        """The reply ended (answered or interrupted): nothing is left to resume."""
        self.progress.in_progress = False
        self.progress.input = []
        await self.checkpoint()

    # -- starting and resuming -----------------------------------------------------------

    async def begin(self, msg: Msg | list[Msg] | None) -> tuple[Msg | list[Msg] | None, Msg | None]:
        """Called as a reply starts; returns ``(msg_to_use, finished_reply)``.

        The first reply after :meth:`ReActAgent.checkpoint_to` loads the checkpoint. When it
        shows a reply under way whose input is *msg* (or *msg* is None), that reply is resumed:
        the input is not recorded again (``msg_to_use`` is None), dangling tool calls are
        settled, and the calls still to run are handed to the loop; if the dead process had
        already recorded the final answer, that answer is returned as ``finished_reply`` and
        nothing runs again. Otherwise a stale unfinished reply is closed (its dangling calls
        get the cut-off result) and *msg* starts a new reply.
        """
        finished: Msg | None = None
        resuming = False
        if not self.loaded:
            self.loaded = True
            modules: dict[str, StateModule] = {AGENT_KEY: self.agent, PROGRESS_KEY: self.progress}
            await self.session.load_session_state(
                self.session_id, **self._arguments(allow_not_exist=True, **modules)
            )
            if self.progress.in_progress:
                recorded = [_content_key(m) for m in self.progress.input]
                given = [_content_key(m.to_dict()) for m in _as_list(msg)]
                resuming = msg is None or given == recorded
                await self._settle(run_remaining=resuming)
                if resuming:
                    logger.info(
                        "%s: resuming the reply saved in session %r",
                        self.agent.name,
                        self.session_id,
                    )
                    msg = None
                    finished = await self._final_answer()
        if not resuming:
            # Saved with the first checkpoint (after the first reasoning step): a process that
            # dies before then has recorded nothing, and a new one simply starts the reply.
            self.progress.in_progress = True
            self.progress.input = [m.to_dict() for m in _as_list(msg)]
        return msg, finished

    async def _final_answer(self) -> Msg | None:
        """The agent's last message when it is a final answer (no tool call), else None."""
        if self.agent._run.pending is not None:
            return None
        messages = await self.agent.memory.get_memory()
        if not messages:
            return None
        last = messages[-1]
        is_answer = last.role == "assistant" and last.name == self.agent.name
        return last if is_answer and not last.has_content_blocks("tool_use") else None

    async def _settle(self, run_remaining: bool) -> None:
        """Give every tool call in memory a result, except those left for the loop to run."""
        agent = self.agent
        memory = agent.memory
        for data in self.progress.completed_results:
            await memory.add(Msg.from_dict(data))
        self.progress.completed_results = []
        messages = await memory.get_memory()
        answered = {
            block.id
            for m in messages
            for block in m.get_content_blocks("tool_result")
            if isinstance(block, ToolResultBlock)
        }
        dangling = [
            block
            for m in messages
            for block in m.get_content_blocks("tool_use")
            if isinstance(block, ToolUseBlock) and block.id not in answered
        ]
        if not dangling:
            return
        # Sequential calls run in order, so only the first unanswered one can have been
        # running; parallel calls may all have been.
        running = dangling if agent.parallel_tool_calls or not run_remaining else dangling[:1]
        for call in running:
            await memory.add(
                owned_msg(
                    "system",
                    [ToolResultBlock(id=call.id, name=call.name, output=CUT_OFF_TEXT)],
                    "system",
                )
            )
        remaining = dangling[len(running) :]
        if remaining:
            agent._run.pending = owned_msg(agent.name, list(remaining), "assistant")
