"""What tracing costs a ReAct reply: off, on, the OpenTelemetry SDK's own share, and AgentScope.

Workload: ``bench_react``'s (2 model calls + 1 tool call per reply, zero-latency model, the
OpenAI chat formatter, console off, memory cleared between replies). A traced reply makes six
spans on both sides: the reply, two formats, two chats, one tool call. Spans go to an SDK
tracer provider whose one ``SimpleSpanProcessor`` hands them to an exporter that drops them,
so what is measured is making the spans, not sending them (the OTLP exporter sends from the
batch processor's thread). Variants, interleaved round by round on one CPU core, median of
``RUNS`` runs of ``REPLIES`` replies:

* agentscope-rt, tracing off (never enabled in the measuring process's run, or disabled:
  the traced routes are put back exactly);
* agentscope-rt, tracing on (content capture off: metadata attributes only);
* the bare SDK: the same six spans with the same names, kinds, attributes and parent
  chain, made with ``tracer.start_as_current_span`` and nothing else (recorded from a traced
  reply, replayed per reply) - the OpenTelemetry SDK's own cost of these spans;
* AgentScope 1.0.21, tracing off and on (``_tracing_agentscope.py``, in its venv; its
  benchmark model gets ``@trace_llm`` as its provider classes have it).

The same three agentscope-rt variants are also counted in instructions per reply under
cachegrind (when valgrind is installed), which timing noise on a shared machine cannot move.

Targets: off within noise of the code before tracing existed (checked with cachegrind:
``bench/instructions.py --against <rev>``); on, what agentscope-rt adds beyond the SDK's cost
at most half that cost; a traced reply at least 5x cheaper than AgentScope 1.0.21's.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE))

from _agentscope_env import NEWEST_VERSION, agentscope_python, pin_to_one_cpu  # noqa: E402
from bench_react import make_agent, rt_workload  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import (  # noqa: E402
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import Status, StatusCode  # noqa: E402

from agentscope_rt.message import Msg  # noqa: E402
from agentscope_rt.tracing import disable_tracing, enable_tracing  # noqa: E402

REPLIES = 500
RUNS = 9
WARMUP = 200
AGENTSCOPE_REPLIES = 150
TARGET_ADDED_SHARE = 0.5
TARGET_RATIO = 5.0


class DropExporter(SpanExporter):
    """Receives every span and keeps none."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def _provider() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(DropExporter()))
    return provider


PROVIDER = _provider()


# -- the bare SDK: a traced reply's spans, replayed ----------------------------------------------


def record_reply_spans() -> list[ReadableSpan]:
    """The spans of one traced reply, in the order they started."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing(tracer_provider=provider)
    try:
        agent = make_agent()

        async def once() -> None:
            await agent(Msg("user", "What is the weather in Paris?", "user"))

        anyio.run(once)
    finally:
        disable_tracing()
    spans = sorted(exporter.get_finished_spans(), key=lambda s: s.start_time or 0)
    if len(spans) != 6:
        raise RuntimeError(f"a traced reply made {len(spans)} spans: {[s.name for s in spans]}")
    return spans


# The attributes known only when a call has returned: set on the span at its end, as the
# instrumentation must (and as hand-written SDK code would).
END_KEYS = frozenset(
    {
        "gen_ai.response.id",
        "gen_ai.response.model",
        "gen_ai.response.finish_reasons",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "agentscope.format.count",
    }
)


def sdk_workload(spans: list[ReadableSpan]) -> Callable[[], Callable[[], Awaitable[None]]]:
    """One reply's spans made with the SDK alone, as hand-written instrumentation would make
    them: each span current around its call (the reply's around its five children), its
    request attributes given at the start, its response attributes and an OK status set at the
    end."""
    tracer = PROVIDER.get_tracer("bench")
    ok = Status(StatusCode.OK)

    def split(span: ReadableSpan) -> tuple[str, Any, dict[str, Any], dict[str, Any]]:
        attributes = dict(span.attributes or {})
        start = {k: v for k, v in attributes.items() if k not in END_KEYS}
        end = {k: v for k, v in attributes.items() if k in END_KEYS}
        return span.name, span.kind, start, end

    root, *children = [split(span) for span in spans]

    def make() -> Callable[[], Awaitable[None]]:
        async def one() -> None:
            with tracer.start_as_current_span(root[0], kind=root[1], attributes=root[2]) as top:
                for name, kind, start, end in children:
                    with tracer.start_as_current_span(name, kind=kind, attributes=start) as span:
                        if end:
                            span.set_attributes(end)
                        span.set_status(ok)
                top.set_status(ok)

        return one

    return make


# -- measuring ---------------------------------------------------------------------------------


async def _measure(make: Callable[[], Callable[[], Awaitable[None]]], traced: bool) -> float:
    if traced:
        enable_tracing(tracer_provider=PROVIDER)
    try:
        one = make()
        for _ in range(WARMUP):
            await one()
        start = time.perf_counter()
        for _ in range(REPLIES):
            await one()
        return (time.perf_counter() - start) / REPLIES * 1e6
    finally:
        if traced:
            disable_tracing()


class AgentScopeWorker:
    """AgentScope 1.0.21's side, tracing *mode* ("on" or "off"), in its own venv."""

    def __init__(self, mode: str) -> None:
        python = agentscope_python(NEWEST_VERSION)
        self._process = subprocess.Popen(
            [str(python), str(HERE / "_tracing_agentscope.py"), str(WARMUP), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=HERE,
            env={**os.environ, "AGENTSCOPE_DISABLE_CONSOLE_OUTPUT": "true"},
        )
        self.version = str(self._read()["version"])

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._process.wait()
            assert self._process.stderr is not None
            raise RuntimeError(f"the AgentScope worker failed: {self._process.stderr.read()}")
        data: dict[str, Any] = json.loads(line)
        return data

    def batch(self, replies: int) -> float:
        assert self._process.stdin is not None
        self._process.stdin.write(f"{replies}\n")
        self._process.stdin.flush()
        return float(self._read()["us_per_reply"])

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait(timeout=60)


def measure() -> dict[str, float]:
    """Median microseconds per reply of every variant."""
    spans = record_reply_spans()
    rt_variants: dict[str, tuple[Callable[[], Callable[[], Awaitable[None]]], bool]] = {
        "off": (rt_workload, False),
        "on": (rt_workload, True),
        "sdk": (sdk_workload(spans), False),
    }
    times: dict[str, list[float]] = {}
    workers = {mode: AgentScopeWorker(mode) for mode in ("off", "on")}
    try:
        for _ in range(RUNS):
            for backend in ("asyncio", "trio"):
                for name, (make, traced) in rt_variants.items():
                    us = anyio.run(_measure, make, traced, backend=backend)
                    times.setdefault(f"{name} {backend}", []).append(us)
            for mode, worker in workers.items():
                times.setdefault(f"agentscope {mode}", []).append(worker.batch(AGENTSCOPE_REPLIES))
    finally:
        for worker in workers.values():
            worker.close()
    medians = {key: statistics.median(values) for key, values in times.items()}
    for backend in ("asyncio", "trio"):
        # Paired within each round (the three variants ran back to back), so that a change
        # of machine load between rounds moves the three alike.
        added = [
            on - off - sdk
            for on, off, sdk in zip(
                times[f"on {backend}"],
                times[f"off {backend}"],
                times[f"sdk {backend}"],
                strict=True,
            )
        ]
        medians[f"added {backend}"] = statistics.median(added)
    return medians


# -- instructions (cachegrind): the same variants, without timing noise ---------------------------

IR_REPLIES = 100


def _ir_child(variant: str, replies: int, backend: str) -> None:
    """Run *replies* replies of *variant* (under cachegrind), after a warm-up."""
    import agentscope_rt.message._msg as msg_module

    # A clock that advances a fixed step per reading, as instructions.py does.
    msg_module._time = itertools.count(time.time(), 0.00001).__next__  # type: ignore[attr-defined]
    spans = record_reply_spans()
    make = sdk_workload(spans) if variant == "sdk" else rt_workload
    if variant == "on":
        enable_tracing(tracer_provider=PROVIDER)

    async def run() -> None:
        one = make()
        for _ in range(20):
            await one()
        gc.collect()
        for _ in range(replies):
            await one()

    anyio.run(run, backend=backend)


def _ir(variant: str, backend: str, replies: int, tmp: pathlib.Path) -> int:
    out = tmp / f"{variant}-{backend}-{replies}.out"
    subprocess.run(
        [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            f"--cachegrind-out-file={out}",
            sys.executable,
            str(pathlib.Path(__file__).resolve()),
            "--child",
            variant,
            str(replies),
            backend,
        ],
        env=dict(os.environ, PYTHONHASHSEED="0"),
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for line in out.read_text().splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError(f"no summary in {out}")


def instructions() -> dict[str, float] | None:
    """Instructions per reply of off, on and sdk on both backends (startup taken out: two runs
    of 10 and 10 + IR_REPLIES replies); ``None`` without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    jobs = [
        (v, b, n)
        for v in ("off", "on", "sdk")
        for b in ("asyncio", "trio")
        for n in (10, 10 + IR_REPLIES)
    ]
    with tempfile.TemporaryDirectory() as tmpdir, ThreadPoolExecutor(2) as pool:
        counts = dict(
            zip(jobs, pool.map(lambda job: _ir(*job, pathlib.Path(tmpdir)), jobs), strict=True)
        )
    return {
        f"{v} {b}": (counts[(v, b, 10 + IR_REPLIES)] - counts[(v, b, 10)]) / IR_REPLIES
        for v in ("off", "on", "sdk")
        for b in ("asyncio", "trio")
    }


def main() -> str:
    """Measure and return the markdown section for RESULTS.md."""
    cpu = pin_to_one_cpu()
    load = os.getloadavg()[0]
    m = measure()
    lines = [
        "## Tracing",
        "",
        "ReAct reply (2 model calls + 1 tool call, zero-latency model), six spans per traced "
        "reply handed to an exporter that drops them; median of "
        f"{RUNS} interleaved runs of {REPLIES} replies (AgentScope: {AGENTSCOPE_REPLIES}), "
        f"on CPU {cpu}, machine load average {load:.1f} at the start (timings scale with "
        "it; the ratios are what to compare). Microseconds per reply.",
        "",
        "| | asyncio | trio |",
        "|---|---:|---:|",
    ]
    for label, key in (
        ("agentscope-rt, tracing off", "off"),
        ("agentscope-rt, tracing on", "on"),
        ("the bare OpenTelemetry SDK, same six spans", "sdk"),
    ):
        lines.append(f"| {label} | {m[f'{key} asyncio']:.1f} | {m[f'{key} trio']:.1f} |")
    added = {b: m[f"added {b}"] for b in ("asyncio", "trio")}
    lines.append(
        "| added by agentscope-rt beyond the SDK (on - off - sdk, paired per round) | "
        f"{added['asyncio']:.1f} | {added['trio']:.1f} |"
    )
    lines.append(
        "| ... as a share of the SDK's cost (target <= 50%) | "
        f"{100 * added['asyncio'] / m['sdk asyncio']:.0f}% | "
        f"{100 * added['trio'] / m['sdk trio']:.0f}% |"
    )
    ir = instructions()
    if ir is not None:
        added_ir = {b: ir[f"on {b}"] - ir[f"off {b}"] - ir[f"sdk {b}"] for b in ("asyncio", "trio")}
        lines += [
            "",
            "The same variants counted in instructions per reply (cachegrind, "
            f"{IR_REPLIES} replies, garbage collector on): what timing noise cannot move.",
            "",
            "| instructions per reply | asyncio | trio |",
            "|---|---:|---:|",
        ]
        for label, key in (
            ("tracing off", "off"),
            ("tracing on", "on"),
            ("bare SDK, same spans", "sdk"),
        ):
            lines.append(f"| {label} | {ir[f'{key} asyncio']:,.0f} | {ir[f'{key} trio']:,.0f} |")
        lines.append(
            "| added beyond the SDK (share of its cost) | "
            + " | ".join(
                f"{added_ir[b]:,.0f} ({100 * added_ir[b] / ir[f'sdk {b}']:.0f}%)"
                for b in ("asyncio", "trio")
            )
            + " |"
        )
    lines += [
        "",
        f"AgentScope {NEWEST_VERSION} (asyncio): {m['agentscope off']:.0f} us off, "
        f"{m['agentscope on']:.0f} us traced (+{m['agentscope on'] - m['agentscope off']:.0f} "
        "us for its six spans).",
        "",
        "| traced reply | asyncio | trio |",
        "|---|---:|---:|",
        f"| AgentScope {NEWEST_VERSION} / agentscope-rt (target >= {TARGET_RATIO:.0f}x) | "
        f"{m['agentscope on'] / m['on asyncio']:.1f}x | {m['agentscope on'] / m['on trio']:.1f}x |",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        _ir_child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        print(main())
