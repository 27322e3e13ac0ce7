"""LlamaCppChatModel (the real SmolLM2-135M-Instruct) at its limits: a prompt larger than the
context window, and a constrained tool call cut off by ``max_tokens``."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import ModelError, ModelResponseError
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse, LlamaCppChatModel
from agentscope_rt.token import CharTokenCounter
from agentscope_rt.tool import Toolkit, ToolResponse

from .test_model_llamacpp import GREEDY, WEATHER_TOOL

pytestmark = pytest.mark.local_model


async def test_a_prompt_beyond_the_context_window_says_what_to_do() -> None:
    model = LlamaCppChatModel(n_ctx=256, generate_kwargs={**GREEDY, "max_tokens": 4})
    long_text = "The quick brown fox jumps over the lazy dog. " * 60
    with pytest.raises(ModelError) as info:
        await model([{"role": "user", "content": long_text}])
    message = str(info.value)
    assert "context window holds 256" in message
    assert "n_ctx" in message and "max_tokens" in message and "formatter" in message
    # The model is still usable (the lock was released, nothing half-started).
    response = await model([{"role": "user", "content": "Hi"}], max_tokens=2)
    assert isinstance(response, ChatResponse)


async def test_a_tool_call_cut_off_by_max_tokens_is_never_text() -> None:
    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 6})
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    response = await model(messages, tools=[WEATHER_TOOL], tool_choice="required")
    assert isinstance(response, ChatResponse)
    assert not [b for b in response.content if isinstance(b, TextBlock)]
    (call,) = response.content
    assert isinstance(call, ToolUseBlock)
    assert call.name == "get_weather"
    assert call.input == {} and call.raw_input and call.raw_input.startswith("{")


async def test_an_answer_cut_off_by_max_tokens_raises() -> None:
    # Under "auto" the output may be the answer (the pseudo-tool final_answer, which no
    # toolkit could answer); cut off before it names a real tool, it is no call at all.
    model = LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 6})
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    with pytest.raises(ModelResponseError, match=r"cut off by max_tokens.*now 6"):
        await model(messages, tools=[WEATHER_TOOL], tool_choice="auto")


async def test_a_cut_off_call_does_not_reach_the_reply_or_the_console(
    capsys: pytest.CaptureFixture[str],
) -> None:
    toolkit = Toolkit()
    ran: list[str] = []

    def get_weather(city: str) -> ToolResponse:
        """Get the current weather of a city.

        Args:
            city: the city.
        """
        ran.append(city)
        return ToolResponse(content=f"Sunny in {city}")

    toolkit.register_tool_function(get_weather)
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are terse.",
        model=LlamaCppChatModel(generate_kwargs={**GREEDY, "max_tokens": 6}),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
        max_iters=2,
    )

    async def call_the_tool(self: ReActAgent, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"tool_choice": "required"}

    agent.register_instance_hook("pre_reasoning", "call_the_tool", call_the_tool)
    try:
        answer = (
            await agent(Msg("user", "What is the weather in Paris?", "user"))
        ).get_text_content()
    except ModelResponseError:
        # The summary at max_iters imitated the calls (JSON) instead of answering: refused.
        answer = None
    shown = capsys.readouterr().out
    memory = await agent.memory.get_memory()
    calls = [b for m in memory for b in m.get_content_blocks("tool_use")]
    assert calls and all(c.raw_input for c in calls)
    # The cut-off calls' text reached neither the reply nor the console.
    for call in calls:
        assert call.raw_input not in (answer or "")
        assert call.raw_input not in shown
    assert not (answer or "").lstrip().startswith("{")
    # Each was answered as an argument error, for the model to try again; none ran.
    results = [b for m in memory for b in m.get_content_blocks("tool_result")]
    assert len(results) == len(calls)
    assert all(r.output[0]["text"].startswith("InvalidArgumentsError") for r in results)
    assert ran == []
    agent.state_dict()


async def test_the_prompt_budget_counts_what_the_model_renders() -> None:
    model = LlamaCppChatModel(n_ctx=512, generate_kwargs={**GREEDY, "max_tokens": 12})
    assert model.context_window == 512
    counter, budget = model.prompt_budget()
    assert budget == 500
    msgs = [Msg("system", "You are terse.", "system")] + [
        Msg("user", f"Note {i}: the sky was blue and the sea was calm.", "user") for i in range(60)
    ]
    formatter = OpenAIChatFormatter()
    whole = await formatter.format(msgs)
    assert await counter.count(whole) > budget
    fitted = await formatter.format_within(msgs, [WEATHER_TOOL], counter, budget)
    assert await counter.count(fitted, tools=[WEATHER_TOOL]) <= budget
    assert fitted[0]["role"] == "system" and fitted[-1] == whole[-1]
    # Counted as the model renders it: with the tool instructions, the call fits its window.
    response = await model(fitted, tools=[WEATHER_TOOL], tool_choice="required")
    assert isinstance(response, ChatResponse)
    assert formatter.max_tokens is None and formatter.token_counter is None


async def test_react_agent_keeps_a_long_conversation_within_the_context_window() -> None:
    model = LlamaCppChatModel(n_ctx=512, generate_kwargs={**GREEDY, "max_tokens": 8})
    formatter = OpenAIChatFormatter()
    agent = ReActAgent(name="Friday", sys_prompt="You are terse.", model=model, formatter=formatter)
    agent.set_console_output_enabled(False)
    for i in range(40):
        await agent.memory.add(
            Msg("user", f"Note {i}: the sky was blue and the sea was calm today.", "user")
        )
    # Without the budget the prompt (about 900 tokens) would not fit the 512-token window.
    reply = await agent(Msg("user", "Say hi.", "user"))
    assert reply.get_text_content()
    assert formatter.max_tokens is None  # the shared formatter was not changed
    # A formatter with a budget of its own keeps it: here one too large, so the model says
    # what to do instead of truncating.
    own = OpenAIChatFormatter(token_counter=CharTokenCounter(), max_tokens=100_000)
    strict = ReActAgent(name="Friday", sys_prompt="You are terse.", model=model, formatter=own)
    strict.set_console_output_enabled(False)
    await strict.memory.add(await agent.memory.get_memory())
    with pytest.raises(ModelError, match="n_ctx"):
        await strict(Msg("user", "Say hi.", "user"))
