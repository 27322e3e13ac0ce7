"""ReActAgent and agent skills: the toolkit's skill prompt follows the system prompt."""

from __future__ import annotations

from pathlib import Path

from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.tool import Toolkit, view_text_file

from ._support import call, make_agent, response, text, texts_of, user

SKILL_TEXT = (
    "---\nname: haiku\ndescription: Write haiku; use it when the user asks for a poem.\n---\n"
    "# Writing a haiku\nThree lines of five, seven and five syllables.\n"
)


def make_skill(root: Path, name: str = "haiku", text_: str = SKILL_TEXT) -> str:
    directory = root / name
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(text_, encoding="utf-8")
    return str(directory)


def system_text(model: ScriptedChatModel, call_index: int = 0) -> str:
    first = model.calls[call_index].messages[0]
    assert first["role"] == "system"
    content = first["content"]
    if isinstance(content, list):
        return "".join(part["text"] for part in content)
    return str(content)


async def test_skill_prompt_follows_the_system_prompt(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path)
    toolkit = Toolkit()
    toolkit.register_agent_skill(skill_dir)
    model = ScriptedChatModel(["Hello."])
    agent = make_agent(model, toolkit)
    expected = (
        "You are a helpful assistant.\n\n"
        f"{Toolkit._DEFAULT_AGENT_SKILL_INSTRUCTION}\n"
        "## haiku\nWrite haiku; use it when the user asks for a poem.\n"
        f'Check "{skill_dir}/SKILL.md" for how to use this skill'
    )
    assert agent.sys_prompt == expected
    await agent(user("hi"))
    assert system_text(model) == expected


async def test_no_skills_leaves_the_system_prompt_alone() -> None:
    model = ScriptedChatModel(["Hello."])
    agent = make_agent(model)
    assert agent.sys_prompt == "You are a helpful assistant."
    await agent(user("hi"))
    assert system_text(model) == "You are a helpful assistant."


async def test_skills_added_or_removed_later_show_in_the_next_reply(tmp_path: Path) -> None:
    toolkit = Toolkit()
    model = ScriptedChatModel(["one", "two", "three"])
    agent = make_agent(model, toolkit)
    await agent(user("first"))
    assert "Agent Skills" not in system_text(model, 0)
    toolkit.register_agent_skill(make_skill(tmp_path))
    await agent(user("second"))
    assert "## haiku" in system_text(model, 1)
    toolkit.remove_agent_skill("haiku")
    await agent(user("third"))
    assert system_text(model, 2) == "You are a helpful assistant."


async def test_state_keeps_the_base_prompt_only(tmp_path: Path) -> None:
    toolkit = Toolkit()
    toolkit.register_agent_skill(make_skill(tmp_path))
    agent = make_agent(ScriptedChatModel([]), toolkit)
    state = agent.state_dict()
    assert state["_sys_prompt"] == "You are a helpful assistant."
    assert "skills" not in state["toolkit"]
    fresh = make_agent(ScriptedChatModel([]), Toolkit())
    fresh.load_state_dict(state)
    assert fresh.sys_prompt == "You are a helpful assistant."


async def test_the_model_reads_the_skill_with_a_file_tool(tmp_path: Path) -> None:
    skill_dir = make_skill(tmp_path)
    toolkit = Toolkit()
    toolkit.register_tool_function(view_text_file)
    toolkit.register_agent_skill(skill_dir)
    model = ScriptedChatModel(
        [
            response(call("view_text_file", "c1", file_path=f"{skill_dir}/SKILL.md")),
            response(text("Autumn moonlight /\na worm digs silently /\ninto the chestnut.")),
        ]
    )
    agent = make_agent(model, toolkit)
    reply = await agent(user("Write me a poem."))
    assert reply.get_text_content().startswith("Autumn moonlight")
    tool_result = model.calls[1].messages[-1]
    assert tool_result["role"] == "tool"
    assert "Three lines of five, seven and five syllables." in str(tool_result["content"])
    memory = await agent.memory.get_memory()
    assert any("Three lines of five" in texts_of(m) for m in memory)
