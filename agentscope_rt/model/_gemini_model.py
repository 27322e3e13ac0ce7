"""Google Gemini's ``generateContent`` REST API over httpx, streaming as SSE.

Non-streaming calls POST ``models/{model}:generateContent``; streaming calls POST
``models/{model}:streamGenerateContent?alt=sse`` and read one ``GenerateContentResponse`` per
SSE event. The API key travels only in the ``x-goog-api-key`` header — never in the URL — and is
scrubbed from every error message. As with Ollama, the model keeps one ``httpx.AsyncClient``
per event loop, closed when that loop ends, and a stream closes its response when exhausted,
closed early or cancelled. Requests are retried by :mod:`agentscope_rt.model._retry`.

Thinking models sign their reasoning: a function-call part (and the answer's text) may carry a
``thoughtSignature``, which must come back unchanged with that part on the next turn or a
multi-turn tool loop fails. It is kept on the block, as AgentScope keeps it, in
``ToolUseBlock.thought_signature`` / ``TextBlock.thought_signature`` (base64, as sent), and
:class:`~agentscope_rt.formatter.GeminiChatFormatter` puts it back on the part.

Vertex AI: with ``client_kwargs={"vertexai": True, "project": ..., "location": ...}`` (the
arguments google-genai's ``Client`` takes; ``GOOGLE_GENAI_USE_VERTEXAI``,
``GOOGLE_CLOUD_PROJECT`` and ``GOOGLE_CLOUD_LOCATION`` as fallbacks) requests go to
``https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/
publishers/google/models/{model}:generateContent`` (``aiplatform.googleapis.com`` for the
``global`` location, the default) with an OAuth bearer token. The token comes from, in order:
``client_kwargs["credentials"]`` — an access token string, or a ``google.auth`` credentials
object (refreshed in a worker thread when expired) —, the ``GOOGLE_CLOUD_ACCESS_TOKEN``
environment variable (e.g. ``$(gcloud auth print-access-token)``), and, when the
``google-auth`` package is installed, Application Default Credentials. An ``api_key`` with
``vertexai`` and no project is Vertex AI express mode (``publishers/google/models/...`` with
the key header).
"""

from __future__ import annotations

import base64
import importlib.util
import itertools
import json
import logging
import os
import re
import time
from collections.abc import AsyncGenerator
from typing import Any, ClassVar

import anyio.to_thread
import httpx

from .._provider import (
    RETRYABLE_STATUS,
    BadResponse,
    RetryConfig,
    SecretHeaders,
    Secrets,
    StreamErrorEvent,
    call_with_retry,
    excerpt,
    header_secrets,
    redact_text,
)
from .._schema import StructuredModel, structured_model_schema
from ..exception import ModelAPIError
from ._http_model import HttpChatModel, response_lines
from ._model_base import ToolChoice, validate_tool_choice
from ._model_response import ChatResponse, ChatUsage
from ._ollama_model import ChatAccumulator

__all__ = ["GeminiChatModel"]

logger = logging.getLogger(__name__)

_PROVIDER = "gemini"
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
DEFAULT_API_VERSION = "v1beta"
VERTEX_API_VERSION = "v1"
VERTEX_DEFAULT_LOCATION = "global"
ACCESS_TOKEN_ENV = "GOOGLE_CLOUD_ACCESS_TOKEN"
"""The environment variable read for a Vertex AI access token when none is given."""
_CLOUD_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)
# GenerateContentRequest fields that live beside generationConfig, not inside it.
_REQUEST_FIELDS = {"safetySettings", "cachedContent", "labels", "toolConfig", "tools"}
_TOOL_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
# google.rpc status names of the errors worth another try (for events without a code).
_RETRYABLE_STATUSES = {"RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED"}
_CAMEL_RE = re.compile(r"_([a-z])")


def _camel(name: str) -> str:
    return _CAMEL_RE.sub(lambda m: m.group(1).upper(), name)


def _camel_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {_camel(k): _camel_keys(v) for k, v in value.items()}
    return value


def _flatten_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline every ``#/$defs/...`` reference: Gemini's schemas have no ``$ref``.

    A recursive reference is cut to a plain ``object`` at its second appearance.
    """
    defs = schema.get("$defs", {})

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/") :]
            if name in seen or name not in defs:
                return {"type": "object"}
            merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
            return resolve(merged, seen | {name})
        return {k: resolve(v, seen) for k, v in node.items() if k != "$defs"}

    result: dict[str, Any] = resolve(schema, frozenset())
    return result


def _clean_part(part: Any) -> Any:
    """Make a formatter's part JSON-ready: bytes (thought signatures) become base64 and
    ``None`` values are left out.

    Copy-on-write: a dict or list that needs no change is returned as is (not copied), so
    messages that are already JSON-ready — base64 media included — cost one walk per call.
    """
    if isinstance(part, dict):
        cleaned: dict[str, Any] | None = None
        for index, (key, value) in enumerate(part.items()):
            new = None if value is None else _clean_part(value)
            if cleaned is None:
                if value is not None and new is value:
                    continue
                # First change: copy the untouched entries before it, then carry on.
                cleaned = dict(itertools.islice(part.items(), index))
            if new is not None:
                cleaned[key] = new
        return part if cleaned is None else cleaned
    if isinstance(part, list):
        items: list[Any] | None = None
        for index, value in enumerate(part):
            new = _clean_part(value)
            if items is None:
                if new is value:
                    continue
                items = part[:index]
            items.append(new)
        return part if items is None else items
    if isinstance(part, bytes):
        return base64.b64encode(part).decode("ascii")
    return part


class _VertexToken:
    """Where a Vertex AI access token comes from (see the module docstring for the order).

    Never shown: the repr hides the credentials.
    """

    __slots__ = ("_credentials", "_env")

    def __init__(self, credentials: Any) -> None:
        self._credentials = credentials
        self._env = os.environ.get(ACCESS_TOKEN_ENV) or None
        if credentials is None and self._env is None and not _has_google_auth():
            raise ValueError(
                "Gemini on Vertex AI needs an access token: pass client_kwargs={'credentials': "
                f"<token or google.auth credentials>}}, set {ACCESS_TOKEN_ENV} (e.g. to the "
                "output of `gcloud auth print-access-token`), or install google-auth to use "
                "Application Default Credentials"
            )

    def __repr__(self) -> str:
        return "_VertexToken(***)"

    async def get(self) -> str:
        """A current access token.

        :raises ValueError: when a credentials object has no token and cannot be refreshed.
        :raises ModelAPIError: when google-auth finds no credentials, cannot reach Google's
            token endpoint or is refused a refresh (the credentials' secrets scrubbed).
        """
        credentials = self._credentials
        if isinstance(credentials, str):
            return credentials
        if credentials is None and self._env is not None:
            return self._env
        error: ModelAPIError | None = None
        try:
            if credentials is None:
                credentials = await anyio.to_thread.run_sync(_default_credentials)
                self._credentials = credentials
            if not getattr(credentials, "valid", True) or not getattr(credentials, "token", None):
                await anyio.to_thread.run_sync(_refresh, credentials)
        except Exception as exc:
            error = _google_auth_error(exc, credentials)
            if error is None:
                raise
        if error is not None:
            # Raised outside the except block: google-auth's exception (which may quote the
            # token endpoint's answer) is neither the cause nor the context.
            raise error
        token = getattr(credentials, "token", None)
        if not isinstance(token, str) or not token:
            raise ValueError(
                f"the Vertex AI credentials {type(credentials).__name__} gave no access token"
            )
        return token


_CREDENTIAL_FIELDS = ("token", "refresh_token", "client_secret")
"""Secret attributes of google-auth credentials, scrubbed from errors about them."""


def _google_auth_error(exc: Exception, credentials: Any) -> ModelAPIError | None:
    """The package's error for google-auth's *exc* about *credentials* (their secrets
    scrubbed), or ``None`` for any other exception."""
    names = {cls.__name__ for cls in type(exc).__mro__ if cls.__module__.startswith("google.auth")}
    if not names:
        return None
    secrets = [getattr(credentials, field, None) for field in _CREDENTIAL_FIELDS]
    text = redact_text(str(exc), [(s, "***") for s in secrets if isinstance(s, str) and s])
    if "TransportError" in names:
        return ModelAPIError(
            _PROVIDER, f"could not reach Google to refresh the Vertex AI credentials: {text}"
        )
    return ModelAPIError(
        _PROVIDER,
        f"the Vertex AI credentials could not be used ({type(exc).__name__}: {text}); check "
        f"them, or pass an access token as client_kwargs['credentials'] or {ACCESS_TOKEN_ENV}",
    )


def _has_google_auth() -> bool:
    try:
        return importlib.util.find_spec("google.auth") is not None
    except ModuleNotFoundError:  # no "google" namespace package at all
        return False


def _default_credentials() -> Any:
    import google.auth

    credentials, _project = google.auth.default(scopes=[_CLOUD_SCOPE])
    return credentials


def _refresh(credentials: Any) -> None:
    try:
        from google.auth.transport.requests import Request
    except ImportError as exc:
        raise ValueError(
            "refreshing Vertex AI credentials needs google-auth with requests installed "
            "(pip install 'google-auth[requests]'), or pass an access token instead"
        ) from exc
    credentials.refresh(Request())


class GeminiChatModel(HttpChatModel):
    """A Google Gemini model through the ``generateContent`` REST API.

    Accepts the ``contents`` ``GeminiChatFormatter`` produces (``{"role": "user" | "model",
    "parts": [...]}``); entries with role ``"system"`` become the request's
    ``systemInstruction``. Thought parts (``"thought": true``) come back as
    :class:`ThinkingBlock`, function calls as :class:`ToolUseBlock` (with a generated id when
    Gemini sends none), and usage from ``usageMetadata``. A part's ``thoughtSignature`` is
    kept in the block's ``thought_signature`` (a function call's on its
    :class:`ToolUseBlock`, any other on the :class:`TextBlock`).

    :param model_name: e.g. ``"gemini-2.5-flash"``.
    :param api_key: the API key; defaults to ``$GEMINI_API_KEY`` (then ``$GOOGLE_API_KEY``).
        It is sent only as the ``x-goog-api-key`` header and never appears in reprs or errors.
    :param stream: whether calls return an async generator of cumulative chunks.
    :param thinking_config: e.g. ``{"include_thoughts": True, "thinking_budget": 1024}``.
    :param client_kwargs: ``base_url`` and ``api_version`` of the endpoint; Vertex AI's
        ``vertexai``, ``project``, ``location`` and ``credentials`` (see the module docstring);
        plus extra arguments for ``httpx.AsyncClient`` (``timeout``, ``headers``, ...).
    :param generate_kwargs: generation settings for every request (``temperature``,
        ``max_output_tokens``, ...; snake_case or camelCase); ``safety_settings`` and the
        like go to the request itself.
    :param retry_config: the retry policy (default: 3 retries with exponential backoff).
    :raises ValueError: if no API key is given or found in the environment (for Vertex AI:
        if no project or no way to get an access token is given).
    """

    provider: ClassVar[str] = _PROVIDER

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        stream: bool = True,
        thinking_config: dict[str, Any] | None = None,
        client_kwargs: dict[str, Any] | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model_name, stream)
        if kwargs:
            logger.warning("GeminiChatModel ignores unknown arguments %s", sorted(kwargs))
        client_kwargs = dict(client_kwargs or {})
        vertexai = client_kwargs.pop("vertexai", None)
        if vertexai is None:
            vertexai = os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in ("1", "true")
        project = client_kwargs.pop("project", None)
        location = client_kwargs.pop("location", None)
        credentials = client_kwargs.pop("credentials", None)
        base_url = client_kwargs.pop("base_url", None)
        api_version = client_kwargs.pop("api_version", None)
        self.vertexai = bool(vertexai)
        self._token: _VertexToken | None = None
        if self.vertexai and not (api_key and not project):
            project = project or os.environ.get("GOOGLE_CLOUD_PROJECT")
            if not project:
                raise ValueError(
                    "Gemini on Vertex AI needs a project: pass client_kwargs={'vertexai': True, "
                    "'project': ..., 'location': ...} or set GOOGLE_CLOUD_PROJECT"
                )
            location = location or os.environ.get("GOOGLE_CLOUD_LOCATION")
            location = location or VERTEX_DEFAULT_LOCATION
            if api_key:
                logger.warning(
                    "GeminiChatModel: with a Vertex AI project the api_key is not used; "
                    "requests carry an access token"
                )
            self._token = _VertexToken(credentials)
            key = None
            if base_url is None:
                host = "aiplatform.googleapis.com"
                base_url = f"https://{host if location == 'global' else f'{location}-{host}'}"
            models = f"projects/{project}/locations/{location}/publishers/google/models"
        else:
            if self.vertexai:  # express mode: an API key, no project
                base_url = base_url or "https://aiplatform.googleapis.com"
                models = "publishers/google/models"
            else:
                models = "models"
            key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
            if not key:
                raise ValueError(
                    "GeminiChatModel needs an API key: pass api_key=... or set GEMINI_API_KEY"
                )
        self.project = project
        self.location = location
        # Kept inside Secrets, which shows as Secrets(***): vars(model) shows no key.
        self._key = Secrets((key,) if key else ())
        headers = SecretHeaders(client_kwargs.pop("headers", None) or {})
        if headers:
            client_kwargs["headers"] = headers
        self._redact: tuple[str, ...] = Secrets((*self._key, *header_secrets(headers)))
        default_version = VERTEX_API_VERSION if self.vertexai else DEFAULT_API_VERSION
        base_url = str(base_url or DEFAULT_BASE_URL).rstrip("/")
        self.base_url = f"{base_url}/{api_version or default_version}"
        self._models_path = models
        self.client_kwargs = {"timeout": DEFAULT_TIMEOUT, **client_kwargs}
        self.thinking_config = thinking_config
        self.generate_kwargs = dict(generate_kwargs or {})
        self.retry_config = retry_config
        self._bearer = Secrets()

    def _new_client(self) -> httpx.AsyncClient:
        kwargs = dict(self.client_kwargs)
        headers = dict(kwargs.pop("headers", {}))
        if self._key:
            headers["x-goog-api-key"] = self._key[0]
        return httpx.AsyncClient(base_url=self.base_url, headers=headers, **kwargs)

    async def _request_headers(self) -> dict[str, str] | None:
        if not self._bearer:
            return None
        return {"authorization": f"Bearer {self._bearer[0]}"}

    async def _authorize(self) -> None:
        """Fetch the Vertex AI access token for the next request (no-op with an API key)."""
        if self._token is None:
            return
        token = await self._token.get()
        self._bearer = Secrets((token,))
        if token not in self._redact:
            # The newest tokens only: a long-lived model must not accumulate them.
            self._redact = Secrets((*self._redact[-2:], token))

    def _scrub(self, text: str) -> str:
        for secret in self._redact:
            text = text.replace(secret, "***")
        return text

    def request_body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        call_kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        """The ``GenerateContentRequest`` a call with these arguments sends (a new dict; the
        arguments are not modified): ``contents``, the ``system`` messages joined into
        ``systemInstruction``, ``tools`` and ``toolConfig``, and ``generationConfig`` from the
        model's ``thinking_config`` and ``generate_kwargs`` with *call_kwargs* over them
        (request fields such as ``safety_settings`` go beside it). The token counter counts
        this body.

        :raises ValueError: for a message that is not a Gemini content dict with a role.
        """
        contents: list[dict[str, Any]] = []
        system_parts: list[Any] = []
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or "role" not in message:
                raise ValueError(
                    f"messages[{index}] is not a Gemini content dict with a 'role'; pass "
                    "messages formatted by GeminiChatFormatter"
                )
            if message["role"] == "system":
                parts = message.get("parts")
                if parts is None:
                    parts = [{"text": str(message.get("content", ""))}]
                system_parts.extend(_clean_part(parts))
            else:
                contents.append(_clean_part(message))
        body: dict[str, Any] = {"contents": contents}
        if system_parts:
            body["systemInstruction"] = {"parts": system_parts}
        config: dict[str, Any] = {}
        if self.thinking_config is not None:
            config["thinkingConfig"] = _camel_keys(self.thinking_config)
        for key, value in {**self.generate_kwargs, **call_kwargs}.items():
            name = _camel(key)
            if name == "thinkingConfig" and isinstance(value, dict):
                value = _camel_keys(value)
            if name in _REQUEST_FIELDS:
                body[name] = value
            else:
                config[name] = value
        if structured_model is not None:
            if tools or tool_choice:
                logger.warning("structured_model is given: tools and tool_choice are ignored")
            config["responseMimeType"] = "application/json"
            config["responseJsonSchema"] = _flatten_schema(
                structured_model_schema(structured_model)
            )
        elif tools:
            declarations = []
            for tool in tools:
                function = dict(tool.get("function") or {})
                if "parameters" in function:
                    function["parameters"] = _flatten_schema(function["parameters"])
                declarations.append(function)
            body["tools"] = [{"functionDeclarations": declarations}]
            if tool_choice is not None:
                if tool_choice in _TOOL_MODES:
                    calling: dict[str, Any] = {"mode": _TOOL_MODES[tool_choice]}
                else:
                    calling = {"mode": "ANY", "allowedFunctionNames": [tool_choice]}
                body["toolConfig"] = {"functionCallingConfig": calling}
        if config:
            body["generationConfig"] = config
        return body

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        structured_model: StructuredModel | None = None,
        **generate_kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Generate content.

        ``tool_choice`` maps to ``functionCallingConfig``: ``"auto"`` → ``AUTO``, ``"none"``
        → ``NONE``, ``"required"`` → ``ANY``, a name → ``ANY`` limited to that function.

        :raises ValueError: for malformed messages or an invalid ``tool_choice``.
        :raises ModelAPIError: when Gemini fails after all retries (status and Gemini's
            message included, the API key never). An error event inside the stream counts
            like the HTTP error it names (503, 429, ... are retried) while no chunk has been
            yielded; after that it is raised at once.
        :raises ModelResponseError: for structured output that does not match the schema.
        """
        validate_tool_choice(tool_choice, tools)
        body = self.request_body(messages, tools, tool_choice, structured_model, generate_kwargs)
        await self._authorize()
        return await self._send(body, structured_model)

    async def post_to_endpoint(self, method: str, request: dict[str, Any]) -> str:
        """POST *request* to this model's ``{model}:{method}`` endpoint (``countTokens``,
        ...) with the authentication and retry policy of its ``generateContent`` calls.

        :returns: the answer's body, the key and access tokens replaced by ``***``.
        :raises ModelAPIError: when Gemini answers with an error or cannot be reached after
            the retries (status and Gemini's message included, the key never).
        """
        path = f"{self._models_path}/{self.model_name}:{method}"
        await self._authorize()
        response = await call_with_retry(
            _PROVIDER,
            lambda: self._post_json(path, request),
            self.retry_config,
            redact=self._redact,
        )
        return self._scrub(response.text)

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        path = f"{self._models_path}/{self.model_name}:generateContent"
        response = await self._post_json(path, body)
        data: dict[str, Any] = response.json()
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            raise self._error_event(data["error"])
        return data

    def _parse(
        self, data: dict[str, Any], structured_model: StructuredModel | None, started: float
    ) -> ChatResponse:
        if not _is_answer(data):
            raise BadResponse(f"the response is not a GenerateContentResponse: {excerpt(data)}")
        state = _Accumulator()
        state.add(data)
        return state.response(structured_model, started, stream=False, is_last=True)

    async def _stream_once(
        self, body: dict[str, Any], structured_model: StructuredModel | None, started: float
    ) -> AsyncGenerator[ChatResponse, None]:
        state = _Accumulator()
        path = f"{self._models_path}/{self.model_name}:streamGenerateContent"
        async with (
            self._open_stream(path, body, params={"alt": "sse"}) as response,
            response_lines(response) as lines,
        ):
            data_lines: list[str] = []
            async for line in lines:
                if line.startswith("data:"):
                    data_lines.append(line[5:].lstrip())
                    continue
                if line.strip() or not data_lines:
                    continue
                state.add(self._event(data_lines))
                data_lines = []
                # Only the end of the stream tells which event was the last one, so every
                # event yields at once and a final chunk follows the stream's end.
                yield state.response(None, started, stream=True, is_last=False)
            if data_lines:
                state.add(self._event(data_lines))
            if not state.finished:
                # A clean close before an event naming the finishReason (or a blocked
                # prompt): the answer is incomplete, so nothing of it is returned.
                kind = response.headers.get("content-type") or "unknown"
                raise BadResponse(
                    "the stream was cut: it ended without a finishReason; the answer is "
                    "incomplete and was discarded"
                    if state.seen
                    else "the streaming request was answered without an event stream "
                    f"(content-type {kind}, no events)"
                )
            yield state.response(structured_model, started, stream=True, is_last=True)

    def _event(self, data_lines: list[str]) -> dict[str, Any]:
        text = "\n".join(data_lines)
        try:
            event = json.loads(text)
        except json.JSONDecodeError:
            raise self._stream_error(
                f"malformed SSE event in the stream: {self._scrub(text)[:200]!r}"
            ) from None
        if isinstance(event, dict) and isinstance(event.get("error"), dict):
            raise self._error_event(event["error"])
        if not _is_answer(event, event=True):
            raise self._stream_error(f"unexpected SSE event: {self._scrub(text)[:200]!r}")
        return event

    def _stream_error(self, message: str) -> BadResponse:
        # Scrubbed here too: the event text stays attached to the error as its cause.
        return BadResponse(self._scrub(message))

    def _error_event(self, error: dict[str, Any]) -> StreamErrorEvent:
        """An ``{"error": {...}}`` event, for the retry layer to judge like an HTTP error.

        Gemini reports overload and quota exhaustion this way, also before any output; such
        errors are retried while nothing has been yielded. The key is scrubbed here too,
        because the event stays attached to the final error as its cause.
        """
        code = error.get("code")
        status_code = code if isinstance(code, int) and not isinstance(code, bool) else None
        message = self._scrub(str(error.get("message", error)))
        status = str(error.get("status") or "")
        if status_code is not None:
            retryable = status_code in RETRYABLE_STATUS or status_code >= 500
        else:
            retryable = status in _RETRYABLE_STATUSES or "overloaded" in message.lower()
        return StreamErrorEvent(message, status_code, retryable)


def _is_answer(data: Any, *, event: bool = False) -> bool:
    """Whether *data* has the shape of a ``GenerateContentResponse``: candidates (a list of
    objects whose content is an object) or prompt feedback (a blocked prompt has no
    candidates); ``{}`` has neither. A stream *event* may also carry neither (usage only)."""
    if not isinstance(data, dict):
        return False
    candidates = data.get("candidates")
    if candidates is not None:
        return isinstance(candidates, list) and all(
            isinstance(c, dict) and isinstance(c.get("content", {}), dict) for c in candidates
        )
    return event or isinstance(data.get("promptFeedback"), dict)


class _Accumulator(ChatAccumulator):
    """A Gemini answer, accumulated over stream events (or from one response)."""

    __slots__ = ("finished", "seen", "usage_metadata")

    def __init__(self) -> None:
        super().__init__()
        self.seen = False
        self.finished = False
        self.usage_metadata: dict[str, Any] = {}

    def add(self, data: dict[str, Any]) -> None:
        if not self.seen and data.get("responseId"):
            self.id = str(data["responseId"])
        self.seen = True
        if data.get("usageMetadata"):
            self.usage_metadata = data["usageMetadata"]
        feedback = data.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            self.finished = True
        candidates = data.get("candidates") or []
        if not candidates:
            return
        if candidates[0].get("finishReason"):
            self.finished = True
        for part in (candidates[0].get("content") or {}).get("parts") or []:
            signature = part.get("thoughtSignature") or part.get("thought_signature")
            if not isinstance(signature, str):
                signature = None
            call = part.get("functionCall") or part.get("function_call")
            if call is not None:
                self.add_tool_call(call.get("id"), call.get("name"), call.get("args"), signature)
                continue
            if "text" in part:
                if part.get("thought"):
                    self.thinking += part["text"] or ""
                else:
                    self.text += part["text"] or ""
            if signature is not None:
                # The signature of the answer's text; while streaming it may come on a part
                # whose text is empty. It goes back with the text on the next turn.
                self.text_signature = signature

    def response(
        self,
        structured_model: StructuredModel | None,
        started: float,
        stream: bool,
        is_last: bool,
    ) -> ChatResponse:
        usage = None
        if is_last:
            meta = self.usage_metadata
            prompt = int(meta.get("promptTokenCount") or 0)
            if "totalTokenCount" in meta:
                output = int(meta["totalTokenCount"]) - prompt
            else:
                output = int(meta.get("candidatesTokenCount") or 0) + int(
                    meta.get("thoughtsTokenCount") or 0
                )
            usage = ChatUsage(prompt, output, time.monotonic() - started)
        return self.build(_PROVIDER, structured_model, usage, stream, is_last)
