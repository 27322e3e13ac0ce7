"""Where finished and replaced plans are kept: :class:`PlanStorageBase` and the default
:class:`InMemoryPlanStorage`."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..module import StateModule
from ._plan_model import Plan

__all__ = ["InMemoryPlanStorage", "PlanStorageBase"]


class PlanStorageBase(StateModule, ABC):
    """The base class for plan storage: the history a :class:`PlanNotebook` keeps.

    A storage is a :class:`StateModule`, so the notebook's state includes it.
    """

    @abstractmethod
    async def add_plan(self, plan: Plan) -> None:
        """Add *plan* to the storage (a plan with the same id is replaced)."""

    @abstractmethod
    async def delete_plan(self, plan_id: str) -> None:
        """Delete the plan with id *plan_id*; an unknown id is ignored."""

    @abstractmethod
    async def get_plans(self) -> list[Plan]:
        """All stored plans, in the order they were first added."""

    @abstractmethod
    async def get_plan(self, plan_id: str) -> Plan | None:
        """The plan with id *plan_id*, or ``None``."""


class InMemoryPlanStorage(PlanStorageBase):
    """Plans held in a dict by id, in the order they were first added.

    Its state is AgentScope's ``{"plans": {plan_id: plan_dict, ...}}``.
    """

    plans: dict[str, Plan]

    def __init__(self) -> None:
        super().__init__()
        self.plans = {}
        self.register_state("plans", state_type=dict[str, Plan])

    async def add_plan(self, plan: Plan, override: bool = True) -> None:
        """Add *plan* to the storage.

        :param override: replace a stored plan with the same id (else that is an error).
        :raises TypeError: if *plan* is not a :class:`Plan`.
        :raises ValueError: if a plan with the same id is stored and *override* is false.
        """
        if not isinstance(plan, Plan):
            raise TypeError(f"plan must be a Plan, not {type(plan).__name__}")
        if plan.id in self.plans and not override:
            raise ValueError(f"Plan with id {plan.id} already exists.")
        self.plans[plan.id] = plan

    async def delete_plan(self, plan_id: str) -> None:
        """Delete the plan with id *plan_id*; an unknown id is ignored."""
        self.plans.pop(plan_id, None)

    async def get_plans(self) -> list[Plan]:
        """All stored plans, in the order they were first added."""
        return list(self.plans.values())

    async def get_plan(self, plan_id: str) -> Plan | None:
        """The plan with id *plan_id*, or ``None``."""
        return self.plans.get(plan_id)
