"""Random tool-call arguments through each provider's real wire protocol into a ReAct loop.

Hypothesis makes up what a model might send as a tool call's arguments — JSON objects with
any values (huge and non-finite numbers, lone surrogates, deep nesting), other JSON, and text
that is not JSON at all — and each provider's scripted server sends it the way that provider
does (argument text for OpenAI, DashScope and streamed Anthropic; decoded values for Anthropic,
Gemini and Ollama). Whatever comes, the reply is a message or a library error, every tool call
in memory has exactly one result, and the agent's state saves as strict JSON.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentscope_rt.exception import AgentScopeRTError
from agentscope_rt.message import Msg

from . import _wire_servers as wa
from ._providers import PROVIDERS, Provider, strict_dump, weather_agent

TEXT_PROVIDERS = {"openai", "dashscope", "dashscope-native"}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.sampled_from(["\ud800", "x\udfffy", "Oslo"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
objects = st.dictionaries(st.sampled_from(["city", "days", "\udfff", "x"]), json_values, max_size=3)


def _deep(depth: int) -> Any:
    value: Any = "Oslo"
    for _ in range(depth):
        value = {"city": value}
    return value


arguments = st.one_of(objects, json_values)
raw_texts = st.one_of(
    st.text(max_size=20),
    st.sampled_from(['{"city": NaN}', '{"city": 1e999}', '{"city": "Os', "[" * 3000, "null"]),
)


def _args_text(value: Any) -> str:
    try:
        return json.dumps(value)  # NaN and Infinity as JSON's non-standard tokens
    except (ValueError, RecursionError):
        return '{"city": "Oslo"}'


async def _run(provider: Provider, wire: wa.WireServer, call: tuple[str, Any] | None) -> None:
    if call is None:
        first = provider.answer("nothing to do")
    elif call[0] == "text":
        first = _answer_with_text(provider, call[1])
    elif call[0] == "deep":
        first = _answer_with_value(provider, _deep(call[1]))
    else:
        first = _answer_with_value(provider, call[1])
    wire.add(first, provider.answer("done"))
    agent = weather_agent(provider, wire)
    try:
        reply = await agent(Msg("user", "Weather?", "user"))
        assert isinstance(reply, Msg)
    except AgentScopeRTError:
        pass
    memory = await agent.memory.get_memory()
    uses = [b.id for m in memory for b in m.get_content_blocks("tool_use")]
    results = [b.id for m in memory for b in m.get_content_blocks("tool_result")]
    assert sorted(uses) == sorted(results) and len(set(uses)) == len(uses)
    strict_dump(agent.state_dict())
    await agent.model.aclose()


def _answer_with_text(provider: Provider, text: str) -> Any:
    """The provider's answer carrying *text* as the call's argument text, as sent on the wire
    (providers that send decoded values get the text as a JSON string value instead)."""
    name = provider.name
    if name in ("openai", "dashscope"):
        if not provider.stream:
            return wa.Reply(body=wa.openai_completion(None, [("call_1", "get_weather", text)]))
        return wa.Reply(
            events=[
                wa.openai_tool_delta(0, text[:5], id="call_1", name="get_weather"),
                wa.openai_tool_delta(0, text[5:]),
                wa.openai_chunk({}, finish_reason="tool_calls"),
                wa.openai_chunk(None, usage=(5, 2)),
                wa.sse("[DONE]"),
            ]
        )
    if name == "dashscope-native":
        tool = {"id": "call_1", "type": "function", "index": 0}
        tool["function"] = {"name": "get_weather", "arguments": text}
        message = {"role": "assistant", "content": [{"text": ""}], "tool_calls": [tool]}
        answer = {
            "output": {"choices": [{"finish_reason": "stop", "message": message}]},
            "usage": {"input_tokens": 5, "output_tokens": 2},
            "request_id": "req-1",
        }
        if not provider.stream:
            return wa.Reply(body=answer)
        return wa.Reply(
            events=["id:1\nevent:result\n:HTTP_STATUS/200\ndata:" + json.dumps(answer) + "\n\n"]
        )
    if name == "anthropic" and provider.stream:
        spec = ("tool_use", [text[:5], text[5:]], {"id": "toolu_1", "name": "get_weather"})
        return wa.Reply(events=wa.anthropic_stream([spec]))
    return _answer_with_value(provider, text)


def _answer_with_value(provider: Provider, value: Any) -> Any:
    """The provider's answer carrying *value* as the call's arguments (decoded or as text)."""
    if provider.name in TEXT_PROVIDERS or (provider.name == "anthropic" and provider.stream):
        return _answer_with_text(provider, _args_text(value))
    if provider.name == "anthropic":
        block = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": value}
        return wa.Reply(body=wa.anthropic_message([block]))
    if provider.name == "gemini":
        part = {"functionCall": {"name": "get_weather", "args": value}}
        body = wa.gemini_response(part, prompt_tokens=5, output_tokens=2)
        if not provider.stream:
            return wa.Reply(body=body)
        return wa.Reply(events=wa.gemini_events(body), content_type="text/event-stream")
    calls = [{"function": {"name": "get_weather", "arguments": value}}]
    chunk = wa.ollama_chunk("", tool_calls=calls, done=True, eval_count=2)
    if not provider.stream:
        return wa.Reply(body=chunk)
    return wa.Reply(events=wa.ndjson(chunk), content_type="application/x-ndjson")


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("name", PROVIDERS)
@settings(max_examples=8, deadline=None)
@given(
    call=st.one_of(
        st.tuples(st.just("value"), arguments),
        st.tuples(st.just("text"), raw_texts),
        # Deep nesting, given by its depth (hypothesis could not print the value itself).
        st.tuples(st.just("deep"), st.sampled_from([150, 250, 1200])),
    )
)
# A lone surrogate in the key path of a value that is not JSON: the error the model reads
# names the path, and must be sendable.
@example(call=("value", {"\udfff": {"x": float("-inf")}}))
async def test_random_arguments_from_any_provider_never_break_the_agent(
    name: str, stream: bool, wire: wa.WireServer, call: tuple[str, Any]
) -> None:
    await _run(Provider(name, stream), wire, call)
