"""Truncation to a token budget: properties checked with hypothesis on both backends."""

from __future__ import annotations

import math
import warnings
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentscope_rt.formatter import (
    AnthropicChatFormatter,
    DeepSeekMultiAgentFormatter,
    OpenAIChatFormatter,
    OpenAIMultiAgentFormatter,
    TruncatedFormatterBase,
    TruncationWarning,
)
from agentscope_rt.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope_rt.token import CharTokenCounter, OpenAITokenCounter, TokenCounterBase

FORMATTERS = {
    "openai-chat": OpenAIChatFormatter,
    "anthropic-chat": AnthropicChatFormatter,
    "openai-multiagent": OpenAIMultiAgentFormatter,
    "deepseek-multiagent": DeepSeekMultiAgentFormatter,
}
# Chat formatters format message by message, so their size grows with every unit kept and the
# longest fitting suffix is well defined; multi-agent ones merge runs, so only the other
# properties are checked for them.
MONOTONE = {"openai-chat", "anthropic-chat"}

_words = st.text(alphabet="abcdefgh ", min_size=1, max_size=60)


@st.composite
def conversations(draw: st.DrawFn) -> list[Msg]:
    msgs: list[Msg] = []
    if draw(st.booleans()):
        msgs.append(Msg("system", "sys " + draw(_words), "system"))
    n_call = 0
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 2)) == 0:
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                n_call += 1
                calls.append(ToolUseBlock(id=f"c{n_call}", name="f", input={"q": draw(_words)}))
            msgs.append(Msg("bot", [TextBlock(text=draw(_words)), *calls], "assistant"))
            # Results may arrive in one message or several.
            split = draw(st.integers(1, len(calls)))
            results = [ToolResultBlock(id=c.id, name="f", output=draw(_words)) for c in calls]
            msgs.append(Msg("system", results[:split], "system"))
            if results[split:]:
                msgs.append(Msg("system", results[split:], "system"))
        else:
            role = draw(st.sampled_from(["user", "assistant"]))
            msgs.append(Msg(draw(st.sampled_from(["ann", "bob"])), draw(_words), role))
    return msgs


def _units(msgs: list[Msg]) -> tuple[list[Msg], list[list[Msg]]]:
    """Reference split: cut only where every call so far has its result."""
    head = msgs[:1] if msgs and msgs[0].role == "system" else []
    units: list[list[Msg]] = []
    current: list[Msg] = []
    pending: set[str] = set()
    for m in msgs[len(head) :]:
        current.append(m)
        for b in m.get_content_blocks("tool_use"):
            pending.add(b.id)
        for b in m.get_content_blocks("tool_result"):
            pending.discard(b.id)
        if not pending:
            units.append(current)
            current = []
    if current:
        units.append(current)
    return head, units


def _tool_ids(formatted: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(tool call ids, tool result ids) in an OpenAI or Anthropic payload."""
    calls, results = [], []
    for m in formatted:
        calls += [c["id"] for c in m.get("tool_calls", [])]
        if m.get("role") == "tool":
            results.append(m["tool_call_id"])
        if isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    calls.append(b["id"])
                elif b.get("type") == "tool_result":
                    results.append(b["tool_use_id"])
    return calls, results


async def _check(name: str, msgs: list[Msg], fraction: float) -> None:
    counter = CharTokenCounter(chars_per_token=1)
    plain = FORMATTERS[name]()
    full = await plain.format(msgs)
    budget = max(1, int(await counter.count(full) * fraction))
    formatter = FORMATTERS[name](token_counter=counter, max_tokens=budget)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = await formatter.format(msgs)
    truncation_warned = any(issubclass(w.category, TruncationWarning) for w in caught)

    head, units = _units(msgs)
    candidates = [head + [m for u in units[s:] for m in u] for s in range(len(units))]
    formatted = [await plain.format(c) for c in candidates] or [await plain.format(head)]
    # What is kept is the system prompt plus a suffix cut at a unit boundary, in order.
    assert out in formatted
    start = formatted.index(out)
    if head:
        assert out[0] == (await plain.format(head))[0]
    calls, results = _tool_ids(out)
    assert sorted(calls) == sorted(results)

    n_out = await counter.count(out)
    n_min = await counter.count(formatted[-1])
    if n_min <= budget:
        assert n_out <= budget
        assert not truncation_warned
    else:
        assert start == len(formatted) - 1
        assert truncation_warned
    if name in MONOTONE and start > 0:
        # Nothing was dropped that would have fitted.
        assert await counter.count(formatted[start - 1]) > budget


@pytest.mark.parametrize("name", sorted(FORMATTERS))
@given(msgs=conversations(), fraction=st.floats(0.05, 1.2))
def test_truncation_properties(
    anyio_backend: str, name: str, msgs: list[Msg], fraction: float
) -> None:
    anyio.run(_check, name, msgs, fraction, backend=anyio_backend)


async def test_truncation_keeps_system_prompt_and_newest_turns() -> None:
    msgs = [Msg("system", "You are terse.", "system")] + [
        Msg(
            "user" if i % 2 == 0 else "bot",
            f"turn number {i} " * 5,
            "user" if i % 2 == 0 else "assistant",
        )
        for i in range(20)
    ]
    counter = OpenAITokenCounter("gpt-4")
    formatter = OpenAIChatFormatter(token_counter=counter, max_tokens=120)
    out = await formatter.format(msgs)
    assert out[0]["role"] == "system"
    assert await counter.count(out) <= 120
    texts = [m["content"][0]["text"] for m in out[1:]]
    assert texts == [m.get_text_content() for m in msgs[-len(texts) :]]
    assert 1 <= len(texts) < 20


async def test_minimum_over_budget_is_returned_with_a_warning() -> None:
    msgs = [
        Msg("system", "A long system prompt. " * 20, "system"),
        Msg("user", "old question", "user"),
        Msg("bot", [ToolUseBlock(id="a", name="f", input={})], "assistant"),
        Msg("system", [ToolResultBlock(id="a", name="f", output="x" * 50)], "system"),
    ]
    formatter = OpenAIChatFormatter(token_counter=CharTokenCounter(), max_tokens=5)
    with pytest.warns(TruncationWarning, match="max_tokens=5"):
        out = await formatter.format(msgs)
    # System prompt plus the newest unit: the tool call together with its result.
    assert [m["role"] for m in out] == ["system", "assistant", "tool"]


async def test_single_message_over_budget_is_returned_with_a_warning() -> None:
    formatter = AnthropicChatFormatter(token_counter=CharTokenCounter(), max_tokens=1)
    with pytest.warns(TruncationWarning):
        out = await formatter.format([Msg("user", "hello there, how are you", "user")])
    assert out == [
        {"role": "user", "content": [{"type": "text", "text": "hello there, how are you"}]}
    ]


async def test_unanswered_tool_call_stays_with_what_follows() -> None:
    msgs = [
        Msg("user", "first " * 30, "user"),
        Msg("bot", [ToolUseBlock(id="open", name="f", input={})], "assistant"),
        Msg("user", "second", "user"),
    ]
    counter = CharTokenCounter(chars_per_token=4)
    formatter = OpenAIChatFormatter(token_counter=counter, max_tokens=60)
    out = await formatter.format(msgs)
    assert await counter.count(out) <= 60
    # The call without a result and everything after it form the newest unit.
    assert [m["role"] for m in out] == ["assistant", "user"]


async def test_tools_count_against_the_budget() -> None:
    msgs = [Msg("user", f"message {i}", "user") for i in range(10)]
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "description": "d" * 200,
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    counter = CharTokenCounter(chars_per_token=1)
    formatter = OpenAIChatFormatter(token_counter=counter, max_tokens=600)
    without = await formatter.format(msgs)
    with_tools = await formatter.format(msgs, tools=tools)
    assert len(with_tools) < len(without)
    assert await counter.count(with_tools, tools=tools) <= 600


class _CountingCounter(TokenCounterBase):
    def __init__(self) -> None:
        self.calls = 0
        self.inner = CharTokenCounter(chars_per_token=1)

    async def count(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> int:
        self.calls += 1
        return await self.inner.count(messages, tools)


async def test_truncation_needs_logarithmically_many_counts() -> None:
    msgs = [Msg("user", f"message number {i}", "user") for i in range(512)]
    counter = _CountingCounter()
    out = await OpenAIChatFormatter(token_counter=counter, max_tokens=2000).format(msgs)
    assert 0 < len(out) < 512
    # full + minimum + binary search over 511 boundaries.
    assert counter.calls <= 2 + math.ceil(math.log2(512)) + 1


async def test_no_truncation_without_counter_or_budget() -> None:
    msgs = [Msg("user", "x" * 1000, "user")]
    assert len(await OpenAIChatFormatter(max_tokens=1).format(msgs)) == 1
    assert len(await OpenAIChatFormatter(token_counter=CharTokenCounter()).format(msgs)) == 1


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "10"])
def test_invalid_max_tokens_is_rejected(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        TruncatedFormatterBase.__init__(OpenAIChatFormatter(), max_tokens=bad)


def test_invalid_token_counter_is_rejected() -> None:
    with pytest.raises(TypeError, match="TokenCounterBase"):
        OpenAIChatFormatter(token_counter=len)  # type: ignore[arg-type]
