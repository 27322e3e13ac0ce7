"""Planning: the plan-notebook interface the ReAct agent uses.

Only the interface is defined here; the plan notebook itself comes in a later release.
"""

from ._plan_notebook_base import PlanNotebookBase

__all__ = ["PlanNotebookBase"]
