"""Every provider against a misbehaving server: tool arguments that are not strict JSON, answers
that are not what they claim to be, and streams cut before their end marker.

Each test runs a real :class:`ReActAgent` on the provider's real wire protocol (the SDK clients
and httpx pointed at a scripted server on 127.0.0.1): what reaches the agent's memory must be
sendable and savable, and the agent must stay usable after the failure.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from agentscope_rt.exception import ModelAPIError, ModelResponseError
from agentscope_rt.message import Msg, ToolUseBlock
from agentscope_rt.model._common import loads_strict, parse_partial_json, parse_tool_input

from . import _wire_servers as wa
from ._providers import (
    BAD_ARGUMENTS,
    KEY,
    ONE_RETRY,
    PROVIDERS,
    Provider,
    hello_messages,
    provider_url,
    strict_dump,
    weather_agent,
)

pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")


# -- 1. tool arguments that are not strict JSON ------------------------------------------------


def test_strict_parser_refuses_what_strict_json_refuses() -> None:
    for text in BAD_ARGUMENTS.values():
        with pytest.raises(ValueError):
            loads_strict(text)
        tool_input, raw = parse_tool_input(text)
        assert tool_input == {} and raw == text
        assert parse_partial_json(text) is None
    # A surrogate pair is one character, and fine; so is an escaped backslash before "ud800".
    assert loads_strict('{"a": "\\ud83d\\ude00", "b": "\\\\ud800"}') == {"a": "😀", "b": "\\ud800"}
    # A lone surrogate that arrived decoded (as the character itself) is kept escaped.
    assert parse_tool_input('{"a": "\ud800"}') == ({}, '{"a": "\\ud800"}')
    # Partial JSON is parsed strictly as well, while it streams.
    assert parse_partial_json('{"a": 1, "b": NaN, "c": "x') is None
    assert parse_partial_json('{"a": 1, "b": "x') == {"a": 1, "b": "x"}
    assert parse_partial_json('{"a": "\\ud800", "b": "x') is None


async def _chunks(model: Any, provider: Provider) -> list[Any]:
    """Every chunk of *model*'s streamed answer to the provider's hello messages."""
    return [c async for c in await model(hello_messages(provider))]


@pytest.mark.parametrize("bad", list(BAD_ARGUMENTS))
@pytest.mark.parametrize("name", PROVIDERS)
async def test_arguments_that_are_not_strict_json_are_an_argument_error(
    wire: wa.WireServer, name: str, bad: str
) -> None:
    # Stream and non-stream alternate over the bad values, so both paths of every provider
    # meet arguments that are not strict JSON.
    provider = Provider(name, stream=bad in ("nan", "surrogate-key"))
    server = wire.add(
        provider.answer(call=("get_weather", BAD_ARGUMENTS[bad])),
        provider.answer(text="Sorry, let me retry."),
        provider.answer(text="Still here."),
    )
    agent = weather_agent(provider, wire)
    async with agent.model:  # type: ignore[attr-defined]
        reply = await agent(Msg("user", "Weather in Oslo?", "user"))
        assert reply.get_text_content() == "Sorry, let me retry."
        memory = await agent.memory.get_memory()
        (call,) = [b for m in memory for b in m.get_content_blocks("tool_use")]
        assert isinstance(call, ToolUseBlock)
        assert call.input == {} and call.raw_input is not None
        (result,) = [b for m in memory for b in m.get_content_blocks("tool_result")]
        assert "InvalidArgumentsError" in str(result.output)
        # The memory can be sent again and saved: the next call succeeds, the state dumps.
        second = await agent(Msg("user", "And now?", "user"))
        assert second.get_text_content() == "Still here."
        strict_dump(agent.state_dict())
    assert len(server.requests) == 3


# -- 2. answers that are not what they claim ---------------------------------------------------


NOT_JSON = b"<html><body>502 Bad Gateway</body></html>"


def _bad_answers(provider: Provider) -> dict[str, Any]:
    """Non-streaming answers with HTTP 200 that are not the provider's answer."""
    return {
        "html": wa.Reply(raw=NOT_JSON, content_type="text/html"),
        "not-json": wa.Reply(raw=b'{"id": "x", "choices": [', content_type="application/json"),
        # A byte-order mark makes the JSON decoder read UTF-16, which three bytes are not.
        "not-text": wa.Reply(raw=b"\xff\xfe{", content_type="application/json"),
        "empty-object": wa.Reply(body={}),
        "list": wa.Reply(body=[1, 2]),
        "wrong-shape": wa.Reply(
            body={
                "choices": "none",
                "content": "none",
                "candidates": "none",
                "message": "none",
                "output": {"choices": "none"},
            }
        ),
    }


@pytest.mark.parametrize(
    "kind", ["html", "not-json", "not-text", "empty-object", "list", "wrong-shape"]
)
@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_200_answer_that_is_not_an_answer_is_a_model_api_error(
    wire: wa.WireServer, name: str, kind: str
) -> None:
    provider = Provider(name, stream=False)
    bad = _bad_answers(provider)[kind]
    server = wire.add(bad)
    model = provider.model(provider_url(provider, wire))
    async with model:  # type: ignore[attr-defined]
        with pytest.raises(ModelAPIError) as info:
            await model(hello_messages(provider))
    assert info.value.status_code == 200
    assert info.value.provider == name.split("-")[0]
    assert len(server.requests) == 1


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_bad_answer_is_retried_as_a_server_fault(wire: wa.WireServer, name: str) -> None:
    provider = Provider(name, stream=False)
    server = wire.add(_bad_answers(provider)["empty-object"], provider.answer(text="Fine."))
    model = provider.model(provider_url(provider, wire), ONE_RETRY)
    async with model:  # type: ignore[attr-defined]
        response = await model(hello_messages(provider))
    assert response.get_text() == "Fine."  # type: ignore[union-attr]
    assert len(server.requests) == 2


def _cut(provider: Provider) -> Any:
    """A stream that sends a tool call's first half of arguments, then closes cleanly."""
    name = provider.name
    if name in ("openai", "dashscope"):
        return wa.Reply(
            events=[
                wa.openai_chunk({"role": "assistant", "content": "Checking."}),
                wa.openai_tool_delta(0, '{"city": "Os', id="call_1", name="get_weather"),
            ]
        )
    if name == "dashscope-native":
        message = {
            "role": "assistant",
            "content": [{"text": "Checking."}],
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Os'},
                }
            ],
        }
        data = {"output": {"choices": [{"finish_reason": "null", "message": message}]}}
        return wa.Reply(
            events=["id:1\nevent:result\n:HTTP_STATUS/200\ndata:" + json.dumps(data) + "\n\n"]
        )
    if name == "anthropic":
        events = wa.anthropic_stream(
            [
                ("text", ["Checking."]),
                ("tool_use", ['{"city": "Os'], {"id": "t1", "name": "get_weather"}),
            ]
        )
        return wa.Reply(events=[e for e in events if "message_stop" not in e])
    if name == "gemini":
        event = wa.gemini_response({"text": "Checking."})
        return wa.Reply(events=wa.gemini_events(event), content_type="text/event-stream")
    chunk = wa.ollama_chunk("Checking.")
    return wa.Reply(events=wa.ndjson(chunk), content_type="application/x-ndjson")


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_stream_cut_before_its_end_marker_leaves_memory_unchanged(
    wire: wa.WireServer, name: str
) -> None:
    provider = Provider(name, stream=True)
    server = wire.add(_cut(provider), provider.answer(text="Back again."))
    agent = weather_agent(provider, wire)
    async with agent.model:  # type: ignore[attr-defined]
        with pytest.raises(ModelAPIError, match="the stream was cut") as info:
            await agent(Msg("user", "Weather in Oslo?", "user"))
        assert info.value.status_code == 200
        memory = await agent.memory.get_memory()
        assert [m.get_text_content() for m in memory] == ["Weather in Oslo?"]
        # Usable afterwards, and savable.
        reply = await agent(Msg("user", "Still there?", "user"))
        assert reply.get_text_content() == "Back again."
        strict_dump(agent.state_dict())
    assert len(server.requests) == 2


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_stream_request_answered_without_an_event_stream(
    wire: wa.WireServer, name: str
) -> None:
    provider = Provider(name, stream=True)
    not_stream = Provider(name, stream=False).answer(text="A whole answer.")
    if name == "ollama":  # NDJSON of one complete answer is a valid Ollama stream: send HTML
        not_stream = wa.Reply(raw=NOT_JSON, content_type="text/html")
    server = wire.add(not_stream, provider.answer(text="Streamed."))
    model = provider.model(provider_url(provider, wire), ONE_RETRY)
    async with model:  # type: ignore[attr-defined]
        chunks = await _chunks(model, provider)
    # Nothing was yielded from the first answer, so it was retried as a server fault.
    assert [c.get_text() for c in chunks if c.is_last] == ["Streamed."]
    assert len(server.requests) == 2
    wire.add(not_stream)
    once = provider.model(provider_url(provider, wire))
    async with once:  # type: ignore[attr-defined]
        with pytest.raises(ModelAPIError) as info:
            await _chunks(once, provider)
    assert info.value.status_code == 200
    expected = "malformed NDJSON" if name == "ollama" else "without an event stream"
    assert expected in info.value.message


async def test_structured_output_with_a_nan_is_refused(wire: wa.WireServer) -> None:
    provider = Provider("ollama", stream=False)
    wire.add(wa.Reply(body=wa.ollama_chunk('{"city": NaN}', done=True)))
    model = provider.model(provider_url(provider, wire))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    async with model:  # type: ignore[attr-defined]
        with pytest.raises(ModelResponseError, match="not valid JSON"):
            await model(hello_messages(provider), structured_model=schema)


def _bad_events(provider: Provider) -> Any:
    """A stream whose first event is JSON of the wrong shape (an SDK or parser meets a string
    where an object belongs)."""
    name = provider.name
    if name in ("openai", "dashscope"):
        return wa.Reply(events=[wa.sse({"id": "c1", "object": "chat.completion.chunk",
                                        "choices": [{"index": 0, "delta": "oops"}]})])  # fmt: skip
    if name == "dashscope-native":
        return wa.Reply(events=['id:1\nevent:result\n:HTTP_STATUS/200\ndata:{"output": "x"}\n\n'])
    if name == "anthropic":
        events = wa.anthropic_stream([("text", ["Hi"])])
        start = events[0]
        return wa.Reply(
            events=[start, wa.anthropic_event("content_block_start", index=0, content_block="x")]
        )
    if name == "gemini":
        event = {"candidates": [{"content": {"parts": "oops"}}]}
        return wa.Reply(events=wa.gemini_events(event), content_type="text/event-stream")
    chunk = {"message": {"role": "assistant", "content": "", "tool_calls": ["oops"]}, "done": False}
    return wa.Reply(events=wa.ndjson(chunk), content_type="application/x-ndjson")


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_stream_event_of_the_wrong_shape_is_a_model_api_error(
    wire: wa.WireServer, name: str
) -> None:
    provider = Provider(name, stream=True)
    server = wire.add(_bad_events(provider), provider.answer(text="Fine."))
    model = provider.model(provider_url(provider, wire))
    async with model:  # type: ignore[attr-defined]
        with pytest.raises(ModelAPIError) as info:
            await _chunks(model, provider)
        assert info.value.status_code == 200
        # Nothing was yielded, so with a retry the next answer is taken.
        retried = provider.model(provider_url(provider, wire), ONE_RETRY)
        wire.add(_bad_events(provider))
        server.script.rotate(1)  # the bad stream first, then the good answer
        async with retried:  # type: ignore[attr-defined]
            chunks = await _chunks(retried, provider)
    assert chunks[-1].get_text() == "Fine."


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("name", PROVIDERS)
async def test_text_with_a_lone_surrogate_keeps_the_agent_usable(
    wire: wa.WireServer, name: str, stream: bool
) -> None:
    provider = Provider(name, stream=stream)
    server = wire.add(
        provider.answer(text="Odd \ud800 text \U0001f600."),
        provider.answer(text="Still here."),
    )
    agent = weather_agent(provider, wire)
    async with agent.model:  # type: ignore[attr-defined]
        reply = await agent(Msg("user", "Hi", "user"))
        # The lone surrogate became U+FFFD; a real pair (the emoji) is kept.
        assert reply.get_text_content() == "Odd \ufffd text \U0001f600."
        second = await agent(Msg("user", "And now?", "user"))
        assert second.get_text_content() == "Still here."
        strict_dump(agent.state_dict())
    assert len(server.requests) == 2


# -- 4. connections that break or go silent, bytes that are not text ---------------------------

SDK_PROVIDERS = ["openai", "dashscope", "anthropic"]
"""The providers read through an SDK (and httpx2) rather than through httpx."""


def _first_events(provider: Provider) -> list[str | bytes]:
    """The first two events of a streamed text answer (output has begun, no end marker)."""
    events = provider.answer(text="Checking the weather.").events
    assert events is not None
    return list(events[:2])


@pytest.mark.parametrize("name", SDK_PROVIDERS)
async def test_a_connection_reset_mid_stream_is_a_model_api_error(
    wire: wa.WireServer, name: str
) -> None:
    provider = Provider(name, stream=True)
    broken = wa.Reply(events=_first_events(provider), reset=True)
    server = wire.add(broken, provider.answer(text="Back again."))
    model = provider.model(provider_url(provider, wire))
    async with model:  # type: ignore[attr-defined]
        with pytest.raises(ModelAPIError) as info:
            await _chunks(model, provider)
        assert info.value.status_code is None
        assert "connection error" in info.value.message
        assert KEY not in str(info.value)
        # The broken connection is not reused: the next call gets its answer.
        chunks = await _chunks(model, provider)
    assert chunks[-1].get_text() == "Back again."
    assert len(server.requests) == 2


@pytest.mark.parametrize("name", SDK_PROVIDERS)
async def test_a_stream_silent_past_the_read_timeout_is_a_model_api_error(
    wire: wa.WireServer, name: str
) -> None:
    provider = Provider(name, stream=True)
    events = [*_first_events(provider), *(provider.answer(text="late").events or [])]
    server = wire.add(wa.Reply(events=events, gate_after=2))
    model = provider.model(provider_url(provider, wire), timeout=0.5)
    async with model:  # type: ignore[attr-defined]
        with anyio.fail_after(60), pytest.raises(ModelAPIError) as info:
            await _chunks(model, provider)
    assert info.value.status_code is None
    assert "timed out" in info.value.message
    server.gate.set()


@pytest.mark.parametrize("name", SDK_PROVIDERS)
async def test_a_stream_event_that_is_not_utf8_is_a_model_api_error(
    wire: wa.WireServer, name: str
) -> None:
    provider = Provider(name, stream=True)
    not_text = wa.Reply(events=[b"data: \xff\xfe{}\n\n"])
    server = wire.add(not_text, not_text, provider.answer(text="Fine."))
    model = provider.model(provider_url(provider, wire))
    async with model:  # type: ignore[attr-defined]
        with pytest.raises(ModelAPIError) as info:
            await _chunks(model, provider)
        assert info.value.status_code == 200
        assert "not UTF-8" in info.value.message
    # Nothing was yielded, so it is retried as a server fault: the next answer is taken.
    retried = provider.model(provider_url(provider, wire), ONE_RETRY)
    async with retried:  # type: ignore[attr-defined]
        chunks = await _chunks(retried, provider)
    assert chunks[-1].get_text() == "Fine."
    assert len(server.requests) == 3
