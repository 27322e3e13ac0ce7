"""Port of AgentScope's structured-output example (``examples/functionality/structured_output``).

The agent is asked twice with a pydantic ``structured_model``; the example prints
``json.dumps(res.metadata, indent=4)``, so the reply's metadata must hold exactly the model's
fields — nothing the program did not ask for.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import DashScopeChatFormatter
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import reply, tool_call
from agentscope_rt.tool import Toolkit

from ._support import cloud_model


class TableModel(BaseModel):
    """A simple table model for structured output."""

    name: str = Field(description="The name of the person")
    age: int = Field(description="The age of the person", ge=0, le=120)
    intro: str = Field(description="A one-sentence introduction of this person")
    honors: list[str] = Field(description="A list of honors received by the person")


class ChoiceModel(BaseModel):
    """A simple choice model for structured output."""

    choice: Literal["apple", "banana", "orange"] = Field(
        description="Your choice of fruit",
    )


EINSTEIN = {
    "name": "Albert Einstein",
    "age": 76,
    "intro": "A theoretical physicist.",
    "honors": ["Nobel Prize in Physics (1921)"],
}


async def main() -> list[str]:
    """The example's main(): what it prints, one string per print()."""
    toolkit = Toolkit()
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant named Friday.",
        model=cloud_model(
            # Out of range first: the agent hands the validation error back to the model.
            reply(tool_call("generate_response", {**EINSTEIN, "age": 176})),
            reply("Here is the card.", tool_call("generate_response", EINSTEIN)),
            # No text beside the call: the agent asks for a text answer next, as AgentScope does.
            reply(tool_call("generate_response", {"choice": "apple"})),
            "I choose apples.",
        ),
        formatter=DashScopeChatFormatter(),
        toolkit=toolkit,
        memory=InMemoryMemory(),
    )
    agent.set_console_output_enabled(False)

    printed = []
    query_msg_1 = Msg("user", "Please introduce Einstein", "user")
    res = await agent(query_msg_1, structured_model=TableModel)
    printed.append(f"Structured Output 1:\n```\n{json.dumps(res.metadata, indent=4)}\n```")

    query_msg_2 = Msg("user", "Choose one of your favorite fruit", "user")
    res = await agent(query_msg_2, structured_model=ChoiceModel)
    printed.append(f"Structured Output 2:\n```\n{json.dumps(res.metadata, indent=4)}\n```")
    printed.append(res.get_text_content())
    return printed


async def test_the_structured_output_example_prints_exactly_the_fields() -> None:
    printed = await main()

    assert printed == [
        f"Structured Output 1:\n```\n{json.dumps(EINSTEIN, indent=4)}\n```",
        f"Structured Output 2:\n```\n{json.dumps({'choice': 'apple'}, indent=4)}\n```",
        "I choose apples.",
    ]
