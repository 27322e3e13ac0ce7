"""What readers produce, stores keep and knowledge bases return: :class:`Document` chunks with
their :class:`DocMetadata`.

Identity is derived from content, never drawn at random. A chunk's id is a UUID computed from
its document id, its position in the document and its content (:func:`chunk_id_of`), so
reading the same file twice yields the same ids and adding the chunks to a store again
overwrites them instead of duplicating them. (AgentScope gives every chunk of a text the
document's id, and a new random id to chunks built by hand.)

Both classes are attrs classes that go through the package's cattrs converter
(:meth:`Document.to_dict` / :meth:`Document.from_dict`); ``metadata["content"]`` reads as on
AgentScope's dict-based ``DocMetadata``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from typing import Any

import attrs

from ..exception import MessageFormatError
from ..message import ImageBlock, TextBlock, VideoBlock
from ..message.serde import converter, structure, structure_block

__all__ = ["DocContent", "DocMetadata", "Document", "chunk_id_of"]

DocContent = TextBlock | ImageBlock | VideoBlock
"""What a chunk holds: a text, image or video block."""


def chunk_id_of(doc_id: str, chunk_id: int, content: DocContent | dict[str, Any]) -> str:
    """The stable id of the chunk at position *chunk_id* of document *doc_id* holding *content*.

    It is ``uuid3(NAMESPACE_DNS, json)`` of ``{"doc_id", "chunk_id", "content"}`` (content as
    its JSON dict), the scheme AgentScope's ``QdrantStore`` uses for its point ids, so the same
    chunk always gets the same id, in every process.

    :param content: the chunk's block, or its dict form.
    """
    content_dict = content.to_dict() if hasattr(content, "to_dict") else content
    return chunk_id_and_json(doc_id, chunk_id, content_dict)[0]


# ``json.dumps(..., ensure_ascii=False)`` builds a new encoder per call; this one is shared
# (an encoder keeps no state between calls, so threads may share it).
_JSON = json.JSONEncoder(ensure_ascii=False)


def chunk_id_and_json(doc_id: str, chunk_id: int, content: dict[str, Any]) -> tuple[str, str]:
    """:func:`chunk_id_of` the chunk and its content dict's JSON (``json.dumps(content,
    ensure_ascii=False)``), the content encoded once for both: stores keep that JSON beside
    the id, and encoding is most of an id's cost.

    The id's key is the text ``json.dumps`` gives the ``{"doc_id", "chunk_id", "content"}``
    dict (default separators), assembled from its parts.

    :raises TypeError: for a content that JSON cannot encode.
    """
    content_json = _JSON.encode(content)
    # An int's JSON is its repr (the encoder's general path costs ~2 us more).
    position = repr(chunk_id) if chunk_id.__class__ is int else _JSON.encode(chunk_id)
    key = f'{{"doc_id": {_JSON.encode(doc_id)}, "chunk_id": {position}, "content": {content_json}}}'
    return _uuid3_dns(key), content_json


_DNS = uuid.NAMESPACE_DNS.bytes


def _uuid3_dns(name: str) -> str:
    """``str(uuid.uuid3(uuid.NAMESPACE_DNS, name))`` without the ``UUID`` object, which is
    half the cost of an id (stores compute one per chunk they write)."""
    digest = bytearray(hashlib.md5(_DNS + name.encode("utf-8"), usedforsecurity=False).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30  # version 3
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _as_doc_content(value: Any) -> DocContent:
    """*value* as a chunk's block: a block is kept, a block dict (AgentScope's ``TextBlock``
    is one) is built into a block.

    :raises MessageFormatError: for a dict that is not a text, image or video block.
    :raises TypeError: for anything else.
    """
    if isinstance(value, TextBlock | ImageBlock | VideoBlock):
        return value
    if isinstance(value, dict):
        return _structure_doc_content(value, None)
    raise TypeError(
        "DocMetadata content must be a TextBlock, ImageBlock or VideoBlock (or its dict form, "
        f"e.g. {{'type': 'text', 'text': ...}}), not {type(value).__name__}"
    )


@attrs.define(slots=True)
class DocMetadata:
    """Where a chunk comes from and what it holds.

    As AgentScope's dict-based class, it also reads like a dict: ``metadata["doc_id"]``,
    ``metadata.get("content")``, ``"chunk_id" in metadata``, ``dict(metadata)``,
    ``metadata.items()``. A content given in dict form (AgentScope's ``TextBlock`` is a dict)
    is built into its block.

    :ivar content: the chunk itself (text, image or video block).
    :ivar doc_id: the id of the source document.
    :ivar chunk_id: the chunk's position in that document (from 0).
    :ivar total_chunks: how many chunks the document was split into.
    """

    content: DocContent = attrs.field(converter=_as_doc_content)
    doc_id: str
    chunk_id: int
    total_chunks: int

    def __getitem__(self, key: str) -> Any:
        if key in _METADATA_KEYS:
            return getattr(self, key)
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in _METADATA_KEYS:
            raise KeyError(f"DocMetadata has no field {key!r}")
        setattr(self, key, value)

    def get(self, key: str, default: Any = None) -> Any:
        """``self[key]``, or *default* for a key DocMetadata does not have."""
        return getattr(self, key) if key in _METADATA_KEYS else default

    def __contains__(self, key: object) -> bool:
        return key in _METADATA_KEYS

    def keys(self) -> list[str]:
        """The field names, in AgentScope's order."""
        return list(_METADATA_KEYS)

    def values(self) -> list[Any]:
        """The field values, in :meth:`keys`' order."""
        return [getattr(self, key) for key in _METADATA_KEYS]

    def items(self) -> list[tuple[str, Any]]:
        """``(name, value)`` of each field, in :meth:`keys`' order."""
        return [(key, getattr(self, key)) for key in _METADATA_KEYS]

    def __iter__(self) -> Iterator[str]:
        return iter(_METADATA_KEYS)

    def to_dict(self) -> dict[str, Any]:
        """The metadata as JSON data (the content as its block dict)."""
        result: dict[str, Any] = converter.unstructure(self)
        return result

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DocMetadata:
        """Build metadata from :meth:`to_dict`'s form (what stores keep as payload).

        :raises MessageFormatError: for malformed data; the message names the offending path.
        """
        result: DocMetadata = structure(data, cls, what="document metadata")
        return result


_METADATA_KEYS = ("content", "doc_id", "chunk_id", "total_chunks")


def _default_id(document: Document) -> str:
    meta = document.metadata
    return chunk_id_of(meta.doc_id, meta.chunk_id, meta.content)


@attrs.define(slots=True)
class Document:
    """One retrievable chunk; ``score`` is filled in by retrieval (higher is more relevant).

    :ivar metadata: the chunk and where it comes from.
    :ivar id: the chunk's id; by default :func:`chunk_id_of` its metadata, so equal chunks
        have equal ids and stores upsert them.
    :ivar embedding: the chunk's embedding vector, when computed.
    :ivar score: the relevance to a query, set by a search.
    """

    metadata: DocMetadata
    id: str = attrs.field(default=attrs.Factory(_default_id, takes_self=True))
    embedding: list[float] | None = None
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The document as JSON data (what :meth:`from_dict` reads back)."""
        result: dict[str, Any] = converter.unstructure(self)
        return result

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Document:
        """Build a document from :meth:`to_dict`'s form.

        :raises MessageFormatError: for malformed data; the message names the offending path.
        """
        result: Document = structure(data, cls, what="document")
        return result


def _structure_doc_content(value: Any, _: Any) -> DocContent:
    block = structure_block(value)
    if not isinstance(block, TextBlock | ImageBlock | VideoBlock):
        raise MessageFormatError(
            f"a document holds a text, image or video block, not a {block.type!r} block",
            path="type",
        )
    return block


# A union is registered through a predicate: registering it directly would register the hook
# for each member instead.
converter.register_structure_hook_func(lambda t: t == DocContent, _structure_doc_content)
