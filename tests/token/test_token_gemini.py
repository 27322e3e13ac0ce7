"""GeminiTokenCounter against a local server speaking Gemini's ``countTokens`` endpoint
(Gemini API and Vertex AI).

The server checks what the real endpoint checks: the path ``/v1beta/models/{model}:countTokens``,
the key in the ``x-goog-api-key`` header (never in the URL), a body holding either ``contents``
or a ``generateContentRequest`` (whose ``model`` is ``models/{model}``) but not both, known field
names only, and contents made of ``role`` + ``parts`` with one data field per part. A request
that breaks a rule gets Gemini's 400 error. The count it answers is the number of words of
every string in the counted request (a deterministic stand-in for the tokenizer). On Vertex AI
(``/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:countTokens``) it wants a bearer
token and the counted fields side by side, as Vertex's CountTokensRequest has them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentscope_rt.exception import ModelAPIError, ModelResponseError
from agentscope_rt.formatter import GeminiChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import GeminiChatModel, RetryConfig
from agentscope_rt.token import GeminiTokenCounter

from .._local_http import LocalHTTPServer, QuietHandler, send_body

SECRET = "AIza-test-gemini-secret-7f3e1d"
VERTEX_TOKEN = "ya29.test-vertex-access-token"
VERTEX_FIELDS = {"contents", "systemInstruction", "tools", "generationConfig"}
FAST_RETRY = RetryConfig(max_retries=1, initial_delay=0.01, max_delay=0.02)

_REQUEST_FIELDS = {
    "model",
    "contents",
    "systemInstruction",
    "tools",
    "toolConfig",
    "generationConfig",
    "safetySettings",
    "cachedContent",
}
_PART_DATA = {
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
}
_PART_EXTRA = {"thought", "thoughtSignature", "videoMetadata"}
_TOOL_FIELDS = {"functionDeclarations", "googleSearch", "codeExecution", "urlContext"}


class BadRequest(Exception):
    """A request the real endpoint would reject with 400 INVALID_ARGUMENT."""


def _check_content(content: Any, where: str, system: bool = False) -> None:
    if not isinstance(content, dict):
        raise BadRequest(f"{where}: a Content must be an object")
    unknown = set(content) - {"role", "parts"}
    if unknown:
        raise BadRequest(f'Invalid JSON payload received. Unknown name "{min(unknown)}" at {where}')
    if not system and content.get("role") not in ("user", "model"):
        raise BadRequest(f"{where}.role: please use a valid role: user, model")
    parts = content.get("parts")
    if not isinstance(parts, list) or not parts:
        raise BadRequest(f"{where}.parts: must contain at least one part")
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            raise BadRequest(f"{where}.parts[{index}]: a Part must be an object")
        unknown = set(part) - _PART_DATA - _PART_EXTRA
        if unknown:
            raise BadRequest(
                f'Invalid JSON payload received. Unknown name "{min(unknown)}" at '
                f"{where}.parts[{index}]"
            )
        if len(set(part) & _PART_DATA) != 1:
            raise BadRequest(f"{where}.parts[{index}]: exactly one data field is required")


def check_request(model: str, body: Any) -> dict[str, Any]:
    """The counted request (contents, system instruction, tools...) of a valid body."""
    if not isinstance(body, dict):
        raise BadRequest("Invalid JSON payload received: the body must be an object")
    unknown = set(body) - {"contents", "generateContentRequest"}
    if unknown:
        raise BadRequest(f'Invalid JSON payload received. Unknown name "{min(unknown)}"')
    if ("contents" in body) == ("generateContentRequest" in body):
        raise BadRequest("either contents or generateContentRequest must be set, not both")
    request = body.get("generateContentRequest") or {"contents": body["contents"]}
    if "generateContentRequest" in body:
        if not isinstance(request, dict):
            raise BadRequest("generateContentRequest must be an object")
        unknown = set(request) - _REQUEST_FIELDS
        if unknown:
            raise BadRequest(
                f'Invalid JSON payload received. Unknown name "{min(unknown)}" at '
                "'generate_content_request'"
            )
        if request.get("model") != f"models/{model}":
            raise BadRequest("generateContentRequest.model must name the model of the URL")
    contents = request.get("contents")
    if not isinstance(contents, list) or not contents:
        raise BadRequest("contents is not specified")
    for index, content in enumerate(contents):
        _check_content(content, f"contents[{index}]")
    if "systemInstruction" in request:
        _check_content(request["systemInstruction"], "systemInstruction", system=True)
    for index, tool in enumerate(request.get("tools", [])):
        if not isinstance(tool, dict) or not set(tool) <= _TOOL_FIELDS or not tool:
            raise BadRequest(f"tools[{index}]: unknown tool {tool!r}")
        for declaration in tool.get("functionDeclarations", []):
            if not isinstance(declaration.get("name"), str):
                raise BadRequest(f"tools[{index}]: a function declaration needs a name")
            if "$defs" in json.dumps(declaration) or "$ref" in json.dumps(declaration):
                raise BadRequest(f"tools[{index}]: $ref is not supported in parameters")
    return request


def check_vertex_request(body: Any) -> dict[str, Any]:
    """The counted request of a valid Vertex AI body: the fields side by side."""
    if not isinstance(body, dict):
        raise BadRequest("Invalid JSON payload received: the body must be an object")
    unknown = set(body) - VERTEX_FIELDS
    if unknown:
        raise BadRequest(f'Invalid JSON payload received. Unknown name "{min(unknown)}"')
    return check_request("unused", {"generateContentRequest": {**body, "model": "models/unused"}})


def words(value: Any) -> int:
    """Words of every string in *value*, except keys, roles and the model name."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, dict):
        return sum(words(v) for k, v in value.items() if k not in ("role", "model"))
    if isinstance(value, list):
        return sum(words(v) for v in value)
    return 0


def _error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


class CountTokensServer(LocalHTTPServer):
    """The endpoint on 127.0.0.1, in a thread. Model names pick special answers:
    ``overloaded`` (503), ``echo-key`` (400 quoting the key it was sent), ``not-json`` and
    ``zero`` (a 200 answer without ``totalTokens``, as protobuf JSON writes a 0)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.connections = 0
        server = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as Google's front ends

            def setup(self) -> None:
                super().setup()
                server.connections += 1

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                body: Any = json.loads(raw) if raw else None
                server.requests.append({"path": self.path, "headers": headers, "body": body})
                self._answer(headers, body)

            def _answer(self, headers: dict[str, str], body: Any) -> None:
                if self.path.startswith("/v1/projects/"):
                    self._answer_vertex(headers, body)
                    return
                prefix, _, rest = self.path.partition("/v1beta/models/")
                model, _, method = rest.partition(":")
                if prefix or method != "countTokens":
                    self._send(404, _error(404, "NOT_FOUND", f"no route {self.path}"))
                elif "key=" in self.path or headers.get("x-goog-api-key") is None:
                    self._send(
                        403,
                        _error(
                            403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers"
                        ),
                    )
                elif model == "echo-key":
                    given = headers["x-goog-api-key"]
                    self._send(400, _error(400, "INVALID_ARGUMENT", f"API key not valid: {given}"))
                elif headers["x-goog-api-key"] != SECRET:
                    self._send(400, _error(400, "INVALID_ARGUMENT", "API key not valid."))
                elif model == "overloaded":
                    self._send(503, _error(503, "UNAVAILABLE", "The model is overloaded."))
                elif model == "not-json":
                    self._send_raw(200, b"<html>maintenance</html>", "text/html")
                else:
                    try:
                        request = check_request(model, body)
                    except BadRequest as error:
                        self._send(400, _error(400, "INVALID_ARGUMENT", str(error)))
                        return
                    total = 0 if model == "zero" else words(request)
                    answer: dict[str, Any] = {
                        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": total}]
                    }
                    if total:
                        answer["totalTokens"] = total
                    self._send(200, answer)

            def _answer_vertex(self, headers: dict[str, str], body: Any) -> None:
                expected = "/v1/projects/p1/locations/us-central1/publishers/google/models/"
                if not self.path.startswith(expected) or not self.path.endswith(":countTokens"):
                    self._send(404, _error(404, "NOT_FOUND", f"no route {self.path}"))
                elif headers.get("authorization") != f"Bearer {VERTEX_TOKEN}":
                    self._send(401, _error(401, "UNAUTHENTICATED", "invalid credentials"))
                else:
                    try:
                        request = check_vertex_request(body)
                    except BadRequest as error:
                        self._send(400, _error(400, "INVALID_ARGUMENT", str(error)))
                        return
                    total = words(request)
                    self._send(200, {"totalTokens": total, "totalBillableCharacters": 5 * total})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                self._send_raw(status, json.dumps(payload).encode(), "application/json")

            def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
                send_body(self, status, data, content_type)

        super().__init__(Handler)
        self.base_url = self.url


@pytest.fixture
def server() -> Iterator[CountTokensServer]:
    with CountTokensServer() as srv:
        yield srv


def counter(
    server: CountTokensServer, model: str = "gemini-2.5-flash", **kwargs: Any
) -> GeminiTokenCounter:
    return GeminiTokenCounter(
        model, SECRET, retry_config=FAST_RETRY, base_url=server.base_url, **kwargs
    )


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"place": {"$ref": "#/$defs/Place"}},
            "required": ["place"],
            "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}}},
        },
    },
}


async def test_contents_alone_are_sent_as_contents(server: CountTokensServer) -> None:
    contents = await GeminiChatFormatter().format([Msg("user", "Hello there, world", "user")])
    assert await counter(server).count(contents) == 3
    (seen,) = server.requests
    assert seen["path"] == "/v1beta/models/gemini-2.5-flash:countTokens"
    assert seen["headers"]["x-goog-api-key"] == SECRET
    assert seen["body"] == {
        "contents": [{"role": "user", "parts": [{"text": "Hello there, world"}]}]
    }


async def test_system_and_tools_are_counted_in_a_generate_content_request(
    server: CountTokensServer,
) -> None:
    messages = await GeminiChatFormatter().format(
        [Msg("system", "Be brief.", "system"), Msg("user", "Weather in Oslo?", "user")]
    )
    before = json.dumps([messages, WEATHER_TOOL])
    count = await counter(server).count(messages, tools=[WEATHER_TOOL])
    assert json.dumps([messages, WEATHER_TOOL]) == before  # the caller's data is unchanged
    request = server.requests[0]["body"]["generateContentRequest"]
    assert request["model"] == "models/gemini-2.5-flash"
    assert request["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert request["contents"] == [{"role": "user", "parts": [{"text": "Weather in Oslo?"}]}]
    (declaration,) = request["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "get_weather"
    assert declaration["parameters"]["properties"]["place"]["properties"] == {
        "city": {"type": "string"}
    }
    # "Be brief." 2 + "Weather in Oslo?" 3 + name 1 + "Current weather of a city." 5 + the
    # schema's strings ("object", "object", "string", "place") 4.
    assert count == 15


async def test_agentscope_config_kwargs_and_native_tools(server: CountTokensServer) -> None:
    contents = [{"role": "user", "parts": [{"text": "Search the news"}]}]
    count = await counter(server).count(
        contents,
        tools=[{"googleSearch": {}}],
        system_instruction="You read the news.",
        generation_config={"temperature": 0.5, "max_output_tokens": 64},
    )
    request = server.requests[0]["body"]["generateContentRequest"]
    assert request["tools"] == [{"googleSearch": {}}]
    assert request["systemInstruction"] == {"parts": [{"text": "You read the news."}]}
    assert request["generationConfig"] == {"temperature": 0.5, "maxOutputTokens": 64}
    assert count == 3 + 4


async def test_http_options_reach_the_endpoint_as_google_genai_would(
    server: CountTokensServer,
) -> None:
    options = {"base_url": server.base_url, "api_version": "v1beta", "timeout": 5000}
    tokens = GeminiTokenCounter("gemini-2.5-flash", SECRET, http_options=options)
    assert await tokens.count([{"role": "user", "parts": [{"text": "one two"}]}]) == 2
    assert server.requests[0]["path"] == "/v1beta/models/gemini-2.5-flash:countTokens"


async def test_a_count_of_zero_arrives_without_total_tokens(server: CountTokensServer) -> None:
    contents = [{"role": "user", "parts": [{"text": "anything"}]}]
    assert await counter(server, "zero").count(contents) == 0


async def test_the_server_rejects_malformed_requests(server: CountTokensServer) -> None:
    # The checks above mean something only if the server refuses what Gemini refuses.
    url = f"{server.base_url}/v1beta/models/gemini-2.5-flash:countTokens"
    contents = [{"role": "user", "parts": [{"text": "hi"}]}]
    bad_bodies = [
        {"contents": contents, "generateContentRequest": {"contents": contents}},
        {"generateContentRequest": {"contents": contents}},  # no model
        {"contents": [{"role": "system", "parts": [{"text": "hi"}]}]},
        {"contents": [{"role": "user", "parts": [{"text": "a", "inlineData": {}}]}]},
        {"contents": contents, "tools": []},
    ]
    async with httpx.AsyncClient(headers={"x-goog-api-key": SECRET}) as client:
        for body in bad_bodies:
            response = await client.post(url, json=body)
            assert response.status_code == 400, body
            assert response.json()["error"]["status"] == "INVALID_ARGUMENT"
        assert (await client.post(url, json={"contents": contents})).status_code == 200


async def test_a_system_only_prompt_is_still_a_valid_request(server: CountTokensServer) -> None:
    # Gemini needs contents; a prompt of only a system message is refused by the endpoint,
    # and that refusal arrives as a ModelAPIError naming the problem.
    messages = [{"role": "system", "parts": [{"text": "Be brief."}]}]
    with pytest.raises(ModelAPIError, match="contents is not specified") as info:
        await counter(server).count(messages)
    assert info.value.status_code == 400 and info.value.attempts == 1


async def test_overload_is_retried_then_reported(server: CountTokensServer) -> None:
    with pytest.raises(ModelAPIError) as info:
        await counter(server, "overloaded").count([{"role": "user", "parts": [{"text": "x"}]}])
    assert info.value.status_code == 503
    assert info.value.attempts == 2 and len(server.requests) == 2
    assert "overloaded" in str(info.value)


async def test_the_key_never_appears_in_errors_or_reprs(server: CountTokensServer) -> None:
    tokens = counter(server, "echo-key")
    assert SECRET not in repr(tokens)
    with pytest.raises(ModelAPIError) as info:
        await tokens.count([{"role": "user", "parts": [{"text": "x"}]}])
    assert info.value.status_code == 400
    assert "API key not valid: ***" in str(info.value)
    chain: BaseException | None = info.value
    while chain is not None:
        assert SECRET not in str(chain) and SECRET not in repr(chain)
        chain = chain.__cause__ or chain.__context__
    assert "key=" not in server.requests[0]["path"]


async def test_a_wrong_key_is_a_model_api_error(server: CountTokensServer) -> None:
    tokens = GeminiTokenCounter(
        "gemini-2.5-flash", "wrong", retry_config=FAST_RETRY, base_url=server.base_url
    )
    with pytest.raises(ModelAPIError, match="API key not valid") as info:
        await tokens.count([{"role": "user", "parts": [{"text": "x"}]}])
    assert info.value.provider == "gemini"


async def test_an_answer_that_is_not_json_is_a_model_response_error(
    server: CountTokensServer,
) -> None:
    with pytest.raises(ModelResponseError, match="maintenance"):
        await counter(server, "not-json").count([{"role": "user", "parts": [{"text": "x"}]}])


async def test_an_unreachable_endpoint_is_a_model_api_error() -> None:
    # Port 9 on localhost (discard) is not listening here: the connection is refused.
    tokens = GeminiTokenCounter(
        "gemini-2.5-flash", SECRET, retry_config=FAST_RETRY, base_url="http://127.0.0.1:9"
    )
    with pytest.raises(ModelAPIError) as info:
        await tokens.count([{"role": "user", "parts": [{"text": "x"}]}])
    assert info.value.status_code is None and SECRET not in str(info.value)


async def test_messages_that_are_not_gemini_contents_are_refused() -> None:
    tokens = GeminiTokenCounter("gemini-2.5-flash", SECRET, base_url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="GeminiChatFormatter"):
        await tokens.count(["hello"])  # type: ignore[list-item]


def test_the_key_comes_from_the_argument_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    with pytest.raises(ValueError, match=r"GeminiTokenCounter: .*needs an API key"):
        GeminiTokenCounter("gemini-2.5-flash")
    monkeypatch.setenv("GOOGLE_API_KEY", SECRET)
    tokens = GeminiTokenCounter("gemini-2.5-flash")
    assert repr(tokens) == "GeminiTokenCounter(model_name='gemini-2.5-flash')"
    assert SECRET not in repr(vars(tokens))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"debug_config": {}}, "debug_config"),
        ({"http_options": {"base_url": "http://x", "retry_options": {}}}, "retry_options"),
    ],
)
def test_client_arguments_without_meaning_here_are_refused(
    kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        GeminiTokenCounter("gemini-2.5-flash", SECRET, **kwargs)


def test_an_empty_model_name_is_refused() -> None:
    with pytest.raises(ValueError, match="model_name"):
        GeminiTokenCounter("", SECRET)


def test_vertex_ai_needs_a_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    with pytest.raises(ValueError, match=r"GeminiTokenCounter: .*needs a project"):
        GeminiTokenCounter("gemini-2.5-flash", vertexai=True, credentials=VERTEX_TOKEN)


async def test_vertex_ai_counts_with_a_bearer_token_and_flat_fields(
    server: CountTokensServer,
) -> None:
    tokens = GeminiTokenCounter(
        "gemini-2.5-flash",
        vertexai=True,
        project="p1",
        location="us-central1",
        credentials=VERTEX_TOKEN,
        base_url=server.base_url,
        retry_config=FAST_RETRY,
    )
    assert tokens.vertexai
    messages = [
        {"role": "system", "parts": [{"text": "Be brief."}]},
        {"role": "user", "parts": [{"text": "Weather in Oslo?"}]},
    ]
    # Vertex's CountTokensRequest has no toolConfig: it is left out, not sent and refused.
    count = await tokens.count(messages, tools=[WEATHER_TOOL], temperature=0, tool_config={})
    (seen,) = server.requests
    assert seen["path"] == (
        "/v1/projects/p1/locations/us-central1/publishers/google/models/"
        "gemini-2.5-flash:countTokens"
    )
    assert seen["headers"]["authorization"] == f"Bearer {VERTEX_TOKEN}"
    assert "x-goog-api-key" not in seen["headers"]
    assert set(seen["body"]) == VERTEX_FIELDS
    assert seen["body"]["generationConfig"] == {"temperature": 0}
    assert count == 15  # as on the Gemini API: the same words are counted


async def test_a_bad_vertex_token_is_a_model_api_error_without_the_token(
    server: CountTokensServer,
) -> None:
    tokens = GeminiTokenCounter(
        "gemini-2.5-flash",
        vertexai=True,
        project="p1",
        location="us-central1",
        credentials="ya29.wrong-token",
        base_url=server.base_url,
        retry_config=FAST_RETRY,
    )
    with pytest.raises(ModelAPIError) as info:
        await tokens.count([{"role": "user", "parts": [{"text": "x"}]}])
    assert info.value.status_code == 401 and "wrong-token" not in str(info.value)


async def test_the_connection_is_reused_until_the_counter_is_closed(
    server: CountTokensServer,
) -> None:
    contents = [{"role": "user", "parts": [{"text": "one two"}]}]
    async with counter(server) as tokens:
        assert await tokens.count(contents) == 2
        assert await tokens.count(contents) == 2
        assert server.connections == 1  # one client per event loop, kept alive
    assert await tokens.count(contents) == 2  # a closed counter opens a new client
    assert server.connections == 2
    await tokens.close()


async def test_the_chat_models_public_request_and_endpoint_make_the_count(
    server: CountTokensServer,
) -> None:
    # The counter is built on these two public methods of the chat model, no private one.
    contents = await GeminiChatFormatter().format([Msg("user", "Hello there, world", "user")])
    model = GeminiChatModel(
        "gemini-2.5-flash", SECRET, stream=False, client_kwargs={"base_url": server.base_url}
    )
    body = model.request_body(contents, None, None, None, {})
    assert body == {"contents": [{"role": "user", "parts": [{"text": "Hello there, world"}]}]}
    answer = json.loads(await model.post_to_endpoint("countTokens", body))
    assert answer["totalTokens"] == 3
    assert server.requests[0]["path"] == "/v1beta/models/gemini-2.5-flash:countTokens"
    await model.aclose()
