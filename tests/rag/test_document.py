"""Documents: content-derived ids, dict-style metadata, JSON round trips through the converter."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentscope_rt.exception import MessageFormatError
from agentscope_rt.message import Base64Source, ImageBlock, TextBlock, ToolUseBlock
from agentscope_rt.rag import DocMetadata, Document, chunk_id_of


def _doc(text: str = "hello", doc_id: str = "d", chunk_id: int = 0) -> Document:
    return Document(
        DocMetadata(TextBlock(text=text), doc_id=doc_id, chunk_id=chunk_id, total_chunks=2)
    )


def test_the_default_id_is_derived_from_doc_id_position_and_content() -> None:
    # The scheme AgentScope's QdrantStore uses for point ids: uuid3 over this exact JSON.
    expected = str(
        uuid.uuid3(
            uuid.NAMESPACE_DNS,
            json.dumps(
                {"doc_id": "d", "chunk_id": 0, "content": {"type": "text", "text": "hello"}},
                ensure_ascii=False,
            ),
        )
    )
    assert _doc().id == expected == chunk_id_of("d", 0, {"type": "text", "text": "hello"})
    assert _doc().id == _doc().id
    assert len({_doc().id, _doc("other").id, _doc(doc_id="e").id, _doc(chunk_id=1).id}) == 4


def test_metadata_reads_like_agentscopes_dict() -> None:
    meta = _doc().metadata
    assert meta["content"] == {"type": "text", "text": "hello"}
    assert meta.get("doc_id") == "d" and meta.get("nope", 7) == 7
    assert "chunk_id" in meta and "nope" not in meta
    assert dict(meta) == {
        "content": meta.content,
        "doc_id": "d",
        "chunk_id": 0,
        "total_chunks": 2,
    }
    meta["chunk_id"] = 1
    assert meta.chunk_id == 1
    with pytest.raises(KeyError):
        meta["nope"]
    with pytest.raises(KeyError):
        meta["nope"] = 1


def test_documents_round_trip_through_json() -> None:
    image = ImageBlock(source=Base64Source(media_type="image/png", data="AAAA"))
    docs = [
        Document(DocMetadata(image, "img", 0, 1), embedding=[0.5, 1.0], score=0.25),
        _doc("你好"),
    ]
    for doc in docs:
        data = json.loads(json.dumps(doc.to_dict()))
        assert Document.from_dict(data) == doc
        assert DocMetadata.from_dict(data["metadata"]) == doc.metadata


def test_malformed_documents_name_the_path() -> None:
    data = _doc().to_dict()
    data["metadata"]["content"] = ToolUseBlock(id="1", name="f", input={}).to_dict()
    with pytest.raises(MessageFormatError, match=r"metadata\.content"):
        Document.from_dict(data)
    data = _doc().to_dict()
    data["embedding"] = ["x"]
    with pytest.raises(MessageFormatError, match=r"embedding\[0\]"):
        Document.from_dict(data)


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(exclude_categories=["Cs"])))
def test_chunk_ids_are_uuid3_of_the_key(name: str) -> None:
    # The hand-built version-3 UUID equals the standard library's for any name.
    from agentscope_rt.rag._document import _uuid3_dns

    assert _uuid3_dns(name) == str(uuid.uuid3(uuid.NAMESPACE_DNS, name))


def test_content_in_agentscopes_dict_form_becomes_a_block() -> None:
    # AgentScope's TextBlock is a TypedDict: ported code builds DocMetadata with a dict.
    meta = DocMetadata(
        content={"type": "text", "text": "hi"}, doc_id="d", chunk_id=0, total_chunks=1
    )
    assert isinstance(meta.content, TextBlock) and meta.content.text == "hi"
    assert Document(meta).id == chunk_id_of("d", 0, TextBlock(text="hi"))
    meta["content"] = {"type": "image", "source": {"type": "url", "url": "http://x/a.png"}}
    assert isinstance(meta.content, ImageBlock)
    with pytest.raises(MessageFormatError, match="tool_use"):
        DocMetadata(ToolUseBlock(id="1", name="f", input={}).to_dict(), "d", 0, 1)
    with pytest.raises(TypeError, match="TextBlock, ImageBlock or VideoBlock"):
        DocMetadata("plain text", "d", 0, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not NoneType"):
        DocMetadata(None, "d", 0, 1)  # type: ignore[arg-type]


def test_metadata_items_and_values_as_a_dict() -> None:
    meta = _doc().metadata
    assert meta.items() == list(dict(meta).items())
    assert meta.values() == [meta.content, "d", 0, 2]
