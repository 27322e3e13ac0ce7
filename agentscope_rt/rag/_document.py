"""What a knowledge base returns: :class:`Document` chunks with their :class:`DocMetadata`."""

from __future__ import annotations

import uuid

import attrs

from ..message import ImageBlock, TextBlock, VideoBlock

__all__ = ["DocMetadata", "Document"]


@attrs.define(slots=True)
class DocMetadata:
    """Where a chunk comes from and what it holds.

    :ivar content: the chunk itself (text, image or video block).
    :ivar doc_id: the id of the source document.
    :ivar chunk_id: the chunk's position in that document.
    :ivar total_chunks: how many chunks the document was split into.
    """

    content: TextBlock | ImageBlock | VideoBlock
    doc_id: str
    chunk_id: int
    total_chunks: int


@attrs.define(slots=True)
class Document:
    """One retrievable chunk; ``score`` is filled in by retrieval (higher is more relevant).

    :ivar embedding: the chunk's embedding vector, when computed.
    """

    metadata: DocMetadata
    id: str = attrs.field(factory=lambda: uuid.uuid4().hex)
    embedding: list[float] | None = None
    score: float | None = None
