"""What every chat model does alike, written once and run for each provider against the
scripted server speaking its protocol: a server fault retried until the budget is spent is a
:class:`ModelAPIError` naming the provider and hiding the key; a stream's chunks arrive as the
server sends them, and a consumer that stops reading (closing the stream early or cancelled
while waiting) closes the connection.

Each provider is a row of :data:`PROVIDERS`: its model, the messages it takes, its error body,
its stream of text pieces and how many events of that stream come up to the first piece. Test
ids name the provider.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, aclosing
from typing import Any

import anyio
import attrs
import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.model import (
    AnthropicChatModel,
    ChatModelBase,
    GeminiChatModel,
    OllamaChatModel,
    OpenAIChatModel,
    OpenAIResponseModel,
)

from ._wire_servers import (
    Reply,
    WireServer,
    anthropic_stream,
    gemini_error,
    gemini_events,
    gemini_response,
    ndjson,
    ollama_chunk,
    openai_text_stream,
)
from ._wire_servers_responses import Message, ResponsesServer, response_events
from .conftest import FAST, TERSE_CHAT, collect, sdk_model

# Every SDK async generator must be closed explicitly: under trio one left to the garbage
# collector is reported as a ResourceWarning, which these tests turn into a failure.
pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

KEY = "sk-test-secret-0123456789"
Model = AbstractAsyncContextManager[ChatModelBase]


@attrs.frozen
class Provider:
    """One provider's streaming differences.

    :ivar label: the provider an error names.
    :ivar model: the provider's model (streaming or not) on the server's URL, used in
        ``async with``; it retries as :data:`FAST`.
    :ivar messages: a conversation in the provider's format.
    :ivar error: the provider's error body with a message.
    :ivar takes_key: whether the model is given :data:`KEY` (Ollama takes none).
    :ivar events: the events streaming text *pieces*.
    :ivar first_piece_at: how many events are sent up to and including the first piece.
    :ivar content_type: the stream's content type.
    :ivar server: the server class that plays the provider.
    """

    name: str
    label: str
    model: Callable[[str, bool], Model]
    messages: list[dict[str, Any]]
    error: Callable[[str], dict[str, Any]]
    events: Callable[[list[str]], list[str]]
    first_piece_at: int
    content_type: str = "text/event-stream"
    server: type[WireServer] = WireServer
    takes_key: bool = True

    def reply(self, pieces: list[str], **kwargs: Any) -> Reply:
        """A scripted answer streaming *pieces*."""
        events: list[str | bytes] = [*self.events(pieces)]
        return Reply(events=events, content_type=self.content_type, **kwargs)


def _gemini_events(pieces: list[str]) -> list[str]:
    responses = [gemini_response({"text": piece}) for piece in pieces[:-1]]
    responses.append(gemini_response({"text": pieces[-1]}, prompt_tokens=1))
    return gemini_events(*responses)


def _openai_error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "server_error"}}


PROVIDERS = [
    Provider(
        "openai",
        "openai",
        lambda url, stream: sdk_model(OpenAIChatModel, "gpt-test", KEY, url + "/v1", stream),
        TERSE_CHAT,
        _openai_error,
        openai_text_stream,
        2,  # the role, then the first piece
    ),
    Provider(
        "openai-response",
        "openai",
        lambda url, stream: sdk_model(OpenAIResponseModel, "o4-test", KEY, url + "/v1", stream),
        [{"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}],
        _openai_error,
        lambda pieces: response_events([Message(pieces)]),
        5,  # created, in progress, item added, part added, then the first piece
        server=ResponsesServer,
    ),
    Provider(
        "anthropic",
        "anthropic",
        lambda url, stream: sdk_model(AnthropicChatModel, "claude-test", KEY, url, stream),
        [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        lambda message: {"type": "error", "error": {"type": "api_error", "message": message}},
        lambda pieces: anthropic_stream([("text", pieces)]),
        3,  # the message's start, the block's start, then the first piece
    ),
    Provider(
        "gemini",
        "gemini",
        lambda url, stream: GeminiChatModel(
            "gemini-2.5-flash",
            api_key=KEY,
            stream=stream,
            client_kwargs={"base_url": url},
            retry_config=FAST,
        ),
        [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
        lambda message: gemini_error(500, message, "INTERNAL"),
        _gemini_events,
        1,
    ),
    Provider(
        "ollama",
        "ollama",
        lambda url, stream: OllamaChatModel(
            "qwen3:0.6b", stream=stream, host=url, retry_config=FAST
        ),
        TERSE_CHAT,
        lambda message: {"error": message},
        lambda pieces: ndjson(*[ollama_chunk(p) for p in pieces], ollama_chunk("", done=True)),
        1,
        "application/x-ndjson",
        takes_key=False,
    ),
]


@pytest.fixture(params=PROVIDERS, ids=[p.name for p in PROVIDERS])
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def server(provider: Provider) -> Iterator[WireServer]:
    with provider.server() as running:
        yield running


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
async def test_500_until_failure_names_the_provider_and_hides_the_key(
    provider: Provider, server: WireServer, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    # A server quoting the key it was sent, as some do in their error messages.
    message = f"internal error for key {KEY}" if provider.takes_key else "internal error"
    server.add(*[Reply(500, provider.error(message)) for _ in range(3)])
    async with provider.model(server.url, stream) as model:
        with pytest.raises(ModelAPIError) as info:
            result = await model(provider.messages)
            if stream:
                await collect(result)
    error = info.value
    assert (error.provider, error.status_code, error.attempts) == (provider.label, 500, 3)
    assert "internal error" in error.message and "internal error" in str(error)
    assert KEY not in str(error) and KEY not in repr(error) and KEY not in caplog.text
    assert len(server.requests) == 3


async def _stream(model: ChatModelBase, provider: Provider) -> AsyncGenerator[Any, None]:
    stream = await model(provider.messages)
    assert isinstance(stream, AsyncGenerator)
    return stream


async def test_stream_is_incremental(provider: Provider, server: WireServer) -> None:
    # The server sends up to the first piece, then waits for the test: that piece must
    # arrive first.
    server.add(provider.reply(["first", " second"], gate_after=provider.first_piece_at))
    async with provider.model(server.url, True) as model:
        stream = await _stream(model, provider)
        async with aclosing(stream):
            with anyio.fail_after(5):
                first = await stream.__anext__()
            assert first.get_text() == "first"
            assert server.finished_streams == 0
            server.gate.set()
            rest = await collect(stream)
    assert rest[-1].get_text() == "first second"


async def test_consumer_closing_early_closes_the_connection(
    provider: Provider, server: WireServer
) -> None:
    server.add(provider.reply([f"w{i} " for i in range(400)], interval=0.005))
    async with provider.model(server.url, True) as model:
        stream = await _stream(model, provider)
        async for chunk in stream:
            if len(chunk.get_text()) > 10:
                break
        await stream.aclose()
        assert await anyio.to_thread.run_sync(server.disconnected.wait, 5)
    assert server.finished_streams == 0


async def test_cancelled_consumer_closes_the_connection(
    provider: Provider, server: WireServer
) -> None:
    # The server holds the rest back: the consumer is cancelled while it waits for it.
    server.add(provider.reply(["first", "!"], gate_after=provider.first_piece_at))
    seen = []
    async with provider.model(server.url, True) as model:
        stream = await _stream(model, provider)
        with anyio.CancelScope() as waiting:
            async with aclosing(stream):
                async for chunk in stream:
                    seen.append(chunk.get_text())
                    waiting.deadline = anyio.current_time() + 0.1
        assert waiting.cancelled_caught
        assert await anyio.to_thread.run_sync(server.disconnected.wait, 5)
    assert seen == ["first"]
    assert server.finished_streams == 0
