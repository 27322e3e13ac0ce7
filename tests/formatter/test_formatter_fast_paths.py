"""The shortcuts of the common case (text-only tool results, exact block classes, list input)
give exactly what the general path gives."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given

from agentscope_rt.formatter import FormatterBase, OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope_rt.token import CharTokenCounter

from ..strategies import json_objects


def _conversation(output: Any) -> list[Msg]:
    call = ToolUseBlock(id="c1", name="lookup", input={"q": "café"})
    return [
        Msg("system", "Be brief.", "system"),
        Msg("user", "Look it up.", "user"),
        Msg("bot", [TextBlock(text="Looking."), call], "assistant"),
        Msg("system", [ToolResultBlock(id="c1", name="lookup", output=output)], "system"),
    ]


async def test_text_only_tool_results_read_as_the_general_conversion_does() -> None:
    formatter = OpenAIChatFormatter()
    outputs: list[Any] = [
        "plain",
        [],
        [TextBlock(text="one")],
        [TextBlock(text="one"), TextBlock(text="two")],
    ]
    for output in outputs:
        expected, media = await FormatterBase.convert_tool_result_to_string(output)
        assert media == []
        formatted = await formatter.format(_conversation(output))
        assert formatted[-1] == {
            "role": "tool",
            "tool_call_id": "c1",
            "content": expected,
            "name": "lookup",
        }
    formatted = await formatter.format(_conversation("x"))
    assert formatted[2]["tool_calls"][0]["function"]["arguments"] == '{"q": "café"}'


async def test_an_overridden_tool_result_conversion_is_used() -> None:
    class Shouting(OpenAIChatFormatter):
        @staticmethod
        async def convert_tool_result_to_string(output: Any) -> tuple[str, list[Any]]:
            text, media = await FormatterBase.convert_tool_result_to_string(output)
            return text.upper(), media

    formatted = await Shouting().format(_conversation([TextBlock(text="quiet")]))
    assert formatted[-1]["content"] == "QUIET"


async def test_block_subclasses_and_tuples_are_formatted_like_the_originals() -> None:
    @attrs.define(slots=True)
    class TaggedText(TextBlock):
        tag: str = "x"

    plain = [Msg("user", [TextBlock(text="hi")], "user")]
    tagged = [Msg("user", [TaggedText(text="hi")], "user")]
    formatter = OpenAIChatFormatter()
    assert await formatter.format(tagged) == await formatter.format(plain)

    msgs = _conversation("result " * 20)
    budgeted = OpenAIChatFormatter(token_counter=CharTokenCounter(), max_tokens=10_000)
    assert await budgeted.format(tuple(msgs)) == await budgeted.format(msgs)  # type: ignore[arg-type]
    msgs.append(Msg("user", "ok", "user"))
    tight = OpenAIChatFormatter(token_counter=CharTokenCounter(chars_per_token=4), max_tokens=90)
    kept = await tight.format(tuple(msgs))  # type: ignore[arg-type]
    assert [m["role"] for m in kept] == ["system", "user"] and kept[1]["content"][0]["text"] == "ok"


@given(json_objects)
def test_tool_call_arguments_are_encoded_as_json_dumps_does(arguments: dict[str, Any]) -> None:
    # The arguments go through an encoder built once instead of json.dumps per call.
    import json

    from agentscope_rt.formatter._openai_formatter import openai_tool_call

    block = ToolUseBlock(id="c1", name="lookup", input=arguments)
    encoded = openai_tool_call(block)["function"]["arguments"]
    assert encoded == json.dumps(arguments, ensure_ascii=False)
    assert json.loads(encoded) == arguments


def test_tool_call_arguments_that_are_not_json_raise_type_error() -> None:
    import pytest

    from agentscope_rt.formatter._openai_formatter import openai_tool_call

    with pytest.raises(TypeError, match="not JSON serializable"):
        openai_tool_call(ToolUseBlock(id="c1", name="lookup", input={"when": object()}))


async def test_format_names_the_first_item_that_is_not_a_msg() -> None:
    import pytest

    msgs: list[Any] = [Msg("user", "hi", "user"), {"role": "user"}, "text"]
    with pytest.raises(TypeError, match=r"msgs\[1\] is a dict, not a Msg"):
        await OpenAIChatFormatter().format(msgs)
    with pytest.raises(TypeError, match="take a list of Msg objects, not Msg"):
        await OpenAIChatFormatter().format(Msg("user", "hi", "user"))  # type: ignore[arg-type]
