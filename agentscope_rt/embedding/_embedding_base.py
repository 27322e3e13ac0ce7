"""The base class of embedding models, and the text extraction they share."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from .. import _intercept
from ..exception import ModelAPIError
from ..message import TextBlock
from ._embedding_response import EmbeddingResponse

__all__ = ["EmbeddingModelBase"]


class EmbeddingModelBase(_intercept.Routed, ABC):
    """An embedding model: turns a list of texts into one vector each.

    Subclasses implement :meth:`__call__`. Implementations are safe to call from many tasks at
    once and never block the event loop.

    :param model_name: the model's name at its provider.
    :param dimensions: the length of the vectors the model returns.
    """

    model_name: str
    """The embedding model's name."""

    dimensions: int
    """The length of each embedding vector."""

    supported_modalities: ClassVar[list[str]] = ["text"]
    """The kinds of input the model embeds (``"text"``, ``"image"``, ``"video"``)."""

    def __init__(self, model_name: str, dimensions: int) -> None:
        self.model_name = model_name
        self.dimensions = dimensions

    @abstractmethod
    async def __call__(self, text: list[str | TextBlock], **kwargs: Any) -> EmbeddingResponse:
        """Embed *text*: one vector per item, in order.

        :param text: strings or text blocks (``TextBlock`` or a ``{"type": "text", "text": ...}``
            dict). :class:`~agentscope_rt.rag.SimpleKnowledge` passes AgentScope's form,
            plain dicts (``{"type": "text", "text": ...}``; an image's ``source`` a dict too),
            so a subclass written for AgentScope, testing ``isinstance(item, dict)``, works.
        :param kwargs: provider-specific request arguments, sent as given.
        :raises ValueError: for an item that is neither a string nor a text block.
        :raises ModelAPIError: when the provider fails (after the configured retries).
        """

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model_name={self.model_name!r}, dimensions={self.dimensions!r})"
        )


def empty_response() -> EmbeddingResponse:
    """The response to an empty list of texts (no request is sent for one)."""
    from ._embedding_response import EmbeddingUsage

    return EmbeddingResponse(embeddings=[], usage=EmbeddingUsage(time=0.0, tokens=0))


def gather_texts(text: Sequence[Any]) -> list[str]:
    """The strings of *text*: each item a string, a :class:`TextBlock` or a text-block dict.

    :raises ValueError: for anything else, naming the offending item's position and type.
    """
    if isinstance(text, (str, bytes)):
        raise ValueError(
            "Input text must be a list of strings or TextBlock dicts, got a single "
            f"{type(text).__name__}: wrap it in a list."
        )
    out: list[str] = []
    for i, item in enumerate(text):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, TextBlock):
            out.append(item.text)
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            out.append(item["text"])
        else:
            raise ValueError(
                "Input text must be a list of strings or TextBlock dicts; item "
                f"{i} is a {type(item).__name__}."
            )
    return out


def check_count(provider: str, embeddings: list[Any], count: int) -> None:
    """Check that a provider answered one vector per text, before the answer is used or cached.

    :raises ModelAPIError: naming both counts, when they differ.
    """
    if len(embeddings) != count:
        raise ModelAPIError(provider, f"expected {count} embeddings, got {len(embeddings)}")


def merge_responses(responses: list[EmbeddingResponse]) -> EmbeddingResponse:
    """One response for a call made of several requests: the vectors in order, the times and
    tokens summed (``None`` tokens when no request reported any), ``source="cache"`` only
    when every part came from the cache."""
    from ._embedding_response import EmbeddingUsage

    reported = [
        r.usage.tokens for r in responses if r.usage is not None and r.usage.tokens is not None
    ]
    return EmbeddingResponse(
        embeddings=[vector for r in responses for vector in r.embeddings],
        usage=EmbeddingUsage(
            time=sum(r.usage.time for r in responses if r.usage is not None),
            tokens=sum(reported) if reported else None,
        ),
        source="cache" if all(r.source == "cache" for r in responses) else "api",
    )


# Every call of these goes through its route (see agentscope_rt._intercept).
_intercept.declare(EmbeddingModelBase, "__call__", "embed")
