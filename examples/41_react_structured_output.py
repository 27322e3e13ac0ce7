"""Structured output from a ReAct agent: the validated fields land in the reply's metadata.

With ``structured_model=`` the agent registers the finish function ``generate_response``
(its parameters are the model's fields) and requires a tool call. Invalid arguments go back to
the model as an "Arguments Validation Error" so it can correct itself; the next plain call
removes the finish function again.

Part 1 runs offline on SmolLM2-135M-Instruct (or an OpenAI model when ``OPENAI_API_KEY`` is
set). Part 2 replays a scripted model that first gets a field wrong, to show the retry.

Run: ``python examples/41_react_structured_output.py`` (asyncio) or
``python examples/41_react_structured_output.py trio``.

What to look for: in part 1 the agent prints its ``generate_response`` call and answer as the
model streams; the structured output printed after it is always of the right shape (validated
against ``CityCard``), but SmolLM2-135M often fills in wrong facts, and the check after it says
when a value is implausible. In part 2 the console shows the first call refused with
"Arguments Validation Error", the corrected call, the validated metadata, and that a plain call
afterwards no longer offers the finish function.
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
        stream=True, generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 64}
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
    print(f"1) {model.model_name}")
    answer = await agent(
        Msg("user", "Fill in the card for Paris, France.", "user"), structured_model=CityCard
    )
    card = {k: answer.metadata[k] for k in CityCard.model_fields if k in answer.metadata}
    print(f"\n  structured output: {json.dumps(card, ensure_ascii=False)}")
    print(f"  generate_reason: {agent.generate_reason}")
    population = card.get("population_millions")
    if isinstance(population, (int, float)) and not 1 <= population <= 40:
        print(
            f"  check: {population:g} million people is not Paris's population (about 2 million\n"
            "  in the city, 11 with its region). The card has the right shape because it was\n"
            "  validated; its facts are the model's, and SmolLM2-135M often gets them wrong."
        )
    else:
        print("  check: the population is plausible (2 million in the city, 11 with its region)")


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
    print("\n2) a scripted model that gets a field wrong first")
    answer = await agent(Msg("user", "Card for Lima?", "user"), structured_model=CityCard)
    print(f"\n  metadata: {json.dumps({k: answer.metadata[k] for k in CityCard.model_fields})}")
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
