"""Durable multi-agent runs: a whole program of agents that survives a crash.

Wrap the program in ``async with durable_run(run_id, store) as run:``; started again with the
same run id after its process died, it resumes where it was: recorded model calls are not
paid for again, recorded tool calls are not run again, and the agents reach the states they
had. See :mod:`agentscope_rt.durable._run` and ``docs/durable_runs.md``. :func:`inspect_run`
(and ``python -m agentscope_rt.durable``) shows a run's steps and where it stopped.
"""

from ..exception import DurableRunError, RunDivergedError
from ._inspect import (
    PROGRAM,
    SUMMARY_CHARS,
    AgentCounts,
    InFlightCall,
    RunReport,
    StepRow,
    WhereStopped,
    format_report,
    format_runs,
    inspect_run,
)
from ._postgres_store import PostgresRunStore
from ._redis_store import RedisRunStore
from ._run import (
    DurableRun,
    current_run,
    current_step_key,
    durable_run,
    join_calls,
    join_run,
    step,
)
from ._sqlite_store import SQLiteRunStore
from ._store import RunInfo, RunStatus, RunStore, StepKind, StepRecord, StepStatus

__all__ = [
    "PROGRAM",
    "SUMMARY_CHARS",
    "AgentCounts",
    "DurableRun",
    "DurableRunError",
    "InFlightCall",
    "PostgresRunStore",
    "RedisRunStore",
    "RunDivergedError",
    "RunInfo",
    "RunReport",
    "RunStatus",
    "RunStore",
    "SQLiteRunStore",
    "StepKind",
    "StepRecord",
    "StepRow",
    "StepStatus",
    "WhereStopped",
    "current_run",
    "current_step_key",
    "durable_run",
    "format_report",
    "format_runs",
    "inspect_run",
    "join_calls",
    "join_run",
    "step",
]
