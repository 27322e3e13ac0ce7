"""State-machine test: whatever happens, every tool_use in memory has exactly one tool_result,
after it.

Random sequences of plain replies, tool rounds (parallel or not, with failing, unknown, badly
called and slow tools), model failures, interrupts during the model call and during tools, and
hook-requested stops with resumption run against one agent (whose memory may yield to the
event loop on every write, as a storage doing I/O would); after every step the memory is
checked. The agent runs in an anyio blocking portal, once per backend.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
from typing import Any

import anyio
import anyio.from_thread
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import TextBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse, FunctionChatModel
from agentscope_rt.tool import Toolkit, ToolResponse

from ._support import CheckpointingMemory, history, make_agent, tool_pair_problems, user

_HANG = "hang"
_FAIL = "fail"


async def ok(x: int) -> ToolResponse:
    """Succeed.

    Args:
        x: a number.
    """
    return ToolResponse(content=[TextBlock(text=f"ok {x}")])


def boom(x: int) -> ToolResponse:
    """Fail.

    Args:
        x: a number.
    """
    raise ValueError(f"boom {x}")


async def slow(x: int) -> ToolResponse:
    """Hang until cancelled.

    Args:
        x: a number.
    """
    await anyio.sleep(30)
    return ToolResponse(content=[TextBlock(text="late")])


_TOOL_KINDS = st.sampled_from(["ok", "boom", "missing", "bad_args"])


class ReActMachine(RuleBasedStateMachine):
    portal: anyio.from_thread.BlockingPortal

    def __init__(self) -> None:
        super().__init__()
        self.plan: collections.deque[Any] = collections.deque()
        self.ids = itertools.count()
        self.agent: ReActAgent | None = None

    async def _model(self, messages: list[dict[str, Any]], tools: Any) -> Any:
        step = self.plan.popleft() if self.plan else "plain answer"
        if step == _HANG:
            await anyio.sleep(30)
        if step == _FAIL:
            raise ModelAPIError("test", "service unavailable", status_code=503)
        return step

    def _calls(self, kinds: list[str]) -> ChatResponse:
        blocks: list[Any] = []
        for kind in kinds:
            call_id = f"call{next(self.ids)}"
            if kind == "missing":
                blocks.append(ToolUseBlock(id=call_id, name="no_such_tool", input={}))
            elif kind == "bad_args":
                blocks.append(ToolUseBlock(id=call_id, name="ok", input={"x": "not a number"}))
            else:
                blocks.append(ToolUseBlock(id=call_id, name=kind, input={"x": 1}))
        return ChatResponse(content=blocks)

    @initialize(
        parallel=st.booleans(),
        stream=st.booleans(),
        max_iters=st.integers(1, 3),
        io_memory=st.booleans(),
    )
    def create(self, parallel: bool, stream: bool, max_iters: int, io_memory: bool) -> None:
        toolkit = Toolkit()
        for func in (ok, boom, slow):
            toolkit.register_tool_function(func)
        self.agent = make_agent(
            FunctionChatModel(self._model, stream=stream),
            toolkit,
            parallel_tool_calls=parallel,
            max_iters=max_iters,
            memory=CheckpointingMemory() if io_memory else None,
        )

    def _reply(self, interrupt_after: float | None = None) -> None:
        agent = self.agent
        assert agent is not None

        async def run() -> None:
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    if interrupt_after is not None:

                        async def later() -> None:
                            await anyio.sleep(interrupt_after)
                            agent.interrupt()

                        tg.start_soon(later)
                    with contextlib.suppress(ModelAPIError):
                        await agent(user("go"))
                    tg.cancel_scope.cancel()

        self.portal.call(run)
        self.plan.clear()

    @rule()
    def plain_reply(self) -> None:
        self.plan.append("just text")
        self._reply()

    @rule(kinds=st.lists(_TOOL_KINDS, min_size=1, max_size=3))
    def tool_round(self, kinds: list[str]) -> None:
        self.plan.extend([self._calls(kinds), "done"])
        self._reply()

    @rule(kinds=st.lists(_TOOL_KINDS, max_size=2), position=st.integers(0, 2))
    def interrupt_during_tools(self, kinds: list[str], position: int) -> None:
        kinds.insert(min(position, len(kinds)), "slow")
        self.plan.extend([self._calls(kinds), "never reached"])
        self._reply(interrupt_after=0.05)

    @rule()
    def interrupt_during_model(self) -> None:
        self.plan.append(_HANG)
        self._reply(interrupt_after=0.05)

    @rule(kinds=st.lists(_TOOL_KINDS, min_size=1, max_size=2))
    def model_fails_after_tools(self, kinds: list[str]) -> None:
        self.plan.extend([self._calls(kinds), _FAIL])
        self._reply()

    @rule(kinds=st.lists(_TOOL_KINDS, min_size=1, max_size=2), resume=st.booleans())
    def stop_after_reasoning(self, kinds: list[str], resume: bool) -> None:
        agent = self.agent
        assert agent is not None
        agent.register_instance_hook(
            "post_reasoning", "stop", lambda self, kw, out: self.request_stop()
        )
        try:
            self.plan.append(self._calls(kinds))
            self._reply()
        finally:
            agent.remove_instance_hook("post_reasoning", "stop")
        self.plan.append("resumed")
        if resume:
            self.portal.call(agent)
        else:
            self.portal.call(agent, user("do something else"))

    @invariant()
    def every_tool_use_has_exactly_one_result_after_it(self) -> None:
        if self.agent is None:
            return
        msgs = self.portal.call(history, self.agent.memory)
        assert tool_pair_problems(msgs) == []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_tool_results_always_match_tool_uses(backend: str) -> None:
    with anyio.from_thread.start_blocking_portal(backend) as portal:
        ReActMachine.portal = portal
        test_case = ReActMachine.TestCase
        test_case.settings = settings(max_examples=20, stateful_step_count=6, deadline=None)
        test_case().runTest()
