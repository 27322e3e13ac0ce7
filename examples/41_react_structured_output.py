"""Structured output from a ReAct agent: the validated fields land in the reply's metadata.

With ``structured_model=`` the agent registers the finish function ``generate_response``
(its parameters are the model's fields) and requires a tool call. Invalid arguments go back to
the model as an "Arguments Validation Error" so it can correct itself; the next plain call
removes the finish function again.

Part 1 runs offline on SmolLM2-135M-Instruct (or an OpenAI model when ``OPENAI_API_KEY`` is
set). Part 2 replays a scripted model that first gets a field wrong, to show the retry.

Run with ``python examples/41_react_structured_output.py`` (add ``trio`` to run on trio).
"""

from __future__ import annotations

import json
import pathlib
import sys

import anyio
from pydantic import BaseModel, Field

import agentscope_rt.formatter
from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel, reply, tool_call

# The examples share a helper module next to them; make it importable however we are run.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _models import pick_chat_model


class CityCard(BaseModel):
    """What we want to know about a city."""

    city: str = Field(description="The city's name")
    country: str = Field(description="The country the city is in")
    population_millions: float = Field(description="Population in millions", ge=0)


async def with_a_real_model() -> None:
    model, formatter_name = pick_chat_model(
        generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 64}
    )
    agent = ReActAgent(
        name="Friday",
        sys_prompt=(
            "You are a helpful assistant who knows geography. After filling in a card, tell the "
            "user about the city in one short sentence."
        ),
        model=model,
        formatter=getattr(agentscope_rt.formatter, formatter_name)(),
        max_iters=3,
    )
    agent.set_console_output_enabled(False)
    print(f"1) {model.model_name}")
    answer = await agent(
        Msg("user", "Fill in the card for Paris, France.", "user"), structured_model=CityCard
    )
    card = {k: answer.metadata[k] for k in CityCard.model_fields if k in answer.metadata}
    print(f"  structured output: {json.dumps(card, ensure_ascii=False)}")
    print(f"  generate_reason: {agent.generate_reason}")
    print("  (the shape is validated; the facts are only as good as the model)")


async def invalid_then_corrected() -> None:
    model = ScriptedChatModel(
        [
            reply(
                tool_call(
                    "generate_response",
                    {"city": "Lima", "country": "Peru", "population_millions": -10},
                )
            ),
            reply(
                "Lima is Peru's capital.",
                tool_call(
                    "generate_response",
                    {"city": "Lima", "country": "Peru", "population_millions": 10.1},
                ),
            ),
        ]
    )
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant.",
        model=model,
        formatter=agentscope_rt.formatter.OpenAIChatFormatter(),
    )
    agent.set_console_output_enabled(False)
    print("\n2) a scripted model that gets a field wrong first")
    answer = await agent(Msg("user", "Card for Lima?", "user"), structured_model=CityCard)
    for msg in await agent.memory.get_memory():
        for block in msg.get_content_blocks("tool_result"):
            print(f"  tool result: {block.output[0].text if block.output else ''}")
    print(f"  metadata: {json.dumps({k: answer.metadata[k] for k in CityCard.model_fields})}")
    print(f"  text: {answer.get_text_content()!r}")
    assert "generate_response" in agent.toolkit.tools
    model.add("Anything else?")
    await agent(Msg("user", "Thanks!", "user"))
    gone = "generate_response" not in agent.toolkit.tools
    print(f"  after a plain call the finish function is gone: {gone}")


async def main() -> None:
    await with_a_real_model()
    await invalid_then_corrected()


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
