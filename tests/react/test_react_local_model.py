"""End to end with a real model: SmolLM2-135M (llama.cpp) calls a real tool through the loop.

The small model calls a tool reliably only when it is offered one tool with
``tool_choice="required"``; a pre_reasoning hook asks for that until the tool has answered, and
for plain text afterwards.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import TextBlock
from agentscope_rt.model import LlamaCppChatModel
from agentscope_rt.tool import ToolResponse

from ._support import history, make_agent, texts_of, tool_pair_problems, toolkit_of, user

pytestmark = pytest.mark.local_model


async def test_local_model_calls_a_real_tool_through_the_loop() -> None:
    asked: list[str] = []

    def get_weather(city: str) -> ToolResponse:
        """Get the current weather of a city.

        Args:
            city: the name of the city.
        """
        asked.append(city)
        return ToolResponse(content=[TextBlock(text=f"It is sunny and 21 degrees in {city}.")])

    agent = make_agent(
        LlamaCppChatModel(generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 48}),
        toolkit_of(get_weather),
        sys_prompt="You are a helpful assistant. Use the tools you are given.",
        max_iters=3,
    )

    async def tool_first(self: ReActAgent, kwargs: dict[str, Any]) -> dict[str, Any]:
        msgs = await self.memory.get_memory()
        answered = any(m.has_content_blocks("tool_result") for m in msgs)
        return {"tool_choice": "none" if answered else "required"}

    agent.register_instance_hook("pre_reasoning", "tool_first", tool_first)
    reply = await agent(user("What is the weather in Paris?"))

    assert len(asked) == 1 and "paris" in asked[0].lower()
    msgs = await history(agent.memory)
    assert [m.role for m in msgs] == ["user", "assistant", "system", "assistant"]
    assert "sunny" in texts_of(msgs[2])
    assert tool_pair_problems(msgs) == []
    answer = reply.get_text_content() or ""
    # An answer in words, not an imitation of the call the conversation shows.
    assert answer and not answer.lstrip().startswith("{")
    assert agent.generate_reason == "model_stop"
    assert agent.usage is not None and agent.usage.input_tokens > 0
