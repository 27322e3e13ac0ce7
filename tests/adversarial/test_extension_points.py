"""Extension points get what AgentScope gives them.

Each class here is written the way AgentScope 1.x's own tests and examples write it (only
the imports renamed), then used with this package's components: what such a class relies on
(dict blocks for an embedding model, a memory base without ``update_messages_mark``, a
session without ``user_id``, ...) must hold here too.
"""

from __future__ import annotations

import json
import math
from typing import Any

from agentscope_rt.embedding import EmbeddingModelBase, EmbeddingResponse
from agentscope_rt.message import ImageBlock, TextBlock, URLSource
from agentscope_rt.rag import DocMetadata, Document, QdrantStore, SimpleKnowledge

# -- embedding models ---------------------------------------------------------------------


class TestTextEmbedding(EmbeddingModelBase):
    """AgentScope's tests/rag_knowledge_test.py mock, as written there."""

    __test__ = False  # not a pytest class, despite its (AgentScope's) name

    supported_modalities: list[str] = ["text"]  # noqa: RUF012 - as AgentScope writes it
    """This class only supports text input."""

    def __init__(self) -> None:
        """The constructor for the mock text embedding model."""
        super().__init__(model_name="mock-model", dimensions=3)

    async def __call__(
        self,
        text: list[TextBlock | str],
        **kwargs: Any,
    ) -> EmbeddingResponse:
        """Return a fixed embedding for testing."""
        embeddings = []
        for t in text:
            if isinstance(t, dict):
                t = t.get("text")
            if t == "This is an apple":
                embeddings.append([0.1, 0.2, 0.3])
            elif t == "This is a banana":
                embeddings.append([0.9, 0.1, 0.4])
            elif t == "apple":
                embeddings.append([0.15, 0.25, 0.35])

        return EmbeddingResponse(
            embeddings=embeddings,
        )


def text_doc(text: str, chunk_id: int) -> Document:
    return Document(
        metadata=DocMetadata(
            content=TextBlock(type="text", text=text),
            doc_id="doc1",
            chunk_id=chunk_id,
            total_chunks=2,
        ),
    )


async def test_an_agentscope_embedding_model_gets_dict_blocks_from_simple_knowledge() -> None:
    knowledge = SimpleKnowledge(
        embedding_model=TestTextEmbedding(),
        embedding_store=QdrantStore(location=":memory:", collection_name="test", dimensions=3),
    )
    await knowledge.add_documents(
        [text_doc("This is an apple", 1), text_doc("This is a banana", 2)]
    )
    res = await knowledge.retrieve(query="apple", limit=3, score_threshold=0.7)
    assert len(res) == 1
    assert res[0].metadata.content["text"] == "This is an apple"
    assert res[0].score is not None and math.isclose(res[0].score, 0.9974, abs_tol=1e-4)


class ImageAndTextEmbedding(EmbeddingModelBase):
    """A multimodal model in AgentScope's style: blocks are dicts, sources too."""

    supported_modalities: list[str] = ["text", "image"]  # noqa: RUF012

    def __init__(self) -> None:
        super().__init__(model_name="mock-multimodal", dimensions=2)
        self.seen: list[Any] = []

    async def __call__(self, text: list[Any], **kwargs: Any) -> EmbeddingResponse:
        embeddings = []
        for item in text:
            self.seen.append(item)
            assert isinstance(item, dict), f"got a {type(item).__name__}"
            if item["type"] == "image":
                source = item["source"]
                assert isinstance(source, dict) and source["type"] == "url"
                json.dumps(item)  # AgentScope's blocks are JSON data as they are
                embeddings.append([1.0, 0.0])
            else:
                embeddings.append([0.0, 1.0])
        return EmbeddingResponse(embeddings=embeddings)


async def test_an_agentscope_multimodal_model_gets_dict_blocks_with_dict_sources() -> None:
    model = ImageAndTextEmbedding()
    async with QdrantStore(":memory:", "mm", dimensions=2) as store:
        knowledge = SimpleKnowledge(embedding_store=store, embedding_model=model)
        image = ImageBlock(type="image", source=URLSource(type="url", url="https://e.x/a.png"))
        await knowledge.add_documents(
            [
                Document(
                    metadata=DocMetadata(content=image, doc_id="d", chunk_id=0, total_chunks=2)
                ),
                text_doc("a caption", 1),
            ]
        )
        found = await knowledge.retrieve("a caption", limit=1)
    assert found[0].metadata.content["text"] == "a caption"
    assert model.seen[0] == {"type": "image", "source": {"type": "url", "url": "https://e.x/a.png"}}
    assert model.seen[-1] == {"type": "text", "text": "a caption"}
    # The package's own blocks are untouched: the store kept real blocks.
    assert isinstance(found[0].metadata.content, TextBlock)
