"""Durable runs: what recording a step costs, and how long a resume takes.

agentscope-rt only (AgentScope has no durable runs). Workloads, on asyncio and on trio:

* **recorded steps** — a ReAct reply with one tool call (two calls of a zero-latency model and
  one tool call; a fresh agent each time, so every reply does the same work), timed outside a
  durable run and inside one. Inside, the reply records 4 steps (the agent's call, two model
  calls, the tool call) in 5 writes (the tool call is marked started before it runs). Stores:
  SQLite (``SQLiteRunStore``: WAL, ``synchronous=FULL``, so every write waits for an fsync;
  and with ``fsync="effects"``, where only the tool call's started record waits for it),
  PostgreSQL (``PostgresRunStore`` on a local server with ``fsync`` on), and a store that
  keeps the records in a dict: the recording machinery alone (fingerprints, keys, JSON
  payloads), without storage.
* **resume** — a run of 1,000 recorded steps (250 such replies) opened again and run to its end
  with every step replayed from its records: the store's ``load_steps`` alone, and the whole
  resume (acquire, load, replay of the 250 replies, release).

Each round measures every variant once, plain and recorded replies interleaved in one process
(pinned to one core: the machine is shared), and each figure is the median over ROUNDS rounds.
The section gives the machine's load average at the start and the end: figures scale with it;
compare ratios.

Run ``python bench/bench_durable.py`` (prints the markdown section) or ``nox -s bench -- durable``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pathlib
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _agentscope_env import pin_to_one_cpu  # noqa: E402

from agentscope_rt import durable  # noqa: E402
from agentscope_rt.agent import ReActAgent  # noqa: E402
from agentscope_rt.durable import (  # noqa: E402
    PostgresRunStore,
    RunInfo,
    RunStore,
    SQLiteRunStore,
    StepRecord,
)
from agentscope_rt.formatter import OpenAIChatFormatter  # noqa: E402
from agentscope_rt.message import Msg, TextBlock  # noqa: E402
from agentscope_rt.model import FunctionChatModel, reply, tool_call  # noqa: E402
from agentscope_rt.tool import Toolkit, ToolResponse  # noqa: E402

BACKENDS = ("asyncio", "trio")
ROUNDS = 7
REPLIES = 40
"""Replies per variant per round (recorded ones: 160 steps, 200 writes)."""
STEPS_PER_REPLY = 4
WRITES_PER_REPLY = 5
RESUME_REPLIES = 250
"""Replies of the resumed run: 1,000 recorded steps."""


async def get_weather(city: str) -> ToolResponse:
    """Get the weather of a city.

    Args:
        city: the city.
    """
    return ToolResponse(content=[TextBlock(text=f"Sunny in {city}.")])


def _answer(messages: list[dict[str, Any]], tools: Any) -> Any:
    if messages[-1]["role"] != "tool":
        return reply("Checking.", tool_call("get_weather", {"city": "Paris"}, id="weather"))
    return "Sunny in Paris."


def make_agent(name: str) -> ReActAgent:
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    agent = ReActAgent(
        name=name,
        sys_prompt="You are a weather assistant.",
        model=FunctionChatModel(_answer),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    agent.set_console_output_enabled(False)
    return agent


QUESTION = Msg("user", "What is the weather in Paris?", "user")


async def replies(count: int, prefix: str) -> list[float]:
    """Seconds of each of *count* replies, each by a fresh agent (named apart: a durable run
    keys steps by agent name)."""
    seconds = []
    for index in range(count):
        agent = make_agent(f"{prefix}{index}")
        start = time.perf_counter()
        answer = await agent(QUESTION)
        seconds.append(time.perf_counter() - start)
        if answer.get_text_content() != "Sunny in Paris.":
            raise RuntimeError(f"unexpected answer {answer!r}")
    return seconds


class DictRunStore:
    """A run store in a dict: what recording costs without any storage."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, str], dict[str, StepRecord]] = {}

    async def acquire(self, user_id: str, run_id: str) -> RunInfo:
        self.runs.setdefault((user_id, run_id), {})
        return RunInfo(user_id, run_id, "running", "", "")

    async def release(self, user_id: str, run_id: str, status: Any) -> None:
        pass

    async def load_steps(self, user_id: str, run_id: str) -> list[StepRecord]:
        records = self.runs.get((user_id, run_id), {}).values()
        return sorted(records, key=lambda record: record.seq)

    async def put_step(self, user_id: str, run_id: str, record: StepRecord) -> None:
        self.runs[(user_id, run_id)][record.key] = record

    async def get_run(self, user_id: str, run_id: str) -> RunInfo | None:
        return None

    async def list_runs(self, user_id: str | None = None) -> list[RunInfo]:
        return []

    async def delete_run(self, user_id: str, run_id: str) -> bool:
        return self.runs.pop((user_id, run_id), None) is not None

    async def aclose(self) -> None:
        pass


@contextlib.contextmanager
def postgres_conninfo() -> Iterator[str]:
    """A local PostgreSQL server with fsync on, as a production server runs (its conninfo)."""
    from tests._servers import PostgresServer

    server = PostgresServer(fsync=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{server.port}/postgres"
    finally:
        server.stop()


def store_factories(folder: str, conninfo: str) -> dict[str, Any]:
    in_memory = DictRunStore()  # one, as a database outlives its store objects
    factories: dict[str, Any] = {
        "dict": lambda: in_memory,
        "sqlite": lambda: SQLiteRunStore(f"{folder}/runs.db"),
        "sqlite-effects": lambda: SQLiteRunStore(f"{folder}/runs.db", fsync="effects"),
        "postgres": lambda: PostgresRunStore(conninfo),
    }
    return factories


@contextlib.asynccontextmanager
async def opened(store: RunStore) -> AsyncIterator[RunStore]:
    try:
        yield store
    finally:
        await store.aclose()


async def step_round(factories: dict[str, Any], round_no: int) -> dict[str, float]:
    """Median seconds per reply: plain, then recorded in each store, interleaved."""
    result: dict[str, float] = {}
    for name, factory in factories.items():
        gc.collect()
        result[f"plain_{name}"] = statistics.median(await replies(REPLIES, "plain"))
        async with opened(factory()) as store:
            run_id = f"steps-{name}-{round_no}-{time.monotonic_ns()}"
            gc.collect()
            async with durable.durable_run(run_id, store):
                seconds = await replies(REPLIES, "agent")
            await store.delete_run("", run_id)
        result[name] = statistics.median(seconds)
    return result


async def resume_round(factories: dict[str, Any], round_no: int) -> dict[str, float]:
    """Seconds to load, and to resume, a run of RESUME_REPLIES recorded replies; and to run
    the same program outside a durable run."""
    gc.collect()
    start = time.perf_counter()
    await replies(RESUME_REPLIES, "plain")
    result = {"program": time.perf_counter() - start}
    for name, factory in factories.items():
        async with opened(factory()) as store:
            run_id = f"resume-{name}-{round_no}-{time.monotonic_ns()}"
            async with durable.durable_run(run_id, store):
                await replies(RESUME_REPLIES, "agent")
            records = await store.load_steps("", run_id)
            if len(records) != RESUME_REPLIES * STEPS_PER_REPLY:
                raise RuntimeError(f"{len(records)} records, not 1,000")
        async with opened(factory()) as store:  # as a new process: nothing cached
            gc.collect()
            start = time.perf_counter()
            await store.load_steps("", run_id)
            result[f"load_{name}"] = time.perf_counter() - start
        async with opened(factory()) as store:
            gc.collect()
            start = time.perf_counter()
            async with durable.durable_run(run_id, store) as run:
                await replies(RESUME_REPLIES, "agent")
            result[f"resume_{name}"] = time.perf_counter() - start
            if run.replayed != RESUME_REPLIES * STEPS_PER_REPLY or run.recorded:
                raise RuntimeError(f"{run!r}: not a resume")
            await store.delete_run("", run_id)
    return result


def measure() -> dict[str, Any]:
    pin_to_one_cpu()
    load_start = os.getloadavg()
    rows: dict[str, list[dict[str, float]]] = {backend: [] for backend in BACKENDS}
    with tempfile.TemporaryDirectory() as folder, postgres_conninfo() as conninfo:
        factories = store_factories(folder, conninfo)
        for round_no in range(ROUNDS):
            for backend in BACKENDS:
                row = anyio.run(step_round, factories, round_no, backend=backend)
                row.update(anyio.run(resume_round, factories, round_no, backend=backend))
                rows[backend].append(row)
    return {
        "rows": rows,
        "stores": list(factories),
        "load": (load_start, os.getloadavg()),
        "at": time.strftime("%H:%M UTC", time.gmtime()),
    }


def _median(rows: list[dict[str, float]], field: str) -> float:
    return statistics.median(row[field] for row in rows)


LABELS = {
    "dict": "no storage (a dict)",
    "sqlite": "SQLite, every record fsync'd",
    "sqlite-effects": 'SQLite, `fsync="effects"`',
    "postgres": "PostgreSQL",
}


def render(result: dict[str, Any]) -> str:
    rows, stores = result["rows"], result["stores"]
    (start, *_), (end, *_) = result["load"]
    lines = [
        "## Durable runs: recorded steps and resume (`bench/bench_durable.py`)",
        "",
        f"A ReAct reply with one tool call (zero-latency model, fresh agent per reply), outside "
        f"and inside a durable run; inside, it records {STEPS_PER_REPLY} steps in "
        f"{WRITES_PER_REPLY} writes (the tool call is marked started first). Median over "
        f"{ROUNDS} rounds of the median of {REPLIES} replies, plain and recorded interleaved, "
        "one core; milliseconds per reply, and the difference per recorded step.",
        "",
        "| store | backend | plain reply | recorded reply | ratio | per step | per write |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for store in stores:
        for backend in BACKENDS:
            plain = _median(rows[backend], f"plain_{store}")
            recorded = _median(rows[backend], store)
            extra = recorded - plain
            lines.append(
                f"| {LABELS[store]} | {backend} | {plain * 1e3:.2f} | {recorded * 1e3:.2f} | "
                f"{recorded / plain:.1f}x | {extra / STEPS_PER_REPLY * 1e3:.2f} | "
                f"{extra / WRITES_PER_REPLY * 1e3:.2f} |"
            )
    lines += [
        "",
        f"Resuming a run of {RESUME_REPLIES * STEPS_PER_REPLY:,} recorded steps "
        f"({RESUME_REPLIES} replies) to its end: every step replayed, no model or tool called; "
        "`load_steps` alone on a fresh store object, and the whole resume (open, load, replay, "
        f"close), against the same program run live outside a durable run; median of {ROUNDS}; "
        "milliseconds.",
        "",
        "| store | backend | load_steps | whole resume | per step | the program unrecorded |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for store in stores:
        for backend in BACKENDS:
            load = _median(rows[backend], f"load_{store}")
            resume = _median(rows[backend], f"resume_{store}")
            per = resume / (RESUME_REPLIES * STEPS_PER_REPLY)
            program = _median(rows[backend], "program")
            lines.append(
                f"| {LABELS[store]} | {backend} | {load * 1e3:.1f} | {resume * 1e3:.1f} | "
                f"{per * 1e6:.0f} us | {program * 1e3:.1f} |"
            )
    lines += [
        "",
        f"Run {result['at']}, load average {start:.1f} at the start and {end:.1f} at the end.",
    ]
    return "\n".join(lines) + "\n"


def main() -> str:
    """Measure every row on both backends; return the markdown section."""
    return render(measure())


if __name__ == "__main__":
    print(main())
