"""A2AServer with an agent factory: one agent per context, evicted when idle or beyond the count
limit (never while a task runs in it), saved to a session and loaded again when it returns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_rt.a2a import A2AServer
from agentscope_rt.agent import AgentBase
from agentscope_rt.session import JSONSession

from .test_a2a_server import Counter, Sleeper, _call, _immediately, _rpc, _send, _serve

TIMEOUT_S = 30


class Remembering(Counter):
    """A Counter whose count is its saved state."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.register_state("replies")


def _text(answer: dict[str, Any]) -> str:
    return str(answer["result"]["task"]["status"]["message"]["parts"][0]["text"])


async def _eventually(check: Callable[[], bool]) -> None:
    with anyio.fail_after(TIMEOUT_S):
        while True:
            if check():
                return
            await anyio.sleep(0.02)


async def _send_in(url: str, context_id: str) -> str:
    with anyio.fail_after(TIMEOUT_S):
        return _text(await _rpc(url, _send("SendMessage", "x", contextId=context_id)))


async def test_one_shot_contexts_do_not_pile_up() -> None:
    made: list[AgentBase] = []

    def factory(context_id: str) -> Counter:
        made.append(Counter(context_id))
        return made[-1]

    server = A2AServer(factory, max_contexts=20)
    async for url in _serve(server):
        for index in range(150):
            assert await _send_in(url, f"one-shot-{index}") == f"one-shot-{index} #1"
        assert len(made) == 150
        assert server._contexts is not None and len(server._contexts) <= 20
    # An evicted agent keeps no hook of the server's (nor does the server keep it).
    assert all(agent._instance_hooks == {} for agent in made[:-20])


async def test_idle_contexts_are_evicted() -> None:
    server = A2AServer(lambda context_id: Counter(context_id), context_idle_s=0.2)
    async for url in _serve(server):
        for context_id in ("a", "b", "c"):
            await _send_in(url, context_id)
        assert server._contexts is not None
        contexts = server._contexts
        await _eventually(lambda c=contexts: len(c) == 0)
        # A context that returns starts afresh (no session).
        assert await _send_in(url, "a") == "a #1"


async def test_an_evicted_context_carries_on_from_the_session(tmp_path: Path) -> None:
    session = JSONSession(save_dir=str(tmp_path))
    server = A2AServer(lambda context_id: Remembering(context_id), max_contexts=1, session=session)
    async for url in _serve(server):
        assert [await _send_in(url, "alice") for _ in range(2)] == ["alice #1", "alice #2"]
        assert await _send_in(url, "bob") == "bob #1"  # alice is evicted, and saved
        assert await _send_in(url, "alice") == "alice #3"
        assert await _send_in(url, "bob") == "bob #2"
    saved = {path.stem async for path in anyio.Path(tmp_path).iterdir()}
    assert saved >= {"alice", "bob"}


async def test_a_context_with_a_running_task_is_never_evicted() -> None:
    sleeper = Sleeper()

    def factory(context_id: str) -> AgentBase:
        return sleeper if context_id == "busy" else Counter(context_id)

    server = A2AServer(factory, max_contexts=1, context_idle_s=0.1)
    async for url in _serve(server):
        assert server._contexts is not None
        kept = server._contexts._contexts
        with anyio.fail_after(TIMEOUT_S):
            busy = await _rpc(url, _immediately(_send("SendMessage", "x", contextId="busy")))
            await _eventually(lambda: sleeper.started == 1)
            for context_id in ("a", "b", "c"):
                await _send_in(url, context_id)
            await anyio.sleep(0.3)  # past the idle limit too
            assert "busy" in kept
            await _rpc(url, _call("CancelTask", id=busy["result"]["task"]["id"]))
        await _eventually(lambda k=kept: "busy" not in k)


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        A2AServer(Counter("c"), max_contexts=0)
    with pytest.raises(ValueError, match="must be positive"):
        A2AServer(Counter("c"), max_body_bytes=0)
