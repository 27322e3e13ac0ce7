"""Messages and state: build messages, round-trip them through AgentScope's JSON, and save
and restore a StateModule tree.

Run: ``python examples/00_messages_and_state.py`` (plain synchronous code: no event loop, so
neither asyncio nor trio is involved).

What to look for: the tool call read back from a message, three messages surviving a JSON round
trip unchanged, a malformed message refused with ``MessageFormatError``, the nested state keys
of a two-notebook team, and a partial state refused with ``StateError`` (nothing loaded).
"""

from __future__ import annotations

import json

import attrs

from agentscope_rt.exception import MessageFormatError, StateError
from agentscope_rt.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope_rt.module import StateModule


@attrs.define
class Preferences:
    language: str = "en"
    verbosity: int = 1


class Notebook(StateModule):
    """A small stateful component: its notes are messages, its preferences an attrs value."""

    notes: list[Msg]

    def __init__(self) -> None:
        super().__init__()
        self.notes = []
        self.preferences = Preferences()
        self.register_state("notes")
        self.register_state("preferences")


class Team(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.alice = Notebook()  # sub-modules are tracked automatically
        self.bob = Notebook()


def main() -> None:
    question = Msg("user", "What is 6 x 7?", "user")
    call = Msg(
        "Friday",
        [
            TextBlock(text="Let me compute that."),
            {"type": "tool_use", "id": "call-1", "name": "multiply", "input": {"a": 6, "b": 7}},
        ],
        "assistant",
    )
    result = Msg("system", [ToolResultBlock(id="call-1", name="multiply", output="42")], "system")
    tool_use = call.get_content_blocks("tool_use")[0]
    assert isinstance(tool_use, ToolUseBlock)
    print("tool requested:", tool_use["name"], tool_use["input"])

    wire = json.dumps([m.to_dict() for m in (question, call, result)], ensure_ascii=False)
    restored = [Msg.from_dict(d) for d in json.loads(wire)]
    assert restored == [question, call, result]
    print(f"{len(restored)} messages survived a JSON round trip ({len(wire)} bytes)")

    try:
        Msg.from_dict({"name": "x", "role": "user", "content": [{"type": "image"}]})
    except MessageFormatError as exc:
        print("malformed input is refused:", exc)

    team = Team()
    team.alice.notes.extend([question, call])
    team.bob.preferences = Preferences(language="fr", verbosity=2)
    state = team.state_dict()
    copy = Team()
    copy.load_state_dict(json.loads(json.dumps(state)))
    assert copy.alice.notes == team.alice.notes
    assert copy.bob.preferences == Preferences(language="fr", verbosity=2)
    print("state keys:", sorted(state), "->", sorted(state["alice"]))

    broken = json.loads(json.dumps(state))
    del broken["bob"]["preferences"]
    try:
        copy.load_state_dict(broken)
    except StateError as exc:
        print("a partial state is refused and changes nothing:", exc)


if __name__ == "__main__":
    main()
