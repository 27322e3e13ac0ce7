"""The run's identity: project, name, run id and start time, as AgentScope keeps them.

Each value lives in a :class:`~contextvars.ContextVar` whose default is fixed when the package
is imported; :func:`agentscope_rt.init` sets the values it is given in the current context
only (tasks started afterwards inherit them; tasks and threads started before do not), as
AgentScope's ``agentscope._config`` does. The tracing package reads the run id for
``gen_ai.conversation.id``; the studio reads all four.
"""

from __future__ import annotations

import datetime
from contextvars import ContextVar

from ._ids import new_id

__all__ = ["RunConfig", "config"]

_NOW = datetime.datetime.now()
_RUN_ID = new_id()


class RunConfig:
    """The run's values, read and set as attributes (each backed by a context variable)."""

    __slots__ = ()

    _run_id: ContextVar[str] = ContextVar("agentscope_rt_run_id", default=_RUN_ID)
    _project: ContextVar[str] = ContextVar(
        "agentscope_rt_project", default="UnnamedProject_At" + _NOW.strftime("%Y%m%d")
    )
    _name: ContextVar[str] = ContextVar(
        "agentscope_rt_name", default=_NOW.strftime("%H%M%S_") + new_id()[:4]
    )
    _created_at: ContextVar[str] = ContextVar(
        "agentscope_rt_created_at", default=_NOW.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    )

    @property
    def run_id(self) -> str:
        """The run's id (Studio groups a run's messages and traces by it)."""
        return self._run_id.get()

    @run_id.setter
    def run_id(self, value: str) -> None:
        self._run_id.set(value)

    @property
    def project(self) -> str:
        """The project's name."""
        return self._project.get()

    @project.setter
    def project(self, value: str) -> None:
        self._project.set(value)

    @property
    def name(self) -> str:
        """The run's name."""
        return self._name.get()

    @name.setter
    def name(self, value: str) -> None:
        self._name.set(value)

    @property
    def created_at(self) -> str:
        """When the run started (``YYYY-MM-DD HH:MM:SS.mmm``, local time)."""
        return self._created_at.get()

    @created_at.setter
    def created_at(self, value: str) -> None:
        self._created_at.set(value)


config = RunConfig()
"""The run's values (AgentScope's ``agentscope._config``)."""
