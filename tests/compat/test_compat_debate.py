"""Port of AgentScope's multi-agent debate (``examples/workflows/multiagent_debate``).

Alice and Bob debate inside a ``MsgHub`` with the moderator listening; the moderator answers
outside the hub with a structured ``JudgeModel`` and the loop ends when it says the debate is
finished, reading ``msg_judge.metadata.get("finished")`` as the original does.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import DashScopeChatFormatter, DashScopeMultiAgentFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel, reply, tool_call
from agentscope_rt.pipeline import MsgHub

from ._support import cloud_model

topic = (
    "The two circles are externally tangent and there is no relative sliding. "
    "The radius of circle A is 1/3 the radius of circle B. Circle A rolls "
    "around circle B one trip back to its starting point. How many times will "
    "circle A revolve in total?"
)


def create_solver_agent(name: str, model: ScriptedChatModel) -> ReActAgent:
    """Get a solver agent."""
    agent = ReActAgent(
        name=name,
        sys_prompt=f"You're a debater named {name}. Hello and welcome to the "
        "debate competition. It's not necessary to fully agree "
        "with each other's perspectives, as our objective is to "
        "find the correct answer. The debate topic is stated as "
        f"follows: {topic}.",
        model=model,
        formatter=DashScopeChatFormatter(),
    )
    agent.set_console_output_enabled(False)
    return agent


class JudgeModel(BaseModel):
    """The structured output model for the moderator."""

    finished: bool = Field(
        description="Whether the debate is finished.",
    )
    correct_answer: str | None = Field(
        description="The correct answer to the debate topic, only if the "
        "debate is finished. Otherwise, leave it as None.",
        default=None,
    )


async def run_multiagent_debate() -> tuple[list[str], ReActAgent]:
    """Run the multi-agent debate workflow; return what it prints and the moderator."""
    alice = create_solver_agent("Alice", cloud_model("Three times.", "Still three, I think."))
    bob = create_solver_agent(
        "Bob", cloud_model("Four times: 3 + 1.", "Four, by the coin paradox.")
    )
    moderator = ReActAgent(
        name="Aggregator",
        sys_prompt=(
            "You're a moderator. There will be two debaters involved in a debate "
            "competition. They will present their answer and discuss their "
            f"perspectives on the topic:\n```\n{topic}\n```\n"
            "At the end of each round, you will evaluate both sides' answers "
            "and decide which one is correct."
        ),
        model=cloud_model(
            reply("Not settled yet.", tool_call("generate_response", {"finished": False})),
            reply(tool_call("generate_response", {"finished": True, "correct_answer": "4"})),
            # No text beside the second call: the agent asks for one, as AgentScope does.
            "Bob is right: four revolutions.",
        ),
        formatter=DashScopeMultiAgentFormatter(),
    )
    moderator.set_console_output_enabled(False)

    printed = []
    while True:
        # The reply messages in MsgHub from the participants will be
        # broadcasted to all participants.
        async with MsgHub(participants=[alice, bob, moderator]):
            await alice(
                Msg("user", "You are affirmative side, Please express your viewpoints.", "user"),
            )
            await bob(
                Msg(
                    "user",
                    "You are negative side. You disagree with the "
                    "affirmative side. Provide your reason and answer.",
                    "user",
                ),
            )

        # Alice and Bob doesn't need to know the moderator's message,
        # so moderator is called outside the MsgHub.
        msg_judge = await moderator(
            Msg(
                "user",
                "Now you have heard the answers from the others, have "
                "the debate finished, and can you get the correct answer?",
                "user",
            ),
            structured_model=JudgeModel,
        )
        printed.append(f"【STRUCTURED_OUTPUT】: {msg_judge.metadata}")

        if msg_judge.metadata.get("finished"):
            printed.append(
                "The debate is finished, and the correct answer is: "
                f"{msg_judge.metadata.get('correct_answer')}"
            )
            break
    return printed, moderator


async def test_the_debate_example_runs_two_rounds_to_a_verdict() -> None:
    printed, moderator = await run_multiagent_debate()

    assert printed == [
        "【STRUCTURED_OUTPUT】: {'finished': False, 'correct_answer': None}",
        "【STRUCTURED_OUTPUT】: {'finished': True, 'correct_answer': '4'}",
        "The debate is finished, and the correct answer is: 4",
    ]
    # The moderator heard both debaters, in order, in both rounds.
    heard = [m.get_text_content() for m in await moderator.memory.get_memory() if m.name != "user"]
    assert [h for h in heard if h in {"Three times.", "Four times: 3 + 1."}] == [
        "Three times.",
        "Four times: 3 + 1.",
    ]
    assert "Four, by the coin paradox." in heard
