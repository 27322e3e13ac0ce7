"""Port of AgentScope's agent-skill example (``examples/functionality/agent_skill``).

A skill folder with a ``SKILL.md`` is registered with ``toolkit.register_agent_skill``; the
agent's ``sys_prompt`` then carries AgentScope's skills section (the expected text below is what
AgentScope 1.0.21 printed for the same folder), and the agent reads the skill's file with
``view_text_file`` before answering.
"""

from __future__ import annotations

from pathlib import Path

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import DashScopeChatFormatter
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import reply, tool_call
from agentscope_rt.tool import Toolkit, execute_python_code, execute_shell_command, view_text_file

from ._support import cloud_model

SKILL_MD = """---
name: analyzing-docs
description: Answer questions about a library from its documentation folder.
---

# Analyzing docs

Read the files under `docs/` with `view_text_file` before answering.
"""


def agentscope_sys_prompt(skill_dir: Path) -> str:
    """What AgentScope 1.0.21 printed as ``agent.sys_prompt`` (its skill folder substituted)."""
    return (
        "You are a helpful assistant named Friday.\n\n# Agent Skills\nThe agent skills are a "
        "collection of folds of instructions, scripts, and resources that you can load "
        "dynamically to improve performance on specialized tasks. Each agent skill has a "
        "`SKILL.md` file in its folder that describes how to use the skill. If you want to use "
        "a skill, you MUST read its `SKILL.md` file carefully.\n## analyzing-docs\nAnswer "
        "questions about a library from its documentation folder.\n"
        f'Check "{skill_dir}/SKILL.md" for how to use this skill'
    )


async def main(skill_dir: Path) -> tuple[ReActAgent, str, Msg]:
    toolkit = Toolkit()
    # To use agent skills, your agent must be equipped with text file viewing tools.
    toolkit.register_tool_function(execute_shell_command)
    toolkit.register_tool_function(execute_python_code)
    toolkit.register_tool_function(view_text_file)
    toolkit.register_agent_skill(str(skill_dir))

    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant named Friday.",
        model=cloud_model(
            reply(tool_call("view_text_file", {"file_path": f"{skill_dir}/SKILL.md"})),
            "I can analyze a library's docs: I read docs/ before answering.",
        ),
        formatter=DashScopeChatFormatter(),
        toolkit=toolkit,
        memory=InMemoryMemory(),
    )
    agent.set_console_output_enabled(False)
    sys_prompt = agent.sys_prompt
    answer = await agent(Msg("user", "What skills do you have?", "user"))
    return agent, sys_prompt, answer


async def test_the_skill_example_puts_agentscope_skill_prompt_in_the_system_prompt(
    tmp_path: Path,
) -> None:
    skill_dir = tmp_path / "skill" / "analyzing-docs"
    skill_dir.mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(SKILL_MD)

    agent, sys_prompt, answer = await main(skill_dir)

    assert sys_prompt == agentscope_sys_prompt(skill_dir)
    assert answer.get_text_content() == (
        "I can analyze a library's docs: I read docs/ before answering."
    )
    # The model saw the skills section as its system message, and the skill file's text.
    first_call = agent.model.calls[0].messages
    assert first_call[0]["role"] == "system"
    assert "## analyzing-docs" in str(first_call[0]["content"])
    results = [
        b["output"]
        for m in await agent.memory.get_memory()
        for b in m.get_content_blocks("tool_result")
    ]
    assert "Read the files under `docs/`" in results[0][0]["text"]
