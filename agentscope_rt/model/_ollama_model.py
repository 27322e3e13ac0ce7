"""Ollama's chat API (``POST /api/chat``) over httpx, streaming as NDJSON.

The model keeps one ``httpx.AsyncClient`` per event loop (see :mod:`._loop_client`), so it can
be used from any event loop (asyncio or trio), reuses its connections between calls and never
leaves one behind: the client is closed when its loop ends (or at ``aclose()`` / the end of
``async with model``), and a stream closes its response when the generator is exhausted,
closed early (``aclose``) or cancelled. Requests are retried by
:mod:`agentscope_rt.model._retry` (429/5xx/connection errors/timeouts; ``Retry-After``
honoured); a stream is retried only until its first chunk reached the caller.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import AsyncGenerator
from typing import Any, ClassVar

import httpx

from .._provider import (
    BadResponse,
    RetryConfig,
    SecretHeaders,
    Secrets,
    StreamErrorEvent,
    excerpt,
    header_secrets,
)
from .._schema import StructuredModel, structured_model_schema, validate_structured_output
from ..exception import ModelResponseError
from ..message import TextBlock, ThinkingBlock, ToolUseBlock
from ._common import loads_strict, parse_tool_value, savable_text
from ._http_model import HttpChatModel, response_lines
from ._model_base import ToolChoice, validate_tool_choice
from ._model_response import ChatResponse, ChatUsage, ResponseBlock

__all__ = ["OllamaChatModel"]

logger = logging.getLogger(__name__)

_PROVIDER = "ollama"
DEFAULT_HOST = "http://localhost:11434"
# Local models can take minutes to load and answer; connecting should still fail fast.
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=10.0)


def new_call_id() -> str:
    """A fresh tool-call id for providers that do not send one."""
    return f"call_{uuid.uuid4().hex[:24]}"


def parse_tool_arguments(value: Any) -> tuple[dict[str, Any], str | None]:
    """``(input, raw_input)`` for tool arguments as a provider sent them (see
    :func:`~._common.parse_tool_value`): a strict JSON object (or a string holding one)
    becomes ``input``; anything else is kept in ``raw_input`` with an empty ``input``, so the
    caller can report it instead of crashing."""
    return parse_tool_value(value)


def parse_structured(provider: str, structured_model: StructuredModel, text: str) -> dict[str, Any]:
    """Parse and validate structured-output *text* against *structured_model*.

    :raises ModelResponseError: if the text is not JSON or does not match the model.
    """
    try:
        data = loads_strict(text)
    except ValueError as exc:
        raise ModelResponseError(
            f"{provider} returned structured output that is not valid JSON ({exc}): "
            f"{savable_text(text[:200])!r}"
        ) from None
    try:
        return validate_structured_output(structured_model, data)
    except ValueError as exc:
        raise ModelResponseError(
            f"{provider} returned structured output that does not match the schema: {exc}"
        ) from exc


class OllamaChatModel(HttpChatModel):
    """A model served by Ollama, through its ``/api/chat`` HTTP API.

    Accepts the messages ``OllamaChatFormatter`` produces (``role``, ``content``, ``images``,
    ``tool_calls``). Thinking models return their reasoning as a :class:`ThinkingBlock`
    (``enable_thinking`` sends Ollama's ``think`` flag). Usage comes from ``prompt_eval_count``
    and ``eval_count``.

    :param model_name: the Ollama model, e.g. ``"qwen3:8b"``.
    :param stream: whether calls return an async generator of cumulative chunks.
    :param options: Ollama ``options`` (``temperature``, ``num_ctx``, ...).
    :param keep_alive: how long Ollama keeps the model loaded, e.g. ``"5m"``.
    :param enable_thinking: Ollama's ``think`` flag; ``None`` leaves it to the server.
    :param host: the server; defaults to ``$OLLAMA_HOST`` or ``http://localhost:11434``.
    :param client_kwargs: extra arguments for ``httpx.AsyncClient`` (``timeout``,
        ``headers``, ...).
    :param generate_kwargs: extra fields for every request body.
    :param retry_config: the retry policy (default: 3 retries with exponential backoff).
    :param kwargs: merged into ``client_kwargs``, as AgentScope passes them to the client.
    """

    provider: ClassVar[str] = _PROVIDER

    def __init__(
        self,
        model_name: str,
        stream: bool = False,
        options: dict[str, Any] | None = None,
        keep_alive: str = "5m",
        enable_thinking: bool | None = None,
        host: str | None = None,
        client_kwargs: dict[str, Any] | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model_name, stream)
        host = host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST
        if "://" not in host:
            host = f"http://{host}"
        self.host = host.rstrip("/")
        self.options = options
        self.keep_alive = keep_alive
        self.think = enable_thinking
        self.client_kwargs = {"timeout": DEFAULT_TIMEOUT, **(client_kwargs or {}), **kwargs}
        headers = self.client_kwargs.get("headers")
        if headers:
            # A key sent as a header (Ollama behind an authenticating proxy, Ollama's cloud)
            # shows as *** in vars(model) and is scrubbed from errors.
            self.client_kwargs["headers"] = SecretHeaders(headers)
            self._redact = Secrets(header_secrets(headers))
        self.generate_kwargs = dict(generate_kwargs or {})
        self.retry_config = retry_config

    def _new_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.host, **self.client_kwargs)

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        structured_model: StructuredModel | None = None,
        **generate_kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Chat with the model.

        Ollama has no ``tool_choice``: ``"none"`` sends no tools, a tool name sends only
        that tool, and ``"required"`` is sent as ``"auto"`` with a warning.

        :raises ValueError: for an invalid ``tool_choice``.
        :raises ModelAPIError: when Ollama fails after all retries (HTTP status and
            Ollama's own message included).
        :raises ModelResponseError: for structured output that does not match the schema.
        """
        validate_tool_choice(tool_choice, tools)
        body: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages,
            "stream": self.stream,
            "keep_alive": self.keep_alive,
        }
        if self.options is not None:
            body["options"] = self.options
        if self.think is not None:
            body["think"] = self.think
        body.update(self.generate_kwargs)
        body.update(generate_kwargs)
        if tools and tool_choice != "none":
            selected = tools
            if tool_choice not in (None, "auto", "required"):
                selected = [t for t in tools if t.get("function", {}).get("name") == tool_choice]
            elif tool_choice == "required":
                logger.warning("Ollama has no tool_choice; 'required' is sent as 'auto'")
            body["tools"] = selected
        if structured_model is not None:
            body["format"] = structured_model_schema(structured_model)
        return await self._send(body, structured_model)

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        response = await self._post_json("/api/chat", body)
        data: dict[str, Any] = response.json()
        if isinstance(data, dict) and "error" in data:
            # Judged (and redacted) by the retry policy, as an error status would be.
            raise StreamErrorEvent(str(data["error"]), response.status_code, False)
        return data

    def _parse(
        self, data: dict[str, Any], structured_model: StructuredModel | None, started: float
    ) -> ChatResponse:
        message = data.get("message")
        if not isinstance(message, dict):
            raise BadResponse(f"the response is not a chat answer: {excerpt(data)}")
        state = _Accumulator()
        state.add(message)
        return state.response(data, structured_model, started, stream=False, is_last=True)

    async def _stream_once(
        self, body: dict[str, Any], structured_model: StructuredModel | None, started: float
    ) -> AsyncGenerator[ChatResponse, None]:
        state = _Accumulator()
        async with (
            self._open_stream("/api/chat", body) as response,
            response_lines(response) as lines,
        ):
            async for line in lines:
                if not line.strip():
                    continue
                try:
                    chunk = json.loads(line)
                except json.JSONDecodeError:
                    raise BadResponse(
                        f"malformed NDJSON line in the stream: {excerpt(line)}"
                    ) from None
                if not isinstance(chunk, dict):
                    raise BadResponse(f"unexpected line in the stream: {excerpt(line)}")
                if "error" in chunk:
                    raise StreamErrorEvent(str(chunk["error"]), 200, False)
                message = chunk.get("message") or {}
                if not isinstance(message, dict):
                    raise BadResponse(f"unexpected line in the stream: {excerpt(line)}")
                state.add(message)
                done = bool(chunk.get("done"))
                yield state.response(chunk, structured_model if done else None, started, True, done)
                if done:
                    return
            # A clean close before the chunk with "done": true: the answer is incomplete.
            raise BadResponse(
                'the stream was cut: it ended without its final chunk ("done": true); '
                "the answer is incomplete and was discarded"
            )


class ChatAccumulator:
    """A provider's answer accumulated over stream chunks (or taken from one response).

    Shared by the httpx-based providers: each feeds text, thinking and tool calls in its own
    wire shape, and :meth:`build` turns what has accumulated into a cumulative
    :class:`ChatResponse` (thinking, then text, then tool calls).
    """

    __slots__ = ("id", "text", "text_signature", "thinking", "tool_calls")

    def __init__(self) -> None:
        self.id: str = uuid.uuid4().hex
        self.text = ""
        self.text_signature: str | None = None
        self.thinking = ""
        self.tool_calls: list[ToolUseBlock] = []

    def add_tool_call(
        self, call_id: Any, name: Any, arguments: Any, signature: str | None = None
    ) -> None:
        """Record a tool call; unparsable *arguments* are kept in ``raw_input``, and
        *signature* (a provider's thought signature) in ``thought_signature``."""
        parsed, raw = parse_tool_arguments(arguments)
        self.tool_calls.append(
            ToolUseBlock(
                str(call_id or new_call_id()),
                str(name or ""),
                parsed,
                raw_input=raw,
                thought_signature=signature,
            )
        )

    def build(
        self,
        provider: str,
        structured_model: StructuredModel | None,
        usage: ChatUsage | None,
        stream: bool,
        is_last: bool,
    ) -> ChatResponse:
        """The response so far; the structured output is parsed only on the last chunk.

        :raises ModelResponseError: if the structured output does not match the schema.
        """
        content: list[ResponseBlock] = []
        if self.thinking:
            content.append(ThinkingBlock(self.thinking))
        if self.text:
            content.append(TextBlock(self.text, thought_signature=self.text_signature))
        content.extend(self.tool_calls)
        metadata = None
        if structured_model is not None and is_last:
            metadata = parse_structured(provider, structured_model, self.text)
        return ChatResponse(
            content=content,
            id=self.id,
            stream=stream,
            is_last=is_last,
            usage=usage,
            metadata=metadata,
        )


class _Accumulator(ChatAccumulator):
    """An Ollama answer, accumulated over NDJSON chunks."""

    __slots__ = ()

    def add(self, message: dict[str, Any]) -> None:
        self.text += message.get("content") or ""
        self.thinking += message.get("thinking") or ""
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            self.add_tool_call(call.get("id"), function.get("name"), function.get("arguments"))

    def response(
        self,
        data: dict[str, Any],
        structured_model: StructuredModel | None,
        started: float,
        stream: bool,
        is_last: bool,
    ) -> ChatResponse:
        usage = None
        if is_last:
            usage = ChatUsage(
                int(data.get("prompt_eval_count") or 0),
                int(data.get("eval_count") or 0),
                time.monotonic() - started,
            )
        return self.build(_PROVIDER, structured_model, usage, stream, is_last)
