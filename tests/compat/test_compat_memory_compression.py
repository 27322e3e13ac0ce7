"""Port of AgentScope's memory-compression example
(``examples/functionality/short_term_memory/memory_compression``).

``CompressionConfig(agent_token_counter=CharTokenCounter(), trigger_threshold=1000,
keep_recent=3)`` over an eight-turn conversation. A threshold written for AgentScope must mean
the same here: the expected outcome below is what AgentScope 1.0.21 itself did with the same
conversation and the same model answers (compression on turn 6, of the first eight messages,
with this summary).
"""

from __future__ import annotations

from typing import Any

from agentscope_rt.agent import ReActAgent, UserAgent
from agentscope_rt.formatter import DashScopeChatFormatter
from agentscope_rt.model import FunctionChatModel, reply
from agentscope_rt.token import CharTokenCounter

from ._support import ScriptedUserInput

SUMMARY = {
    "task_overview": "Answer questions.",
    "current_state": "Answered some.",
    "important_discoveries": "None.",
    "next_steps": "Answer more.",
    "context_to_preserve": "Topics so far.",
}
FIRST_EIGHT = [
    prefix
    for i in range(1, 5)
    for prefix in (f"Question {i}: ", f"Answer {i}: it")  # the first 12 characters of each
]
# Recorded from AgentScope 1.0.21 running this conversation.
AGENTSCOPE_COMPRESSED_AFTER_EACH_TURN = [[], [], [], [], [], FIRST_EIGHT, FIRST_EIGHT, FIRST_EIGHT]
AGENTSCOPE_SUMMARY = (
    "<system-info>Here is a summary of your previous work\n# Task Overview\nAnswer questions."
    "\n\n# Current State\nAnswered some.\n\n# Important Discoveries\nNone.\n\n# Next Steps\n"
    "Answer more.\n\n# Context to Preserve\nTopics so far.</system-info>"
)


class QwenStandIn:
    """Answers each question with a fixed-length text, and compression calls with SUMMARY."""

    def __init__(self) -> None:
        self.answers = 0

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> Any:
        if "continuation summary" in str(messages[-1]["content"]):
            return reply("summary", metadata=dict(SUMMARY))
        self.answers += 1
        return f"Answer {self.answers}: " + "it depends on the details. " * 3


async def main() -> tuple[ReActAgent, list[list[str]]]:
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant named Friday.",
        model=FunctionChatModel(QwenStandIn(), model_name="qwen-max"),
        formatter=DashScopeChatFormatter(),
        compression_config=ReActAgent.CompressionConfig(
            enable=True,
            agent_token_counter=CharTokenCounter(),
            # We set a small trigger threshold for demonstration purposes.
            trigger_threshold=1000,
            keep_recent=3,
        ),
    )
    agent.set_console_output_enabled(False)
    user = UserAgent("User")
    user.set_console_output_enabled(False)
    user.override_instance_input_method(
        ScriptedUserInput(
            [f"Question {i}: " + f"please explain topic {i}. " * 4 for i in range(1, 9)] + ["exit"]
        )
    )

    compressed_after_each_turn = []
    msg = None
    while True:
        msg = await user(msg)
        if msg.get_text_content() == "exit":
            break
        msg = await agent(msg)
        compressed_after_each_turn.append(
            [
                str(m.get_text_content())[:12]
                for m, marks in agent.memory.content
                if "compressed" in marks
            ]
        )
    return agent, compressed_after_each_turn


async def test_the_compression_example_compresses_when_agentscope_does() -> None:
    agent, compressed_after_each_turn = await main()

    assert compressed_after_each_turn == AGENTSCOPE_COMPRESSED_AFTER_EACH_TURN
    # As in AgentScope: get_memory() keeps compressed messages (summary first, 17 in all);
    # excluding them leaves the summary and the last four turns.
    assert len(await agent.memory.get_memory()) == 17
    memory = await agent.memory.get_memory(exclude_mark="compressed")
    assert memory[0].get_text_content() == AGENTSCOPE_SUMMARY
    assert [str(m.get_text_content())[:11] for m in memory[1:]] == [
        prefix for i in range(5, 9) for prefix in (f"Question {i}:", f"Answer {i}: i")
    ]
