"""FileEmbeddingCache reads a file only when its header is consistent with its size, and the
embedding models take a hit only when its shape answers the request: a damaged, forged or
mismatched file is a logged miss, never an exception, a flood of empty vectors, or a wrong
answer."""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.embedding import (
    EmbeddingModelBase,
    FileEmbeddingCache,
    OllamaTextEmbedding,
    OpenAITextEmbedding,
)
from agentscope_rt.embedding._npy import dumps_npy
from agentscope_rt.model import RetryConfig

from ._servers import KEY, EmbeddingServer, vector

IDENT = {"input": ["a", "b"], "model": "m", "dimensions": 2}


def npy(header: str | bytes, body: bytes = b"", version: int = 1, pad_to: int = 128) -> bytes:
    """A ``.npy`` file with *header* (a Python literal) and *body*, padded to *pad_to* bytes of
    header as np.save pads it."""
    raw = header.encode("latin1") if isinstance(header, str) else header
    prefix_len = 10 if version == 1 else 12
    raw = raw + b" " * max(0, pad_to - prefix_len - len(raw) - 1) + b"\n"
    length = struct.pack("<H", len(raw)) if version == 1 else struct.pack("<I", len(raw))
    return b"\x93NUMPY" + bytes([version, 0]) + length + raw + body


def matrix_header(shape: Any, descr: str = "<f8") -> str:
    return f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape!r}, }}"


def plant(tmp_path: Path, data: bytes) -> FileEmbeddingCache:
    cache = FileEmbeddingCache(str(tmp_path))
    (tmp_path / FileEmbeddingCache._get_filename(IDENT)).write_bytes(data)
    return cache


async def test_a_small_file_claiming_millions_of_empty_rows_is_a_miss(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = npy(matrix_header((5_000_000, 0)))
    assert len(data) == 128
    cache = plant(tmp_path, data)
    with caplog.at_level(logging.WARNING):
        assert await cache.retrieve(IDENT) is None
    assert "5000000" in caplog.text


async def test_a_file_claiming_a_billion_rows_is_a_miss_without_allocating_them(
    tmp_path: Path,
) -> None:
    for shape in ((10**9, 0), (10**9, 4), (10**9,), (2**62, 2**62)):
        cache = plant(tmp_path, npy(matrix_header(shape)))
        assert await cache.retrieve(IDENT) is None


DAMAGED = {
    "text shape": matrix_header(("a", 2)),
    "negative rows": matrix_header((-1, 2)),
    "float rows": matrix_header((2.5, 2)),
    "bool rows": matrix_header((True, 2)),
    "three dimensions": matrix_header((1, 1, 2)),
    "not a dict": "[1, 2, 3]",
    "no shape": "{'descr': '<f8', 'fortran_order': False}",
    "deeply nested": "(" * 5000 + ")" * 5000,
    "huge number": matrix_header((int("9" * 4000), 2)),
    "integer data": matrix_header((1, 2), descr="<i8"),
    "unterminated": "{'descr': '<f8', ",
}


@pytest.mark.parametrize("header", DAMAGED.values(), ids=DAMAGED.keys())
async def test_a_damaged_header_is_a_miss_not_an_exception(
    tmp_path: Path, header: str, caplog: pytest.LogCaptureFixture
) -> None:
    cache = plant(tmp_path, npy(header, body=struct.pack("<4d", 1, 2, 3, 4), pad_to=0))
    with caplog.at_level(logging.WARNING):
        assert await cache.retrieve(IDENT) is None
    assert "embedding cache" in caplog.text


@pytest.mark.parametrize(
    "data",
    [
        b"\x93NUMPY\x02\x00\x10",  # version 2, its header length cut off
        b"\x93NUMPY\x03\x00\xff\xff\xff\x7f{",  # a header length far beyond the file
        b"\x93NUMPY\x01\x00\xff\xff{'descr'",
        b"\x93NUMPY",
    ],
    ids=["v2-cut", "v3-long", "v1-long", "magic-only"],
)
async def test_a_truncated_file_is_a_miss(tmp_path: Path, data: bytes) -> None:
    assert await plant(tmp_path, data).retrieve(IDENT) is None


async def test_a_file_longer_than_its_header_says_is_a_miss(tmp_path: Path) -> None:
    good = dumps_npy([[1.0, 2.0], [3.0, 4.0]])
    assert await plant(tmp_path, good).retrieve(IDENT) == [[1.0, 2.0], [3.0, 4.0]]
    assert await plant(tmp_path, good + b"\0" * 8).retrieve(IDENT) is None


async def test_a_damaged_file_is_replaced_by_the_next_store(tmp_path: Path) -> None:
    cache = plant(tmp_path, npy(matrix_header((5_000_000, 0))))
    await cache.store([[1.0, 2.0], [3.0, 4.0]], IDENT)
    assert await cache.retrieve(IDENT) == [[1.0, 2.0], [3.0, 4.0]]


# -- a hit must answer the request ---------------------------------------------------------

FAST = RetryConfig(initial_delay=0.01, max_delay=0.05)


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as srv:
        yield srv


def models(server: EmbeddingServer, cache: FileEmbeddingCache) -> list[EmbeddingModelBase]:
    return [
        OpenAITextEmbedding(
            KEY,
            "text-embedding-3-small",
            dimensions=4,
            base_url=f"{server.url}/v1",
            embedding_cache=cache,
            retry_config=FAST,
        ),
        OllamaTextEmbedding(
            "nomic-embed-text", 4, host=server.url, embedding_cache=cache, retry_config=FAST
        ),
    ]


def replace_the_one_file(folder: Path, data: bytes) -> None:
    (file,) = folder.glob("*.npy")
    file.write_bytes(data)


WRONG = {
    "one vector for two texts": [[0.5] * 4],
    "three vectors for two texts": [[0.5] * 4] * 3,
    "vectors of the wrong size": [[0.5] * 3, [0.25] * 3],
}


@pytest.mark.parametrize("kind", [0, 1], ids=["openai", "ollama"])
@pytest.mark.parametrize("wrong", WRONG.values(), ids=WRONG.keys())
async def test_a_hit_of_the_wrong_shape_is_a_miss_and_is_replaced(
    server: EmbeddingServer,
    tmp_path: Path,
    kind: int,
    wrong: list[list[float]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = FileEmbeddingCache(str(tmp_path))
    texts = ["alpha", "beta"]
    expected = [vector(t, 4) for t in texts]
    model = models(server, cache)[kind]
    async with model:  # type: ignore[attr-defined]
        assert (await model(texts)).embeddings == expected
        replace_the_one_file(tmp_path, dumps_npy(wrong))
        with caplog.at_level(logging.WARNING):
            response = await model(texts)
        assert response.embeddings == expected and response.source == "api"
        assert "do not match" in caplog.text
        # The right answer replaced the wrong file: the next call is a hit.
        again = await model(texts)
    assert again.source == "cache" and again.embeddings == expected
    assert len(server.requests) == 2
