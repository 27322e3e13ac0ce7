"""What an embedding model returns: :class:`EmbeddingResponse` and its :class:`EmbeddingUsage`."""

from __future__ import annotations

from typing import Literal

import attrs

from .._ids import new_id
from ..message import now_timestamp
from ..types import Embedding

__all__ = ["EmbeddingResponse", "EmbeddingUsage"]


@attrs.define(slots=True)
class EmbeddingUsage:
    """The cost of one embedding call.

    :ivar time: seconds spent in the model (0 for a cache hit).
    :ivar tokens: tokens the provider billed, when it reports them (0 for a cache hit; ``None``
        for providers that do not say, such as Gemini, Ollama and the local model).
    """

    time: float
    tokens: int | None = None
    type: Literal["embedding"] = "embedding"


@attrs.define(slots=True)
class EmbeddingResponse:
    """The embeddings of one call, in the order of the input texts.

    :ivar embeddings: one vector per input text.
    :ivar source: ``"cache"`` when every vector came from the embedding cache, else ``"api"``.
    """

    embeddings: list[Embedding]
    id: str = attrs.field(factory=new_id)
    created_at: str = attrs.field(factory=now_timestamp)
    type: Literal["embedding"] = "embedding"
    usage: EmbeddingUsage | None = None
    source: Literal["cache", "api"] = "api"
