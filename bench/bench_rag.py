"""Knowledge-base ingestion and retrieval against AgentScope 1.0.21.

Workload (the same on every side; ``_rag_agentscope.py`` is AgentScope's half):

* **corpus** — ``CHUNKS`` = 10,000 text chunks (``chunk_texts``), built as each framework's
  ``Document``s before timing;
* **embedding** — the same deterministic, practically free function on both sides: a lookup
  in a table (``embedding_table``) of every corpus and query text's ``hash_vector`` (SHAKE-256
  of the text spread over ``DIMS`` floats; 64, then 384 dimensions, the local embedding
  model's size), built before timing, wrapped in each framework's
  ``EmbeddingModelBase`` and yielding to the event loop every ``EMBED_SLICE`` texts as any
  real (I/O-bound) model would, so only the framework's own cost counts;
* **store** — each side's default for a local knowledge base under ``SimpleKnowledge``:
  agentscope-rt's ``LocalVectorStore(":memory:")`` (what ``SimpleKnowledge`` builds when given
  no store: exact search at this size), AgentScope's ``QdrantStore(":memory:")`` (Qdrant's
  embedded engine);
* **ingestion** — one ``add_documents`` call with all chunks (chunks/s), while a task of the
  same event loop wakes every 1 ms and records how late each wake-up is (p99, max; "idle" is
  the same ticker for 0.3 s before ingestion, the machine's own noise);
* **retrieval** — ``QUERIES`` = 1,000 ``retrieve(query, limit=5)`` calls one after another
  (median and p99 latency), the same ticker running.

Each side runs in its own process (``OPENBLAS_NUM_THREADS=1`` for all: Qdrant's search is a
NumPy product, and a BLAS thread pool on a small shared machine makes it several times slower
and noisier), pinned to the same core, in ``ROUNDS`` interleaved rounds; the figures are the
medians over rounds. Targets: retrieval median at least 5x and ingestion at least 2x
AgentScope's, on both backends, and a ticker p99 lateness under 5 ms during ingestion and
during retrieval. ``bench_rag_large.py`` measures a million-chunk collection.

Run ``python bench/run.py rag`` (writes ``bench/RESULTS.md``) or ``python bench/bench_rag.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = pathlib.Path(__file__).parent

CHUNKS = 10_000
QUERIES = 1_000
DIMS = int(os.environ.get("BENCH_RAG_DIMS", "64"))
DIM_SETS = (64, 384)
EMBED_SLICE = 256
TICK_S = 0.001
IDLE_S = 0.3
ROUNDS = 3
BACKENDS = ("asyncio", "trio")
LATENESS_TARGET_MS = 5.0

_WORDS = [
    "agent",
    "model",
    "tool",
    "memory",
    "store",
    "vector",
    "query",
    "chunk",
    "embedding",
    "retrieval",
    "document",
    "reader",
    "session",
    "plan",
    "pipeline",
    "message",
    "formatter",
    "token",
    "cache",
    "stream",
]


def chunk_texts(n: int) -> list[str]:
    """The corpus: *n* distinct sentences of 12-20 words."""
    texts = []
    for i in range(n):
        words = [_WORDS[(i * 7 + k * 3) % len(_WORDS)] for k in range(12 + i % 9)]
        texts.append(f"Chunk {i} of document {i // 100}: " + " ".join(words) + ".")
    return texts


def query_texts(n: int) -> list[str]:
    """The queries: *n* short questions over the corpus vocabulary."""
    return [
        f"which chunk talks about {_WORDS[i % len(_WORDS)]} and {_WORDS[(i * 5) % len(_WORDS)]} "
        f"number {i}?"
        for i in range(n)
    ]


def hash_vector(text: str) -> list[float]:
    """A deterministic vector of *DIMS* floats in [-0.5, 0.5] (not normalised: the store does
    that for cosine)."""
    digest = hashlib.shake_256(text.encode("utf-8")).digest(DIMS)
    return [b / 255.0 - 0.5 for b in digest]


def embedding_table() -> dict[str, list[float]]:
    """Every corpus and query text's vector, computed before anything is timed: the embedding
    models of both sides only look them up."""
    return {text: hash_vector(text) for text in chunk_texts(CHUNKS) + query_texts(QUERIES)}


def lateness_summary(lates: list[float]) -> dict[str, float]:
    """p50/p99/max of ticker lateness, in milliseconds."""
    if not lates:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0, "n": 0}
    ordered = sorted(lates)
    return {
        "p50": ordered[len(ordered) // 2] * 1e3,
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e3,
        "max": ordered[-1] * 1e3,
        "n": len(ordered),
    }


def latency_summary(samples: list[float]) -> dict[str, float]:
    """Median and p99 of call latencies, in microseconds."""
    ordered = sorted(samples)
    return {
        "median": statistics.median(ordered) * 1e6,
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e6,
    }


# -- agentscope-rt's side (run in a worker process) -----------------------------------------


async def _run_ours() -> dict[str, Any]:
    import anyio
    import anyio.lowlevel

    from agentscope_rt.embedding import EmbeddingModelBase, EmbeddingResponse
    from agentscope_rt.message import TextBlock
    from agentscope_rt.rag import DocMetadata, Document, LocalVectorStore, SimpleKnowledge

    table = embedding_table()

    class HashEmbedding(EmbeddingModelBase):
        def __init__(self) -> None:
            super().__init__("hash", DIMS)

        async def __call__(self, text: list[Any], **kwargs: Any) -> EmbeddingResponse:
            vectors = []
            for i, item in enumerate(text):
                if i % EMBED_SLICE == 0:
                    await anyio.lowlevel.checkpoint()
                vectors.append(table[item if isinstance(item, str) else item["text"]])
            return EmbeddingResponse(embeddings=vectors)

    texts = chunk_texts(CHUNKS)
    docs = [
        Document(
            DocMetadata(
                TextBlock(text=t), doc_id=f"doc{i // 100}", chunk_id=i % 100, total_chunks=100
            )
        )
        for i, t in enumerate(texts)
    ]
    lates: list[float] = []
    idle: list[float] = []
    query_lates: list[float] = []
    running = True

    async def ticker(sink: list[float]) -> None:
        due = time.perf_counter() + TICK_S
        while running:
            await anyio.sleep(max(0.0, due - time.perf_counter()))
            now = time.perf_counter()
            sink.append(max(0.0, now - due))
            due = now + TICK_S

    kb = SimpleKnowledge(embedding_model=HashEmbedding())  # the default store
    store = kb.embedding_store
    assert isinstance(store, LocalVectorStore), store
    async with store:
        await kb.add_documents(docs[:1])  # the collection is created, the engine imported
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker, idle)
            await anyio.sleep(IDLE_S)
            running = False
        running = True
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker, lates)
            await anyio.lowlevel.checkpoint()
            start, cpu_start = time.perf_counter(), time.process_time()
            await kb.add_documents(docs)
            ingest = time.perf_counter() - start
            ingest_cpu = time.process_time() - cpu_start
            running = False
        samples = []
        running = True
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker, query_lates)
            await anyio.lowlevel.checkpoint()
            cpu_start = time.process_time()
            for query in query_texts(QUERIES):
                start = time.perf_counter()
                hits = await kb.retrieve(query, limit=5)
                samples.append(time.perf_counter() - start)
                assert len(hits) == 5
            query_cpu = time.process_time() - cpu_start
            running = False
        count = store.get_client().count()
    assert count == CHUNKS, count
    return {
        "ingest_s": ingest,
        "chunks_per_s": CHUNKS / ingest,
        "ingest_cpu_us_per_chunk": ingest_cpu / CHUNKS * 1e6,
        "query_cpu_us": query_cpu / QUERIES * 1e6,
        "lateness": lateness_summary(lates),
        "query_lateness": lateness_summary(query_lates),
        "idle_lateness": lateness_summary(idle),
        "query": latency_summary(samples),
    }


def _worker(backend: str) -> None:
    import anyio

    result = anyio.run(_run_ours, backend=backend)
    sys.stdout.write(json.dumps(result))


# -- the driver ------------------------------------------------------------------------------


def _run_worker(argv: list[str], dims: int) -> dict[str, Any]:
    env = {
        **os.environ,
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "BENCH_RAG_DIMS": str(dims),
    }
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=HERE)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ensure_agentscope_qdrant(python: pathlib.Path) -> None:
    """Install into AgentScope's venv the qdrant-client version used here, if it lacks it."""
    import importlib.metadata

    version = importlib.metadata.version("qdrant-client")
    check = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('qdrant-client'))"],
        capture_output=True,
        text=True,
    )
    if check.returncode != 0 or check.stdout.strip() != version:
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"qdrant-client=={version}"], check=True
        )


def _median(rounds: list[dict[str, Any]], *path: str) -> float:
    values = []
    for r in rounds:
        value: Any = r
        for key in path:
            value = value[key]
        values.append(float(value))
    return statistics.median(values)


def main() -> str:
    sys.path.insert(0, str(HERE))
    from _agentscope_env import NEWEST_VERSION, agentscope_python, pin_to_one_cpu

    python = agentscope_python(NEWEST_VERSION)
    _ensure_agentscope_qdrant(python)
    cpu = pin_to_one_cpu()
    results: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for dims in DIM_SETS:
        sides: dict[str, list[dict[str, Any]]] = {f"rt-{b}": [] for b in BACKENDS}
        sides["agentscope"] = []
        for round_no in range(ROUNDS):
            for backend in BACKENDS:
                sides[f"rt-{backend}"].append(
                    _run_worker(
                        [sys.executable, str(HERE / "bench_rag.py"), "--worker", backend], dims
                    )
                )
            sides["agentscope"].append(
                _run_worker([str(python), str(HERE / "_rag_agentscope.py")], dims)
            )
            print(f"{dims} dims: round {round_no + 1}/{ROUNDS} done", file=sys.stderr, flush=True)
        results[dims] = sides

    lines = [
        "## RAG: knowledge-base ingestion and retrieval",
        "",
        f"{CHUNKS:,} text chunks into `SimpleKnowledge` over each side's default local store: "
        'agentscope-rt\'s `LocalVectorStore(":memory:")` (exact search at this size), '
        "AgentScope's `QdrantStore(\":memory:\")` (Qdrant's embedded engine); hash embeddings "
        "of 64 and of 384 dimensions (the same free function on both sides: a lookup in a "
        f"table computed before timing); {QUERIES:,} `retrieve(query, limit=5)` calls; a 1 ms "
        "periodic task in the same event loop during ingestion and during the retrievals. CPU "
        "rows are the process's CPU time (all threads), which other processes on a shared "
        f"machine disturb less than wall time. AgentScope {NEWEST_VERSION} (asyncio). Medians "
        f"of {ROUNDS} interleaved rounds, one process per side and round, all pinned to CPU "
        f"{cpu}, `OPENBLAS_NUM_THREADS=1`. Ratios: how many times better than AgentScope (>1 is "
        "better). Targets: retrieval median 5x, ingestion 2x, ticker p99 under "
        f"{LATENESS_TARGET_MS:g} ms.",
        "",
    ]
    for dims, sides in results.items():
        lines += _table(dims, sides)
    return "\n".join(lines) + "\n"


def _table(dims: int, sides: dict[str, list[dict[str, Any]]]) -> list[str]:
    def row(label: str, path: tuple[str, ...], fmt: str, better: str) -> str:
        theirs = _median(sides["agentscope"], *path)
        cells = []
        for backend in BACKENDS:
            ours = _median(sides[f"rt-{backend}"], *path)
            ratio = ours / theirs if better == "higher" else theirs / ours
            cells.append(f"{fmt.format(ours)} ({ratio:.2f}x)")
        return f"| {label} | " + " | ".join(cells) + f" | {fmt.format(theirs)} |"

    lines = [
        f"### {dims} dimensions",
        "",
        "| measure | agentscope-rt asyncio | agentscope-rt trio | AgentScope |",
        "|---|---|---|---|",
        row("ingestion, chunks/s", ("chunks_per_s",), "{:,.0f}", "higher"),
        row("retrieval median, us", ("query", "median"), "{:,.0f}", "lower"),
        row("retrieval p99, us", ("query", "p99"), "{:,.0f}", "lower"),
        row("ingestion CPU per chunk, us", ("ingest_cpu_us_per_chunk",), "{:,.0f}", "lower"),
        row("retrieval CPU per query, us", ("query_cpu_us",), "{:,.0f}", "lower"),
        row(
            "1 ms ticker lateness during ingestion, p99 ms", ("lateness", "p99"), "{:.2f}", "lower"
        ),
        row(
            "1 ms ticker lateness during ingestion, max ms", ("lateness", "max"), "{:.2f}", "lower"
        ),
        row(
            "1 ms ticker lateness during retrievals, p99 ms",
            ("query_lateness", "p99"),
            "{:.2f}",
            "lower",
        ),
        row(
            "1 ms ticker lateness idle (machine noise), p99 ms",
            ("idle_lateness", "p99"),
            "{:.2f}",
            "lower",
        ),
        "",
        "Round by round (chunks/s; retrieval median us; ticker p99 ms ingestion / retrievals):",
        "",
    ]
    for name, rounds in sides.items():
        cells = [
            f"{r['chunks_per_s']:,.0f}; {r['query']['median']:,.0f}; "
            f"{r['lateness']['p99']:.2f} / {r['query_lateness']['p99']:.2f}"
            for r in rounds
        ]
        lines.append(f"- {name}: " + " | ".join(cells))
    lines.append("")
    return lines


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        _worker(sys.argv[2])
    else:
        print(main())
