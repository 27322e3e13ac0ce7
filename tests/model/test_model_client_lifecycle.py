"""A model's HTTP clients live as long as the event loop that uses them, on every provider.

* A program that never closes its models (as AgentScope programs do) leaves no socket and
  prints nothing when ``asyncio.run`` / ``trio.run`` ends (a fresh interpreter runs
  ``_lifecycle_script.py`` with ResourceWarnings shown).
* Calls in one loop share one client and its connection; ``aclose()`` closes it and the next
  call opens another; a model dropped while the loop runs has its client closed at the next
  model call; the same model works from one loop after another.
"""

from __future__ import annotations

import gc
import os
import pathlib
import subprocess
import sys
from typing import Any

import anyio
import httpx
import pytest

from agentscope_rt.model import (
    AnthropicChatModel,
    ChatModelBase,
    ChatResponse,
    DashScopeChatModel,
    GeminiChatModel,
    OllamaChatModel,
    OpenAIChatModel,
)

from ._wire_servers import (
    Reply,
    WireServer,
    anthropic_message,
    gemini_response,
    ollama_chunk,
    openai_completion,
)

pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROVIDERS = ["openai", "anthropic", "dashscope", "gemini", "ollama"]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_unclosed_models_leave_nothing_behind(backend: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [
            sys.executable,
            "-W",
            "always::ResourceWarning",
            str(ROOT / "tests" / "model" / "_lifecycle_script.py"),
            backend,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:-1] == [f"ok {name}" for name in PROVIDERS]
    assert result.stderr == ""


def make_model(name: str, wire: WireServer) -> ChatModelBase:
    """A non-streaming model of provider *name*, with two answers scripted for it."""
    if name == "openai":
        wire.add(*[Reply(body=openai_completion("ok")) for _ in range(2)])
        return OpenAIChatModel(
            "m", api_key="k", stream=False, client_kwargs={"base_url": wire.url + "/v1"}
        )
    if name == "anthropic":
        wire.add(*[Reply(body=anthropic_message([{"type": "text", "text": "ok"}]))] * 2)
        return AnthropicChatModel(
            "m", api_key="k", stream=False, client_kwargs={"base_url": wire.url}
        )
    if name == "dashscope":
        wire.add(*[Reply(body=openai_completion("ok")) for _ in range(2)])
        return DashScopeChatModel("m", api_key="k", stream=False, base_http_api_url=wire.url)
    if name == "gemini":
        wire.add(*[Reply(body=gemini_response({"text": "ok"}, prompt_tokens=1))] * 2)
        return GeminiChatModel("m", api_key="k", stream=False, client_kwargs={"base_url": wire.url})
    wire.add(*[Reply(body=ollama_chunk("ok", done=True))] * 2)
    return OllamaChatModel("m", stream=False, host=wire.url)


async def call(model: ChatModelBase) -> None:
    chat: list[dict[str, Any]] = (
        [{"role": "user", "parts": [{"text": "hi"}]}]
        if isinstance(model, GeminiChatModel)
        else [{"role": "user", "content": "hi"}]
    )
    response = await model(chat)
    assert isinstance(response, ChatResponse) and response.content


def peers(wire: WireServer) -> list[Any]:
    return [r.peer for r in wire.requests]


def loop_client(model: ChatModelBase) -> Any:
    """The client the model uses in the running loop."""
    clients = model._loop_clients  # type: ignore[attr-defined]
    assert clients is not None
    return clients.get()


def is_closed(client: Any) -> bool:
    return bool(client.is_closed if isinstance(client, httpx.AsyncClient) else client.is_closed())


@pytest.mark.parametrize("name", PROVIDERS)
async def test_calls_in_one_loop_share_a_connection(name: str, wire: WireServer) -> None:
    model = make_model(name, wire)
    await call(model)
    client = loop_client(model)
    await call(model)
    assert loop_client(model) is client
    first, second = peers(wire)
    assert first == second  # one TCP connection, kept alive between the calls
    await model.aclose()  # type: ignore[attr-defined]
    assert is_closed(client)
    await model.aclose()  # type: ignore[attr-defined]  # twice is harmless


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_call_after_aclose_opens_a_new_client(name: str, wire: WireServer) -> None:
    model = make_model(name, wire)
    async with model:  # type: ignore[attr-defined]
        await call(model)
        first = loop_client(model)
    assert is_closed(first)
    await call(model)
    second = loop_client(model)
    assert second is not first and not is_closed(second)
    before, after = peers(wire)
    assert before != after
    await model.aclose()  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_dropped_model_is_closed_by_the_next_call(name: str, wire: WireServer) -> None:
    dropped = make_model(name, wire)
    await call(dropped)
    client = loop_client(dropped)
    del dropped
    gc.collect()
    assert not is_closed(client)
    other = make_model(name, wire)
    await call(other)
    assert is_closed(client)
    await other.aclose()  # type: ignore[attr-defined]


def test_one_model_in_one_loop_after_another(wire: WireServer) -> None:
    for name in PROVIDERS:
        model = make_model(name, wire)
        used: list[Any] = []

        async def main(model: ChatModelBase = model, used: list[Any] = used) -> None:
            await call(model)
            used.append(loop_client(model))

        anyio.run(main, backend="asyncio")
        anyio.run(main, backend="trio")
        # Each loop had its own client, closed when that loop ended.
        first, second = used
        assert first is not second, name
        assert is_closed(first) and is_closed(second), name
        assert len(model._loop_clients) == 0  # type: ignore[attr-defined]


def test_sdk_client_outside_a_loop_is_the_template() -> None:
    model = OpenAIChatModel("m", api_key="k", client_kwargs={"base_url": "http://127.0.0.1:9/v1"})
    assert model.client is model._client_template
    assert str(model.client.base_url) == "http://127.0.0.1:9/v1/"


async def test_a_users_http_client_is_used_as_given(wire: WireServer) -> None:
    import httpx2

    wire.add(Reply(body=openai_completion("ok")))
    async with httpx2.AsyncClient() as http_client:
        model = OpenAIChatModel(
            "m",
            api_key="k",
            stream=False,
            client_kwargs={"base_url": wire.url + "/v1", "http_client": http_client},
        )
        assert model._loop_clients is None
        assert model.client._client is http_client
        await call(model)
