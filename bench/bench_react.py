"""Framework overhead of one ReAct reply, against AgentScope and a hand-written floor.

Workload (the same everywhere): the user asks; a zero-latency model answers with one tool call;
the tool runs; the model answers in text. That is 2 model calls and 1 tool call per reply, with
the OpenAI chat formatter, console output off and the memory cleared between replies. Each
figure is the median of 11 runs of 1,000 replies after a warm-up (300 for AgentScope 1.0.21,
which is slower), the runs of all variants interleaved so that a change in machine load moves
them alike, all on one CPU core (the cores of a shared machine do not run at the same speed).

* agentscope-rt's ``ReActAgent`` on asyncio and on trio (in this process);
* the floor: the same conversation written by hand with plain dicts and no framework;
* AgentScope 1.0.4 (the fastest 1.x measured) and the newest 1.0.x, each in its own venv
  (``_agentscope_env.py``), running ``_react_agentscope.py``.

Run ``python bench/bench_react.py`` (prints the markdown section) or ``nox -s bench``.
Target: at least 10x cheaper per reply than AgentScope 1.0.4 on both backends.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import anyio

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from _agentscope_env import (  # noqa: E402
    FAST_VERSION,
    NEWEST_VERSION,
    agentscope_python,
    pin_to_one_cpu,
)

from agentscope_rt import __version__ as RT_VERSION  # noqa: E402
from agentscope_rt.agent import ReActAgent  # noqa: E402
from agentscope_rt.formatter import FormatterBase, OpenAIChatFormatter  # noqa: E402
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock  # noqa: E402
from agentscope_rt.model import ChatModelBase, ChatResponse  # noqa: E402
from agentscope_rt.tool import Toolkit, ToolResponse, ToolResponseStream  # noqa: E402

REPLIES = 1_000
RUNS = 11
# AgentScope 1.0.21 costs ~3 ms a reply: fewer replies per batch keep a round short.
AGENTSCOPE_REPLIES = {FAST_VERSION: REPLIES, NEWEST_VERSION: 300}
WARMUP = 200
TARGET_RATIO = 10.0
QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."


# -- agentscope-rt -------------------------------------------------------------------------


class ZeroLatencyModel(ChatModelBase):
    """Calls the tool when the last message is the user's; answers after the tool result."""

    def __init__(self) -> None:
        super().__init__("zero-latency", stream=False)

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | None = None,
        structured_model: Any = None,
        **kwargs: Any,
    ) -> ChatResponse:
        if messages[-1]["role"] == "tool":
            return ChatResponse(content=[TextBlock(text=ANSWER)])
        return ChatResponse(
            content=[ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"})]
        )


async def get_weather(city: str) -> ToolResponse:
    """Get the weather of a city.

    Args:
        city: the city.
    """
    return ToolResponse(content=[TextBlock(text=f"Sunny in {city}.")])


def make_agent() -> ReActAgent:
    toolkit = Toolkit()
    toolkit.register_tool_function(get_weather)
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are a helpful assistant.",
        model=ZeroLatencyModel(),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    agent.set_console_output_enabled(False)
    return agent


def rt_workload() -> Callable[[], Awaitable[None]]:
    agent = make_agent()

    async def one() -> None:
        await agent.memory.clear()
        reply = await agent(Msg("user", QUESTION, "user"))
        if reply.get_text_content() != ANSWER:
            raise RuntimeError(f"unexpected reply {reply!r}")

    return one


class _PassThroughToolkit(Toolkit):
    """Diagnostic: calls the tool function directly (no validation, timeout or interrupt
    handling), to show how much of a reply the toolkit costs. It overrides the public
    ``call_tool_function``, the one route of every call the agent makes."""

    def call_tool_function(self, tool_call: ToolUseBlock) -> ToolResponseStream:
        return ToolResponseStream(_pass_through(tool_call))


async def _pass_through(tool_call: ToolUseBlock) -> AsyncGenerator[ToolResponse, None]:
    yield await get_weather(**tool_call.input)


class _PassThroughFormatter(FormatterBase):
    """Diagnostic: only the roles, to show how much of a reply the formatter costs."""

    async def format(
        self, msgs: list[Msg], tools: list[dict[str, Any]] | None = None
    ) -> list[dict[str, Any]]:
        return [
            {"role": "tool" if msg.role == "system" and msg.content.__class__ is list else msg.role}
            for msg in msgs
        ]


def loop_only_workload() -> Callable[[], Awaitable[None]]:
    """The agent loop with the toolkit and formatter replaced by pass-through stubs."""
    agent = make_agent()
    toolkit = _PassThroughToolkit()
    toolkit.register_tool_function(get_weather)
    agent.toolkit = toolkit
    agent.formatter = _PassThroughFormatter()

    async def one() -> None:
        await agent.memory.clear()
        reply = await agent(Msg("user", QUESTION, "user"))
        if reply.get_text_content() != ANSWER:
            raise RuntimeError(f"unexpected reply {reply!r}")

    return one


def reply_only_workload() -> Callable[[], Awaitable[None]]:
    """Diagnostic: the same agent with ``reply()`` called directly, bypassing ``__call__`` (its
    lock, the reply's cancel scope and the event-loop token that make interrupts work)."""
    agent = make_agent()

    async def one() -> None:
        await agent.memory.clear()
        reply = await agent.reply(Msg("user", QUESTION, "user"))
        if reply.get_text_content() != ANSWER:
            raise RuntimeError(f"unexpected reply {reply!r}")

    return one


# -- the floor -----------------------------------------------------------------------------


def floor_workload() -> Callable[[], Awaitable[None]]:
    """The same conversation by hand: dict messages, a model function, a tool function."""

    async def model(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if messages[-1]["role"] == "tool":
            return {"role": "assistant", "content": ANSWER}
        return {
            "role": "assistant",
            "tool_calls": [{"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}],
        }

    async def tool(city: str) -> str:
        return f"Sunny in {city}."

    tools = {"get_weather": tool}
    history: list[dict[str, Any]] = []

    async def one() -> None:
        history.clear()
        history.append({"role": "user", "content": QUESTION})
        while True:
            message = await model([{"role": "system", "content": "You are helpful."}, *history])
            history.append(message)
            calls = message.get("tool_calls")
            if not calls:
                break
            for tool_call in calls:
                output = await tools[tool_call["name"]](**tool_call["args"])
                history.append({"role": "tool", "tool_call_id": tool_call["id"], "content": output})
        if history[-1]["content"] != ANSWER:
            raise RuntimeError("unexpected answer")

    return one


# -- measuring -----------------------------------------------------------------------------


async def _measure(make: Callable[[], Callable[[], Awaitable[None]]]) -> float:
    one = make()
    for _ in range(WARMUP):
        await one()
    start = time.perf_counter()
    for _ in range(REPLIES):
        await one()
    return (time.perf_counter() - start) / REPLIES * 1e6


def measure_in_process(make: Callable[[], Callable[[], Awaitable[None]]], backend: str) -> float:
    """Per-reply microseconds of one run of REPLIES replies on a fresh agent (after WARMUP
    replies), on *backend*."""
    return anyio.run(_measure, make, backend=backend)


class AgentScopeWorker:
    """AgentScope's side of the workload: a subprocess in AgentScope's own venv that warms an
    agent up once, then runs a batch of replies each time it is asked (see
    ``_react_agentscope.py``), so that its batches interleave with ours."""

    def __init__(self, version: str) -> None:
        """Start the worker for AgentScope *version*.

        :raises RuntimeError: when the venv cannot be prepared or the worker does not start.
        """
        self.note = ""
        try:
            python = agentscope_python(version)
        except RuntimeError as exc:
            fallback = pathlib.Path("/work/asvenv/bin/python")
            if version != NEWEST_VERSION or not fallback.exists():
                raise RuntimeError(f"could not prepare a venv: {str(exc).splitlines()[0]}") from exc
            python, self.note = fallback, "venv from /work/asvenv"
        self._process = subprocess.Popen(
            [str(python), str(HERE / "_react_agentscope.py"), str(WARMUP)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "AGENTSCOPE_DISABLE_CONSOLE_OUTPUT": "true"},
        )
        self.version = str(self._read()["version"])

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._process.wait()
            assert self._process.stderr is not None
            error = self._process.stderr.read().strip().splitlines()[-1:]
            raise RuntimeError(f"the AgentScope worker failed: {error}")
        data: dict[str, Any] = json.loads(line)
        return data

    def batch(self, replies: int) -> float:
        """Run *replies* replies; microseconds per reply."""
        assert self._process.stdin is not None
        self._process.stdin.write(f"{replies}\n")
        self._process.stdin.flush()
        return float(self._read()["us_per_reply"])

    def close(self) -> None:
        """Stop the worker."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=60)


# -- where the time goes ----------------------------------------------------------------------


class _PrebuiltModel(ZeroLatencyModel):
    """Diagnostic: the same two answers, built once (no ChatResponse per call)."""

    def __init__(self) -> None:
        super().__init__()
        self._call = ChatResponse(
            content=[ToolUseBlock(id="call_1", name="get_weather", input={"city": "Paris"})]
        )
        self._answer = ChatResponse(content=[TextBlock(text=ANSWER)])

    async def __call__(
        self, messages: list[dict[str, Any]], *args: Any, **kwargs: Any
    ) -> ChatResponse:
        return self._answer if messages[-1]["role"] == "tool" else self._call


class _NoScope:
    """Diagnostic: what ``await agent(...)`` enters instead of the reply's cancel scope."""

    cancelled_caught = False

    def __enter__(self) -> _NoScope:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


def _without_scope(agent: ReActAgent) -> Callable[[], None]:
    import agentscope_rt.agent._agent_base as agent_base

    real = agent_base.reply_scope

    def no_scope() -> tuple[Any, object | None]:
        return _NoScope(), real()[1]

    agent_base.reply_scope = no_scope

    def restore() -> None:
        agent_base.reply_scope = real

    return restore


def _swap(agent: ReActAgent, attribute: str, stub: Any) -> Callable[[], None]:
    real = getattr(agent, attribute)
    setattr(agent, attribute, stub)
    return lambda: setattr(agent, attribute, real)


def _stub_toolkit() -> Toolkit:
    toolkit = _PassThroughToolkit()
    toolkit.register_tool_function(get_weather)
    return toolkit


# Each component of a reply and how to take it out: what a reply saves without it is its cost.
_COMPONENTS: dict[str, Callable[[ReActAgent], Callable[[], None]]] = {
    "the two formatter calls (OpenAI chat formatter)": lambda agent: _swap(
        agent, "formatter", _PassThroughFormatter()
    ),
    "the toolkit (argument validation, the call)": lambda agent: _swap(
        agent, "toolkit", _stub_toolkit()
    ),
    "the model's two ChatResponse objects (workload, not framework)": lambda agent: _swap(
        agent, "model", _PrebuiltModel()
    ),
    "the reply's own cancel scope (what interrupt() cancels)": _without_scope,
}
BREAKDOWN_ROUNDS = 15
BREAKDOWN_REPLIES = 200


async def _breakdown() -> dict[str, float]:
    agent = make_agent()

    async def one() -> None:
        await agent.memory.clear()
        reply = await agent(Msg("user", QUESTION, "user"))
        if reply.get_text_content() != ANSWER:  # a stub must not change the conversation
            raise RuntimeError(f"unexpected reply {reply!r}")

    names = ["all of it", *_COMPONENTS]
    times: dict[str, list[float]] = collections.defaultdict(list)
    for round_ in range(BREAKDOWN_ROUNDS + 1):
        random.shuffle(names)
        for name in names:
            restore = _COMPONENTS[name](agent) if name in _COMPONENTS else (lambda: None)
            try:
                start = time.perf_counter()
                for _ in range(BREAKDOWN_REPLIES):
                    await one()
                elapsed = (time.perf_counter() - start) / BREAKDOWN_REPLIES * 1e6
            finally:
                restore()
            if round_:  # the first round warms every variant up
                times[name].append(elapsed)
    whole = times["all of it"]
    costs = {"all of it": statistics.median(whole)}
    for name in _COMPONENTS:
        # Paired per round: each round's saving, relative to that round's whole reply.
        shares = [1 - without / full for without, full in zip(times[name], whole, strict=True)]
        costs[name] = statistics.median(shares) * costs["all of it"]
    return costs


def cost_breakdown() -> str:
    """Where a reply's time goes, on both backends: each component is taken out in turn (a
    stub in its place) and the saving is measured against the whole reply in the same round."""
    results = {backend: anyio.run(_breakdown, backend=backend) for backend in ("asyncio", "trio")}
    lines = [
        "Where the time of a reply goes, measured in place: each component is replaced by a "
        f"stub in turn and the saving taken against the whole reply in the same round (median "
        f"of {BREAKDOWN_ROUNDS} rounds of {BREAKDOWN_REPLIES} replies; a profiler's figures "
        "would be skewed by its own per-call cost).",
        "",
        "| component | asyncio | trio |",
        "|---|---:|---:|",
    ]
    rest = dict.fromkeys(results, 0.0)
    for name in ["all of it", *_COMPONENTS]:
        cells = []
        for backend, costs in results.items():
            whole = costs["all of it"]
            cost = costs[name]
            if name != "all of it":
                rest[backend] += cost
            cells.append(f"{cost:.1f} us ({100 * cost / whole:.0f}%)")
        lines.append(f"| {name} | {' | '.join(cells)} |")
    cells = []
    for backend, costs in results.items():
        left = costs["all of it"] - rest[backend]
        cells.append(f"{left:.1f} us ({100 * left / costs['all of it']:.0f}%)")
    lines.append(
        "| the rest: the loop, memory, 7 messages (ids, timestamps, copies), the lock | "
        + " | ".join(cells)
        + " |"
    )
    return "\n".join(lines)


def machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}, "
        f"Python {platform.python_version()}, load average {load}"
    )


_IN_PROCESS: tuple[tuple[str, Callable[[], Callable[[], Awaitable[None]]]], ...] = (
    (f"agentscope-rt {RT_VERSION}", rt_workload),
    ("diagnostic: the same loop with stub toolkit + formatter", loop_only_workload),
    ("diagnostic: reply() called directly (no lock, cancel scope or token)", reply_only_workload),
    ("hand-written floor", floor_workload),
)


def main() -> str:
    """Run every variant and return the markdown section.

    The variants are interleaved: each of the RUNS rounds measures every one of them once (a
    fresh agent, warm-up, then REPLIES replies), so a change in machine load between rounds
    moves all of them alike and the ratios stay fair. Each figure is the median of its rounds.
    """
    samples: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
    notes: list[str] = []
    cpu = pin_to_one_cpu()
    if cpu is not None:
        notes.append(f"Every variant, AgentScope's workers included, ran pinned to CPU {cpu}.")
    workers: dict[str, AgentScopeWorker] = {}
    try:
        for version in (FAST_VERSION, NEWEST_VERSION):
            try:
                workers[version] = worker = AgentScopeWorker(version)
            except RuntimeError as exc:
                notes.append(f"AgentScope {version}: {exc}")
            else:
                if worker.note:
                    notes.append(f"AgentScope {version}: {worker.note}")
        for _ in range(RUNS):
            for name, make in _IN_PROCESS:
                for backend in ("asyncio", "trio"):
                    samples[(name, backend)].append(measure_in_process(make, backend))
            for version, worker in workers.items():
                samples[(f"AgentScope {worker.version}", "asyncio")].append(
                    worker.batch(AGENTSCOPE_REPLIES[version])
                )
    finally:
        for worker in workers.values():
            worker.close()
    rows = [(name, backend, statistics.median(runs)) for (name, backend), runs in samples.items()]
    agentscope = {
        version: statistics.median(samples[(f"AgentScope {worker.version}", "asyncio")])
        for version, worker in workers.items()
    }

    floor = {backend: us for name, backend, us in rows if name == "hand-written floor"}
    fast = agentscope.get(FAST_VERSION)
    lines = [
        "## ReAct agent: framework overhead per reply",
        "",
        "One reply = the user asks, a zero-latency model calls one tool, the tool runs, the model "
        "answers (2 model calls + 1 tool call), OpenAI chat formatter, console off, memory "
        f"cleared between replies. Median of {RUNS} runs of {REPLIES:,} replies after "
        f"{WARMUP} warm-up replies ({AGENTSCOPE_REPLIES[NEWEST_VERSION]} replies per run for "
        f"AgentScope {NEWEST_VERSION}); the runs are interleaved (each round measures every row "
        "once), so a change in machine load affects every row alike.",
        "",
        f"Machine: {machine()}.",
        "",
        "| implementation | event loop | us / reply "
        f"| AgentScope {FAST_VERSION} / this | this / floor |",
        "|---|---|---:|---:|---:|",
    ]
    for name, backend, us in rows:
        ratio = f"{fast / us:.1f}x" if fast else "n/a"
        vs_floor = f"{us / floor.get(backend, floor['asyncio']):.1f}x"
        lines.append(f"| {name} | {backend} | {us:,.1f} | {ratio} | {vs_floor} |")
    lines += [
        "",
        "The diagnostic rows run the same agent with the toolkit's call and the "
        "formatter replaced by pass-through stubs (no argument validation, timeouts or interrupt "
        "handling; roles only): not a configuration to use, only a measure of how the cost of a "
        "reply splits between the loop and those two components. The `reply()` rows skip "
        "what `await agent(...)` adds around every reply by design (the fair lock, the "
        "reply's own cancel scope that `interrupt()` cancels, the event-loop token for "
        "interrupts from other threads): the difference is the price of that scope on each "
        "event loop.",
        "",
    ]
    ours = {backend: us for name, backend, us in rows if name.startswith("agentscope-rt")}
    if fast:
        missed = [b for b, us in ours.items() if fast / us < TARGET_RATIO]
        ratios = ", ".join(f"{b}: {fast / us:.1f}x" for b, us in ours.items())
        if missed:
            lines.append(
                f"**Target missed** on {', '.join(missed)}: at least {TARGET_RATIO:.0f}x cheaper "
                f"than AgentScope {FAST_VERSION} was the goal ({ratios})."
            )
        else:
            lines.append(
                f"Target met: at least {TARGET_RATIO:.0f}x cheaper than AgentScope {FAST_VERSION} "
                f"on both backends ({ratios})."
            )
        fast_key = next(
            (f"AgentScope {w.version}" for v, w in workers.items() if v == FAST_VERSION), ""
        )
        lines += ["", round_spread(samples, fast_key)]
    else:
        lines.append(f"AgentScope {FAST_VERSION} could not be measured; no ratio.")
    lines += ["", cost_breakdown(), ""]
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def round_spread(samples: dict[tuple[str, str], list[float]], agentscope_key: str) -> str:
    """How the ratio to AgentScope varies from round to round: one run is not a verdict on a
    shared machine, and the rounds pair each of our figures with AgentScope's of the same round.
    """
    theirs = samples[(agentscope_key, "asyncio")]
    parts = []
    for (name, backend), runs in samples.items():
        if not name.startswith("agentscope-rt"):
            continue
        per_round = sorted(t / o for t, o in zip(theirs, runs, strict=True))
        reached = sum(r >= TARGET_RATIO for r in per_round)
        parts.append(
            f"{backend} {per_round[0]:.1f}x to {per_round[-1]:.1f}x "
            f"({reached} of {len(per_round)} rounds at {TARGET_RATIO:.0f}x or more)"
        )
    return (
        "Round by round (each round measures every row once, so its figures pair up), "
        f"AgentScope {FAST_VERSION} / this: " + "; ".join(parts) + "."
    )


if __name__ == "__main__":
    print(main())
