"""Agent skills: a folder with a SKILL.md the agent reads when a task calls for it.

The toolkit reads only the front matter of each ``SKILL.md`` (``name`` and ``description``);
the ReAct agent's system prompt then lists the skills and where they live, and the model reads
the rest of the file, and any resources next to it, with its file tools when it needs them.

1. The skills prompt the toolkit builds (AgentScope's text), and the errors for bad skills.
2. A scripted model using the skill: it reads SKILL.md, then the rates file the skill points
   to, then answers as the skill says (deterministic).
3. The same question to a real model (SmolLM2-135M in the process unless ``OPENAI_API_KEY`` is
   set), which decides by itself whether and what to read.

Run: ``python examples/32_agent_skills.py`` (asyncio) or
``python examples/32_agent_skills.py trio``.

What to look for: part 1 prints the lines the system prompt gains and three refusals. In part
2 the agent's console output shows two ``view_text_file`` calls (SKILL.md, then rates.txt),
their results, and the answer "Shipping 3 kg costs 11.5 EUR.". In part 3 the agent prints what
the real model does; a summary then says which files it opened and whether its answer has the
right price (11.5 EUR). A 135M model usually does not follow the skill: it may answer without
reading anything or open a file that does not exist, and the summary says so rather than
passing its answer off as the skill's.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import anyio
from _models import pick_chat_model

import agentscope_rt.formatter
from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import ModelResponseError, ToolRegistrationError
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel, tool_call
from agentscope_rt.tool import Toolkit, view_text_file

SKILL_MD = """\
---
name: parcel-shipping
description: >
  Work out what shipping a parcel costs; use it whenever the user asks about
  sending or shipping something.
---
# Parcel shipping

1. Read `rates.txt` in this folder for the current rates.
2. Cost = base fee + weight in kg x price per kg (round up to whole kilograms).
3. Answer in one sentence: "Shipping <weight> kg costs <cost> EUR."
"""

RATES = "base fee: 4 EUR\nprice per kg: 2.5 EUR\n"


def make_skill(root: pathlib.Path) -> pathlib.Path:
    skill = root / "parcel-shipping"
    skill.mkdir()
    (skill / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    (skill / "rates.txt").write_text(RATES, encoding="utf-8")
    return skill


def skills_prompt(root: pathlib.Path, skill: pathlib.Path) -> Toolkit:
    toolkit = Toolkit()
    toolkit.register_tool_function(view_text_file)
    toolkit.register_agent_skill(str(skill))
    print("1) what the system prompt gains from one registered skill:")
    print("   " + (toolkit.get_agent_skill_prompt() or "").replace("\n", "\n   "))
    # Bad skills are refused with AgentScope's messages, and nothing is registered.
    (root / "no-front-matter").mkdir()
    (root / "no-front-matter" / "SKILL.md").write_text("# just text\n", encoding="utf-8")
    for bad in (root / "missing", root / "no-front-matter", skill):
        try:
            toolkit.register_agent_skill(str(bad))
        except ToolRegistrationError as exc:
            print(f"   refused: {exc}")
    print(f"   registered skills: {list(toolkit.skills)}")
    return toolkit


async def scripted(toolkit: Toolkit, skill: pathlib.Path) -> None:
    model = ScriptedChatModel(
        [
            [tool_call("view_text_file", {"file_path": str(skill / "SKILL.md")})],
            [tool_call("view_text_file", {"file_path": str(skill / "rates.txt")})],
            "Shipping 3 kg costs 11.5 EUR.",
        ]
    )
    agent = ReActAgent(
        name="Clerk",
        sys_prompt="You are a helpful post office clerk.",
        model=model,
        formatter=agentscope_rt.formatter.OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    print("\n2) a scripted model following the skill")
    await agent(Msg("user", "What does it cost to ship a 2.4 kg parcel?", "user"))
    last_line = agent.sys_prompt.splitlines()[-1]
    print(f"   the system prompt the model got ends with: {last_line!r}")


async def with_a_real_model(skill: pathlib.Path) -> None:
    model, formatter_name = pick_chat_model(
        generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 96}
    )
    toolkit = Toolkit()
    toolkit.register_tool_function(view_text_file)
    toolkit.register_agent_skill(str(skill))
    agent = ReActAgent(
        name="Clerk",
        sys_prompt="You are a post office clerk. Read the skill's SKILL.md before answering.",
        model=model,
        formatter=getattr(agentscope_rt.formatter, formatter_name)(),
        toolkit=toolkit,
        max_iters=2,
    )
    print(f"\n3) {model.model_name} with the skill and the file tool")
    question = Msg("user", "How much is shipping a 3 kg parcel? Read the skill's SKILL.md.", "user")
    try:
        answer = await agent(question)
    except ModelResponseError:
        # A small model may ramble past max_tokens inside its JSON answer, which then cannot
        # be read; the agent reports that as an error rather than guess.
        print("\n   the model's answer ran past its token limit and could not be read")
        answer = Msg("Clerk", "", "assistant")
    await summarise(agent, answer, skill)


async def summarise(agent: ReActAgent, answer: Msg, skill: pathlib.Path) -> None:
    """Say in plain words what the model did with the skill."""
    opened = [
        str(block.input.get("file_path", "?"))
        for msg in await agent.memory.get_memory()
        for block in msg.get_content_blocks("tool_use")
    ]
    skill_files = {str(skill / "SKILL.md"), str(skill / "rates.txt")}
    read_skill = [path for path in opened if path in skill_files]
    right_price = "11.5" in (answer.get_text_content() or "")
    print("\n   summary:")
    print(f"   - files the model asked for: {opened or 'none'}")
    if opened and not read_skill:
        print("     none of them is the skill's file: the reads failed, the model saw an error")
    print(f"   - the skill's files read: {read_skill or 'none'}")
    print(f"   - the answer has the right price (11.5 EUR): {'yes' if right_price else 'no'}")
    if not right_price:
        print(
            "   The model did not follow the skill, so its answer is not the skill's; small\n"
            "   models seldom do. Part 2 shows what following it looks like, and an API model\n"
            "   (set OPENAI_API_KEY) is expected to follow it by itself."
        )


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        skill = make_skill(root)
        toolkit = skills_prompt(root, skill)
        await scripted(toolkit, skill)
        await with_a_real_model(skill)


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
