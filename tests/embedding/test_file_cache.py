"""FileEmbeddingCache: AgentScope's file layout, atomic writes, eviction, concurrency."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from agentscope_rt.embedding import FileEmbeddingCache
from agentscope_rt.embedding._npy import NpyFormatError, dumps_npy, loads_npy

IDENT = {"input": ["héllo", "world"], "model": "m", "dimensions": 3}
VECTORS = [[0.1, -0.2, 0.3], [1.5, 2.25, -3.0]]


def all_names(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def npy_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir() if p.name.endswith(".npy"))


async def test_store_and_retrieve_use_agentscopes_file_name_and_format(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(str(tmp_path / "c"))
    assert await cache.retrieve(IDENT) is None
    await cache.store(VECTORS, IDENT)
    expected = hashlib.sha256(json.dumps(IDENT, ensure_ascii=False).encode()).hexdigest()
    assert npy_files(tmp_path / "c") == [f"{expected}.npy"]
    assert await cache.retrieve(IDENT) == VECTORS
    # NumPy (and so AgentScope) reads the file as the float64 matrix np.save would write.
    loaded = np.load(tmp_path / "c" / f"{expected}.npy")
    assert loaded.dtype == np.float64 and loaded.tolist() == VECTORS


async def test_files_written_by_numpy_are_read(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(str(tmp_path))
    name = FileEmbeddingCache._get_filename(IDENT)
    np.save(tmp_path / name, np.array(VECTORS, dtype=np.float32))
    got = await cache.retrieve(IDENT)
    assert got is not None
    assert np.allclose(got, VECTORS)
    np.save(tmp_path / name, np.array(VECTORS, dtype=">f8"))
    assert await cache.retrieve(IDENT) == VECTORS


def test_npy_round_trip_and_bad_data() -> None:
    assert loads_npy(dumps_npy(VECTORS)) == VECTORS
    assert loads_npy(dumps_npy([])) == []
    assert dumps_npy([[1.0, 2.0]]) == _np_bytes([[1.0, 2.0]])
    with pytest.raises(ValueError, match="different lengths"):
        dumps_npy([[1.0], [1.0, 2.0]])
    with pytest.raises(NpyFormatError):
        loads_npy(b"not numpy")
    with pytest.raises(NpyFormatError, match="truncated"):
        loads_npy(dumps_npy(VECTORS)[:-4])


def _np_bytes(rows: list[list[float]]) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.array(rows))
    return buffer.getvalue()


async def test_overwrite_remove_and_clear(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(str(tmp_path))
    await cache.store(VECTORS, IDENT)
    await cache.store([[9.0, 9.0, 9.0]], IDENT)
    assert await cache.retrieve(IDENT) == VECTORS  # kept: overwrite is off
    await cache.store([[9.0, 9.0, 9.0]], IDENT, overwrite=True)
    assert await cache.retrieve(IDENT) == [[9.0, 9.0, 9.0]]
    await cache.remove(IDENT)
    assert await cache.retrieve(IDENT) is None
    with pytest.raises(FileNotFoundError, match="does not exist"):
        await cache.remove(IDENT)
    (tmp_path / "notes.txt").write_text("keep me")
    await cache.store(VECTORS, "a")
    await cache.store(VECTORS, "b")
    await cache.clear()
    assert npy_files(tmp_path) == [] and (tmp_path / "notes.txt").exists()


async def test_a_directory_in_the_way_is_an_error(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(str(tmp_path))
    (tmp_path / cache._get_filename(IDENT)).mkdir()
    with pytest.raises(RuntimeError, match="is not a file"):
        await cache.store(VECTORS, IDENT)


async def test_oldest_files_are_evicted_beyond_max_file_number(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(str(tmp_path), max_file_number=3)
    for i in range(3):
        await cache.store(VECTORS, f"id-{i}")
        # Distinct modification times without waiting: id-0 oldest.
        os.utime(tmp_path / cache._get_filename(f"id-{i}"), (1000 + i, 1000 + i))
    await cache.retrieve("id-0")  # reading does not make a file younger
    await cache.store(VECTORS, "id-3")
    assert await cache.retrieve("id-0") is None
    assert all([await cache.retrieve(f"id-{i}") for i in (1, 2, 3)])


async def test_oldest_files_are_evicted_beyond_max_cache_size(tmp_path: Path) -> None:
    big = [[float(i)] * 1024 for i in range(64)]  # 512 KiB of float64 per file
    cache = FileEmbeddingCache(str(tmp_path), max_cache_size=1)
    for i in range(2):
        await cache.store(big, f"big-{i}")
        os.utime(tmp_path / cache._get_filename(f"big-{i}"), (1000 + i, 1000 + i))
    await cache.store(big, "big-2")
    assert await cache.retrieve("big-0") is None
    assert await cache.retrieve("big-2") == big
    assert cache._get_cache_size() <= 1


def test_limits_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="max_file_number"):
        FileEmbeddingCache(max_file_number=-1)


async def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = FileEmbeddingCache(str(tmp_path))
    await cache.store(VECTORS, IDENT)

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        await cache.store([[7.0, 7.0, 7.0]], IDENT, overwrite=True)
    monkeypatch.undo()
    assert await cache.retrieve(IDENT) == VECTORS
    assert all_names(tmp_path) == npy_files(tmp_path)


async def test_an_unreadable_file_is_a_miss(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = FileEmbeddingCache(str(tmp_path))
    (tmp_path / cache._get_filename(IDENT)).write_bytes(b"\x93NUMPY garbage")
    with caplog.at_level(logging.WARNING):
        assert await cache.retrieve(IDENT) is None
    assert "unreadable embedding cache file" in caplog.text.lower()


async def test_many_tasks_storing_and_reading_never_see_a_torn_file(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(str(tmp_path), max_file_number=8)
    rows = [[float(i)] * 256 for i in range(16)]
    seen: list[list[list[float]] | None] = []

    async def writer(n: int) -> None:
        for i in range(6):
            await cache.store(rows, f"shared-{i % 3}", overwrite=True)
            await cache.store(rows, f"own-{n}-{i}")

    async def reader() -> None:
        for i in range(12):
            seen.append(await cache.retrieve(f"shared-{i % 3}"))

    async with anyio.create_task_group() as tg:
        for n in range(4):
            tg.start_soon(writer, n)
            tg.start_soon(reader)
    # Every read was a miss or the whole matrix, never part of one.
    assert all(item is None or item == rows for item in seen)
    assert len(seen) == 48
    files = npy_files(tmp_path)
    assert len(files) <= 8
    assert all_names(tmp_path) == files  # no temporary left
    for name in files:
        assert np.load(tmp_path / name).tolist() == rows


async def test_encoding_runs_in_the_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Encoding 10,000 vectors of 384 numbers takes ~0.4 s: with the file work, off the loop.
    import threading

    from agentscope_rt.embedding import _file_cache

    threads: list[int] = []

    def recording_dumps(rows: list[list[float]]) -> bytes:
        threads.append(threading.get_ident())
        return dumps_npy(rows)

    monkeypatch.setattr(_file_cache, "dumps_npy", recording_dumps)
    cache = FileEmbeddingCache(str(tmp_path))
    await cache.store([[1.0, 2.0]], "id")
    assert threads and threading.get_ident() not in threads
    assert await cache.retrieve("id") == [[1.0, 2.0]]
    with pytest.raises(ValueError, match="different lengths"):
        await cache.store([[1.0], [1.0, 2.0]], "bad")


async def test_a_cache_written_for_agentscope_needs_only_store_and_retrieve() -> None:
    from agentscope_rt.embedding import EmbeddingCacheBase

    class Memo(EmbeddingCacheBase):
        def __init__(self) -> None:
            self.data: dict[str, list[list[float]]] = {}

        async def store(
            self, embeddings: Any, identifier: Any, overwrite: bool = False, **kw: Any
        ) -> None:
            self.data[json.dumps(identifier)] = embeddings

        async def retrieve(self, identifier: Any) -> Any:
            return self.data.get(json.dumps(identifier))

    memo = Memo()
    await memo.store([[1.0]], "a")
    assert await memo.retrieve("a") == [[1.0]]
    with pytest.raises(NotImplementedError, match="Memo does not implement remove"):
        await memo.remove("a")
    with pytest.raises(NotImplementedError, match="Memo does not implement clear"):
        await memo.clear()
