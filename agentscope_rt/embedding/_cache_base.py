"""The embedding cache interface: vectors stored under a JSON identifier."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ..types import Embedding, JSONSerializableObject

__all__ = ["EmbeddingCacheBase"]


class EmbeddingCacheBase(ABC):
    """Stores and retrieves embeddings by identifier.

    The embedding models use the request they would send (a JSON-able dict of the texts, the
    model name, the dimensions and any extra arguments) as the identifier, so a hit is exactly
    the response that request would have produced.
    """

    @abstractmethod
    async def store(
        self,
        embeddings: list[Embedding],
        identifier: JSONSerializableObject,
        overwrite: bool = False,
        **kwargs: Any,
    ) -> None:
        """Keep *embeddings* under *identifier*.

        :param overwrite: replace embeddings already stored under *identifier*; when ``False``
            the stored ones are kept.
        """

    @abstractmethod
    async def retrieve(self, identifier: JSONSerializableObject) -> list[Embedding] | None:
        """The embeddings stored under *identifier*, or ``None``."""

    async def remove(self, identifier: JSONSerializableObject) -> None:
        """Forget the embeddings stored under *identifier* (optional, as in AgentScope: the
        models only store and retrieve).

        :raises FileNotFoundError: when nothing is stored under it.
        :raises NotImplementedError: unless a subclass implements it.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement remove")

    async def clear(self) -> None:
        """Forget every stored embedding (optional, as in AgentScope).

        :raises NotImplementedError: unless a subclass implements it.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement clear")
