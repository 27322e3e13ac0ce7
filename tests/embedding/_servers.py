"""A local embedding server on 127.0.0.1 speaking OpenAI's, DashScope's, Gemini's and Ollama's
embedding protocols.

It computes a deterministic vector per text (from its SHA-256), so tests can check which
vector came back for which text, checks each provider's API key the way the provider does
(answering with the provider's own error body, which quotes the bad key as some providers'
messages do), enforces the providers' limits on texts per request (DashScope 10, Gemini 100,
OpenAI 2048), and can be told to fail the next
requests (e.g. a 429 with ``Retry-After``). Every request is recorded.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import deque
from typing import Any

import attrs

from .._local_http import LocalHTTPServer, QuietHandler, send_body, send_json

KEY = "sk-test-9f8e7d6c5b4a-secret"
"""The key the server accepts."""

DEFAULT_DIMENSIONS = 8


def vector(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The vector the server returns for *text*."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % 32] - 128) / 128.0 for i in range(dimensions)]


def tokens(texts: list[str]) -> int:
    """The token count the server reports: one per word."""
    return sum(len(t.split()) for t in texts)


@attrs.define
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


@attrs.define
class Failure:
    status: int
    body: Any
    """JSON, or bytes sent as they are."""
    headers: dict[str, str] = attrs.field(factory=dict)


class EmbeddingServer(LocalHTTPServer):
    """Serves all four protocols; use as a context manager."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.failures: deque[Failure] = deque()
        self._lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw) if raw else None
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.requests.append(Recorded(self.path, headers, body))
                    failure = server.failures.popleft() if server.failures else None
                if failure is not None:
                    self._send(failure.status, failure.body, failure.headers)
                    return
                status, answer = server.answer(self.path, headers, body)
                self._send(status, answer)

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                if isinstance(body, bytes):  # sent as it is, e.g. a gateway's HTML page
                    send_body(self, status, body, "text/html", headers)
                else:
                    send_json(self, status, body, headers)

        super().__init__(Handler)

    def fail(self, *failures: Failure) -> None:
        """Answer the next requests with these failures, in order."""
        self.failures.extend(failures)

    # -- the protocols ------------------------------------------------------------------

    def answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        if path == "/v1/embeddings":
            return self._openai(headers, body)
        if path == "/api/v1/services/embeddings/text-embedding/text-embedding":
            return self._dashscope(headers, body)
        match = re.fullmatch(r"/v1beta/models/([^/:]+):batchEmbedContents", path)
        if match:
            return self._gemini(match.group(1), headers, body)
        if path == "/api/embed":
            return self._ollama(body)
        return 404, {"error": f"no route {path}"}

    def _openai(self, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        given = headers.get("authorization", "").removeprefix("Bearer ")
        if given != KEY:
            return 401, {
                "error": {
                    "message": f"Incorrect API key provided: {given}.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            }
        texts = body["input"]
        if len(texts) > 2048:
            return 400, {
                "error": {
                    "message": "'$.input' is invalid. Please check the API reference: "
                    "https://platform.openai.com/docs/api-reference.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            }
        dims = body.get("dimensions") or DEFAULT_DIMENSIONS
        return 200, {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": vector(t, dims)}
                for i, t in enumerate(texts)
            ],
            "model": body["model"],
            "usage": {"prompt_tokens": tokens(texts), "total_tokens": tokens(texts)},
        }

    def _dashscope(self, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        given = headers.get("authorization", "").removeprefix("Bearer ")
        if given != KEY:
            return 401, {
                "code": "InvalidApiKey",
                "message": f"Invalid API-key provided: {given}",
                "request_id": "req-1",
            }
        texts = body["input"]["texts"]
        if len(texts) > 10:
            return 400, {
                "code": "InvalidParameter",
                "message": "batch size is invalid, it should not be larger than 10.",
                "request_id": "req-2",
            }
        dims = body.get("parameters", {}).get("dimension") or DEFAULT_DIMENSIONS
        items = [{"text_index": i, "embedding": vector(t, dims)} for i, t in enumerate(texts)]
        return 200, {
            # Out of order on purpose: clients must place vectors by text_index.
            "output": {"embeddings": items[::-1]},
            "usage": {"total_tokens": tokens(texts)},
            "request_id": "req-3",
        }

    def _gemini(self, model: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        if headers.get("x-goog-api-key") != KEY:
            return 400, {
                "error": {
                    "code": 400,
                    "message": "API key not valid. Please pass a valid API key.",
                    "status": "INVALID_ARGUMENT",
                }
            }
        if len(body["requests"]) > 100:
            return 400, {
                "error": {
                    "code": 400,
                    "message": "* BatchEmbedContentsRequest.requests: at most 100 requests can "
                    "be in one batch\n",
                    "status": "INVALID_ARGUMENT",
                }
            }
        out = []
        for request in body["requests"]:
            if request["model"] != f"models/{model}":
                return 400, {"error": {"code": 400, "message": "model mismatch"}}
            text = "".join(p["text"] for p in request["content"]["parts"])
            dims = request.get("outputDimensionality") or DEFAULT_DIMENSIONS
            out.append({"values": vector(text, dims)})
        return 200, {"embeddings": out}

    def _ollama(self, body: Any) -> tuple[int, Any]:
        if body["model"] != "nomic-embed-text":
            return 404, {"error": f'model "{body["model"]}" not found, try pulling it first'}
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dims = body.get("dimensions") or DEFAULT_DIMENSIONS
        return 200, {
            "model": body["model"],
            "embeddings": [vector(t, dims) for t in texts],
            "total_duration": 14143917,
            "load_duration": 1019500,
            "prompt_eval_count": tokens(texts),
        }


MULTIMODAL_PATH = "/api/v1/services/embeddings/multimodal-embedding/multimodal-embedding"

MULTIMODAL_LIMITS = {
    "tongyi-embedding-vision-plus": (8, 1152),
    "tongyi-embedding-vision-flash": (8, 768),
    "multimodal-embedding-v1": (1, 1024),
}
"""Contents per request and default vector length of the multimodal models the server knows."""

IMAGE_TOKENS = 100
"""The ``image_tokens`` the multimodal server reports per image."""


def content_vector(content: dict[str, str], dimensions: int) -> list[float]:
    """The vector the multimodal server returns for one ``input.contents`` item."""
    return vector(json.dumps(content, sort_keys=True), dimensions)


class MultiModalEmbeddingServer(EmbeddingServer):
    """:class:`EmbeddingServer` that also speaks DashScope's multimodal embedding protocol.

    It checks the key, enforces each model's contents-per-request limit (unknown models get
    DashScope's ``Model not exist``), returns ``output.embeddings`` in reverse order (each with
    its ``index``), and reports ``input_tokens`` (one per word of text) and ``image_tokens``
    (:data:`IMAGE_TOKENS` per image).
    """

    def answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        if path != MULTIMODAL_PATH:
            return super().answer(path, headers, body)
        given = headers.get("authorization", "").removeprefix("Bearer ")
        if given != KEY:
            return 401, {
                "code": "InvalidApiKey",
                "message": f"Invalid API-key provided: {given}",
                "request_id": "req-mm-1",
            }
        limits = MULTIMODAL_LIMITS.get(body.get("model"))
        if limits is None:
            return 400, {
                "code": "InvalidParameter",
                "message": "Model not exist.",
                "request_id": "req-mm-2",
            }
        batch, default_dims = limits
        contents = body["input"]["contents"]
        if len(contents) > batch:
            return 400, {
                "code": "InvalidParameter",
                "message": f"the number of contents should not be larger than {batch}.",
                "request_id": "req-mm-3",
            }
        dims = body.get("parameters", {}).get("dimension") or default_dims
        items = [
            {
                "index": i,
                "embedding": content_vector(c, dims),
                "type": next(iter(c)),
            }
            for i, c in enumerate(contents)
        ]
        images = sum(1 for c in contents if "image" in c)
        return 200, {
            # Out of order on purpose: clients must place vectors by index.
            "output": {"embeddings": items[::-1]},
            "usage": {
                "input_tokens": tokens([c["text"] for c in contents if "text" in c]),
                "image_tokens": IMAGE_TOKENS * images,
                "image_count": images,
            },
            "request_id": "req-mm-4",
        }
