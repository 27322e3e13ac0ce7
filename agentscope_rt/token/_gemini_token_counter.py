"""Gemini token counting through the REST API's ``models/{model}:countTokens`` endpoint.

The request is built, sent, authenticated and retried by the same code as
:class:`~agentscope_rt.model.GeminiChatModel`'s ``generateContent`` calls (one model object
is kept for that: its public ``request_body`` and ``post_to_endpoint``), so both speak to the
same endpoint with the same key handling: the key travels only in the ``x-goog-api-key``
header and is scrubbed from every error.

The body is ``{"contents": [...]}`` when only contents are counted, as AgentScope's
google-genai client sends it. A system instruction, tools or generation settings can only be
counted inside a full request on the Gemini API, so then the body is
``{"generateContentRequest": {"model": "models/...", "contents": [...], "systemInstruction":
..., "tools": [...], ...}}``; the google-genai client refuses those on the Gemini API instead.
Vertex AI's ``countTokens`` takes ``contents``, ``systemInstruction``, ``tools`` and
``generationConfig`` side by side, and gets them so (with the chat model's bearer token).

Like the chat model, the counter keeps one HTTP client per event loop, closed when that loop
ends or at :meth:`GeminiTokenCounter.close`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..exception import ModelResponseError
from ._token_base import EndpointTokenCounterBase

if TYPE_CHECKING:
    from ..model import GeminiChatModel, RetryConfig

__all__ = ["GeminiTokenCounter"]

# google-genai Client arguments without an equivalent here.
_UNSUPPORTED_CLIENT_ARGS = ("debug_config",)
# The fields of Vertex AI's CountTokensRequest besides the model.
_VERTEX_FIELDS = ("contents", "systemInstruction", "tools", "generationConfig")


def _client_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The chat model's ``client_kwargs`` from AgentScope-style client arguments.

    ``http_options`` (google-genai's way to set the endpoint) is read for ``base_url``,
    ``api_version``, ``headers`` and ``timeout`` (milliseconds there, seconds for httpx).
    """
    unsupported = sorted(set(kwargs) & set(_UNSUPPORTED_CLIENT_ARGS))
    if unsupported:
        raise ValueError(f"GeminiTokenCounter does not support the client arguments {unsupported}")
    client_kwargs = dict(kwargs)
    options = client_kwargs.pop("http_options", None)
    if options is not None:
        if not isinstance(options, dict):
            options = {
                key: getattr(options, key)
                for key in ("base_url", "api_version", "headers", "timeout")
                if getattr(options, key, None) is not None
            }
        unknown = sorted(set(options) - {"base_url", "api_version", "headers", "timeout"})
        if unknown:
            raise ValueError(
                f"http_options {unknown} are not supported; use base_url, api_version, "
                "headers and timeout (milliseconds)"
            )
        for key in ("base_url", "api_version", "headers"):
            if options.get(key) is not None:
                client_kwargs.setdefault(key, options[key])
        if options.get("timeout") is not None:
            client_kwargs.setdefault("timeout", float(options["timeout"]) / 1000.0)
    return client_kwargs


def _split_config(config_kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``(system_instruction, generation kwargs)`` from AgentScope's ``count`` config kwargs.

    AgentScope's counter passes them as google-genai's ``CountTokensConfig``: a
    ``system_instruction``, ``tools`` and a ``generation_config`` dict. Flat generation
    settings (``temperature=...``) are accepted too, as by ``GeminiChatModel``.
    """
    kwargs = dict(config_kwargs)
    system = kwargs.pop("system_instruction", None)
    system = kwargs.pop("systemInstruction", system)
    for key in ("generation_config", "generationConfig"):
        nested = kwargs.pop(key, None)
        if nested is not None:
            if not isinstance(nested, dict):
                raise TypeError(f"{key} must be a dict, not {type(nested).__name__}")
            kwargs = {**nested, **kwargs}
    return system, kwargs


def _system_content(system: Any) -> dict[str, Any]:
    if isinstance(system, str):
        return {"parts": [{"text": system}]}
    if isinstance(system, dict):
        return system
    if isinstance(system, list):
        return {"parts": [{"text": p} if isinstance(p, str) else p for p in system]}
    raise TypeError(
        f"system_instruction must be a str, a content dict or a list of parts, not "
        f"{type(system).__name__}"
    )


class GeminiTokenCounter(EndpointTokenCounterBase):
    """Count tokens exactly with Gemini's ``countTokens`` endpoint.

    Takes the output of :class:`~agentscope_rt.formatter.GeminiChatFormatter` (``{"role",
    "parts"}`` contents; a ``role: "system"`` entry becomes the system instruction) and tool
    schemas in the toolkit's (OpenAI) format, converted as for ``generateContent``. Gemini's
    own tool objects (``{"functionDeclarations": [...]}``, ``{"googleSearch": {}}``) are
    passed through unchanged. The caller's lists are not modified.

    :param model_name: the Gemini model, e.g. ``"gemini-2.5-flash"``.
    :param api_key: the API key; defaults to ``$GEMINI_API_KEY`` (then ``$GOOGLE_API_KEY``).
        Sent only as the ``x-goog-api-key`` header; never shown in reprs or errors.
    :param retry_config: the retry policy (default: that of the chat models, 3 retries).
    :param kwargs: where AgentScope passes google-genai ``Client`` arguments; here they are
        :class:`~agentscope_rt.model.GeminiChatModel`'s ``client_kwargs``: ``base_url`` and
        ``api_version`` of the endpoint; Vertex AI's ``vertexai``, ``project``,
        ``location`` and ``credentials``; ``http_options`` (its ``base_url``,
        ``api_version``, ``headers`` and ``timeout`` in milliseconds); further
        ``httpx.AsyncClient`` arguments (``timeout`` in seconds, ``headers``, ...).
    :raises ValueError: without an API key (or, for Vertex AI, without a project or a way to
        get an access token), for an empty *model_name*, or for ``debug_config``.
    """

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        # Imported here: the token package sits beside the model package and stays light.
        from ..model import GeminiChatModel

        if not isinstance(model_name, str) or not model_name:
            raise ValueError(f"model_name must be a non-empty string, not {model_name!r}")
        self.model_name = model_name
        # The request template, auth and retry policy of generateContent, reused as they are.
        try:
            self._model: GeminiChatModel = GeminiChatModel(
                model_name,
                api_key=api_key,
                stream=False,
                client_kwargs=_client_kwargs(kwargs),
                retry_config=retry_config,
            )
        except ValueError as error:
            raise ValueError(f"GeminiTokenCounter: {error}") from None

    def __repr__(self) -> str:
        return f"GeminiTokenCounter(model_name={self.model_name!r})"

    @property
    def vertexai(self) -> bool:
        """Whether the counter speaks to Vertex AI rather than the Gemini API."""
        return self._model.vertexai

    async def close(self) -> None:
        """Close the running event loop's HTTP client (a later count opens a new one)."""
        await self._model.aclose()

    async def count(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        **config_kwargs: Any,
    ) -> int:
        """Ask the endpoint for the total tokens of *messages* (and *tools*).

        :param messages: Gemini contents, as the Gemini formatter returns them.
        :param tools: tool schemas (the toolkit's format, or Gemini's own tool objects).
        :param config_kwargs: as AgentScope's ``CountTokensConfig``: ``system_instruction``
            (a str, a content dict or a list of parts) and ``generation_config`` (a dict);
            other names are generation settings or request fields (``tool_config``,
            ``cached_content``...), snake_case or camelCase. Vertex AI counts only the
            system instruction, tools and generation settings; request fields are left out.
        :returns: the ``totalTokens`` of the answer.
        :raises ValueError: for messages that are not Gemini content dicts, or Vertex AI
            credentials that give no access token.
        :raises ModelAPIError: when Gemini answers with an error or cannot be reached after
            the retries (status and Gemini's message included, the key never).
        :raises ModelResponseError: when the answer is not a countTokens response.
        """
        system, settings = _split_config(config_kwargs)
        native_tools = [t for t in tools or [] if "function" not in t]
        function_tools = [t for t in tools or [] if "function" in t]
        body = self._model.request_body(messages, function_tools or None, None, None, settings)
        if native_tools:
            body["tools"] = [*body.get("tools", []), *native_tools]
        if system is not None:
            own = body.get("systemInstruction", {}).get("parts", [])
            extra = _system_content(system)
            body["systemInstruction"] = {**extra, "parts": [*own, *extra.get("parts", [])]}
        if self._model.vertexai:
            # Vertex AI counts these fields only (no tool config, safety settings...).
            request = {key: body[key] for key in _VERTEX_FIELDS if key in body}
        elif body.keys() == {"contents"}:
            request = body
        else:
            request = {"generateContentRequest": {"model": f"models/{self.model_name}", **body}}
        return _total_tokens(await self._model.post_to_endpoint("countTokens", request))


def _total_tokens(text: str) -> int:
    """The ``totalTokens`` of a countTokens answer (*text*, with the key already scrubbed)."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ModelResponseError(
            f"gemini countTokens answered with something that is not JSON: {text[:200]!r}"
        ) from None
    if not isinstance(data, dict):
        raise ModelResponseError(f"gemini countTokens answered with {text[:200]!r}")
    # Protobuf JSON leaves out fields at their default value: no totalTokens means 0.
    total = data.get("totalTokens", 0)
    if isinstance(total, str) and total.isdigit():  # int64 fields may arrive as strings
        total = int(total)
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise ModelResponseError(f"gemini countTokens answered totalTokens={total!r}")
    return total
