"""What every streaming chat model does alike with its stream, written once and run for each
provider against the scripted server speaking its protocol: chunks arrive as the server sends
them, and a consumer that stops reading (closing the stream early or cancelled while waiting)
closes the connection.

Each provider is a row of :data:`PROVIDERS`: its streaming model, the messages it takes, its
stream of text pieces and how many events of that stream come up to the first piece. Test ids
name the provider.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, aclosing
from typing import Any

import anyio
import attrs
import pytest

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

    :ivar model: the provider's streaming model on the server's URL, used in ``async with``.
    :ivar messages: a conversation in the provider's format.
    :ivar events: the events streaming text *pieces*.
    :ivar first_piece_at: how many events are sent up to and including the first piece.
    :ivar content_type: the stream's content type.
    :ivar server: the server class that plays the provider.
    """

    name: str
    model: Callable[[str], Model]
    messages: list[dict[str, Any]]
    events: Callable[[list[str]], list[str]]
    first_piece_at: int
    content_type: str = "text/event-stream"
    server: type[WireServer] = WireServer

    def reply(self, pieces: list[str], **kwargs: Any) -> Reply:
        """A scripted answer streaming *pieces*."""
        events: list[str | bytes] = [*self.events(pieces)]
        return Reply(events=events, content_type=self.content_type, **kwargs)


def _gemini_events(pieces: list[str]) -> list[str]:
    responses = [gemini_response({"text": piece}) for piece in pieces[:-1]]
    responses.append(gemini_response({"text": pieces[-1]}, prompt_tokens=1))
    return gemini_events(*responses)


PROVIDERS = [
    Provider(
        "openai",
        lambda url: sdk_model(OpenAIChatModel, "gpt-test", KEY, url + "/v1", True),
        TERSE_CHAT,
        openai_text_stream,
        2,  # the role, then the first piece
    ),
    Provider(
        "openai-response",
        lambda url: sdk_model(OpenAIResponseModel, "o4-test", KEY, url + "/v1", True),
        [{"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}],
        lambda pieces: response_events([Message(pieces)]),
        5,  # created, in progress, item added, part added, then the first piece
        server=ResponsesServer,
    ),
    Provider(
        "anthropic",
        lambda url: sdk_model(AnthropicChatModel, "claude-test", KEY, url, True),
        [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
        lambda pieces: anthropic_stream([("text", pieces)]),
        3,  # the message's start, the block's start, then the first piece
    ),
    Provider(
        "gemini",
        lambda url: GeminiChatModel(
            "gemini-2.5-flash",
            api_key=KEY,
            stream=True,
            client_kwargs={"base_url": url},
            retry_config=FAST,
        ),
        [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}],
        _gemini_events,
        1,
    ),
    Provider(
        "ollama",
        lambda url: OllamaChatModel("qwen3:0.6b", stream=True, host=url, retry_config=FAST),
        TERSE_CHAT,
        lambda pieces: ndjson(*[ollama_chunk(p) for p in pieces], ollama_chunk("", done=True)),
        1,
        "application/x-ndjson",
    ),
]


@pytest.fixture(params=PROVIDERS, ids=[p.name for p in PROVIDERS])
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def server(provider: Provider) -> Iterator[WireServer]:
    with provider.server() as running:
        yield running


async def _stream(model: ChatModelBase, provider: Provider) -> AsyncGenerator[Any, None]:
    stream = await model(provider.messages)
    assert isinstance(stream, AsyncGenerator)
    return stream


async def test_stream_is_incremental(provider: Provider, server: WireServer) -> None:
    # The server sends up to the first piece, then waits for the test: that piece must
    # arrive first.
    server.add(provider.reply(["first", " second"], gate_after=provider.first_piece_at))
    async with provider.model(server.url) as model:
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
    async with provider.model(server.url) as model:
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
    async with provider.model(server.url) as model:
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
