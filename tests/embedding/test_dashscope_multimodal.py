"""DashScopeMultiModalEmbedding against a local server speaking DashScope's multimodal
embedding protocol (the request the ``dashscope`` SDK's ``MultiModalEmbedding.call`` sends)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.embedding import DashScopeMultiModalEmbedding, FileEmbeddingCache
from agentscope_rt.exception import ModelAPIError
from agentscope_rt.formatter import allow_local_files
from agentscope_rt.message import (
    AudioBlock,
    Base64Source,
    ImageBlock,
    TextBlock,
    URLSource,
    VideoBlock,
)
from agentscope_rt.model import RetryConfig
from agentscope_rt.rag import DocMetadata, Document, QdrantStore, SimpleKnowledge

from ._servers import (
    IMAGE_TOKENS,
    KEY,
    MULTIMODAL_PATH,
    Failure,
    MultiModalEmbeddingServer,
    content_vector,
    tokens,
)

FAST = RetryConfig(initial_delay=0.01, max_delay=0.05)
IMAGE_URL = "https://example.com/cat.png"
VIDEO_URL = "https://example.com/clip.mp4"
PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5E"
    "rkJggg=="
)


@pytest.fixture
def server() -> Iterator[MultiModalEmbeddingServer]:
    with MultiModalEmbeddingServer() as srv:
        yield srv


def model(
    server: MultiModalEmbeddingServer,
    model_name: str = "tongyi-embedding-vision-plus",
    key: str = KEY,
    **kwargs: Any,
) -> DashScopeMultiModalEmbedding:
    kwargs.setdefault("retry_config", FAST)
    return DashScopeMultiModalEmbedding(
        key, model_name, base_http_api_url=f"{server.url}/api/v1", **kwargs
    )


# -- the request ---------------------------------------------------------------------------


async def test_sends_the_sdks_request_for_text_url_image_base64_image_and_url_video(
    server: MultiModalEmbeddingServer,
) -> None:
    inputs: list[Any] = [
        TextBlock(text="a cat on a mat"),
        ImageBlock(source=URLSource(url=IMAGE_URL)),
        ImageBlock(source=Base64Source(media_type="image/png", data=PNG_B64)),
        VideoBlock(source=URLSource(url=VIDEO_URL)),
    ]
    contents = [
        {"text": "a cat on a mat"},
        {"image": IMAGE_URL},
        {"image": f"data:image/png;base64,{PNG_B64}"},
        {"video": VIDEO_URL},
    ]
    async with model(server) as m:
        response = await m(inputs)
    (request,) = server.requests
    assert request.path == MULTIMODAL_PATH
    assert request.body == {
        "model": "tongyi-embedding-vision-plus",
        "input": {"contents": contents},
        "parameters": {},
    }
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["content-type"] == "application/json"
    assert response.embeddings == [content_vector(c, 1152) for c in contents]
    assert response.source == "api"
    assert response.usage is not None
    assert response.usage.tokens == tokens(["a cat on a mat"]) + 2 * IMAGE_TOKENS


async def test_agentscope_style_dict_blocks_and_call_parameters(
    server: MultiModalEmbeddingServer,
) -> None:
    inputs: list[Any] = [
        {"type": "text", "text": "hello"},
        {"type": "image", "source": {"type": "url", "url": IMAGE_URL}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QQ=="}},
        {"type": "video", "source": {"type": "url", "url": VIDEO_URL}},
    ]
    async with model(server) as m:
        response = await m(inputs, fps=0.5, dimension=256)
    (request,) = server.requests
    assert request.body["input"]["contents"] == [
        {"text": "hello"},
        {"image": IMAGE_URL},
        {"image": "data:image/png;base64,QQ=="},
        {"video": VIDEO_URL},
    ]
    assert request.body["parameters"] == {"fps": 0.5, "dimension": 256}
    assert [len(v) for v in response.embeddings] == [256] * 4


async def test_vectors_are_placed_by_index(server: MultiModalEmbeddingServer) -> None:
    texts = ["first", "second", "third"]
    async with model(server, "tongyi-embedding-vision-flash") as m:
        response = await m([TextBlock(text=t) for t in texts])
    # The server answers in reverse order; the vectors still follow the inputs.
    assert response.embeddings == [content_vector({"text": t}, 768) for t in texts]


# -- per-model batches and dimensions ---------------------------------------------------------


@pytest.mark.parametrize(
    ("model_name", "batch", "dims", "sizes"),
    [
        ("tongyi-embedding-vision-plus", 8, 1152, [8, 8, 4]),
        ("tongyi-embedding-vision-flash", 8, 768, [8, 8, 4]),
        ("multimodal-embedding-v1", 1, 1024, [1] * 20),
    ],
)
async def test_batches_follow_the_model_family(
    server: MultiModalEmbeddingServer, model_name: str, batch: int, dims: int, sizes: list[int]
) -> None:
    inputs = [TextBlock(text=f"text {i}") for i in range(20)]
    async with model(server, model_name) as m:
        assert m.batch_size_limit == batch and m.dimensions == dims
        response = await m(inputs)
    assert [len(r.body["input"]["contents"]) for r in server.requests] == sizes
    assert response.embeddings == [content_vector({"text": f"text {i}"}, dims) for i in range(20)]
    assert response.usage is not None and response.usage.tokens == 40


def test_other_models_send_one_content_per_request_and_default_to_1024() -> None:
    m = DashScopeMultiModalEmbedding(KEY, "qwen3-vl-embedding")
    assert m.batch_size_limit == 1 and m.dimensions == 1024
    m = DashScopeMultiModalEmbedding(KEY, "qwen3-vl-embedding", dimensions=2560)
    assert m.batch_size_limit == 1 and m.dimensions == 2560
    assert m.supported_modalities == ["text", "image", "video"]


@pytest.mark.parametrize(
    ("model_name", "required"),
    [
        ("tongyi-embedding-vision-plus", 1152),
        ("tongyi-embedding-vision-flash-2026-01-01", 768),
        ("multimodal-embedding-v1", 1024),
    ],
)
def test_a_wrong_dimension_names_the_model_and_the_required_value(
    model_name: str, required: int
) -> None:
    with pytest.raises(ValueError, match=f"{model_name} must be {required}"):
        DashScopeMultiModalEmbedding(KEY, model_name, dimensions=512)
    assert DashScopeMultiModalEmbedding(KEY, model_name, dimensions=required).dimensions == required


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            VideoBlock(source=Base64Source(media_type="video/mp4", data="AAAA")),
            "URL input for video",
        ),
        ({"type": "video", "source": {"type": "base64", "data": "x"}}, "URL input for video"),
        ({"type": "video"}, "URL input for video"),
        (AudioBlock(source=URLSource(url="https://example.com/a.mp3")), "AudioBlock"),
        ({"type": "image", "source": {"type": "file", "path": "/x.png"}}, "image block without"),
        ({"type": "image", "source": {"type": "base64", "data": "QQ=="}}, "image block without"),
        ({"type": "text"}, "text block without"),
        ({"text": "no type"}, "type None"),
        (42, "int"),
    ],
)
async def test_a_bad_block_in_the_middle_sends_nothing(
    server: MultiModalEmbeddingServer, bad: Any, message: str
) -> None:
    inputs = [TextBlock(text=f"t{i}") for i in range(10)]
    inputs.insert(9, bad)
    async with model(server) as m:
        with pytest.raises(ValueError, match=message) as info:
            await m(inputs)
    assert "inputs[9]" in str(info.value)
    assert server.requests == []


async def test_a_local_image_file_is_sent_inline_and_a_local_video_is_refused(
    server: MultiModalEmbeddingServer, tmp_path: Path
) -> None:
    # The server cannot read the caller's disk: a path or file:// URL to an image goes as a
    # data URL (media type from the extension, else from the bytes); a local video, a missing
    # file or a file that is not an image is refused before any request.
    import base64

    png = base64.b64decode(PNG_B64)
    (tmp_path / "cat.png").write_bytes(png)
    (tmp_path / "noext").write_bytes(png)
    (tmp_path / "notes.txt").write_text("not an image")
    inline = f"data:image/png;base64,{PNG_B64}"
    # Local files are read only from folders the application allows.
    with allow_local_files(tmp_path):
        async with model(server) as m:
            await m(
                [
                    ImageBlock(source=URLSource(url=str(tmp_path / "cat.png"))),
                    ImageBlock(source=URLSource(url=f"file://{tmp_path / 'noext'}")),
                ]
            )
            (request,) = server.requests
            assert request.body["input"]["contents"] == [{"image": inline}, {"image": inline}]
            bad = [
                (VideoBlock(source=URLSource(url=str(tmp_path / "clip.mp4"))), "web URLs only"),
                (ImageBlock(source=URLSource(url=str(tmp_path / "missing.png"))), "does not exist"),
                (ImageBlock(source=URLSource(url=str(tmp_path))), "not a regular file"),
                (ImageBlock(source=URLSource(url=str(tmp_path / "notes.txt"))), "not an image"),
            ]
            for block, message in bad:
                with pytest.raises(ValueError, match=message) as info:
                    await m([TextBlock(text="first"), block])
                assert "inputs[1]" in str(info.value)
        assert len(server.requests) == 1


async def test_a_single_block_not_in_a_list_is_refused(server: MultiModalEmbeddingServer) -> None:
    async with model(server) as m:
        with pytest.raises(ValueError, match="wrap it in a list"):
            await m(TextBlock(text="x"))  # type: ignore[arg-type]
    assert server.requests == []


async def test_an_empty_list_sends_nothing(server: MultiModalEmbeddingServer) -> None:
    async with model(server) as m:
        response = await m([])
    assert response.embeddings == [] and server.requests == []


# -- cache, errors, keys -------------------------------------------------------------------


async def test_each_batch_is_cached_and_a_repeat_skips_the_server(
    server: MultiModalEmbeddingServer, tmp_path: Path
) -> None:
    inputs: list[Any] = [
        ImageBlock(source=URLSource(url=f"https://example.com/{i}.png")) for i in range(12)
    ]
    cache = FileEmbeddingCache(str(tmp_path))
    async with model(server, embedding_cache=cache) as m:
        first = await m(inputs)
        assert first.source == "api" and len(server.requests) == 2
        again = await m(inputs)
        # A call whose first batch is cached sends only the second one.
        mixed = await m([*inputs[:8], TextBlock(text="new")])
    assert len(server.requests) == 3
    assert server.requests[2].body["input"]["contents"] == [{"text": "new"}]
    assert again.source == "cache" and again.embeddings == first.embeddings
    assert again.usage is not None and again.usage.tokens == 0 and again.usage.time == 0
    assert mixed.source == "api"
    assert mixed.embeddings == [*first.embeddings[:8], content_vector({"text": "new"}, 1152)]


async def test_a_server_error_is_retried_then_a_model_api_error_without_the_key(
    server: MultiModalEmbeddingServer,
) -> None:
    busy = Failure(500, {"code": "InternalError", "message": f"busy, key {KEY}"})
    server.fail(busy)
    async with model(server) as m:
        response = await m([TextBlock(text="x")])
        assert len(response.embeddings) == 1 and len(server.requests) == 2
        server.fail(busy, busy, busy, busy)
        with pytest.raises(ModelAPIError) as info:
            await m([TextBlock(text="y")])
    assert len(server.requests) == 6
    assert info.value.status_code == 500 and info.value.attempts == 4
    assert "busy" in str(info.value)
    assert KEY not in str(info.value) and KEY not in repr(info.value) and KEY not in repr(m)


async def test_a_bad_key_fails_at_once_and_is_redacted(server: MultiModalEmbeddingServer) -> None:
    bad = "sk-dashscope-wrong-888"
    async with model(server, key=bad) as m:
        with pytest.raises(ModelAPIError) as info:
            await m([TextBlock(text="x")])
    assert info.value.status_code == 401 and "Invalid API-key" in str(info.value)
    assert bad not in str(info.value) and bad not in repr(info.value) and bad not in repr(m)
    assert len(server.requests) == 1


async def test_a_short_answer_is_a_model_api_error(server: MultiModalEmbeddingServer) -> None:
    server.fail(Failure(200, {"output": {"embeddings": []}, "usage": {"input_tokens": 1}}))
    async with model(server) as m:
        with pytest.raises(ModelAPIError, match="expected 1 embeddings"):
            await m([TextBlock(text="x")])


def test_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="DASHSCOPE_API_KEY"):
        DashScopeMultiModalEmbedding(None, "multimodal-embedding-v1")


def test_base_url_and_key_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    monkeypatch.setenv("DASHSCOPE_HTTP_BASE_URL", "http://127.0.0.1:9/api/v1")
    m = DashScopeMultiModalEmbedding(None, "multimodal-embedding-v1")
    assert m.base_url == "http://127.0.0.1:9/api/v1" and KEY not in repr(m)


# -- in a knowledge base --------------------------------------------------------------------


async def test_simple_knowledge_embeds_an_image_document(
    server: MultiModalEmbeddingServer,
) -> None:
    image = ImageBlock(source=URLSource(url=IMAGE_URL))
    docs = [
        Document(DocMetadata(image, doc_id="img", chunk_id=0, total_chunks=1)),
        Document(DocMetadata(TextBlock(text="a dog"), doc_id="txt", chunk_id=0, total_chunks=1)),
    ]
    async with (
        model(server, "tongyi-embedding-vision-flash") as m,
        QdrantStore(":memory:", "kb", m.dimensions) as store,
    ):
        kb = SimpleKnowledge(embedding_store=store, embedding_model=m)
        await kb.add_documents(docs)
        assert docs[0].embedding == content_vector({"image": IMAGE_URL}, 768)
        (request,) = server.requests
        assert request.body["input"]["contents"] == [{"image": IMAGE_URL}, {"text": "a dog"}]
        hits = await kb.retrieve("a dog", limit=1)
    assert hits[0].metadata.content["text"] == "a dog"
    assert server.requests[-1].body["input"]["contents"] == [{"text": "a dog"}]


@pytest.mark.parametrize(
    "answer",
    [
        {"output": {"embeddings": [{"index": "first", "embedding": [1.0]}]}},
        {"output": {"embeddings": [{"index": 0, "embedding": ["not a number"]}]}},
        {"output": {"embeddings": [{"index": 0, "embedding": [1.0]}]}, "usage": "none"},
    ],
)
async def test_an_answer_of_the_wrong_shape_is_a_model_api_error(
    server: MultiModalEmbeddingServer, answer: Any
) -> None:
    server.fail(Failure(200, answer))
    async with model(server) as m:
        with pytest.raises(ModelAPIError, match="expected shape") as info:
            await m([TextBlock(text="x")])
        assert KEY not in str(info.value)
        assert len((await m([TextBlock(text="x")])).embeddings) == 1
