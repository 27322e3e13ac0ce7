"""Port of AgentScope's multi-agent conversation (``examples/workflows/multiagent_conversation``).

Three agents introduce themselves in a ``MsgHub`` with an announcement, through
``sequential_pipeline``; then Bob leaves the hub, a farewell is broadcast in his name, and the
two others speak again. Checked: who heard what, in which order.
"""

from __future__ import annotations

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import DashScopeMultiAgentFormatter
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import MsgHub, sequential_pipeline

from ._support import cloud_model


def create_participant_agent(
    name: str,
    age: int,
    career: str,
    character: str,
    *lines: str,
) -> ReActAgent:
    """Create a participant agent with a specific name, age, and character."""
    agent = ReActAgent(
        name=name,
        sys_prompt=(
            f"You're a {age}-year-old {career} named {name} and you're a {character} person."
        ),
        model=cloud_model(*lines),
        # Use multiagent formatter because the multiple entities will
        # occur in the prompt of the LLM API call
        formatter=DashScopeMultiAgentFormatter(),
    )
    agent.set_console_output_enabled(False)
    return agent


async def main() -> tuple[ReActAgent, ReActAgent, ReActAgent]:
    """Run a multi-agent conversation workflow."""
    alice = create_participant_agent(
        "Alice", 30, "teacher", "friendly", "Hi, I'm Alice, a teacher.", "Bye, Bob!"
    )
    bob = create_participant_agent("Bob", 14, "student", "rebellious", "I'm Bob. Whatever.")
    charlie = create_participant_agent(
        "Charlie", 28, "doctor", "thoughtful", "Charlie here, a doctor.", "Good luck, Bob."
    )

    async with MsgHub(
        participants=[alice, bob, charlie],
        announcement=Msg(
            "system",
            "Now you meet each other with a brief self-introduction.",
            "system",
        ),
    ) as hub:
        await sequential_pipeline([alice, bob, charlie])

        # Delete a participant agent from the hub and fake a broadcast message
        hub.delete(bob)
        await hub.broadcast(
            Msg(
                "bob",
                "I have to start my homework now, see you later!",
                "assistant",
            ),
        )
        await alice()
        await charlie()
    return alice, bob, charlie


def _heard(texts: list[tuple[str, str | None]]) -> list[str]:
    return [f"{name}: {text}" for name, text in texts]


async def test_the_conversation_example_delivers_to_current_members_only() -> None:
    alice, bob, charlie = await main()

    async def transcript(agent: ReActAgent) -> list[str]:
        return _heard([(m.name, m.get_text_content()) for m in await agent.memory.get_memory()])

    announcement = "system: Now you meet each other with a brief self-introduction."
    assert await transcript(alice) == [
        announcement,
        "Alice: Hi, I'm Alice, a teacher.",
        "Bob: I'm Bob. Whatever.",
        "Charlie: Charlie here, a doctor.",
        "bob: I have to start my homework now, see you later!",
        "Alice: Bye, Bob!",
        "Charlie: Good luck, Bob.",
    ]
    # Bob left before the farewell: he hears nothing after his own turn's neighbours.
    assert await transcript(bob) == [
        announcement,
        "Alice: Hi, I'm Alice, a teacher.",
        "Bob: I'm Bob. Whatever.",
        "Charlie: Charlie here, a doctor.",
    ]
    assert (await transcript(charlie))[-3:] == [
        "bob: I have to start my homework now, see you later!",
        "Alice: Bye, Bob!",
        "Charlie: Good luck, Bob.",
    ]
