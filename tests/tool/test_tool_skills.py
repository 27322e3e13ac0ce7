"""Agent skills on the Toolkit: reading SKILL.md front matter, the skills prompt, errors, state.

The expected texts below are what AgentScope 1.0.21's Toolkit produced for the same SKILL.md
files (its prompt and its error messages), so the two stay interchangeable.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentscope_rt.exception import StateError, ToolRegistrationError
from agentscope_rt.tool import AgentSkill, Toolkit

SKILLS = {
    "a": "---\nname: pdf-forms\ndescription: Fill in PDF forms; use it when the user hands you "
    "a PDF with fields.\nlicense: MIT\n---\n# Body\n---\nmore body\n",
    # Leading blank line, a quoted name with a colon, a folded description, nested maps.
    "b": '\n---\nname: "data: cleaning"\ndescription: >\n  Clean tabular data,\n  dedupe rows.\n'
    "metadata:\n  version: 2\nallowed-tools: [read, write]\n---\nbody\n",
    # A number as name, a literal block description.
    "c": "---\nname: 123\ndescription: |\n  line one\n  line two\n---\n",
    # Four dashes and trailing spaces still delimit the front matter.
    "f": "----\nname: dashes\ndescription: four dashes   \n----  \n",
}

# AgentScope 1.0.21: Toolkit().register_agent_skill() on a, b, c, f in that order, with the
# skill directories named "s/a" ... "s/f".
AGENTSCOPE_PROMPT = (
    "# Agent Skills\nThe agent skills are a collection of folds of instructions, scripts, and "
    "resources that you can load dynamically to improve performance on specialized tasks. Each "
    "agent skill has a `SKILL.md` file in its folder that describes how to use the skill. If "
    "you want to use a skill, you MUST read its `SKILL.md` file carefully.\n"
    "## pdf-forms\nFill in PDF forms; use it when the user hands you a PDF with fields.\n"
    'Check "s/a/SKILL.md" for how to use this skill\n'
    "## data: cleaning\nClean tabular data, dedupe rows.\n\n"
    'Check "s/b/SKILL.md" for how to use this skill\n'
    "## 123\nline one\nline two\n\n"
    'Check "s/c/SKILL.md" for how to use this skill\n'
    "## dashes\nfour dashes\n"
    'Check "s/f/SKILL.md" for how to use this skill'
)


@pytest.fixture
def skills_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "s"
    for key, text in SKILLS.items():
        (root / key).mkdir(parents=True)
        (root / key / "SKILL.md").write_text(text, encoding="utf-8")
    # Relative directories, as in the AgentScope run the expected prompt comes from.
    monkeypatch.chdir(tmp_path)
    return root


def write_skill(directory: Path, text: str) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(text, encoding="utf-8")
    return str(directory)


def test_prompt_matches_agentscope(skills_root: Path) -> None:
    toolkit = Toolkit()
    assert toolkit.get_agent_skill_prompt() is None
    for key in "abcf":
        toolkit.register_agent_skill(f"s/{key}")
    assert list(toolkit.skills) == ["pdf-forms", "data: cleaning", "123", "dashes"]
    assert toolkit.get_agent_skill_prompt() == AGENTSCOPE_PROMPT


def test_skill_reads_like_agentscope_dict(skills_root: Path) -> None:
    toolkit = Toolkit()
    toolkit.register_agent_skill(skills_root / "b")  # a path object is accepted too
    skill = toolkit.skills["data: cleaning"]
    assert isinstance(skill, AgentSkill)
    assert dict(skill) == {
        "name": "data: cleaning",
        "description": "Clean tabular data, dedupe rows.\n",
        "dir": str(skills_root / "b"),
    }
    assert skill["dir"] == skill.dir
    assert skill.get("license", "none") == "none"
    assert "name" in skill and "license" not in skill
    with pytest.raises(KeyError):
        skill["license"]


def test_remove_agent_skill(skills_root: Path, caplog: pytest.LogCaptureFixture) -> None:
    toolkit = Toolkit()
    toolkit.register_agent_skill("s/a")
    toolkit.register_agent_skill("s/f")
    toolkit.remove_agent_skill("pdf-forms")
    assert list(toolkit.skills) == ["dashes"]
    prompt = toolkit.get_agent_skill_prompt()
    assert prompt is not None and "pdf-forms" not in prompt and "## dashes" in prompt
    with caplog.at_level(logging.WARNING, logger="agentscope_rt.tool"):
        toolkit.remove_agent_skill("pdf-forms")
    assert "Agent skill 'pdf-forms' not found in the toolkit, skipping removal." in caplog.text
    toolkit.remove_agent_skill("dashes")
    assert toolkit.get_agent_skill_prompt() is None
    # The same name can be registered again once removed.
    toolkit.register_agent_skill("s/a")
    assert list(toolkit.skills) == ["pdf-forms"]


def test_custom_instruction_and_template(skills_root: Path) -> None:
    toolkit = Toolkit(
        agent_skill_instruction="Skills you have:",
        agent_skill_template="- {name} ({dir}): {description}",
    )
    toolkit.register_agent_skill("s/a")
    toolkit.register_agent_skill("s/f")
    assert toolkit.get_agent_skill_prompt() == (
        "Skills you have:\n"
        "- pdf-forms (s/a): Fill in PDF forms; use it when the user hands you a PDF with "
        "fields.\n"
        "- dashes (s/f): four dashes"
    )
    # Empty strings fall back to the defaults, as in AgentScope.
    default = Toolkit(agent_skill_instruction="", agent_skill_template="")
    default.register_agent_skill("s/f")
    assert default.get_agent_skill_prompt() == (
        f"{Toolkit._DEFAULT_AGENT_SKILL_INSTRUCTION}\n## dashes\nfour dashes\n"
        'Check "s/f/SKILL.md" for how to use this skill'
    )


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{name} {version}", "unknown placeholder"),
        ("{name", "not a valid format string"),
        ("{0}", "unknown placeholder"),
    ],
)
def test_bad_template_is_refused_at_construction(template: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Toolkit(agent_skill_template=template)


def test_a_number_as_first_argument_points_to_timeout() -> None:
    with pytest.raises(TypeError, match=r"timeout="):
        Toolkit(5)  # type: ignore[arg-type]
    assert Toolkit(timeout=5).timeout == 5


def test_errors_match_agentscope_and_register_nothing(tmp_path: Path) -> None:
    toolkit = Toolkit()
    missing = str(tmp_path / "missing")
    empty = str(tmp_path / "empty")
    (tmp_path / "empty").mkdir()
    no_description = write_skill(tmp_path / "d", "---\nname: x\n---\nno description")
    no_front_matter = write_skill(tmp_path / "e", "no front matter\n")
    empty_name = write_skill(tmp_path / "n", "---\nname: ''\ndescription: something\n---\n")
    cases = {
        missing: f"The skill directory '{missing}' does not exist or is not a directory.",
        empty: f"The skill directory '{empty}' must include a SKILL.md file at the top level.",
        no_description: f"The SKILL.md file in '{no_description}' must have a YAML Front "
        "Matter including `name` and `description` fields.",
        no_front_matter: f"The SKILL.md file in '{no_front_matter}' must have a YAML Front "
        "Matter including `name` and `description` fields.",
        empty_name: f"The SKILL.md file in '{empty_name}' must have a YAML Front Matter "
        "including `name` and `description` fields.",
    }
    for directory, message in cases.items():
        with pytest.raises(ValueError) as info:
            toolkit.register_agent_skill(directory)
        assert isinstance(info.value, ToolRegistrationError)
        assert str(info.value) == message
    # A file given instead of a directory.
    with pytest.raises(ValueError, match="does not exist or is not a directory"):
        toolkit.register_agent_skill(str(tmp_path / "d" / "SKILL.md"))
    assert toolkit.skills == {}
    assert toolkit.get_agent_skill_prompt() is None


def test_malformed_front_matter_is_a_clear_error(tmp_path: Path) -> None:
    toolkit = Toolkit()
    cases = {
        "unclosed": ("---\nname: x\ndescription: y\n", "never closes it"),
        "bad_yaml": ("---\nname: [x\ndescription: y\n---\n", "is not valid YAML"),
        "a_list": ("---\n- a\n- b\n---\n", "must be a mapping"),
    }
    for key, (text, problem) in cases.items():
        directory = write_skill(tmp_path / key, text)
        with pytest.raises(ToolRegistrationError, match=problem) as info:
            toolkit.register_agent_skill(directory)
        assert directory in str(info.value)
    undecodable = tmp_path / "latin1"
    undecodable.mkdir()
    (undecodable / "SKILL.md").write_bytes(b"---\nname: caf\xe9\ndescription: d\n---\n")
    with pytest.raises(ToolRegistrationError, match="not UTF-8"):
        toolkit.register_agent_skill(str(undecodable))
    with pytest.raises(TypeError, match="skill_dir"):
        toolkit.register_agent_skill(42)  # type: ignore[arg-type]
    assert toolkit.skills == {}


def test_duplicate_name_keeps_the_first(tmp_path: Path) -> None:
    toolkit = Toolkit()
    first = write_skill(tmp_path / "one", "---\nname: same\ndescription: first\n---\n")
    second = write_skill(tmp_path / "two", "---\nname: same\ndescription: second\n---\n")
    toolkit.register_agent_skill(first)
    with pytest.raises(ValueError) as info:
        toolkit.register_agent_skill(second)
    assert str(info.value) == (
        "An agent skill with name 'same' is already registered in the toolkit."
    )
    assert toolkit.skills["same"].description == "first"
    assert toolkit.skills["same"].dir == first


def test_byte_order_mark_and_windows_line_endings(tmp_path: Path) -> None:
    directory = tmp_path / "bom"
    directory.mkdir()
    (directory / "SKILL.md").write_bytes(
        b"\xef\xbb\xbf---\r\nname: bom\r\ndescription: saved by a Windows editor\r\n---\r\nbody\r\n"
    )
    toolkit = Toolkit()
    toolkit.register_agent_skill(str(directory))
    assert toolkit.skills["bom"].description == "saved by a Windows editor"


def test_skills_are_not_state_as_in_agentscope(skills_root: Path) -> None:
    toolkit = Toolkit()
    toolkit.create_tool_group("web", "web tools", active=True)
    toolkit.register_agent_skill("s/a")
    state = toolkit.state_dict()
    assert state == {"active_groups": ["web"]}
    other = Toolkit()
    other.create_tool_group("web", "web tools", active=False)
    other.load_state_dict(state)
    assert other.groups["web"].active
    assert other.skills == {}
    with pytest.raises(StateError):
        other.load_state_dict({"active_groups": [], "skills": {}})
    # clear() removes tools and groups, and leaves skills alone (as AgentScope does).
    toolkit.clear()
    assert list(toolkit.skills) == ["pdf-forms"]
