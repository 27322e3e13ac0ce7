"""The provider embedding models against a local server speaking each provider's protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from agentscope_rt.embedding import (
    DashScopeTextEmbedding,
    EmbeddingModelBase,
    FileEmbeddingCache,
    GeminiTextEmbedding,
    OllamaTextEmbedding,
    OpenAITextEmbedding,
)
from agentscope_rt.exception import ModelAPIError
from agentscope_rt.message import TextBlock
from agentscope_rt.model import RetryConfig

from ..model._wire_servers import free_port_url
from ._servers import DEFAULT_DIMENSIONS, KEY, EmbeddingServer, Failure, tokens, vector

FAST = RetryConfig(initial_delay=0.01, max_delay=0.05)
RATE_LIMITED = Failure(
    429,
    {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}},
    {"retry-after": "0"},
)


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as srv:
        yield srv


def openai(server: EmbeddingServer, key: str = KEY, **kwargs: Any) -> OpenAITextEmbedding:
    kwargs.setdefault("retry_config", FAST)
    return OpenAITextEmbedding(key, "text-embedding-3-small", base_url=f"{server.url}/v1", **kwargs)


def dashscope(server: EmbeddingServer, key: str = KEY, **kwargs: Any) -> DashScopeTextEmbedding:
    kwargs.setdefault("retry_config", FAST)
    return DashScopeTextEmbedding(
        key, "text-embedding-v4", 16, base_http_api_url=f"{server.url}/api/v1", **kwargs
    )


def gemini(server: EmbeddingServer, key: str = KEY, **kwargs: Any) -> GeminiTextEmbedding:
    kwargs.setdefault("retry_config", FAST)
    return GeminiTextEmbedding(key, "gemini-embedding-001", base_url=server.url, **kwargs)


def ollama(server: EmbeddingServer, **kwargs: Any) -> OllamaTextEmbedding:
    kwargs.setdefault("retry_config", FAST)
    return OllamaTextEmbedding("nomic-embed-text", 12, host=server.url, **kwargs)


# -- what every provider does alike ------------------------------------------------------


@attrs.frozen
class Provider:
    """One embedding provider's differences, as the tests below need them.

    :ivar model: builds the provider's model on the server, with the API key given (Ollama's
        takes none).
    :ivar dimensions: the length of the vectors it returns.
    :ivar fault: a server fault as the provider answers it, which is retried.
    :ivar bad_key: the status and the words of the provider's answer to a wrong key; ``None``
        for a provider without keys.
    """

    name: str
    model: Callable[[EmbeddingServer, str], Any]
    dimensions: int
    fault: Failure
    bad_key: tuple[int, str] | None = None


PROVIDERS = [
    Provider("openai", openai, 1024, RATE_LIMITED, (401, "Incorrect API key")),
    Provider(
        "dashscope",
        dashscope,
        16,
        Failure(503, {"code": "ServiceUnavailable", "message": "busy"}),
        (401, "Invalid API-key"),
    ),
    Provider(
        "gemini",
        gemini,
        DEFAULT_DIMENSIONS,  # the server's, when the request names none
        Failure(500, {"error": {"code": 500, "message": "internal"}}),
        (400, "API key not valid"),
    ),
    Provider("ollama", lambda server, key: ollama(server), 12, Failure(503, {"error": "busy"})),
]
WITH_KEYS = [p for p in PROVIDERS if p.bad_key is not None]


@pytest.mark.parametrize("provider", PROVIDERS, ids=[p.name for p in PROVIDERS])
async def test_a_server_fault_is_retried_then_succeeds(
    server: EmbeddingServer, provider: Provider
) -> None:
    server.fail(provider.fault)
    async with provider.model(server, KEY) as model:
        response = await model(["hello", "world"])
    assert response.embeddings == [vector(t, provider.dimensions) for t in ("hello", "world")]
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", WITH_KEYS, ids=[p.name for p in WITH_KEYS])
async def test_a_bad_key_fails_at_once_and_never_shows(
    server: EmbeddingServer, provider: Provider
) -> None:
    # The server quotes the wrong key in its error, as OpenAI and DashScope do.
    bad = "sk-wrong-1234567890-secret"
    model = provider.model(server, bad)
    with pytest.raises(ModelAPIError) as info:
        await model(["hello"])
    await model.aclose()
    assert provider.bad_key is not None
    status, words = provider.bad_key
    assert info.value.status_code == status and info.value.attempts == 1
    assert words in str(info.value)
    assert bad not in str(info.value) and bad not in repr(info.value)
    assert bad not in repr(model) and bad not in str(model)
    assert len(server.requests) == 1


# -- OpenAI ------------------------------------------------------------------------------


async def test_openai_sends_agentscopes_request_and_returns_vectors_in_order(
    server: EmbeddingServer,
) -> None:
    texts = ["alpha beta", "gamma", "delta epsilon zeta"]
    async with openai(server, dimensions=6) as model:
        response = await model([texts[0], TextBlock(texts[1]), {"type": "text", "text": texts[2]}])
    assert response.embeddings == [vector(t, 6) for t in texts]
    assert response.source == "api" and response.type == "embedding"
    assert response.usage is not None and response.usage.tokens == tokens(texts)
    assert response.usage.time >= 0
    (request,) = server.requests
    assert request.body == {
        "input": texts,
        "model": "text-embedding-3-small",
        "dimensions": 6,
        "encoding_format": "float",
    }
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_openai_extra_arguments_go_into_the_request(server: EmbeddingServer) -> None:
    async with openai(server) as model:
        await model(["x"], user="u-1")
    assert server.requests[0].body["user"] == "u-1"


async def test_openai_sends_at_most_2048_texts_per_request(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    # OpenAI refuses more than 2048 inputs in one request; a knowledge base embeds all its
    # chunks in one call. Longer lists go out in consecutive requests, each cached.
    texts = [f"chunk {i}" for i in range(2048 + 5)]
    cache = FileEmbeddingCache(str(tmp_path))
    async with openai(server, dimensions=4, embedding_cache=cache) as model:
        response = await model(texts)
        assert [len(r.body["input"]) for r in server.requests] == [2048, 5]
        assert response.embeddings == [vector(t, 4) for t in texts]
        assert response.usage is not None and response.usage.tokens == tokens(texts)
        assert response.source == "api"
        again = await model(texts)
        assert len(server.requests) == 2 and again.source == "cache"
        assert again.embeddings == response.embeddings
        # Up to 2048, one request with AgentScope's body, as before.
        await model(texts[:2048], user="u")
        assert server.requests[-1].body["input"] == texts[:2048]


async def test_openai_gives_up_after_the_retry_budget(server: EmbeddingServer) -> None:
    server.fail(RATE_LIMITED, RATE_LIMITED, RATE_LIMITED)
    async with openai(server, retry_config=RetryConfig(max_retries=2, initial_delay=0.01)) as m:
        with pytest.raises(ModelAPIError) as info:
            await m(["hello"])
    assert info.value.status_code == 429 and info.value.attempts == 3


@pytest.mark.parametrize(
    "answer",
    [b"<html><body>502 Bad Gateway</body></html>", {"object": "list", "data": "none"}, [1, 2]],
    ids=["html", "wrong-shape", "list"],
)
async def test_openai_a_200_answer_that_is_not_embeddings_is_retried_then_a_model_api_error(
    server: EmbeddingServer, answer: Any
) -> None:
    server.fail(Failure(200, answer))
    async with openai(server, retry_config=RetryConfig(max_retries=2, initial_delay=0.01)) as model:
        response = await model(["hello"])
        assert response.embeddings == [vector("hello", 1024)]
        server.fail(*[Failure(200, answer)] * 3)
        with pytest.raises(ModelAPIError) as info:
            await model(["hello"])
    assert info.value.status_code == 200 and info.value.attempts == 3
    assert len(server.requests) == 5


@pytest.mark.parametrize(
    ("make", "answer"),
    [
        (dashscope, {"output": {"embeddings": [{"text_index": "first", "embedding": [1.0]}]}}),
        (dashscope, {"output": {"embeddings": ["not an object"]}}),
        (gemini, {"embeddings": ["not an object"]}),
        (gemini, {"embeddings": [{"values": ["not a number"]}]}),
        (ollama, {"embeddings": [["not a number"]]}),
        (ollama, {"embeddings": [7]}),
    ],
)
async def test_an_answer_of_the_wrong_shape_is_a_model_api_error(
    server: EmbeddingServer, make: Any, answer: Any
) -> None:
    server.fail(Failure(200, answer))
    async with make(server) as model:
        with pytest.raises(ModelAPIError, match="expected shape") as info:
            await model(["hello"])
        assert KEY not in str(info.value)
        # The next answer is used as usual.
        assert len((await model(["hello"])).embeddings) == 1


async def test_openai_rejects_input_that_is_not_text(server: EmbeddingServer) -> None:
    async with openai(server) as model:
        with pytest.raises(ValueError, match="item 1 is a int"):
            await model(["ok", 3])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="wrap it in a list"):
            await model("just a string")  # type: ignore[arg-type]
        empty = await model([])
    assert empty.embeddings == [] and server.requests == []


def test_openai_needs_a_key_or_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAITextEmbedding(None, "text-embedding-3-small")


# -- DashScope ---------------------------------------------------------------------------


async def test_dashscope_sends_batches_of_ten_with_dimension_singular(
    server: EmbeddingServer,
) -> None:
    texts = [f"text number {i}" for i in range(23)]
    async with dashscope(server) as model:
        response = await model(texts)
    assert response.embeddings == [vector(t, 16) for t in texts]
    assert [len(r.body["input"]["texts"]) for r in server.requests] == [10, 10, 3]
    assert server.requests[0].body == {
        "model": "text-embedding-v4",
        "input": {"texts": texts[:10]},
        "parameters": {"dimension": 16},
    }
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.requests)
    assert response.usage is not None and response.usage.tokens == tokens(texts)
    assert response.source == "api"


async def test_dashscope_extra_arguments_are_parameters(server: EmbeddingServer) -> None:
    async with dashscope(server) as model:
        await model(["q"], text_type="query")
    assert server.requests[0].body["parameters"] == {"dimension": 16, "text_type": "query"}


async def test_dashscope_caches_each_batch_so_a_failed_call_resumes(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    texts = [f"t{i}" for i in range(25)]
    cache = FileEmbeddingCache(str(tmp_path))
    async with dashscope(server, embedding_cache=cache) as model:
        first = await model(texts[:10])
        assert first.source == "api"
        # The call's first batch is a cache hit; its second batch fails (a 400: no retry).
        server.fail(Failure(400, {"code": "InvalidParameter", "message": "bad input"}))
        with pytest.raises(ModelAPIError, match="bad input"):
            await model(texts)
        sent_before = len(server.requests)
        response = await model(texts)
    # The retried call skips the cached first batch: only batches two and three are sent.
    assert len(server.requests) - sent_before == 2
    assert response.embeddings == [vector(t, 16) for t in texts]
    assert response.source == "api"
    again = await model(texts)
    assert again.source == "cache" and again.embeddings == response.embeddings
    assert again.usage is not None and again.usage.tokens == 0 and again.usage.time == 0


def test_dashscope_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="DASHSCOPE_API_KEY"):
        DashScopeTextEmbedding(None, "text-embedding-v4")


# -- Gemini ------------------------------------------------------------------------------


async def test_gemini_batch_request_sends_no_dimensions_by_default(
    server: EmbeddingServer,
) -> None:
    texts = ["one", "two words"]
    async with gemini(server) as model:
        response = await model(texts)
    assert model.dimensions == 3072
    assert response.embeddings == [vector(t) for t in texts]
    assert response.usage is not None and response.usage.tokens is None
    (request,) = server.requests
    assert request.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert request.body == {
        "requests": [
            {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": t}]}}
            for t in texts
        ]
    }
    assert request.headers["x-goog-api-key"] == KEY and KEY not in request.path


async def test_gemini_sends_at_most_100_texts_per_request(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    # Gemini refuses more than 100 requests in one batchEmbedContents: longer lists go out in
    # consecutive batches of 100, each cached on its own.
    texts = [f"chunk {i}" for i in range(205)]
    cache = FileEmbeddingCache(str(tmp_path))
    async with gemini(server, embedding_cache=cache) as model:
        response = await model(texts, task_type="RETRIEVAL_DOCUMENT")
        assert [len(r.body["requests"]) for r in server.requests] == [100, 100, 5]
        assert response.embeddings == [vector(t) for t in texts]
        assert response.source == "api" and response.usage is not None
        assert response.usage.tokens is None
        again = await model(texts, task_type="RETRIEVAL_DOCUMENT")
        assert len(server.requests) == 3 and again.source == "cache"
        assert again.embeddings == response.embeddings


async def test_gemini_config_arguments_are_camel_cased(server: EmbeddingServer) -> None:
    async with gemini(server) as model:
        response = await model(["q"], task_type="RETRIEVAL_QUERY", output_dimensionality=5)
    assert response.embeddings == [vector("q", 5)]
    body = server.requests[0].body["requests"][0]
    assert body["taskType"] == "RETRIEVAL_QUERY" and body["outputDimensionality"] == 5


# -- Ollama ------------------------------------------------------------------------------


async def test_ollama_request_and_usage(server: EmbeddingServer) -> None:
    texts = ["why is the sky blue", "because of scattering"]
    async with ollama(server) as model:
        response = await model(texts, keep_alive="1m")
    assert response.embeddings == [vector(t, 12) for t in texts]
    assert response.usage is not None and response.usage.tokens == tokens(texts)
    assert server.requests[0].body == {
        "input": texts,
        "model": "nomic-embed-text",
        "dimensions": 12,
        "keep_alive": "1m",
    }


async def test_a_large_answer_is_decoded_in_a_worker_thread(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 2,000 vectors of 768 numbers are 31 MB of JSON, half a second to decode: off the loop.
    import threading

    import httpx

    threads: list[int] = []
    decode = httpx.Response.json

    def recording_json(self: httpx.Response, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return decode(self, **kwargs)

    monkeypatch.setattr(httpx.Response, "json", recording_json)
    texts = [f"text {i}" for i in range(200)]
    async with OllamaTextEmbedding(
        "nomic-embed-text", 1024, host=server.url, retry_config=FAST
    ) as model:
        response = await model(texts)
        assert response.embeddings == [vector(t, 1024) for t in texts]
        assert threads and threading.get_ident() not in threads
        threads.clear()
        await model(["small"])  # a small answer is decoded where it arrives
        assert threads == [threading.get_ident()]


async def test_ollama_reports_a_model_it_does_not_have(server: EmbeddingServer) -> None:
    async with OllamaTextEmbedding("missing", 4, host=server.url, retry_config=FAST) as model:
        with pytest.raises(ModelAPIError, match="not found, try pulling it first") as info:
            await model(["a"])
    assert info.value.status_code == 404


async def test_a_connection_failure_is_a_model_api_error() -> None:
    model = OllamaTextEmbedding(
        "nomic-embed-text",
        4,
        host=free_port_url(),
        retry_config=RetryConfig(max_retries=1, initial_delay=0.01),
    )
    with pytest.raises(ModelAPIError) as info:
        await model(["a"])
    await model.aclose()
    assert info.value.status_code is None and info.value.attempts == 2


# -- every provider ----------------------------------------------------------------------


def all_models(server: EmbeddingServer, cache: FileEmbeddingCache) -> list[EmbeddingModelBase]:
    return [
        openai(server, embedding_cache=cache),
        dashscope(server, embedding_cache=cache),
        gemini(server, embedding_cache=cache),
        ollama(server, embedding_cache=cache),
    ]


async def test_a_cache_hit_skips_the_provider(server: EmbeddingServer, tmp_path: Path) -> None:
    cache = FileEmbeddingCache(str(tmp_path))
    for model in all_models(server, cache):
        first = await model(["cached text", "another"])
        sent = len(server.requests)
        second = await model(["cached text", "another"])
        assert len(server.requests) == sent, type(model).__name__
        assert second.source == "cache" and second.embeddings == first.embeddings
        assert second.usage is not None and (second.usage.tokens, second.usage.time) == (0, 0)
        await model.aclose()  # type: ignore[attr-defined]


async def test_concurrent_identical_requests_make_one_call(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    cache = FileEmbeddingCache(str(tmp_path))
    for model in all_models(server, cache):
        before = len(server.requests)
        results: list[Any] = []

        async def embed(model: EmbeddingModelBase = model, results: list[Any] = results) -> None:
            results.append(await model(["same", "texts"]))

        async with anyio.create_task_group() as tg:
            for _ in range(6):
                tg.start_soon(embed)
        assert len(server.requests) - before == 1, type(model).__name__
        assert sorted(r.source for r in results) == ["api"] + ["cache"] * 5
        assert all(r.embeddings == results[0].embeddings for r in results)
        await model.aclose()  # type: ignore[attr-defined]


async def test_a_failed_leader_lets_the_next_waiter_call(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    cache = FileEmbeddingCache(str(tmp_path))
    model = ollama(server, embedding_cache=cache, retry_config=RetryConfig(max_retries=0))
    server.fail(Failure(503, {"error": "busy"}))
    outcomes: list[str] = []

    async def embed() -> None:
        try:
            await model(["z"])
            outcomes.append("ok")
        except ModelAPIError:
            outcomes.append("error")

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(embed)
    await model.aclose()
    assert sorted(outcomes) == ["error", "ok", "ok"]
    assert len(server.requests) == 2


def test_no_model_shows_its_key_in_its_repr(server: EmbeddingServer, tmp_path: Path) -> None:
    for model in all_models(server, FileEmbeddingCache(str(tmp_path))):
        assert KEY not in repr(model) and KEY not in str(model)
        assert type(model).__name__ in repr(model)


def test_unknown_constructor_arguments_fail_at_once() -> None:
    with pytest.raises(TypeError, match=r"OllamaTextEmbedding: .*vertexai"):
        OllamaTextEmbedding("nomic-embed-text", 4, vertexai=True)
    with pytest.raises(TypeError, match="GeminiTextEmbedding"):
        GeminiTextEmbedding("key", "gemini-embedding-001", project="p")


async def test_an_answer_with_too_few_vectors_is_an_error_and_is_not_cached(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    # A provider answering 200 with one vector for two texts: the call fails naming the
    # counts, instead of returning (and caching, for every later call) a short list.
    one = vector("a")
    short_answers: list[tuple[EmbeddingModelBase, Any]] = [
        (
            openai(server, embedding_cache=FileEmbeddingCache(str(tmp_path / "o"))),
            {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": one}]},
        ),
        (
            gemini(server, embedding_cache=FileEmbeddingCache(str(tmp_path / "g"))),
            {"embeddings": [{"values": one}]},
        ),
        (
            ollama(server, embedding_cache=FileEmbeddingCache(str(tmp_path / "l"))),
            {"model": "nomic-embed-text", "embeddings": [one]},
        ),
    ]
    for model, answer in short_answers:
        server.fail(Failure(200, answer))
        with pytest.raises(ModelAPIError, match="expected 2 embeddings, got 1"):
            await model(["a", "b"])
        again = await model(["a", "b"])
        assert again.source == "api" and len(again.embeddings) == 2, type(model).__name__
        await model.aclose()  # type: ignore[attr-defined]
