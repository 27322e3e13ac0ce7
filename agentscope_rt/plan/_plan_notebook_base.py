"""The plan-notebook interface the ReAct agent uses.

This release defines the interface only; the plan notebook itself (plans, subtasks, their
tools and storage) comes in a later release. A :class:`~agentscope_rt.agent.ReActAgent` given
``plan_notebook=``:

* registers every function of :meth:`PlanNotebookBase.list_tools` as a tool (in the basic
  group, or, with ``enable_meta_tool=True``, in a ``"plan_related"`` group described by
  :attr:`PlanNotebookBase.description` that the model activates itself);
* before each reasoning step adds :meth:`PlanNotebookBase.get_current_hint` to memory as a
  hint (shown to the model once, then removed).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from ..message import Msg
from ..module import StateModule

__all__ = ["PlanNotebookBase"]


class PlanNotebookBase(StateModule, ABC):
    """Base class of plan notebooks: plan tools for the model and hints for the agent."""

    description: str = (
        "The plan-related tools. Activate this tool when you need to execute complex task, "
        "e.g. building a website or a game. Once activated, you'll enter the plan mode, where "
        "you will be guided to complete the given query by creating and following a plan, and "
        "hint message wrapped by <system-hint></system-hint> will guide you to complete the "
        "task. If you think the user no longer wants to perform the current task, you need to "
        "confirm with the user and call the 'finish_plan' function."
    )
    """Describes the ``plan_related`` tool group to the model."""

    @abstractmethod
    def list_tools(self) -> list[Callable[..., Any]]:
        """The tool functions the notebook offers the model."""

    @abstractmethod
    async def get_current_hint(self) -> Msg | None:
        """A user message (wrapped in ``<system-hint>``) guiding the next step, or ``None``."""
