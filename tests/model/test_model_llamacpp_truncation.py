"""The local model's constrained output cut off by ``max_tokens`` never becomes the answer.

Under ``tool_choice="auto"`` LlamaCppChatModel answers through the pseudo-tool
``final_answer``, which no toolkit knows. A cut-off answer used to come back as a call of that
pseudo-tool: the toolkit answered ``FunctionNotFoundError: Cannot find the function named
final_answer`` and the small model then echoed that (or the half-written JSON) as its answer
to the user. Now a cut-off answer raises ``ModelResponseError`` naming ``max_tokens``, and a
cut-off call of a real tool is a call whose arguments did not parse, which the toolkit answers
as an argument error without running the tool.

The parsing is checked on exact outputs (no model run); the ReAct agent with the real
SmolLM2-135M model (marker ``local_model``).
"""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import ModelResponseError
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import LlamaCppChatModel
from agentscope_rt.tool import Toolkit, ToolResponse

from ..react._support import make_agent, toolkit_of

GREEDY = {"temperature": 0.0, "seed": 7}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def _tool(name: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": "Get the current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }


def _parse_cut_off(
    text: str, tools: list[str], tool_choice: str, messages: list[dict[str, Any]] = MESSAGES
) -> list[Any]:
    """What the model makes of *text* when generation stopped at ``max_tokens``."""
    model = LlamaCppChatModel(generate_kwargs={"max_tokens": 12})  # loads nothing yet
    plan = model._plan(messages, [_tool(n) for n in tools], tool_choice, None, {})  # type: ignore[arg-type]
    content, _ = model._parse(plan, text, "length")
    return content


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "final_answer", "arguments": {"text": "Once upon a time',
        '{"name": "final_answer", "arguments": {',
        '{"name": "final_',
        '{"na',
        "",
    ],
)
def test_a_cut_off_answer_raises_naming_max_tokens(text: str) -> None:
    with pytest.raises(ModelResponseError, match=r"cut off by max_tokens.*now 12"):
        _parse_cut_off(text, ["get_weather"], "auto")


def test_a_cut_off_call_with_no_name_yet_raises_when_several_tools_are_required() -> None:
    with pytest.raises(ModelResponseError, match="max_tokens"):
        _parse_cut_off('{"name": "get_', ["get_weather", "get_time"], "required")


@pytest.mark.parametrize(
    ("text", "tools", "tool_choice", "called"),
    [
        ('{"name": "get_weather", "arguments": {"ci', ["get_weather"], "auto", "get_weather"),
        ('{"na', ["get_weather"], "required", "get_weather"),
        ('{"name": "get_time", "arguments": {', ["get_weather", "get_time"], "auto", "get_time"),
        # A tool of the user's that is really called final_answer is a tool like any other.
        ('{"name": "final_answer", "arguments": {"c', ["final_answer"], "auto", "final_answer"),
    ],
)
async def test_a_cut_off_tool_call_is_an_argument_error_and_the_tool_does_not_run(
    text: str, tools: list[str], tool_choice: str, called: str
) -> None:
    (call,) = _parse_cut_off(text, tools, tool_choice)
    assert isinstance(call, ToolUseBlock)
    assert (call.name, call.input, call.raw_input) == (called, {}, text)
    ran: list[str] = []

    def weather(city: str) -> ToolResponse:
        """Get the current weather of a city.

        Args:
            city: the city.
        """
        ran.append(city)
        return ToolResponse(content=[TextBlock(text="sunny")])

    toolkit = Toolkit()
    for name in tools:
        toolkit.register_tool_function(weather, func_name=name)
    chunks = [chunk async for chunk in toolkit.call_tool_function(call)]
    answer = chunks[-1].content[0]["text"]
    assert answer.startswith(f"InvalidArgumentsError: Invalid arguments for '{called}'"), answer
    assert ran == []


CALLED_BEFORE = [
    *MESSAGES,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "sunny"},
]


def _parse_text(messages: list[dict[str, Any]], text: str) -> list[Any]:
    """What the model makes of *text* answered where plain text was asked for."""
    return _parse_cut_off(text, ["get_weather"], "none", messages)


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        '{ "name": "get_',
        '{"na',
        '{"name": "final_answer", "arguments": {}}',
    ],
)
def test_plain_text_imitating_the_earlier_calls_is_never_the_answer(text: str) -> None:
    with pytest.raises(ModelResponseError, match="plain-text answer was asked for"):
        _parse_text(CALLED_BEFORE, text)


def test_plain_text_that_is_no_call_is_the_answer() -> None:
    whole = '{"name": "final_answer", "arguments": {"text": "It is sunny."}}'
    assert _parse_text(CALLED_BEFORE, whole) == [TextBlock(text="It is sunny.")]
    for text in ['{"city": "Paris"}', "It is sunny.", '  "name": x']:
        assert _parse_text(CALLED_BEFORE, text) == [TextBlock(text=text)]
    # Without earlier calls in the conversation, JSON is what the user asked for.
    call = '{"name": "get_weather", "arguments": {}}'
    assert _parse_text(MESSAGES, call) == [TextBlock(text=call)]


def _agent(max_tokens: int) -> ReActAgent:
    def get_weather(city: str) -> ToolResponse:
        """Get the current weather of a city.

        Args:
            city: the city.
        """
        return ToolResponse(content=[TextBlock(text=f"Sunny in {city}")])

    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": max_tokens})
    return make_agent(model, toolkit_of(get_weather), max_iters=3)


@pytest.mark.local_model
async def test_an_agent_whose_answer_is_cut_off_raises_instead_of_answering_an_error() -> None:
    agent = _agent(max_tokens=16)
    with pytest.raises(ModelResponseError, match=r"cut off by max_tokens.*now 16"):
        await agent(Msg("user", "Tell me a long story about a dragon.", "user"))
    # Nothing of the cut-off answer was recorded: no call of the pseudo-tool, no error about it.
    memory = await agent.memory.get_memory()
    assert [m.role for m in memory] == ["user"]
    # With room for the answer, an agent answers in text.
    reply = await _agent(max_tokens=200)(Msg("user", "What is 2 + 2?", "user"))
    text = reply.get_text_content() or ""
    assert "4" in text and "final_answer" not in text and "Error" not in text
