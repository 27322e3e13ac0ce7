"""Plans and their subtasks: attrs value objects with AgentScope's fields, JSON and markdown.

:class:`SubTask` and :class:`Plan` carry exactly the fields of AgentScope 1.x's pydantic
models, in the same order, so a plan dumped there (``model_dump()``, or a ``PlanNotebook``
state) loads here through the shared cattrs converter and the reverse. Timestamps are local
time as ``YYYY-MM-DD HH:MM:SS.mmm`` and plan ids 22-character short UUIDs, as AgentScope makes
them.

Both classes take keyword arguments only (as AgentScope's pydantic models do) and check their
fields on creation and on every assignment: a text field that is not a string raises
``TypeError``, an unknown state ``ValueError``; ``Plan(subtasks=...)`` also accepts subtask
dicts, and a bad one raises :class:`~agentscope_rt.exception.MessageFormatError` naming the
field. ``from_dict`` / ``to_dict`` (also spelled ``model_validate`` / ``model_dump``) read and
write AgentScope's JSON.

The field annotations carry descriptions (``Annotated[..., pydantic.Field(description=...)]``)
because a ``SubTask`` is a tool argument of the plan notebook: the model reads the JSON schema
built from these annotations, and every property in it is described.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, ClassVar, Literal, Self

import attrs
import pydantic

from ..exception import MessageFormatError
from ..message import now_timestamp
from ..message.serde import converter, structure, unstructure

__all__ = ["SUBTASK_STATES", "Plan", "PlanState", "SubTask"]

PlanState = Literal["todo", "in_progress", "done", "abandoned"]
"""The states of a plan and of a subtask."""

SUBTASK_STATES: tuple[str, ...] = ("todo", "in_progress", "done", "abandoned")
"""The values of :data:`PlanState`, in their natural order."""


def _structure_state(value: Any, _: Any) -> str:
    if isinstance(value, str) and value in SUBTASK_STATES:
        return value
    raise MessageFormatError(
        f"expected one of 'todo', 'in_progress', 'done', 'abandoned', got {value!r}"
    )


# A state read from JSON gets a plain message naming the allowed values.
converter.register_structure_hook_func(lambda t: t == PlanState, _structure_state)

# shortuuid's default alphabet (no 0, 1, I, O, l): AgentScope's plan ids are shortuuid.uuid(),
# a uuid4 written in these 57 digits, most significant first, padded to 22 digits.
_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_ID_LENGTH = 22


def new_plan_id() -> str:
    """A new plan id in AgentScope's format: a random UUID as 22 base-57 digits."""
    number = uuid.uuid4().int
    digits = []
    while number:
        number, digit = divmod(number, 57)
        digits.append(_ALPHABET[digit])
    digits.extend(_ALPHABET[0] * (_ID_LENGTH - len(digits)))
    return "".join(reversed(digits))


_str = attrs.validators.instance_of(str)
_optional_str = attrs.validators.optional(_str)
_state = attrs.validators.in_(SUBTASK_STATES)

_SUBTASK_STATE_MARKS = {
    "todo": "- [ ] ",
    "in_progress": "- [ ] [WIP]",
    "done": "- [x] ",
    "abandoned": "- [ ] [Abandoned]",
}
_ONELINE_MARKS = {
    "todo": "- []",
    "in_progress": "- [][WIP]",
    "done": "- [x]",
    "abandoned": "- [][Abandoned]",
}


class _AgentScopeJSON:
    """AgentScope's JSON form for the plan models: ``to_dict`` / ``from_dict``, also spelled
    ``model_dump`` / ``model_validate``."""

    # No instance fields here: the attrs subclasses keep their slots.
    __slots__ = ()

    _what: ClassVar[str]
    """What the model is called in error messages."""

    def to_dict(self) -> dict[str, Any]:
        """The object as AgentScope's ``model_dump()`` JSON data."""
        data: dict[str, Any] = unstructure(self)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Build one from AgentScope's JSON data (missing optional fields get defaults).

        :raises MessageFormatError: naming the first bad field (as ``invalid subtask: ...`` or
            ``invalid plan: ...``).
        """
        obj: Self = structure(data, cls, what=cls._what)
        return obj

    # AgentScope (pydantic) spellings, for code ported from it.
    model_dump = to_dict
    model_validate = from_dict


@attrs.define(kw_only=True)
class SubTask(_AgentScopeJSON):
    """The subtask model used in the plan module."""

    # The class docstring is the subtask's description in the tool schema, so it stays
    # AgentScope's one line; construction is described in the module docstring.

    _what = "subtask"

    name: Annotated[
        str,
        pydantic.Field(
            description="The subtask name, should be concise, descriptive and not exceed 10 words."
        ),
    ] = attrs.field(validator=_str)
    description: Annotated[
        str,
        pydantic.Field(
            description=(
                "The subtask description, including the constraints, target and outcome to be "
                "achieved. The description should be clear, specific and concise, and all the "
                "constraints, target and outcome should be specific and measurable."
            )
        ),
    ] = attrs.field(validator=_str)
    expected_outcome: Annotated[
        str,
        pydantic.Field(
            description=(
                "The expected outcome of the subtask, which should be specific, concrete and "
                "measurable."
            )
        ),
    ] = attrs.field(validator=_str)
    outcome: Annotated[
        str | None, pydantic.Field(description="The actual outcome of the subtask.")
    ] = attrs.field(default=None, validator=_optional_str)
    state: Annotated[PlanState, pydantic.Field(description="The state of the subtask.")] = (
        attrs.field(default="todo", validator=_state)
    )
    created_at: Annotated[str, pydantic.Field(description="The time the subtask was created.")] = (
        attrs.field(factory=now_timestamp, validator=_str)
    )
    finished_at: Annotated[
        str | None, pydantic.Field(description="The time the subtask was finished.")
    ] = attrs.field(default=None, validator=_optional_str)

    def finish(self, outcome: str) -> None:
        """Mark the subtask done with its actual *outcome*, now."""
        self.state = "done"
        self.outcome = outcome
        self.finished_at = now_timestamp()

    def to_oneline_markdown(self) -> str:
        """The subtask as one markdown line (AgentScope's compact form, e.g. ``- [x] name``)."""
        return f"{_ONELINE_MARKS[self.state]} {self.name}"

    def to_markdown(self, detailed: bool = False) -> str:
        """The subtask as a markdown checklist item.

        :param detailed: add tab-indented lines with the creation time, description, expected
            outcome and state (and, once done, the finish time and actual outcome).
        """
        head = f"{_SUBTASK_STATE_MARKS[self.state]}{self.name}"
        if not detailed:
            return head
        lines = [
            head,
            f"\t- Created At: {self.created_at}",
            f"\t- Description: {self.description}",
            f"\t- Expected Outcome: {self.expected_outcome}",
            f"\t- State: {self.state}",
        ]
        if self.state == "done":
            lines.append(f"\t- Finished At: {self.finished_at}")
            lines.append(f"\t- Actual Outcome: {self.outcome}")
        return "\n".join(lines)


def _subtask_list(value: Any) -> list[SubTask]:
    """The field converter of ``Plan.subtasks``: dicts become :class:`SubTask` (as pydantic
    validates them in AgentScope)."""
    if not isinstance(value, list):
        raise TypeError(f"subtasks must be a list of SubTask, not {type(value).__name__}")
    if all(item.__class__ is SubTask for item in value):
        return value
    for index, item in enumerate(value):
        if not isinstance(item, SubTask | dict):
            where = f"subtasks[{index}]"
            raise MessageFormatError(
                f"invalid subtask: {where}: expected a subtask object, got {type(item).__name__}",
                path=where,
            )
    return [
        item
        if isinstance(item, SubTask)
        else structure(item, SubTask, what="subtask", path=f"subtasks[{index}]")
        for index, item in enumerate(value)
    ]


@attrs.define(kw_only=True)
class Plan(_AgentScopeJSON):
    """The plan model used in the plan module, contains a list of subtasks."""

    _what = "plan"

    id: str = attrs.field(factory=new_plan_id, validator=_str)
    name: Annotated[
        str,
        pydantic.Field(
            description="The plan name, should be concise, descriptive and not exceed 10 words."
        ),
    ] = attrs.field(validator=_str)
    description: Annotated[
        str,
        pydantic.Field(
            description=(
                "The plan description, including the constraints, target and outcome to be "
                "achieved. The description should be clear, specific and concise, and all the "
                "constraints, target and outcome should be specific and measurable."
            )
        ),
    ] = attrs.field(validator=_str)
    expected_outcome: Annotated[
        str,
        pydantic.Field(
            description=(
                "The expected outcome of the plan, which should be specific, concrete and "
                "measurable."
            )
        ),
    ] = attrs.field(validator=_str)
    subtasks: Annotated[
        list[SubTask], pydantic.Field(description="A list of subtasks that make up the plan.")
    ] = attrs.field(converter=_subtask_list)
    created_at: Annotated[str, pydantic.Field(description="The time the plan was created.")] = (
        attrs.field(factory=now_timestamp, validator=_str)
    )
    state: Annotated[PlanState, pydantic.Field(description="The state of the plan.")] = attrs.field(
        default="todo", validator=_state
    )
    finished_at: Annotated[
        str | None, pydantic.Field(description="The time the plan was finished.")
    ] = attrs.field(default=None, validator=_optional_str)
    outcome: Annotated[
        str | None, pydantic.Field(description="The actual outcome of the plan.")
    ] = attrs.field(default=None, validator=_optional_str)

    def refresh_plan_state(self) -> str:
        """Switch the plan between "todo" and "in_progress" to match its subtasks: it is in
        progress exactly while a subtask is. A done or abandoned plan is left alone.

        :returns: a sentence saying what changed (``"The plan state has been updated to
            'in_progress'."`` or ``... 'todo'.``), or ``""`` when nothing changed.
        """
        if self.state == "done" or self.state == "abandoned":
            return ""
        any_in_progress = any(subtask.state == "in_progress" for subtask in self.subtasks)
        if any_in_progress and self.state == "todo":
            self.state = "in_progress"
            return "The plan state has been updated to 'in_progress'."
        if not any_in_progress and self.state == "in_progress":
            self.state = "todo"
            return "The plan state has been updated to 'todo'."
        return ""

    def finish(self, state: Literal["done", "abandoned"], outcome: str) -> None:
        """End the plan as *state* ("done" or "abandoned") with its *outcome*, now."""
        self.state = state
        self.outcome = outcome
        self.finished_at = now_timestamp()

    def to_markdown(self, detailed: bool = False) -> str:
        """The plan as markdown: a ``# name`` heading, its fields, then ``## Subtasks`` as a
        checklist.

        :param detailed: describe each subtask in full (see :meth:`SubTask.to_markdown`).
        """
        subtasks = "\n".join(subtask.to_markdown(detailed=detailed) for subtask in self.subtasks)
        return "\n".join(
            [
                f"# {self.name}",
                f"**Description**: {self.description}",
                f"**Expected Outcome**: {self.expected_outcome}",
                f"**State**: {self.state}",
                f"**Created At**: {self.created_at}",
                "## Subtasks",
                subtasks,
            ]
        )

    def copy(self) -> Plan:
        """An independent copy (its subtasks copied too)."""
        return attrs.evolve(self, subtasks=[attrs.evolve(subtask) for subtask in self.subtasks])
