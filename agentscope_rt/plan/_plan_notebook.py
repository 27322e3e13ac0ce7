"""PlanNotebook: the current plan, its history, the plan tools and the hint for the model.

The notebook's tool functions (:meth:`PlanNotebook.list_tools`) have AgentScope 1.x's names,
arguments, docstrings (which become the tools' JSON schemas) and result texts. A
:class:`~agentscope_rt.agent.ReActAgent` given ``plan_notebook=`` registers them and shows the
model :meth:`PlanNotebook.get_current_hint` before each reasoning step.

Guarantees, where AgentScope leaves gaps:

* **A tool never raises for a bad call.** Whatever the model sends — no plan yet, an index out
  of range, a state that does not exist, finishing subtasks out of order, more subtasks than
  ``max_subtasks``, a second plan while one is current — the tool returns a
  :class:`~agentscope_rt.tool.ToolResponse` whose text says what is wrong and what to do
  instead, and the plan is left exactly as it was.
* **The plan stays consistent.** Every change the tools make keeps: at most one subtask in
  progress; every subtask before the one in progress done or abandoned; a plan in progress
  while one of its subtasks is.
* **Nothing is lost.** A plan leaves the notebook only into the storage (finished, abandoned,
  or replaced by a recovered plan); a new plan is refused while one is current.
* **Changes are serialised.** Tool calls that run concurrently (``parallel_tool_calls``) are
  applied one after the other. Plan change hooks run after the change, outside the lock, so a
  hook may itself call the notebook.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Literal

import attrs

from .._locks import FairLock
from ..exception import MessageFormatError, StateError
from ..message import Msg, TextBlock
from ..module import StateModule
from ..tool import ToolResponse
from ._plan_model import Plan, SubTask
from ._plan_to_hint import DefaultPlanToHint
from ._storage import InMemoryPlanStorage, PlanStorageBase

__all__ = ["PlanChangeHook", "PlanNotebook"]

logger = logging.getLogger(__name__)

PlanChangeHook = Callable[["PlanNotebook", Plan | None], Awaitable[None] | None]
"""A function ``hook(notebook, plan)``, sync or async, called after each change of the
current plan (``plan`` is ``None`` once the plan is finished)."""

_NO_PLAN = (
    "Error: The current plan is None, you need to create a plan by calling create_plan() first."
)
_FINISHED = ("done", "abandoned")


def _text(text: str) -> ToolResponse:
    return ToolResponse(content=[TextBlock(text=text)])


def _as_index(value: Any) -> int | None:
    """*value* as a subtask index (an int, an integral float such as ``1.0``, which the tools'
    ``integer`` schema accepts, or a string of an int, as AgentScope accepts), or ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        # JSON Schema's "integer" (the tools' schema) includes 1.0: the same index.
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _subtask_index(plan: Plan, value: Any) -> int | ToolResponse:
    """*value* as the index of an existing subtask of *plan*, or the tool response telling the
    model what is wrong with it (not an index, or out of range)."""
    idx = _as_index(value)
    if idx is None:
        return _text(
            f"Invalid type for argument 'subtask_idx'. Expected 'int', but got '{type(value)}'."
        )
    if not 0 <= idx < len(plan.subtasks):
        return _text(
            f"Invalid subtask_idx '{idx}'. Must be between 0 and {len(plan.subtasks) - 1}."
        )
    return idx


def _plan_and_subtask(plan: Plan | None, value: Any) -> tuple[Plan, int] | ToolResponse:
    """*plan* and *value* as the index of one of its subtasks, or the tool response telling the
    model what is wrong (no current plan, *value* not an index, or out of range)."""
    if plan is None:
        return _text(_NO_PLAN)
    idx = _subtask_index(plan, value)
    if isinstance(idx, ToolResponse):
        return idx
    return plan, idx


def _ordering_problem(subtasks: list[SubTask], *, as_is: bool = False) -> str | None:
    """Why *subtasks* break the plan's rules (at most one in progress, everything before it
    done or abandoned), or ``None``. Worded for a change that would break them, or with
    *as_is* for subtasks that already do (a loaded state)."""
    both, is_ = ("are both", "is") if as_is else ("would both be", "would be")
    in_progress = [idx for idx, subtask in enumerate(subtasks) if subtask.state == "in_progress"]
    if len(in_progress) > 1:
        first, second = in_progress[:2]
        return (
            f"subtasks at index {first} ('{subtasks[first].name}') and {second} "
            f"('{subtasks[second].name}') {both} 'in_progress', but only one subtask can "
            "be 'in_progress' at a time"
        )
    if in_progress:
        current = in_progress[0]
        for idx in range(current):
            if subtasks[idx].state not in _FINISHED:
                return (
                    f"the subtask at index {idx} ('{subtasks[idx].name}') {is_} "
                    f"'{subtasks[idx].state}' before the subtask at index {current} "
                    f"('{subtasks[current].name}'), which is 'in_progress', but every subtask "
                    "before the one in progress must be done or abandoned"
                )
    return None


def _check_current_plan_state(state_dict: Any) -> bool:
    """Check the current plan of a notebook state against the notebook's rules.

    :returns: whether the plan is a finished one that AgentScope recovered (stored under the
        same id), to be reopened once loaded.
    :raises StateError: naming the broken rule. A state the converter cannot read passes
        here, for :meth:`StateModule.load_state_dict` to report.
    """
    raw = state_dict.get("current_plan") if isinstance(state_dict, dict) else None
    if raw is None:
        return False
    try:
        plan = Plan.from_dict(raw)
    except MessageFormatError:
        return False
    where = f"PlanNotebook: current_plan '{plan.name}'"
    if not plan.subtasks:
        raise StateError(f"{where} has no subtasks, but a plan needs at least one")
    problem = _ordering_problem(plan.subtasks, as_is=True)
    if problem is not None:
        raise StateError(f"{where}: {problem}")
    if plan.state not in _FINISHED:
        return False
    storage = state_dict.get("storage")
    stored = storage.get("plans") if isinstance(storage, dict) else None
    if isinstance(stored, dict) and plan.id in stored:
        return True
    raise StateError(
        f"{where}: the current plan is '{plan.state}', but a finished plan belongs in the "
        "storage, not in the notebook"
    )


def _reopen(plan: Plan) -> None:
    """Make a finished plan current again (as :meth:`PlanNotebook.recover_historical_plan`)."""
    if plan.state == "done" or plan.state == "abandoned":
        plan.state = "todo"
        plan.finished_at = None
        plan.outcome = None
    plan.refresh_plan_state()


def _format_error(exc: Exception) -> str:
    """The readable part of a validation error (attrs validators put the message first in
    ``args``; the converter's errors start with what was being built)."""
    text = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    for prefix in ("invalid subtask: ", "invalid plan: "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text.rstrip(".")


class PlanNotebook(StateModule):
    """The plan notebook to manage the plan, providing hints and plan related tool functions
    to the agent.

    Its state is AgentScope's: ``{"storage": <storage state>, "current_plan": <plan dict> or
    null}``, so a notebook saved by either library loads in the other.

    :param max_subtasks: the most subtasks a plan may have (enforced by ``create_plan`` and
        ``revise_current_plan``); ``None`` for no limit.
    :param plan_to_hint: turns the current plan (or ``None``) into the hint text; a
        :class:`DefaultPlanToHint` when omitted.
    :param storage: where finished plans are kept; an :class:`InMemoryPlanStorage` when
        omitted.
    :raises ValueError: if *max_subtasks* is not a positive integer or ``None``.
    :raises TypeError: if *plan_to_hint* is not callable or *storage* is not a
        :class:`PlanStorageBase`.
    """

    description: str = (
        "The plan-related tools. Activate this tool when you need to execute complex task, "
        "e.g. building a website or a game. Once activated, you'll enter the plan mode, where "
        "you will be guided to complete the given query by creating and following a plan, and "
        "hint message wrapped by <system-hint></system-hint> will guide you to complete the "
        "task. If you think the user no longer wants to perform the current task, you need to "
        "confirm with the user and call the 'finish_plan' function."
    )
    """Describes the ``plan_related`` tool group to the model (AgentScope's text)."""

    current_plan: Plan | None

    def __init__(
        self,
        max_subtasks: int | None = None,
        plan_to_hint: Callable[[Plan | None], str | None] | None = None,
        storage: PlanStorageBase | None = None,
    ) -> None:
        super().__init__()
        if max_subtasks is not None and (
            isinstance(max_subtasks, bool) or not isinstance(max_subtasks, int) or max_subtasks < 1
        ):
            raise ValueError(
                f"max_subtasks must be a positive integer or None, not {max_subtasks!r}"
            )
        if plan_to_hint is not None and not callable(plan_to_hint):
            raise TypeError(
                f"plan_to_hint must be callable (plan -> str | None), not "
                f"{type(plan_to_hint).__name__}"
            )
        if storage is not None and not isinstance(storage, PlanStorageBase):
            raise TypeError(f"storage must be a PlanStorageBase, not {type(storage).__name__}")
        self.max_subtasks = max_subtasks
        self.plan_to_hint: Callable[[Plan | None], str | None] = (
            plan_to_hint if plan_to_hint is not None else DefaultPlanToHint()
        )
        self.storage: PlanStorageBase = storage if storage is not None else InMemoryPlanStorage()
        self.current_plan = None
        self._plan_change_hooks: dict[str, PlanChangeHook] = {}
        self._lock = FairLock()
        self.register_state("current_plan", state_type=Plan | None)

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Load a state saved by :meth:`state_dict` (here or in AgentScope).

        A current plan must keep the rules the tools keep: at least one subtask, at most one
        in progress, every subtask before that one done or abandoned, and the plan itself not
        finished. The one finished current plan accepted is AgentScope's recovered plan (its
        ``recover_historical_plan`` leaves a finished plan current, and stored under the same
        id): it is reopened, as :meth:`recover_historical_plan` reopens one here, while the
        stored record keeps its outcome.

        :raises StateError: naming the broken rule, or for a malformed state; nothing is
            changed then.
        """
        reopen = _check_current_plan_state(state_dict)
        super().load_state_dict(state_dict, strict)
        plan = self.current_plan
        if reopen and plan is not None:
            _reopen(plan)

    @property
    def max_tasks(self) -> int | None:
        """The most subtasks a plan may have (AgentScope's attribute name for
        :attr:`max_subtasks`)."""
        return self.max_subtasks

    # -- plan tools --------------------------------------------------------------------------

    async def create_plan(
        self,
        name: str,
        description: str,
        expected_outcome: str,
        subtasks: list[SubTask],
    ) -> ToolResponse:
        """Create a plan by given name and sub-tasks.

        Args:
            name (`str`):
                The plan name, should be concise, descriptive and not exceed
                10 words.
            description (`str`):
                The plan description, including the constraints, target and
                outcome to be achieved. The description should be clear,
                specific and concise, and all the constraints, target and
                outcome should be specific and measurable.
            expected_outcome (`str`):
                The expected outcome of the plan, which should be specific,
                concrete and measurable.
            subtasks (`list[SubTask]`):
                A list of sequential sub-tasks that make up the plan.

        Returns:
            `ToolResponse`:
                The response of the tool call.
        """
        async with self._lock:
            current = self.current_plan
            if current is not None:
                n_done = sum(subtask.state in _FINISHED for subtask in current.subtasks)
                return _text(
                    f"Error: There is already a current plan named '{current.name}' "
                    f"({n_done} of {len(current.subtasks)} subtasks done or abandoned), so no "
                    "new plan was created. Finish it first by calling 'finish_plan' (with "
                    "state 'done', or 'abandoned' after confirming with the user), or change "
                    "it by calling 'revise_current_plan'."
                )
            if not isinstance(subtasks, list) or not subtasks:
                return _text(
                    "Error: A plan needs a non-empty list of subtasks; call create_plan again "
                    "with at least one subtask."
                )
            if self.max_subtasks is not None and len(subtasks) > self.max_subtasks:
                return _text(
                    f"Error: The plan has {len(subtasks)} subtasks, more than the "
                    f"{self.max_subtasks} allowed (max_subtasks={self.max_subtasks}). Merge "
                    "some subtasks and call create_plan again."
                )
            for field, value in (
                ("name", name),
                ("description", description),
                ("expected_outcome", expected_outcome),
            ):
                if not isinstance(value, str):
                    return _text(
                        f"Error: Invalid plan: {field}: expected a string, got "
                        f"{type(value).__name__}."
                    )
            try:
                plan = Plan(
                    name=name,
                    description=description,
                    expected_outcome=expected_outcome,
                    # The plan owns its subtasks: a caller's SubTask objects are copied.
                    subtasks=[
                        attrs.evolve(item) if isinstance(item, SubTask) else item
                        for item in subtasks
                    ],
                )
            except (TypeError, ValueError, MessageFormatError) as exc:
                return _text(f"Error: Invalid plan: {_format_error(exc)}.")
            problem = _ordering_problem(plan.subtasks)
            if problem is not None:
                return _text(f"Error: Invalid plan: {problem}.")
            plan.refresh_plan_state()
            self.current_plan = plan
        await self._trigger_plan_change_hooks()
        return _text(f"Plan '{name}' created successfully.")

    async def revise_current_plan(
        self,
        subtask_idx: int,
        action: Literal["add", "revise", "delete"],
        subtask: SubTask | None = None,
    ) -> ToolResponse:
        """Revise the current plan by adding, revising or deleting a sub-task.

        Args:
            subtask_idx (`int`):
                The index of the sub-task to be revised, starting from 0.
            action (`Literal["add", "revise", "delete"]`):
                The action to be performed on the sub-task. If "add", the
                sub-task will be inserted before the given index. If "revise",
                the sub-task at the given index will be revised. If "delete",
                the sub-task at the given index will be deleted.
            subtask (`SubTask | None`, optional):
                The sub-task to be added or revised. Required if action is
                "add" or "revise".

        Returns:
            `ToolResponse`:
                The response of the tool call.
        """
        async with self._lock:
            plan = self.current_plan
            if plan is None:
                return _text(_NO_PLAN)
            idx = _as_index(subtask_idx)
            if idx is None:
                return _text(
                    "Error: Invalid type for argument 'subtask_idx'. Expected 'int', but got "
                    f"'{type(subtask_idx)}'."
                )
            n = len(plan.subtasks)
            if action not in ("add", "revise", "delete"):
                return _text(
                    f"Error: Invalid action '{action}'. Must be one of 'add', 'revise', 'delete'."
                )
            if action != "delete" and subtask is None:
                return _text(
                    f"Error: The subtask must be provided when action is '{action}', but got None."
                )
            if action == "add" and not 0 <= idx <= n:
                return _text(
                    f"Error: Invalid subtask_idx '{idx}' for action 'add'. Must be between 0 "
                    f"and {n}."
                )
            if action != "add" and not 0 <= idx < n:
                return _text(
                    f"Error: Invalid subtask_idx '{idx}' for action '{action}'. Must be "
                    f"between 0 and {n - 1}."
                )

            subtasks = list(plan.subtasks)
            if action == "delete":
                if n == 1:
                    return _text(
                        "Error: Cannot delete the only subtask of the plan. Add the subtask "
                        "that replaces it first, or finish the plan by calling 'finish_plan'."
                    )
                removed = subtasks.pop(idx)
                result = f"Subtask (named '{removed.name}') at index {idx} is deleted successfully."
            else:
                if action == "add" and self.max_subtasks is not None and n >= self.max_subtasks:
                    return _text(
                        f"Error: The plan already has {n} subtasks, the most allowed "
                        f"(max_subtasks={self.max_subtasks}). Revise or delete a subtask "
                        "instead."
                    )
                try:
                    new = self._subtask_from(subtask, None if action == "add" else subtasks[idx])
                except (TypeError, ValueError, MessageFormatError) as exc:
                    return _text(f"Error: Invalid subtask: {_format_error(exc)}.")
                if action == "add":
                    subtasks.insert(idx, new)
                    result = f"New subtask is added successfully at index {idx}."
                else:
                    subtasks[idx] = new
                    result = f"Subtask at index {idx} is revised successfully."
            problem = _ordering_problem(subtasks)
            if problem is not None:
                return _text(
                    f"Error: Cannot {action} the subtask at index {idx}: {problem}. Change the "
                    "subtask states with 'update_subtask_state' first."
                )
            plan.subtasks = subtasks
            if any(s.state == "in_progress" for s in subtasks) and plan.state == "todo":
                plan.state = "in_progress"
        await self._trigger_plan_change_hooks()
        return _text(result)

    @staticmethod
    def _subtask_from(value: Any, previous: SubTask | None) -> SubTask:
        """A :class:`SubTask` from a tool argument. A dict revising *previous* keeps its state,
        outcome and timestamps unless it gives them itself."""
        if isinstance(value, SubTask):
            return attrs.evolve(value)
        if not isinstance(value, dict):
            raise TypeError(f"expected a subtask object, got {type(value).__name__}")
        if previous is not None:
            value = {**previous.to_dict(), **value}
        return SubTask.from_dict(value)

    async def update_subtask_state(
        self,
        subtask_idx: int,
        state: Literal["todo", "in_progress", "abandoned"],
    ) -> ToolResponse:
        """Update the state of a subtask by given index and state. Note if you
        want to mark a subtask as done, you SHOULD call `finish_subtask`
        instead with the specific outcome.

        Args:
            subtask_idx (`int`):
                The index of the subtask to be updated, starting from 0.
            state (`Literal["todo", "in_progress", "abandoned"]`):
                The new state of the subtask. If you want to mark a subtask
                as done, you SHOULD call `finish_subtask` instead with the
                specific outcome.
        """
        async with self._lock:
            found = _plan_and_subtask(self.current_plan, subtask_idx)
            if isinstance(found, ToolResponse):
                return found
            plan, idx = found
            if state not in ("todo", "in_progress", "abandoned"):
                return _text(
                    f"Invalid state '{state}'. Must be one of 'todo', 'in_progress', 'abandoned'."
                )
            if state == "in_progress":
                for other_idx, other in enumerate(plan.subtasks):
                    if other_idx < idx and other.state not in _FINISHED:
                        return _text(
                            f"Subtask (at index {other_idx}) named '{other.name}' is not done "
                            "yet. You should finish the previous subtasks first."
                        )
                    if other.state == "in_progress":
                        return _text(
                            f"Subtask (at index {other_idx}) named '{other.name}' is already "
                            "'in_progress'. You should finish it first before starting another "
                            "subtask."
                        )
            elif state == "todo":
                for later_idx in range(idx + 1, len(plan.subtasks)):
                    later = plan.subtasks[later_idx]
                    if later.state == "in_progress":
                        return _text(
                            f"Error: Cannot mark the subtask at index {idx} as 'todo' while the "
                            f"subtask at index {later_idx} named '{later.name}' after it is "
                            "'in_progress'. Mark that subtask as 'todo' first."
                        )
            target = plan.subtasks[idx]
            target.state = state
            suffix = plan.refresh_plan_state()
        await self._trigger_plan_change_hooks()
        return _text(
            f"Subtask at index {idx}, named '{target.name}' is marked as '{state}' "
            "successfully. " + suffix
        )

    async def finish_subtask(
        self,
        subtask_idx: int,
        subtask_outcome: str,
    ) -> ToolResponse:
        r"""Label the subtask as done by given index and outcome.

        Args:
            subtask_idx (`int`):
                The index of the sub-task to be marked as done, starting
                from 0.
            subtask_outcome (`str`):
                The specific outcome of the sub-task, should exactly match the
                expected outcome in the sub-task description. SHOULDN't be
                what you did or general description, e.g. "I have searched
                xxx", "I have written the code for xxx", etc. It SHOULD be
                the specific data, information, or path to the file, e.g.
                "There are 5 articles about xxx, they are\n- xxx\n- xxx\n..."
        """
        async with self._lock:
            found = _plan_and_subtask(self.current_plan, subtask_idx)
            if isinstance(found, ToolResponse):
                return found
            plan, idx = found
            if not isinstance(subtask_outcome, str):
                return _text(
                    "Error: Invalid type for argument 'subtask_outcome'. Expected 'str', but "
                    f"got '{type(subtask_outcome)}'."
                )
            for earlier_idx, earlier in enumerate(plan.subtasks[:idx]):
                if earlier.state not in _FINISHED:
                    return _text(
                        f"Cannot finish subtask at index {idx} because the previous subtask "
                        f"(at index {earlier_idx}) named '{earlier.name}' is not done yet. You "
                        "should finish the previous subtasks first."
                    )
            target = plan.subtasks[idx]
            if target.state == "done":
                return _text(
                    f"Error: Subtask (at index {idx}) named '{target.name}' is already done. "
                    "Go on with the next subtask."
                )
            target.finish(subtask_outcome)
            result = (
                f"Subtask (at index {idx}) named '{target.name}' is marked as done successfully. "
            )
            if not any(s.state == "in_progress" for s in plan.subtasks):
                # The next subtask still to do is started (AgentScope starts subtask idx + 1
                # whatever its state, even an abandoned or done one).
                for next_subtask in plan.subtasks[idx + 1 :]:
                    if next_subtask.state == "todo":
                        next_subtask.state = "in_progress"
                        result = (
                            f"Subtask (at index {idx}) named '{target.name}' is marked as done "
                            f"successfully. The next subtask named '{next_subtask.name}' is "
                            "activated."
                        )
                        if plan.state == "todo":
                            result += " " + plan.refresh_plan_state()
                        break
                    if next_subtask.state != "done" and next_subtask.state != "abandoned":
                        break
        await self._trigger_plan_change_hooks()
        return _text(result)

    async def view_subtasks(self, subtask_idx: list[int]) -> ToolResponse:
        """View the details of the sub-tasks by given indexes.

        Args:
            subtask_idx (`list[int]`):
                The indexes of the sub-tasks to be viewed, starting from 0.
        """
        plan = self.current_plan
        if plan is None:
            return _text(_NO_PLAN)
        indexes: list[Any] = subtask_idx if isinstance(subtask_idx, list) else [subtask_idx]
        gathered: list[str] = []
        invalid: list[Any] = []
        for value in indexes:
            idx = _as_index(value)
            if idx is None or not 0 <= idx < len(plan.subtasks):
                invalid.append(value)
                continue
            gathered.append(
                f"Subtask at index {idx}:\n```\n"
                f"{plan.subtasks[idx].to_markdown(detailed=True)}\n```\n"
            )
        if invalid:
            gathered.append(
                f"Invalid subtask_idx '{invalid}'. Must be between 0 and {len(plan.subtasks) - 1}."
            )
        return _text("\n".join(gathered))

    async def finish_plan(
        self,
        state: Literal["done", "abandoned"],
        outcome: str,
    ) -> ToolResponse:
        """Finish the current plan by given outcome, or abandon it with the
        given reason if the user no longer wants to perform it. Note that you
        SHOULD confirm with the user before abandoning the plan.

        Args:
            state (`Literal["done", "abandoned"]`):
                The state to finish the plan. If "done", the plan will be
                marked as done with the given outcome. If "abandoned", the
                plan will be abandoned with the given reason.
            outcome (`str`):
                The specific outcome of the plan if state is "done", or the
                reason for abandoning the plan if state is "abandoned".
        """
        async with self._lock:
            plan = self.current_plan
            if plan is None:
                return _text("There is no plan to finish.")
            if state not in _FINISHED:
                return _text(f"Error: Invalid state '{state}'. Must be one of 'done', 'abandoned'.")
            if not isinstance(outcome, str):
                return _text(
                    "Error: Invalid type for argument 'outcome'. Expected 'str', but got "
                    f"'{type(outcome)}'."
                )
            if state == "done":
                for idx, subtask in enumerate(plan.subtasks):
                    if subtask.state not in _FINISHED:
                        return _text(
                            f"Error: Cannot finish the plan as 'done' because the subtask at "
                            f"index {idx} named '{subtask.name}' is '{subtask.state}'. Finish "
                            "it by calling 'finish_subtask' or abandon it by calling "
                            "'update_subtask_state' first, or finish the plan as 'abandoned'."
                        )
            finished = plan.copy()
            finished.finish(state, outcome)
            # Stored before it leaves the notebook: a storage that fails loses nothing.
            await self.storage.add_plan(finished)
            self.current_plan = None
        await self._trigger_plan_change_hooks()
        return _text(f"The current plan is finished successfully as '{state}'.")

    async def view_historical_plans(self) -> ToolResponse:
        """View the historical plans."""
        plans = await self.storage.get_plans()
        return _text(
            "\n".join(
                f"Plan named '{plan.name}':\n"
                f"- ID: {plan.id}\n"
                f"- Created at: {plan.created_at}\n"
                f"- Description: {plan.description}\n"
                f"- State: {plan.state}\n"
                for plan in plans
            )
        )

    async def recover_historical_plan(self, plan_id: str) -> ToolResponse:
        """Recover a historical plan by given plan ID, the plan ID can be
        obtained by calling `view_historical_plans`. Note the recover
        operation will override the current plan if exists.

        Args:
            plan_id (`str`):
                The ID of the historical plan to be recovered.
        """
        if not isinstance(plan_id, str):
            return _text(
                "Error: Invalid type for argument 'plan_id'. Expected 'str', but got "
                f"'{type(plan_id)}'."
            )
        async with self._lock:
            historical = await self.storage.get_plan(plan_id)
            if historical is None:
                return _text(f"Cannot find the plan with ID '{plan_id}'.")
            current = self.current_plan
            if current is not None and current.id == historical.id:
                return _text(f"Error: The plan with ID '{plan_id}' is already the current plan.")
            if current is not None:
                replaced = current.copy()
                if replaced.state != "done":
                    replaced.finish(
                        "abandoned",
                        "The plan execution is interrupted by a new plan with ID "
                        f"'{historical.id}'.",
                    )
                await self.storage.add_plan(replaced)
                result = (
                    f"The current plan named '{current.name}' is replaced by the historical "
                    f"plan named '{historical.name}' with ID '{historical.id}'."
                )
            else:
                result = (
                    f"Historical plan named '{historical.name}' with ID '{historical.id}' is "
                    "recovered successfully."
                )
            # A copy: working on the recovered plan does not rewrite its stored record. It is
            # reopened, so the model is not shown a plan marked done or abandoned to work on.
            recovered = historical.copy()
            _reopen(recovered)
            self.current_plan = recovered
        await self._trigger_plan_change_hooks()
        return _text(result)

    def list_tools(self) -> list[Callable[..., Coroutine[Any, Any, ToolResponse]]]:
        """The tool functions the notebook offers the model, in AgentScope's order: the
        subtask tools, the plan tools, then the history tools."""
        return [
            self.view_subtasks,
            self.update_subtask_state,
            self.finish_subtask,
            self.create_plan,
            self.revise_current_plan,
            self.finish_plan,
            self.view_historical_plans,
            self.recover_historical_plan,
        ]

    # -- hint and hooks ----------------------------------------------------------------------

    async def get_current_hint(self) -> Msg | None:
        """The hint for the current plan as a user message (its text wrapped in
        ``<system-hint>`` by the default :class:`DefaultPlanToHint`), or ``None`` when
        ``plan_to_hint`` gives no text. ``plan_to_hint`` may also be a coroutine function."""
        hint: Any = self.plan_to_hint(self.current_plan)
        if inspect.isawaitable(hint):
            hint = await hint
        if hint:
            return Msg("user", hint, "user")
        return None

    def register_plan_change_hook(self, hook_name: str, hook: PlanChangeHook) -> None:
        """Call *hook* ``(notebook, plan)`` after every change of the current plan.

        Hooks run in registration order, after the change is made; sync hooks are called
        directly (keep them quick), async ones awaited. A hook that raises is logged and does
        not undo the change or stop the other hooks. Registering a name again replaces that
        hook.

        :raises TypeError: if *hook_name* is not a string or *hook* is not callable.
        """
        if not isinstance(hook_name, str):
            raise TypeError(f"hook_name must be a string, not {type(hook_name).__name__}")
        if not callable(hook):
            raise TypeError(f"hook must be callable, not {type(hook).__name__}")
        self._plan_change_hooks[hook_name] = hook

    def remove_plan_change_hook(self, hook_name: str) -> None:
        """Remove the plan change hook registered as *hook_name*.

        :raises ValueError: if no hook has that name.
        """
        if hook_name not in self._plan_change_hooks:
            raise ValueError(f"Hook '{hook_name}' not found.")
        del self._plan_change_hooks[hook_name]

    async def _trigger_plan_change_hooks(self) -> None:
        for name, hook in list(self._plan_change_hooks.items()):
            try:
                result = hook(self, self.current_plan)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                # The plan has changed already; the model must learn that, not the hook's error.
                logger.exception("plan change hook %r failed", name)
