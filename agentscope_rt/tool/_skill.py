"""Agent skills: folders of instructions, scripts and resources an agent loads on demand.

A skill is a directory with a ``SKILL.md`` file at its top level. The file opens with a YAML
front matter block naming the skill and saying what it is for::

    ---
    name: pdf-forms
    description: Fill in PDF forms; use it when the user hands you a PDF with fields.
    ---
    # How to fill in a PDF form
    ...

The toolkit only reads the front matter (:func:`read_agent_skill`); the agent is told where
the skill lives and reads the rest of ``SKILL.md`` itself, with its file tools, when it needs
the skill.

Why PyYAML and not a hand-written parser: front matter in the wild uses quoted strings,
folded (``>``) and literal (``|``) block scalars, multi-line plain scalars and nested maps
(``metadata:``, ``allowed-tools:``). A reader for only ``key: value`` lines would silently
misread those, and a description the model sees garbled is worse than an import. The front
matter is split off exactly as AgentScope's ``python-frontmatter`` does (the text is stripped,
then cut at the first two lines made only of three or more dashes) and loaded with YAML's safe
loader, so the same ``SKILL.md`` gives the same name and description in both.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterator
from typing import Any

import attrs

from ..exception import ToolRegistrationError

__all__ = [
    "DEFAULT_AGENT_SKILL_INSTRUCTION",
    "DEFAULT_AGENT_SKILL_TEMPLATE",
    "AgentSkill",
    "check_agent_skill_template",
    "read_agent_skill",
]

DEFAULT_AGENT_SKILL_INSTRUCTION = (
    "# Agent Skills\n"
    "The agent skills are a collection of folds of instructions, scripts, "
    "and resources that you can load dynamically to improve performance "
    "on specialized tasks. Each agent skill has a `SKILL.md` file in its "
    "folder that describes how to use the skill. If you want to use a "
    "skill, you MUST read its `SKILL.md` file carefully."
)
"""The heading of the skills part of the system prompt (AgentScope's text, verbatim)."""

DEFAULT_AGENT_SKILL_TEMPLATE = """## {name}
{description}
Check "{dir}/SKILL.md" for how to use this skill"""
"""How one skill is shown in the system prompt; ``{name}``, ``{description}`` and ``{dir}``
are filled in (AgentScope's text, verbatim)."""

_TEMPLATE_FIELDS = frozenset({"name", "description", "dir"})

# python-frontmatter's YAML boundary: a line of three or more dashes.
_FM_BOUNDARY = re.compile(r"^-{3,}\s*$", re.MULTILINE)


@attrs.frozen
class AgentSkill:
    """A registered agent skill: what the system prompt says about it.

    Reads like AgentScope's ``AgentSkill`` dict as well: ``skill["name"]``,
    ``skill.get("dir")``, ``dict(skill)``.

    :ivar name: the skill's name, from the front matter.
    :ivar description: what the skill is for, from the front matter.
    :ivar dir: the skill's directory, as given when it was registered.
    """

    name: str
    description: str
    dir: str

    def __getitem__(self, key: str) -> str:
        if key in _TEMPLATE_FIELDS:
            value: str = getattr(self, key)
            return value
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """``self[key]``, or *default* for any other key."""
        return getattr(self, key) if key in _TEMPLATE_FIELDS else default

    def keys(self) -> list[str]:
        """``["name", "description", "dir"]``, as AgentScope's dict has them."""
        return ["name", "description", "dir"]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __contains__(self, key: object) -> bool:
        return key in _TEMPLATE_FIELDS

    def __len__(self) -> int:
        return 3


def check_agent_skill_template(template: str) -> None:
    """Check that *template* is a format string using only ``{name}``, ``{description}`` and
    ``{dir}``.

    :raises TypeError: if *template* is not a string.
    :raises ValueError: if it is not a valid format string or uses another field.
    """
    if not isinstance(template, str):
        raise TypeError(f"agent_skill_template must be a string, not {type(template).__name__}")
    try:
        fields = {field for _, field, _, _ in string.Formatter().parse(template) if field}
        unknown = sorted(fields - _TEMPLATE_FIELDS)
        if not unknown:
            template.format(name="", description="", dir="")
    except (ValueError, IndexError, KeyError, AttributeError) as exc:
        raise ValueError(
            f"agent_skill_template is not a valid format string ({exc}); use the placeholders "
            "{name}, {description} and {dir}, and double literal braces ({{ and }})"
        ) from None
    if unknown:
        raise ValueError(
            f"agent_skill_template uses unknown placeholder(s) {unknown}; only {{name}}, "
            "{description} and {dir} are filled in (double literal braces: {{ and }})"
        )


def _front_matter(text: str, skill_dir: str) -> dict[str, Any]:
    """The YAML front matter of a SKILL.md text as a dict (empty if there is none)."""
    import yaml  # deferred: only reading a skill needs it

    text = text.lstrip("\ufeff").strip()
    if not _FM_BOUNDARY.match(text):
        return {}
    parts = _FM_BOUNDARY.split(text, 2)
    if len(parts) < 3:
        raise ToolRegistrationError(
            f"The SKILL.md file in '{skill_dir}' opens a YAML Front Matter with '---' but never "
            "closes it: end the front matter with a second '---' line."
        )
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(parts[1], Loader=loader)
    except yaml.YAMLError as exc:
        raise ToolRegistrationError(
            f"The YAML Front Matter of the SKILL.md file in '{skill_dir}' is not valid YAML: {exc}"
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ToolRegistrationError(
            f"The YAML Front Matter of the SKILL.md file in '{skill_dir}' must be a mapping "
            f"with `name` and `description` fields, not a {type(data).__name__}."
        )
    return data


def read_agent_skill(skill_dir: str | os.PathLike[str]) -> AgentSkill:
    """Read the skill in *skill_dir* from its ``SKILL.md`` front matter.

    The messages of the errors are AgentScope's, and the errors are ``ValueError``\\ s as
    there (:class:`~agentscope_rt.exception.ToolRegistrationError` derives from it).

    :param skill_dir: the skill's directory.
    :returns: the skill; its ``dir`` is *skill_dir* as given (a path object as a string).
    :raises TypeError: if *skill_dir* is not a string or path.
    :raises ToolRegistrationError: if the directory does not exist, has no ``SKILL.md`` at its
        top level, or the file's front matter is missing, malformed, or lacks a non-empty
        ``name`` or ``description``.
    """
    if not isinstance(skill_dir, str | os.PathLike):
        raise TypeError(f"skill_dir must be a path (str or os.PathLike), not {skill_dir!r}")
    skill_dir = os.fspath(skill_dir)
    if not os.path.isdir(skill_dir):
        raise ToolRegistrationError(
            f"The skill directory '{skill_dir}' does not exist or is not a directory."
        )
    path_skill_md = os.path.join(skill_dir, "SKILL.md")
    if not os.path.isfile(path_skill_md):
        raise ToolRegistrationError(
            f"The skill directory '{skill_dir}' must include a SKILL.md file at the top level."
        )
    try:
        with open(path_skill_md, encoding="utf-8") as file:
            text = file.read()
    except UnicodeDecodeError as exc:
        raise ToolRegistrationError(
            f"The SKILL.md file in '{skill_dir}' is not UTF-8 text ({exc.reason} at byte "
            f"{exc.start}); save it as UTF-8."
        ) from None
    metadata = _front_matter(text, skill_dir)
    name = metadata.get("name")
    description = metadata.get("description")
    if not name or not description:
        raise ToolRegistrationError(
            f"The SKILL.md file in '{skill_dir}' must have a YAML Front Matter including "
            "`name` and `description` fields."
        )
    return AgentSkill(name=str(name), description=str(description), dir=skill_dir)
