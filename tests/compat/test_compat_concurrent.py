"""Port of AgentScope's parallel multi-perspective discussion (``examples/agents_with_concurrent``).

A user states a topic; four agents answer it at the same time. The original gathers the calls
with ``asyncio.gather``, which cannot run under trio; the port uses ``fanout_pipeline``, which
runs them side by side on either loop and returns the replies in agent order.
"""

from __future__ import annotations

from agentscope_rt.agent import ReActAgent, UserAgent
from agentscope_rt.formatter import DashScopeChatFormatter
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import fanout_pipeline
from agentscope_rt.tool import Toolkit

from ._support import ScriptedUserInput, cloud_model

PERSPECTIVES = {
    "Optimist": "You are an optimistic thinker who always looks at the bright side of things.",
    "Realist": "You are a practical realist who focuses on facts, evidence, and balance.",
    "Critic": "You are a critical thinker who questions assumptions.",
    "Innovator": "You are a creative innovator who thinks outside the box.",
}


def create_agent(name: str, sys_prompt: str) -> ReActAgent:
    """Create a ReActAgent with common configuration."""
    agent = ReActAgent(
        name=name,
        sys_prompt=sys_prompt,
        model=cloud_model(
            f"{name} on remote work: view one.",
            f"{name} on city bikes: view two.",
            stream=False,
        ),
        formatter=DashScopeChatFormatter(),
        toolkit=Toolkit(),
        memory=InMemoryMemory(),
    )
    agent.set_console_output_enabled(False)
    return agent


async def main(lines: list[str]) -> list[list[str]]:
    """Main discussion loop; returns the views gathered for each topic."""
    user = UserAgent(name="user")
    user.override_instance_input_method(ScriptedUserInput(lines))
    user.set_console_output_enabled(False)
    agents = [create_agent(name, prompt) for name, prompt in PERSPECTIVES.items()]

    rounds = []
    msg = None
    while True:
        msg = await user(msg)
        if msg.content.lower() in ["exit", "quit", "bye"]:
            break
        topic = msg.content
        msg = Msg(
            name="user",
            content=f"Please share your perspective on this topic: {topic}",
            role="user",
        )
        # Get all perspectives in parallel
        replies = await fanout_pipeline(agents, msg)
        rounds.append([r.get_text_content() for r in replies])
    return rounds


async def test_the_concurrent_example_gathers_four_views_per_topic() -> None:
    rounds = await main(["remote work", "city bikes", "bye"])

    assert rounds == [
        [f"{name} on remote work: view one." for name in PERSPECTIVES],
        [f"{name} on city bikes: view two." for name in PERSPECTIVES],
    ]
