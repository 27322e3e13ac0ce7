"""Fixtures and helpers shared by the model tests.

Servers: ``wire`` is the scripted :class:`WireServer` every provider's protocol is played on,
``server`` the one a test module talks to (``wire`` unless the module overrides it). Helpers
(retry policy, request payloads, model factories, stream collectors) are imported from here by
the test modules.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from typing import Any, TypeVar

import pytest

from agentscope_rt.model import ChatModelBase, ChatResponse, RetryConfig

from ._wire_servers import WireServer

M = TypeVar("M", bound=ChatModelBase)

FAST = RetryConfig(max_retries=2, initial_delay=0.01, max_delay=0.05, jitter=0.0)
"""Two quick retries with fixed waits: what the model tests retry with unless they say otherwise."""

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
"""A one-argument tool in OpenAI's schema, as the agent's formatters hand it to the models."""

TERSE_CHAT = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris and Oslo?"},
]
"""A system prompt and a plain-text question, in OpenAI's (and Ollama's) message format."""


@pytest.fixture
def wire() -> Iterator[WireServer]:
    with WireServer() as srv:
        yield srv


@pytest.fixture
def server(wire: WireServer) -> WireServer:
    """The module's server: the SDK protocols' one unless the module overrides this fixture."""
    return wire


@contextlib.asynccontextmanager
async def sdk_model(
    cls: type[M], name: str, api_key: str, base_url: str, stream: bool, **kwargs: Any
) -> AsyncIterator[M]:
    """An SDK-backed model of class *cls* talking to *base_url* (with any other
    ``client_kwargs`` given), closed on leaving; it retries as :data:`FAST` unless
    ``retry_config`` is given."""
    model = cls(  # type: ignore[call-arg]
        name,
        api_key=api_key,
        stream=stream,
        client_kwargs={"base_url": base_url, **kwargs.pop("client_kwargs", {})},
        retry_config=kwargs.pop("retry_config", FAST),
        **kwargs,
    )
    async with model:
        yield model


async def collect(stream: Any) -> list[ChatResponse]:
    """Every chunk of a streamed reply."""
    return [chunk async for chunk in stream]


async def collect_closed(stream: Any) -> list[ChatResponse]:
    """Every chunk of a streamed reply, which must be an async generator, closed afterwards."""
    assert isinstance(stream, AsyncGenerator)
    async with aclosing(stream):
        return await collect(stream)
