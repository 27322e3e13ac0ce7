"""A provider that accepts the request and never answers, on every provider's client.

A hung provider must not hang the agent: an interrupt ends the reply at once with the
interrupt reply (memory consistent), an enclosing timeout propagates as a timeout, and the
agent then works normally against a server that answers.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import anyio
import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import Msg

from ._providers import NO_RETRY, PROVIDERS, Provider

BOUND_S = 20  # only turns a hang into a failure


class SilentServer:
    """Accepts connections on 127.0.0.1, reads what comes, and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.05)  # the accept loop checks for the end this often
        self.stopped = threading.Event()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = threading.Event()
        self.open: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.open.append(conn)
            self.accepted.set()

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.sock.close()
        for conn in self.open:
            conn.close()


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def _agent(provider: Provider, url: str) -> ReActAgent:
    agent = ReActAgent(
        name="Friday",
        sys_prompt="",
        model=provider.model(url, NO_RETRY),
        formatter=provider.formatter(),
    )
    agent.set_console_output_enabled(False)
    return agent


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("name", PROVIDERS)
async def test_an_interrupt_ends_a_reply_waiting_on_a_silent_provider(
    name: str, stream: bool, silent: SilentServer
) -> None:
    agent = _agent(Provider(name, stream), silent.url)

    async def interrupt_once_sent() -> None:
        await anyio.to_thread.run_sync(silent.accepted.wait)
        await anyio.sleep(0.05)
        agent.interrupt()

    with anyio.fail_after(BOUND_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(interrupt_once_sent)
            reply = await agent(Msg("user", "hello?", "user"))
    assert reply.metadata == {"_is_interrupted": True}
    assert [m.role for m in await agent.memory.get_memory()] == ["user", "assistant"]
    await agent.model.aclose()


@pytest.mark.parametrize("name", PROVIDERS)
async def test_an_outer_timeout_on_a_silent_provider_stays_a_timeout(
    name: str, silent: SilentServer
) -> None:
    agent = _agent(Provider(name, False), silent.url)
    with pytest.raises(TimeoutError), anyio.fail_after(0.5):
        await agent(Msg("user", "hello?", "user"))
    # Nothing half-finished was recorded, and the agent takes the next call.
    assert [m.role for m in await agent.memory.get_memory()] == ["user"]
    with pytest.raises(TimeoutError), anyio.fail_after(0.5):
        await agent(Msg("user", "still there?", "user"))
    await agent.model.aclose()
