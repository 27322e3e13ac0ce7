"""Agent skills: a folder with a SKILL.md the agent reads when a task calls for it.

The toolkit reads only the front matter of each ``SKILL.md`` (``name`` and ``description``);
the ReAct agent's system prompt then lists the skills and where they live, and the model reads
the rest of the file, and any resources next to it, with its file tools when it needs them.

1. The skills prompt the toolkit builds (AgentScope's text), and the errors for bad skills.
2. A scripted model using the skill: it reads SKILL.md, then the rates file the skill points
   to, then answers as the skill says (deterministic).
3. The same question to the real model (SmolLM2-135M in-process unless ``OPENAI_API_KEY`` is
   set), required to call the file tool once: a model that small may or may not open the
   right file; whatever it does is shown.

Run with ``python examples/32_agent_skills.py`` (add ``trio`` to run on trio).
"""

from __future__ import annotations

import pathlib
import sys
import tempfile
from typing import Any

import anyio

import agentscope_rt.formatter
from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import ToolRegistrationError
from agentscope_rt.message import Msg
from agentscope_rt.model import LlamaCppChatModel, ScriptedChatModel, tool_call
from agentscope_rt.tool import Toolkit, view_text_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _models import pick_chat_model

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


def show(messages: list[Msg]) -> None:
    for msg in messages:
        for block in msg.get_content_blocks():
            if block.type == "text":
                print(f"  {msg.name:>8}: {block.text}")
            elif block.type == "tool_use":
                print(f"  {msg.name:>8}: -> {block.name}({block.input})")
            elif block.type == "tool_result":
                output = block.output
                text = output if isinstance(output, str) else " ".join(b.text for b in output)
                first = text.strip().splitlines()[0] if text.strip() else ""
                print(f"  {'tool':>8}: <- {first} ...")


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
    agent.set_console_output_enabled(False)
    print("\n2) a scripted model following the skill")
    await agent(Msg("user", "What does it cost to ship a 2.4 kg parcel?", "user"))
    show(await agent.memory.get_memory())
    last_line = agent.sys_prompt.splitlines()[-1]
    print(f"   the system prompt the model got ends with: {last_line!r}")


async def file_tool_first(agent: ReActAgent, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Require one tool call (reading the skill), then a plain answer."""
    answered = any(m.has_content_blocks("tool_result") for m in await agent.memory.get_memory())
    return {**kwargs, "tool_choice": "none" if answered else "required"}


async def with_a_real_model(skill: pathlib.Path) -> None:
    model, formatter_name = pick_chat_model(
        generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 160}
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
    agent.set_console_output_enabled(False)
    if isinstance(model, LlamaCppChatModel):
        agent.register_instance_hook("pre_reasoning", "file_tool_first", file_tool_first)
    print(f"\n3) {model.model_name} with the skill and the file tool")
    await agent(
        Msg("user", "How much is shipping a 3 kg parcel? Read the skill's SKILL.md.", "user")
    )
    show(await agent.memory.get_memory())


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        skill = make_skill(root)
        toolkit = skills_prompt(root, skill)
        await scripted(toolkit, skill)
        await with_a_real_model(skill)


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
