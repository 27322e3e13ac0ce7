"""CharTokenCounter counts exactly as AgentScope 1.0.21's does, unless told otherwise.

``data/char_token_counts.json`` holds sample prompts (OpenAI, Anthropic and Gemini shapes;
quotes, escapes, invisible characters, numbers; tools with and without messages) with the
count AgentScope 1.0.21 gives each. The inputs were written by hand; the expected values were
filled in by running, from the repository root, with AgentScope 1.0.21 installed::

    import asyncio, json, pathlib
    from agentscope.token import CharTokenCounter

    path = pathlib.Path("tests/token/data/char_token_counts.json")
    cases = json.loads(path.read_text(encoding="utf-8"))
    for case in cases:
        case["expected"] = asyncio.run(CharTokenCounter().count(case["messages"], case["tools"]))
    path.write_text(json.dumps(cases, ensure_ascii=False, indent=1) + "\\n", encoding="utf-8")
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.token import CharTokenCounter

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "char_token_counts.json").read_text(encoding="utf-8")
)


def test_the_fixture_covers_what_it_claims() -> None:
    # Guards the data against being regenerated empty or without its tricky cases.
    assert len(CASES) >= 10
    assert all(isinstance(case["expected"], int) for case in CASES)
    texts = json.dumps(CASES, ensure_ascii=False)
    for needle in ("\u200b", "'", '\\"', "tool_calls", "parts", "tool_use"):
        assert needle in texts


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
async def test_default_count_equals_agentscope(case: dict[str, Any]) -> None:
    counter = CharTokenCounter()
    assert await counter.count(case["messages"], case["tools"]) == case["expected"]
    # Keyword form, as the compression code and formatters call it.
    assert await counter.count(case["messages"], tools=case["tools"]) == case["expected"]


async def test_count_is_the_length_of_the_python_text_joined_by_newlines() -> None:
    messages = [{"role": "user", "content": 'say "hi"'}, {"role": "assistant", "content": None}]
    tools = [{"type": "function", "function": {"name": "f", "strict": True}}]
    expected = "\n".join([str(messages[0]), str(messages[1]), str(tools)])
    assert await CharTokenCounter().count(messages, tools) == len(expected)
    # The Python text, not JSON: a double quote inside a string is not escaped there.
    assert len(expected) != len("\n".join(json.dumps(x) for x in [*messages, tools]))


async def test_a_formatted_conversation_counts_by_characters() -> None:
    messages = await OpenAIChatFormatter().format(
        [Msg("system", "Be brief.", "system"), Msg("user", "Hello there", "user")]
    )
    assert await CharTokenCounter().count(messages) == len("\n".join(map(str, messages)))


async def test_the_caller_s_lists_are_left_alone() -> None:
    case = next(c for c in CASES if c["name"] == "openai_tool_call_and_result")
    before = json.dumps(case)
    await CharTokenCounter().count(case["messages"], case["tools"])
    assert json.dumps(case) == before


@pytest.mark.parametrize("chars_per_token", [1, 2.5, 4])
async def test_chars_per_token_divides_the_same_text_rounding_up(chars_per_token: float) -> None:
    counter = CharTokenCounter(chars_per_token=chars_per_token)
    for case in CASES:
        count = await counter.count(case["messages"], case["tools"])
        assert count == math.ceil(case["expected"] / chars_per_token)


def test_repr_shows_the_setting() -> None:
    assert repr(CharTokenCounter()) == "CharTokenCounter()"
    assert repr(CharTokenCounter(chars_per_token=4)) == "CharTokenCounter(chars_per_token=4.0)"
    assert CharTokenCounter().chars_per_token is None


@pytest.mark.parametrize("bad", [0, -1, True, float("nan"), float("inf"), "4"])
def test_a_bad_ratio_is_refused_with_what_to_pass(bad: Any) -> None:
    with pytest.raises(ValueError, match="chars_per_token must be a positive number, or None"):
        CharTokenCounter(chars_per_token=bad)
