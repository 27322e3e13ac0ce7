"""A 3-agent debate watched live in the studio page, with you as the judge.

``serve()`` starts the studio in this program's own event loop (asyncio or trio) and gives a URL
with a random token: open it in a browser. Three debaters in a MsgHub stream their turns (one
cites a study through a tool: arguments, result and duration appear on the page); each round is
an OpenTelemetry span of our own, shown as a tree with latencies. Then the judge, a UserAgent
answered from the page, gives a verdict with a structured vote. Any replying agent can be
interrupted with its button.

Run: ``python examples/81_studio.py`` (asyncio) or
``python examples/81_studio.py trio``. Open the printed
URL; Ctrl+C stops it. With ``AGENTSCOPE_RT_EXAMPLES=1`` it runs headless: no pauses, the verdict
is posted to the page's own route by the script, and it exits by itself.

What to look for: the studio URL; the debaters' turns printed on the console as they stream
(the tool call and result among them) while the page shows the same; the judge's verdict with
its structured vote once it is given on the page.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import httpx
from opentelemetry.sdk.trace import TracerProvider

from agentscope_rt.agent import ReActAgent, UserAgent
from agentscope_rt.formatter import OpenAIMultiAgentFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import ChatUsage, FunctionChatModel, reply, tool_call
from agentscope_rt.pipeline import MsgHub, sequential_pipeline
from agentscope_rt.studio import Studio, serve
from agentscope_rt.tool import Toolkit, ToolResponse

HEADLESS = bool(os.environ.get("AGENTSCOPE_RT_EXAMPLES"))
PACE = 0.0 if HEADLESS else 1.5  # seconds a debater "thinks", so a person can watch
MOTION = "cities should replace short car trips with bicycles"
STANCES = {"Ada": "for", "Brook": "against", "Cyd": "undecided about"}
VERDICT = {
    "type": "object",
    "properties": {
        "winner": {"type": "string", "enum": sorted(STANCES)},
        "score": {"type": "integer", "description": "how convincing, 1 to 10"},
    },
    "required": ["winner"],
}


def cite_study(topic: str) -> ToolResponse:
    """Find a study about a topic.

    Args:
        topic: what the study should be about.
    """
    return ToolResponse(
        content=[TextBlock(text=f"A 2024 study: 40% of car trips on {topic} are under 3 km.")]
    )


def debater(name: str) -> ReActAgent:
    stance = STANCES[name]

    async def answer(messages: list[dict[str, Any]], tools: Any) -> Any:
        await anyio.sleep(PACE)
        transcript = " ".join(str(m.get("content", "")) for m in messages)
        if name == "Ada" and messages[-1].get("role") != "tool" and "2024 study" not in transcript:
            return reply(tool_call("cite_study", {"topic": "city streets"}))
        heard = [other for other in STANCES if other != name and f"{other}:" in transcript]
        if not heard:
            text = f"I open the debate: I am {stance} the motion, and the numbers back me."
        else:
            text = (
                f"Having heard {', '.join(heard)}, I remain {stance} the motion: short trips first."
            )
        # Rough token counts, so the page's usage table has something to show.
        return reply(text, usage=ChatUsage(len(transcript) // 4, len(text) // 4))

    toolkit = Toolkit()
    toolkit.register_tool_function(cite_study)
    return ReActAgent(
        name=name,
        sys_prompt=f"You are {name}, {stance} the motion. Keep it short.",
        model=FunctionChatModel(answer, stream=True, model_name=f"debate-{name.lower()}"),
        formatter=OpenAIMultiAgentFormatter(),
        toolkit=toolkit,
    )


async def answer_as_the_judge(studio: Studio) -> None:
    """Headless runs only: what a person would type, posted to the page's own route."""
    while not studio.user_input.requests:  # noqa: ASYNC110 (the question appears in another task)
        await anyio.sleep(0.05)
    request_id = next(iter(studio.user_input.requests))
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{studio.base_url}/api/input",
            params={"token": studio.token},
            json={
                "request_id": request_id,
                "text": "Ada made the case.",
                "structured": {"winner": "Ada", "score": 8},
            },
        )
        response.raise_for_status()


async def main() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("debate")
    async with serve() as studio:
        provider.add_span_processor(studio.span_processor)
        print(f"Studio: {studio.url}")
        debaters = [debater(name) for name in STANCES]
        judge = UserAgent("Judge")
        judge.override_instance_input_method(studio.user_input)
        studio.watch(*debaters, judge)
        announcement = Msg(
            "Moderator", f"Motion: {MOTION}. Two rounds, then the judge decides.", "system"
        )
        async with anyio.create_task_group() as tg:
            if HEADLESS:
                tg.start_soon(answer_as_the_judge, studio)
            async with MsgHub([*debaters, judge], announcement=announcement, name="debate"):
                for round_number in (1, 2):
                    with tracer.start_as_current_span(f"round {round_number}"):
                        await sequential_pipeline(debaters)
                print("Judge, give your verdict on the page ...")
                verdict = await judge(structured_model=VERDICT)
        print(f"Verdict: {verdict.get_text_content()} {verdict.metadata}")
        print(f"Events dropped on the way to the page: {studio.dropped}")
        if not HEADLESS:
            print("The page stays up; Ctrl+C to stop.")
            await anyio.sleep_forever()
    provider.shutdown()


if __name__ == "__main__":
    try:
        anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
    except* KeyboardInterrupt:  # trio delivers Ctrl+C inside an exception group
        print("Stopped.")
