"""Planning: plans, subtasks, the plan notebook the ReAct agent works through, and plan storage.

:class:`PlanNotebook` holds the current :class:`Plan` (a list of :class:`SubTask`), offers the
model tools to create, follow and revise it, and gives the agent a hint before each reasoning
step (:class:`DefaultPlanToHint`). Finished plans go to a :class:`PlanStorageBase`
(:class:`InMemoryPlanStorage` by default). Names, tool schemas, texts and saved state are
AgentScope 1.x's; see ``docs/plan.md`` for where this package deliberately differs.
"""

from ._plan_model import SUBTASK_STATES, Plan, PlanState, SubTask
from ._plan_notebook import PlanChangeHook, PlanNotebook
from ._plan_to_hint import DefaultPlanToHint
from ._storage import InMemoryPlanStorage, PlanStorageBase

__all__ = [
    "SUBTASK_STATES",
    "DefaultPlanToHint",
    "InMemoryPlanStorage",
    "Plan",
    "PlanChangeHook",
    "PlanNotebook",
    "PlanState",
    "PlanStorageBase",
    "SubTask",
]
