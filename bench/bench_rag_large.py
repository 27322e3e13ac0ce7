"""A large local knowledge base: ``LocalVectorStore`` on a folder against AgentScope's embedded
Qdrant store, on the same vectors.

Workload: ``--chunks`` (default 1,000,000) chunks of ``--dims`` (default 384) dimensions,
vectors with a 16-dimensional structure plus noise, as text embeddings have (a uniform random
cloud has no meaningful nearest neighbours: every point is about as far as every other), made
by NumPy from a fixed seed before timing. Chunks are added ``BATCH`` at a time straight to the
store (no embedding model), while a 1 ms ticker runs in the same event loop; then ``QUERIES``
searches with ``limit=5`` one after another (p50/p99 latency, ticker lateness), recall@5
against an exact NumPy search of the same vectors, resident memory and the folder's size.

AgentScope's side (``QdrantStore(":memory:")``, Qdrant's embedded engine, AgentScope 1.0.21's
venv) adds the same
batches until ``--cap-s`` seconds have passed (the issue's "as far as it gets in 30 minutes"),
then searches the chunks it holds.

Run ``python bench/bench_rag_large.py [--chunks N] [--cap-s S]``; it prints a markdown section.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = pathlib.Path(__file__).parent
BATCH = 100
QUERIES = 1000
RECALL_QUERIES = 200
TICK_S = 0.001
LATENT = 16


def dataset(n: int, dims: int, seed: int) -> Any:
    """*n* float32 vectors: a random 16-dimensional signal through a fixed basis, plus noise."""
    import numpy as np

    basis = np.random.default_rng(1).standard_normal((LATENT, dims)).astype(np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((n, dims), np.float32)
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        signal = rng.standard_normal((m, LATENT)).astype(np.float32) @ basis
        out[start : start + m] = signal + 0.5 * rng.standard_normal((m, dims)).astype(np.float32)
    return out


def exact_top5(data: Any, queries: Any) -> list[set[int]]:
    import numpy as np

    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    tops = []
    for q in queries:
        scores = unit @ (q / np.linalg.norm(q))
        tops.append({int(i) for i in np.argpartition(-scores, 5)[:5]})
    return tops


def folder_size(folder: str) -> int:
    return sum(p.stat().st_size for p in pathlib.Path(folder).rglob("*") if p.is_file())


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def summary(samples: list[float], scale: float) -> dict[str, float]:
    ordered = sorted(samples)
    if not ordered:
        return {"p50": 0.0, "p99": 0.0, "max": 0.0}
    return {
        "p50": statistics.median(ordered) * scale,
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * scale,
        "max": ordered[-1] * scale,
    }


# -- agentscope-rt's side -----------------------------------------------------------------------


async def _run_ours(n: int, dims: int, folder: str) -> dict[str, Any]:
    import anyio

    from agentscope_rt.message import TextBlock
    from agentscope_rt.rag import DocMetadata, Document, LocalVectorStore

    data = dataset(n, dims, 2)
    queries = dataset(QUERIES, dims, 3)
    truth = exact_top5(data, queries[:RECALL_QUERIES])
    lates: list[float] = []
    query_lates: list[float] = []
    running = True

    async def ticker(sink: list[float]) -> None:
        due = time.perf_counter() + TICK_S
        while running:
            await anyio.sleep(max(0.0, due - time.perf_counter()))
            now = time.perf_counter()
            sink.append(max(0.0, now - due))
            due = now + TICK_S

    def make_docs(first: int) -> list[Document]:
        rows = data[first : first + BATCH].tolist()
        return [
            Document(
                DocMetadata(
                    TextBlock(text=f"chunk {first + i}"),
                    f"doc{(first + i) // 100}",
                    (first + i) % 100,
                    100,
                ),
                embedding=row,
            )
            for i, row in enumerate(rows)
        ]

    store = LocalVectorStore(folder, "bench", dims)
    indexing = [0.0]
    catch_up = store._catch_up

    async def timed_catch_up() -> None:  # how much of ingestion is the index's
        start = time.perf_counter()
        await catch_up()
        indexing[0] += time.perf_counter() - start

    store._catch_up = timed_catch_up  # type: ignore[method-assign]
    milestones: dict[int, float] = {}  # seconds to reach each 100,000 chunks
    async with store:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker, lates)
            start = time.perf_counter()
            for first in range(0, n, BATCH):
                rows = data[first : first + BATCH].tolist()
                docs = [
                    Document(
                        DocMetadata(
                            TextBlock(text=f"chunk {first + i}"),
                            f"doc{(first + i) // 100}",
                            (first + i) % 100,
                            100,
                        ),
                        embedding=row,
                    )
                    for i, row in enumerate(rows)
                ]
                await store.add(docs)
                if (first + BATCH) % 100_000 == 0:
                    milestones[first + BATCH] = time.perf_counter() - start
            ingest = time.perf_counter() - start
            running = False
        rss_after_ingest = rss_mb()
        samples = []
        hits = 0
        running = True
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker, query_lates)
            for i, q in enumerate(queries):
                start = time.perf_counter()
                found = await store.search(q.tolist(), limit=5)
                samples.append(time.perf_counter() - start)
                if i < RECALL_QUERIES:
                    got = {int(d.metadata.content["text"].split()[1]) for d in found}
                    hits += len(got & truth[i])
            running = False
        count = store.get_client().count()
    reopen_lates: list[float] = []
    running = True
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker, reopen_lates)
        close_start = time.perf_counter()
        reopen = LocalVectorStore(folder, "bench", dims)
        await reopen.search(queries[0].tolist(), limit=5)
        reopen_s = time.perf_counter() - close_start
        running = False
    await reopen.close()
    return {
        "chunks": count,
        "ingest_s": ingest,
        "index_s": indexing[0],
        "milestones_s": milestones,
        "query_us": summary(samples, 1e6),
        "recall": hits / (5 * RECALL_QUERIES),
        "lateness_ms": summary(lates, 1e3),
        "query_lateness_ms": summary(query_lates, 1e3),
        "rss_mb": rss_after_ingest,
        "folder_mb": folder_size(folder) / 2**20,
        "reopen_s": reopen_s,
        "reopen_lateness_ms": summary(reopen_lates, 1e3),
    }


# -- AgentScope's side (run with AgentScope's venv) ----------------------------------------------


async def _run_agentscope(n: int, dims: int, folder: str, cap_s: float) -> dict[str, Any]:
    from agentscope.message import TextBlock
    from agentscope.rag import DocMetadata, Document, QdrantStore

    data = dataset(n, dims, 2)
    queries = dataset(QUERIES, dims, 3)
    # In memory, as in bench_rag.py: AgentScope hands its location to qdrant-client as
    # `location`, which takes a folder for a server address (a folder needs client_kwargs'
    # `path`), and Qdrant's on-disk embedded mode writes each point on its own (slower still).
    store = QdrantStore(location=":memory:", collection_name="bench", dimensions=dims)
    start = time.perf_counter()
    added = 0
    milestones: dict[int, float] = {}  # seconds to reach each 100,000 chunks
    for first in range(0, n, BATCH):
        rows = data[first : first + BATCH].tolist()
        docs = [
            Document(
                metadata=DocMetadata(
                    content=TextBlock(type="text", text=f"chunk {first + i}"),
                    doc_id=f"doc{(first + i) // 100}",
                    chunk_id=(first + i) % 100,
                    total_chunks=100,
                ),
                embedding=row,
            )
            for i, row in enumerate(rows)
        ]
        await store.add(docs)
        added += len(docs)
        if added % 100_000 == 0:
            milestones[added] = time.perf_counter() - start
        if time.perf_counter() - start > cap_s:
            break
    ingest = time.perf_counter() - start
    rss = rss_mb()
    truth = exact_top5(data[:added], queries[:RECALL_QUERIES])
    samples, hits = [], 0
    for i, q in enumerate(queries[:RECALL_QUERIES]):
        t = time.perf_counter()
        found = await store.search(q.tolist(), limit=5)
        samples.append(time.perf_counter() - t)
        got = {int(d.metadata.content["text"].split()[1]) for d in found}
        hits += len(got & truth[i])
    return {
        "chunks": added,
        "ingest_s": ingest,
        "milestones_s": milestones,
        "query_us": summary(samples, 1e6),
        "recall": hits / (5 * RECALL_QUERIES),
        "rss_mb": rss,
    }


# -- the driver ----------------------------------------------------------------------------------


def _worker(argv: list[str]) -> None:
    side, n, dims, cap_s = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
    folder = tempfile.mkdtemp(prefix="bench_rag_large_")
    try:
        if side == "ours":
            import anyio

            result = anyio.run(_run_ours, n, dims, os.path.join(folder, "kb"))
        else:
            import asyncio
            import logging

            os.environ["AGENTSCOPE_DISABLE_CONSOLE_OUTPUT"] = "true"
            logging.disable(logging.CRITICAL)
            result = asyncio.run(_run_agentscope(n, dims, os.path.join(folder, "qdrant"), cap_s))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    sys.stdout.write(json.dumps(result))


def _run(python: str, side: str, n: int, dims: int, cap_s: float) -> dict[str, Any]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    argv = [python, str(HERE / "bench_rag_large.py"), "--worker", side, str(n), str(dims)]
    done = subprocess.run([*argv, str(cap_s)], capture_output=True, text=True, env=env, cwd=HERE)
    if done.returncode != 0:
        raise RuntimeError(f"{side} failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(n: int = 1_000_000, dims: int = 384, cap_s: float = 1800.0) -> str:
    sys.path.insert(0, str(HERE))
    from _agentscope_env import NEWEST_VERSION, agentscope_python
    from bench_rag import _ensure_agentscope_qdrant

    python = agentscope_python(NEWEST_VERSION)
    _ensure_agentscope_qdrant(python)  # AgentScope's venv does not bring qdrant-client
    ours = _run(sys.executable, "ours", n, dims, cap_s)
    theirs = _run(str(python), "agentscope", n, dims, cap_s)
    return section(ours, theirs, n, dims, cap_s)


def section(ours: dict[str, Any], theirs: dict[str, Any], n: int, dims: int, cap_s: float) -> str:
    """The markdown section of both sides' results."""
    from _agentscope_env import NEWEST_VERSION

    return "\n".join(
        [
            "## RAG: a large local knowledge base",
            "",
            f"{n:,} chunks of {dims} dimensions ({LATENT}-dimensional structure plus noise, like "
            f"text embeddings), added {BATCH:,} at a time to a store on a folder; "
            f"{QUERIES:,} searches (limit 5); recall@5 against exact search over "
            f"{RECALL_QUERIES} queries; a 1 ms ticker in the event loop (asyncio). AgentScope "
            f'{NEWEST_VERSION}\'s `QdrantStore(":memory:")` (embedded engine), stopped after '
            f"{cap_s:,.0f} s of adding.",
            "",
            "| measure | agentscope-rt LocalVectorStore | AgentScope QdrantStore |",
            "|---|---|---|",
            f"| chunks added | {ours['chunks']:,} | {theirs['chunks']:,} |",
            f"| ingestion, s | {ours['ingest_s']:,.1f} | {theirs['ingest_s']:,.1f} |",
            f"| ingestion, chunks/s | {ours['chunks'] / ours['ingest_s']:,.0f} | "
            f"{theirs['chunks'] / theirs['ingest_s']:,.0f} |",
            f"| of which HNSW index building, s | {ours['index_s']:,.1f} | - |",
            f"| search p50, us | {ours['query_us']['p50']:,.0f} | "
            f"{theirs['query_us']['p50']:,.0f} |",
            f"| search p99, us | {ours['query_us']['p99']:,.0f} | "
            f"{theirs['query_us']['p99']:,.0f} |",
            f"| recall@5 | {ours['recall']:.3f} | {theirs['recall']:.3f} |",
            f"| resident memory after ingestion, MB | {ours['rss_mb']:,.0f} | "
            f"{theirs['rss_mb']:,.0f} |",
            f"| folder size, MB | {ours['folder_mb']:,.0f} | - (in memory) |",
            f"| reopening and first search, s | {ours['reopen_s']:,.1f} | - |",
            f"| ticker p99 / max during ingestion, ms | {ours['lateness_ms']['p99']:.2f} / "
            f"{ours['lateness_ms']['max']:.2f} | - |",
            f"| ticker p99 / max during searches, ms | {ours['query_lateness_ms']['p99']:.2f} / "
            f"{ours['query_lateness_ms']['max']:.2f} | - |",
            f"| ticker p99 / max while reopening, ms | {ours['reopen_lateness_ms']['p99']:.2f} / "
            f"{ours['reopen_lateness_ms']['max']:.2f} | - |",
            "",
        ]
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker(sys.argv[2:])
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--chunks", type=int, default=1_000_000)
        parser.add_argument("--dims", type=int, default=384)
        parser.add_argument("--cap-s", type=float, default=1800.0)
        args = parser.parse_args()
        print(main(args.chunks, args.dims, args.cap_s))
