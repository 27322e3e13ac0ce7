"""Seeing a durable run: its steps, what each agent did, and where it stopped.

:func:`inspect_run` reads a run's records from its store (nothing is written, and a run open
in another process can be read meanwhile) and builds a :class:`RunReport`; :func:`format_report`
turns it into plain text. The command line (``python -m agentscope_rt.durable``) and the
studio's *Durable runs* view show the same report.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs

from ..exception import DurableRunError
from ._store import RunInfo, RunStore, StepRecord

__all__ = [
    "PROGRAM",
    "SUMMARY_CHARS",
    "AgentCounts",
    "InFlightCall",
    "RunReport",
    "StepRow",
    "WhereStopped",
    "format_report",
    "format_runs",
    "inspect_run",
]

SUMMARY_CHARS = 80
"""The longest a step's summary gets (longer ones end with ``...``)."""

PROGRAM = "(program)"
"""The name counts go under for steps taken outside any agent call (``run.step`` at the top
of the program, a model called directly)."""

_OBSERVE = "observe:"


@attrs.frozen
class StepRow:
    """One step record, as a report shows it.

    :ivar agent: the agent that took the step (the observer, for what it did while
        observing), or :data:`PROGRAM`.
    :ivar summary: a one-line digest of the payload: a call's reply text, a model answer's
        text and tool calls, a tool's result text, a step's value (at most
        :data:`SUMMARY_CHARS` characters).
    """

    key: str
    kind: str
    status: str
    seq: int
    at: str
    agent: str
    summary: str


@attrs.frozen
class AgentCounts:
    """How many calls, model calls and tool calls of one agent the run recorded."""

    agent: str
    calls: int = 0
    chats: int = 0
    tools: int = 0


@attrs.frozen
class InFlightCall:
    """An agent call with recorded steps but no record of its own: it had not ended.

    :ivar steps: how many of its steps were recorded.
    :ivar last_step: the key of its step recorded last.
    """

    key: str
    agent: str
    steps: int
    last_step: str


@attrs.frozen
class WhereStopped:
    """Where a run that did not finish stopped; resuming it replays all of this.

    :ivar last_calls: each agent's last completed (or interrupted) call, in the order the
        agents first appear in the run.
    :ivar in_flight: the calls under way (see :class:`InFlightCall`): on resume they run
        again from the top, their recorded steps replayed, the first unrecorded one live.
    :ivar tools_started: tool calls recorded as started and never as done: they may have
        taken effect, so on resume they are not run again and the model gets the cut-off
        result instead.
    """

    last_calls: list[StepRow]
    in_flight: list[InFlightCall]
    tools_started: list[StepRow]


@attrs.frozen
class RunReport:
    """What :func:`inspect_run` found.

    :ivar info: the run as its store lists it.
    :ivar steps: every step record, in ``seq`` order (the order they were written).
    :ivar agents: per-agent counts, in the order the agents first appear.
    :ivar where_stopped: ``None`` for a finished run.
    """

    info: RunInfo
    steps: list[StepRow]
    agents: list[AgentCounts]
    where_stopped: WhereStopped | None


async def inspect_run(store: RunStore, run_id: str, user_id: str = "") -> RunReport:
    """Read run *run_id* of *user_id* from *store* and report on it (nothing is written).

    :raises DurableRunError: when the store has no such run, or cannot be read.
    """
    info = await store.get_run(user_id, run_id)
    if info is None:
        raise DurableRunError(
            f"no run {run_id!r} of user {user_id!r} in {store!r}: list the runs to see "
            "which ones it holds"
        )
    records = await store.load_steps(user_id, run_id)
    rows = [_row(record) for record in sorted(records, key=lambda record: record.seq)]
    stopped = None if info.status == "finished" else _where_stopped(rows)
    return RunReport(info, rows, _counts(rows), stopped)


# -- keys ----------------------------------------------------------------------------------


_SNAPSHOT = "snapshot:"


def _unescape(name: str) -> str:
    # The inverse of the run's key escaping ("%" went first there, so it comes last here).
    return name.replace("%2F", "/").replace("%23", "#").replace("%25", "%")


def _name(segment: str) -> str:
    """The agent name of a key segment ``Alice#3`` or ``observe:Bob#1``."""
    segment = segment.removeprefix(_OBSERVE)
    return _unescape(segment.rpartition("#")[0] or segment)


def _agent_of(key: str, kind: str) -> str:
    if kind == "snapshot":  # an agent on a host: its state, "snapshot:<name>"
        return _unescape(key.removeprefix(_SNAPSHOT))
    segments = key.split("/")
    if kind == "call":
        return _name(segments[0])
    frames = segments[:-1]
    for segment in reversed(frames):
        if segment.startswith(_OBSERVE):
            return _name(segment)
    return _name(frames[0]) if frames else PROGRAM


def _call_of(key: str) -> str | None:
    """The agent call a step belongs to (agent calls are the keys' first segment)."""
    head, slash, _ = key.partition("/")
    return head if slash else None


# -- summaries -----------------------------------------------------------------------------


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 3] + "..."


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return _json(block)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        return f"{block.get('name')}({_json(block.get('input'))})"
    if kind == "tool_result":
        return f"{block.get('name')} -> {_content_text(block.get('output'))}"
    return f"[{kind}]"


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(text for text in map(_block_text, content) if text)
    return _block_text(content)


def _summary(record: StepRecord) -> str:
    payload = record.payload
    if record.kind == "snapshot":
        return f"the agent's state ({len(_json(payload))} characters of JSON)"
    if record.kind == "tool" and record.status == "started":
        return "started, no result recorded"
    try:
        if record.kind == "call":
            return _content_text(payload["reply"]["content"])
        if record.kind == "chat":
            return _content_text(payload["response"]["content"])
        if record.kind == "tool":
            return _content_text(payload["content"])
        if record.kind == "embed":
            vectors = payload["embeddings"]
            size = len(vectors[0]) if vectors else 0
            return f"{len(vectors)} vector(s) of {size} dimensions"
    except (KeyError, TypeError, IndexError):
        pass  # a payload of another shape is shown as it is
    return _json(payload)


def _row(record: StepRecord) -> StepRow:
    return StepRow(
        key=record.key,
        kind=record.kind,
        status=record.status,
        seq=record.seq,
        at=record.at,
        agent=_agent_of(record.key, record.kind),
        summary=_clip(_summary(record)),
    )


# -- what the rows add up to ---------------------------------------------------------------

_COUNTED = {"call": "calls", "chat": "chats", "tool": "tools"}


def _counts(rows: Iterable[StepRow]) -> list[AgentCounts]:
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        agent = counts.setdefault(row.agent, {"calls": 0, "chats": 0, "tools": 0})
        field = _COUNTED.get(row.kind)
        if field is not None:
            agent[field] += 1
    return [AgentCounts(name, **fields) for name, fields in counts.items()]


def _cut_off_on_resume(row: StepRow, calls: set[str]) -> bool:
    """A tool call that started and never ended; cut off part-way (``partial``) counts too,
    unless its agent's call completed interrupted (the interrupt is then replayed)."""
    if row.kind != "tool" or row.status not in ("started", "partial"):
        return False
    return row.status == "started" or _call_of(row.key) not in calls


def _where_stopped(rows: list[StepRow]) -> WhereStopped:
    last_calls: dict[str, StepRow] = {}
    calls = {row.key for row in rows if row.kind == "call"}
    in_flight: dict[str, list[StepRow]] = {}
    for row in rows:
        if row.kind == "call":
            last_calls[row.agent] = row  # rows are in seq order: the last one stays
        call = _call_of(row.key)
        if call is not None and call not in calls:
            in_flight.setdefault(call, []).append(row)
    return WhereStopped(
        last_calls=list(last_calls.values()),
        in_flight=[
            InFlightCall(call, _name(call), len(steps), steps[-1].key)
            for call, steps in in_flight.items()
        ],
        tools_started=[row for row in rows if _cut_off_on_resume(row, calls)],
    )


# -- plain text ----------------------------------------------------------------------------


def _when(at: str) -> str:
    return at[:19].replace("T", " ")


def _table(header: tuple[str, ...], lines: list[tuple[Any, ...]], indent: str = "  ") -> str:
    """Columns padded to their widest cell; the last column is not padded."""
    cells = [header, *[tuple(str(cell) for cell in line) for line in lines]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header) - 1)]

    def joined(line: tuple[str, ...]) -> str:
        padded = [cell.ljust(width) for cell, width in zip(line[:-1], widths, strict=True)]
        return (indent + "  ".join([*padded, line[-1]])).rstrip()

    return "\n".join(map(joined, cells))


def _status_text(info: RunInfo) -> str:
    if info.status == "running":
        return "running (a process owns it, or died with it open: resumable)"
    if info.status in ("failed", "cancelled"):
        return f"{info.status} (resumable)"
    return info.status


def format_runs(runs: list[RunInfo]) -> str:
    """*runs* (as :meth:`RunStore.list_runs` gives them) as a plain text table."""
    if not runs:
        return "no runs"
    header = ("run", "user", "status", "steps", "updated", "last step")
    lines = [
        (
            run.run_id,
            run.user_id or "''",
            run.status,
            run.steps,
            _when(run.updated_at),
            run.last_step or "-",
        )
        for run in runs
    ]
    return _table(header, lines, indent="")


def _stopped_text(stopped: WhereStopped) -> list[str]:
    lines = ["where it stopped:"]
    if stopped.last_calls:
        lines.append("  last completed call of each agent:")
        lines += [
            f"    {row.agent}: {row.key} ({row.status}, seq {row.seq}) {row.summary}"
            for row in stopped.last_calls
        ]
    if stopped.in_flight:
        lines.append("  calls in flight (they run again on resume, recorded steps replayed):")
        lines += [
            f"    {call.key}: {call.steps} step(s) recorded, the last {call.last_step}"
            for call in stopped.in_flight
        ]
    if stopped.tools_started:
        lines.append("  tools started but not done (they get the cut-off result on resume):")
        lines += [f"    {row.key} (seq {row.seq})" for row in stopped.tools_started]
    if len(lines) == 1:
        lines.append("  before its first step")
    return lines


def format_report(report: RunReport, *, last_steps: int | None = None) -> str:
    """*report* as plain text: the run, the per-agent counts, where it stopped (when it did
    not finish) and a table of its steps.

    :param last_steps: show only the last *last_steps* steps (all by default).
    :raises ValueError: for a negative *last_steps*.
    """
    if last_steps is not None and last_steps < 0:
        raise ValueError(f"last_steps must be 0 or more, not {last_steps}")
    info = report.info
    lines = [
        f"run {info.run_id!r} of user {info.user_id!r}: {_status_text(info)}",
        f"  {info.steps} step(s), created {_when(info.created_at)}, updated "
        f"{_when(info.updated_at)}, last step {info.last_step or '-'}",
    ]
    if report.agents:
        lines += [
            "agents:",
            _table(
                ("agent", "calls", "chats", "tools"),
                [(a.agent, a.calls, a.chats, a.tools) for a in report.agents],
            ),
        ]
    if report.where_stopped is not None:
        lines += _stopped_text(report.where_stopped)
    shown = (
        report.steps
        if last_steps is None
        else report.steps[max(0, len(report.steps) - last_steps) :]
    )
    lines.append("steps:")
    if len(shown) < len(report.steps):
        lines.append(f"  ({len(report.steps) - len(shown)} earlier step(s) not shown)")
    if shown:
        lines.append(
            _table(
                ("seq", "at", "kind", "status", "key", "summary"),
                [(r.seq, _when(r.at), r.kind, r.status, r.key, r.summary) for r in shown],
            )
        )
    return "\n".join(lines)
