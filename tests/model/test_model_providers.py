"""What every chat model does alike, written once and run for each provider of
:mod:`._providers` against the scripted server speaking its protocol: a server fault retried
until the budget is spent is a :class:`ModelAPIError` naming the provider and hiding the key; a
stream's chunks arrive as the server sends them, and a consumer that stops reading (closing the
stream early or cancelled while waiting) closes the connection. Test ids name the provider.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import anyio
import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.model import ChatModelBase

from ._providers import KEY, Provider, hello_messages, provider_url
from ._wire_servers import Reply, WireServer
from .conftest import FAST, collect

# Every SDK async generator must be closed explicitly: under trio one left to the garbage
# collector is reported as a ResourceWarning, which these tests turn into a failure.
pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

NAMES = ["openai", "openai-response", "dashscope", "anthropic", "gemini", "ollama"]
"""The providers whose text streams :meth:`Provider.text_stream` builds."""


@pytest.fixture(params=NAMES)
def provider(request: pytest.FixtureRequest) -> Provider:
    """The provider's streaming side."""
    return Provider(request.param, stream=True)


def _model(provider: Provider, wire: WireServer) -> ChatModelBase:
    return provider.model(provider_url(provider, wire), FAST)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("name", NAMES)
async def test_500_until_failure_names_the_provider_and_hides_the_key(
    name: str, stream: bool, wire: WireServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    provider = Provider(name, stream)
    # A server quoting the key it was sent, as some do in their error messages (Ollama's
    # model takes no key).
    message = "internal error" + ("" if name == "ollama" else f" for key {KEY}")
    wire.add(*[Reply(500, provider.error(message)) for _ in range(3)])
    async with _model(provider, wire) as model:
        with pytest.raises(ModelAPIError) as info:
            result = await model(hello_messages(provider))
            if stream:
                await collect(result)
    error = info.value
    assert (error.provider, error.status_code, error.attempts) == (provider.label, 500, 3)
    assert "internal error" in error.message and "internal error" in str(error)
    assert KEY not in str(error) and KEY not in repr(error) and KEY not in caplog.text
    assert len(wire.requests) == 3


async def _stream(model: ChatModelBase, provider: Provider) -> AsyncGenerator[Any, None]:
    stream = await model(hello_messages(provider))
    assert isinstance(stream, AsyncGenerator)
    return stream


async def test_stream_is_incremental(provider: Provider, wire: WireServer) -> None:
    # The server sends up to the first piece, then waits for the test: that piece must
    # arrive first.
    wire.add(provider.text_stream(["first", " second"], gate_after=provider.first_piece_at))
    async with _model(provider, wire) as model:
        stream = await _stream(model, provider)
        async with aclosing(stream):
            with anyio.fail_after(5):
                first = await stream.__anext__()
            assert first.get_text() == "first"
            assert wire.finished_streams == 0
            wire.gate.set()
            rest = await collect(stream)
    assert rest[-1].get_text() == "first second"


async def test_consumer_closing_early_closes_the_connection(
    provider: Provider, wire: WireServer
) -> None:
    wire.add(provider.text_stream([f"w{i} " for i in range(400)], interval=0.005))
    async with _model(provider, wire) as model:
        stream = await _stream(model, provider)
        async for chunk in stream:
            if len(chunk.get_text()) > 10:
                break
        await stream.aclose()
        assert await anyio.to_thread.run_sync(wire.disconnected.wait, 5)
    assert wire.finished_streams == 0


async def test_cancelled_consumer_closes_the_connection(
    provider: Provider, wire: WireServer
) -> None:
    # The server holds the rest back: the consumer is cancelled while it waits for it.
    wire.add(provider.text_stream(["first", "!"], gate_after=provider.first_piece_at))
    seen = []
    async with _model(provider, wire) as model:
        stream = await _stream(model, provider)
        with anyio.CancelScope() as waiting:
            async with aclosing(stream):
                async for chunk in stream:
                    seen.append(chunk.get_text())
                    waiting.deadline = anyio.current_time() + 0.1
        assert waiting.cancelled_caught
        assert await anyio.to_thread.run_sync(wire.disconnected.wait, 5)
    assert seen == ["first"]
    assert wire.finished_streams == 0
