"""AnthropicTokenCounter against a local server speaking the count_tokens endpoint (the
character-based counter is tested in test_token_char.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentscope_rt.exception import ModelAPIError
from agentscope_rt.formatter import AnthropicChatFormatter
from agentscope_rt.message import Msg, ToolResultBlock, ToolUseBlock
from agentscope_rt.token import AnthropicTokenCounter

from .._local_http import LocalHTTPServer, QuietHandler

SECRET = "sk-ant-test-secret-0123456789"


class _CountTokensHandler(QuietHandler):
    """POST /v1/messages/count_tokens: answers with the number of words in the request's JSON
    (a deterministic stand-in for Anthropic's tokenizer); ``model: "overloaded"`` gets a 529
    error and ``model: "bad"`` a 400, in Anthropic's error shape."""

    requests: list[dict[str, Any]]

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(
            {
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
            }
        )
        if self.path != "/v1/messages/count_tokens":
            self._send(
                404,
                {"type": "error", "error": {"type": "not_found_error", "message": "no such path"}},
            )
        elif body["model"] == "bad":
            self._send(
                400,
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "model: unknown model 'bad'",
                    },
                },
            )
        elif body["model"] == "overloaded":
            self._send(
                529,
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            )
        else:
            text = json.dumps({k: body[k] for k in ("system", "messages", "tools") if k in body})
            self._send(200, {"input_tokens": len(text.split())})

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def anthropic_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []
    handler = type("Handler", (_CountTokensHandler,), {"requests": seen})
    with LocalHTTPServer(handler) as server:
        yield server.url, seen


def _counter(base_url: str, model: str = "claude-sonnet-4-5") -> AnthropicTokenCounter:
    return AnthropicTokenCounter(
        model, api_key=SECRET, client_kwargs={"base_url": base_url, "max_retries": 1}
    )


async def test_anthropic_counts_through_the_endpoint(
    anthropic_server: tuple[str, list[dict[str, Any]]],
) -> None:
    base_url, seen = anthropic_server
    formatted = await AnthropicChatFormatter().format(
        [
            Msg("system", "Be brief.", "system"),
            Msg("user", "What is the weather in Paris today?", "user"),
            Msg(
                "bot", [ToolUseBlock(id="t1", name="weather", input={"city": "Paris"})], "assistant"
            ),
            Msg("system", [ToolResultBlock(id="t1", name="weather", output="sunny")], "system"),
        ]
    )
    snapshot = json.dumps(formatted)
    tools = [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    async with _counter(base_url) as counter:
        n = await counter.count(formatted, tools=tools)
    body = seen[-1]["body"]
    expected_text = json.dumps({k: body[k] for k in ("system", "messages", "tools")})
    assert n == len(expected_text.split())
    # The system prompt goes in the separate parameter, the messages keep their shape.
    assert body["model"] == "claude-sonnet-4-5"
    assert body["system"] == [{"type": "text", "text": "Be brief."}]
    assert body["messages"] == formatted[1:]
    assert body["tools"] == [
        {
            "name": "weather",
            "description": "Weather for a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    # The key reaches the server (this SDK release sends it as a bearer token).
    headers = seen[-1]["headers"]
    assert SECRET in (
        headers.get("x-api-key", ""),
        headers.get("authorization", "").removeprefix("Bearer "),
    )
    # The caller's list is not modified (AgentScope pops the system message off it).
    assert json.dumps(formatted) == snapshot


async def test_anthropic_error_is_clear_and_keeps_the_key_secret(
    anthropic_server: tuple[str, list[dict[str, Any]]],
) -> None:
    base_url, seen = anthropic_server
    counter = _counter(base_url, model="bad")
    try:
        with pytest.raises(ModelAPIError) as info:
            await counter.count([{"role": "user", "content": "hi"}])
    finally:
        await counter.close()
    error = info.value
    assert error.provider == "anthropic"
    assert error.status_code == 400
    assert "unknown model 'bad'" in str(error)
    assert SECRET not in str(error)
    assert SECRET not in repr(counter)
    assert len(seen) == 1  # a 400 is not retried


async def test_anthropic_overload_is_retried_then_reported(
    anthropic_server: tuple[str, list[dict[str, Any]]],
) -> None:
    base_url, seen = anthropic_server
    async with _counter(base_url, model="overloaded") as counter:
        with pytest.raises(ModelAPIError, match="529"):
            await counter.count([{"role": "user", "content": "hi"}])
    assert len(seen) == 2  # max_retries=1


async def test_anthropic_unreachable_server_is_a_model_api_error() -> None:
    # Port 9 on localhost (discard) is not listening here: the connection is refused.
    async with _counter("http://127.0.0.1:9") as counter:
        with pytest.raises(ModelAPIError) as info:
            await counter.count([{"role": "user", "content": "hi"}])
    assert info.value.status_code is None
