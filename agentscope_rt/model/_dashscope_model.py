"""DashScope (Qwen and friends) through its OpenAI-compatible endpoint.

DashScope serves the OpenAI chat completions protocol at
``https://dashscope.aliyuncs.com/compatible-mode/v1``, so this model is
:class:`OpenAIChatModel` pointed there: the same streaming, retries, tool calls and structured
output. Reasoning (``enable_thinking``) arrives as ``reasoning_content`` and becomes
:class:`ThinkingBlock`.

The DashScope formatters produce DashScope-native content parts (``{"text": ...}``,
``{"image": url}``, ``{"audio": url}``, ``{"video": url}``), as AgentScope's do; this model
turns them into the parts the compatible endpoint documents before sending (see
:func:`compatible_messages`). Messages already in that shape are sent as they are.

Multimodal models go to DashScope's native multimodal endpoint instead, as in AgentScope
(whose SDK call there is ``AioMultiModalConversation``): with ``multimodality=True``, or with
``multimodality=None`` for a model whose name starts with ``qvq`` or contains ``-vl``. The
request is ``POST {native base}/services/aigc/multimodal-generation/generation`` with
``{"model", "input": {"messages"}, "parameters": {"result_format": "message", ...}}``, the
messages in DashScope's native shape (content lists of ``{"text"}`` / ``{"image"}`` /
``{"audio"}`` / ``{"video"}`` parts: what the DashScope formatters produce; OpenAI-shaped parts
are converted back by :func:`native_messages`). The answer's ``output.choices[0].message``
holds content as a list of ``{"text"}`` parts, ``reasoning_content`` and ``tool_calls``;
usage is ``usage.input_tokens`` / ``output_tokens`` and the id is ``request_id``. Streaming
sends ``X-DashScope-SSE: enable`` with ``incremental_output`` and reads SSE events
(``data:{...}``, an ``event:error`` event for a failure inside the stream). The native base is
``base_http_api_url`` when it is not a compatible-mode URL, else ``$DASHSCOPE_HTTP_BASE_URL``,
else :data:`DASHSCOPE_NATIVE_BASE_URL`; that endpoint is reached over httpx with one client per
event loop, like the SDK client.

Differences from AgentScope's ``DashScopeChatModel`` (which uses the ``dashscope`` SDK):
``api_key`` may come from ``DASHSCOPE_API_KEY``; text models use the OpenAI-compatible endpoint
(not the native text-generation one), whose base URL ``base_http_api_url`` replaces.
"""

from __future__ import annotations

import json
import os
import posixpath
import time
import urllib.parse
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any, ClassVar

import httpx

from .._provider import (
    DASHSCOPE_RETRYABLE_CODES,
    BadResponse,
    DashScopeEvents,
    LoopClients,
    RetryConfig,
    StreamErrorEvent,
    close_shielded,
    excerpt,
    resolve_api_key,
)
from .._schema import StructuredModel
from ..message import TextBlock, ThinkingBlock, ToolUseBlock
from ._common import (
    check_formatted_messages,
    logger,
    parse_tool_input,
)
from ._http_model import response_lines
from ._model_base import ToolChoice
from ._model_response import ChatResponse, ChatUsage, ResponseBlock
from ._openai_model import OpenAIChatModel

__all__ = [
    "DASHSCOPE_BASE_URL",
    "DASHSCOPE_NATIVE_BASE_URL",
    "MULTIMODAL_GENERATION_PATH",
    "DashScopeChatModel",
    "compatible_messages",
    "native_messages",
]

DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"
"""DashScope's OpenAI-compatible endpoint (use the ``dashscope-intl`` host outside China)."""

DASHSCOPE_NATIVE_BASE_URL = "https://dashscope.aliyuncs.com/api/v1"
"""DashScope's native API, where the multimodal endpoint lives."""

MULTIMODAL_GENERATION_PATH = "services/aigc/multimodal-generation/generation"
"""The native multimodal endpoint, relative to the native base URL."""

_COMPATIBLE_SUFFIX = "/compatible-mode/v1"
# Native stream errors name a code instead of a status; these are worth another try.

_NATIVE_TIMEOUT = httpx.Timeout(600.0, connect=10.0)

# MIME subtypes whose ``input_audio`` format name differs from the subtype.
_AUDIO_FORMATS = {"mpeg": "mp3", "x-wav": "wav", "wave": "wav", "x-m4a": "m4a", "mp4": "m4a"}


def _audio_format(url: str) -> str | None:
    """The ``input_audio`` format of a data URL or a file URL, from its MIME type or its
    extension; ``None`` when neither tells."""
    if url.startswith("data:"):
        media_type = url[5:].split(";", 1)[0].split(",", 1)[0].lower()
        if "/" not in media_type:
            return None
        subtype = media_type.split("/", 1)[1]
        return _AUDIO_FORMATS.get(subtype, subtype)
    extension = posixpath.splitext(urllib.parse.urlsplit(url).path)[1].lower().lstrip(".")
    return extension or None


def _compatible_part(part: Any) -> Any:
    """One DashScope-native part in the compatible endpoint's shape; a part that already
    has a ``type`` (or is not a native part) is returned as is."""
    if not isinstance(part, dict) or "type" in part or len(part) != 1:
        return part
    ((kind, value),) = part.items()
    if kind == "text":
        return {"type": "text", "text": value}
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": value}}
    if kind == "audio" and isinstance(value, str):
        audio: dict[str, str] = {"data": value}
        fmt = _audio_format(value)
        if fmt:
            audio["format"] = fmt
        return {"type": "input_audio", "input_audio": audio}
    if kind == "video":
        if isinstance(value, list):
            # A video given as its frames (image URLs).
            return {"type": "video", "video": value}
        return {"type": "video_url", "video_url": {"url": value}}
    return part


def compatible_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """*messages* with DashScope-native content parts in the compatible endpoint's shape.

    ``{"text": t}`` becomes ``{"type": "text", "text": t}``, ``{"image": url}`` becomes
    ``{"type": "image_url", "image_url": {"url": url}}``, ``{"audio": url}`` becomes
    ``{"type": "input_audio", "input_audio": {"data": url, "format": ...}}`` (the format taken
    from the data URL's MIME type or the file extension), ``{"video": url}`` becomes
    ``{"type": "video_url", "video_url": {"url": url}}`` and ``{"video": [frame URLs]}``
    becomes ``{"type": "video", "video": [...]}``, as DashScope's compatible mode documents.
    URLs and data URLs are passed on unchanged.

    Copy-on-write: messages whose content is a string, or whose parts are already typed, are
    not copied, and when no message needs a change *messages* itself is returned. The
    caller's messages are never modified.
    """
    return _map_parts(messages, _compatible_part)


def _map_parts(
    messages: list[dict[str, Any]], convert: Callable[[Any], Any]
) -> list[dict[str, Any]]:
    """*messages* with *convert* applied to every content part, copy-on-write: a message (and
    the list) is copied only when a part changes, so unchanged input is returned as is."""
    result: list[dict[str, Any]] | None = None
    for index, message in enumerate(messages):
        content = message.get("content")
        converted = message
        if isinstance(content, list):
            parts: list[Any] | None = None
            for position, part in enumerate(content):
                new = convert(part)
                if parts is None:
                    if new is part:
                        continue
                    parts = content[:position]
                parts.append(new)
            if parts is not None:
                converted = {**message, "content": parts}
        if result is None:
            if converted is message:
                continue
            result = messages[:index]
        result.append(converted)
    return messages if result is None else result


def _native_part(part: Any) -> Any:
    """One OpenAI-shaped content part in DashScope's native shape (others as they are)."""
    if not isinstance(part, dict) or "type" not in part:
        return part
    kind = part["type"]
    if kind == "text":
        return {"text": part.get("text", "")}
    for typed, native in (("image_url", "image"), ("video_url", "video")):
        if kind == typed:
            value = part.get(typed)
            return {native: value.get("url") if isinstance(value, dict) else value}
    if kind == "input_audio" and isinstance(part.get("input_audio"), dict):
        return {"audio": part["input_audio"].get("data")}
    if kind == "video" and "video" in part:
        return {"video": part["video"]}
    return part


def native_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """*messages* with OpenAI-shaped content parts in DashScope's native shape, the inverse of
    :func:`compatible_messages`: ``{"type": "text", "text": t}`` becomes ``{"text": t}``,
    ``{"type": "image_url", "image_url": {"url": u}}`` becomes ``{"image": u}`` (likewise
    video and ``input_audio``). Copy-on-write, as :func:`compatible_messages`."""
    return _map_parts(messages, _native_part)


def _uses_multimodal_endpoint(model_name: str, multimodality: bool | None) -> bool:
    """AgentScope's choice: ``True`` forces the multimodal endpoint, ``False`` the text one,
    ``None`` decides by the model name (``qvq...`` and ``...-vl...`` are multimodal)."""
    if multimodality is not None:
        return bool(multimodality)
    return model_name.startswith("qvq") or "-vl" in model_name


def _native_base_url(base_http_api_url: str | None) -> str:
    if base_http_api_url:
        base = base_http_api_url.rstrip("/")
        if base.endswith(_COMPATIBLE_SUFFIX):
            return base[: -len(_COMPATIBLE_SUFFIX)] + "/api/v1"
        return base
    return os.environ.get("DASHSCOPE_HTTP_BASE_URL", DASHSCOPE_NATIVE_BASE_URL).rstrip("/")


def _text_of(content: Any) -> str:
    """The text of a native message's content: a string, or a list of ``{"text"}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part["text"]) for part in content if isinstance(part, dict) and "text" in part
        )
    return ""


def _native_usage(data: dict[str, Any]) -> tuple[int, int] | None:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)


def _has_native_answer(event: dict[str, Any]) -> bool:
    return _native_message(event) is not None


def _native_message(data: Any) -> dict[str, Any] | None:
    """``output.choices[0].message`` of a native answer or stream event, if any."""
    if not isinstance(data, dict):
        return None
    choices = (data.get("output") or {}).get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    return message if isinstance(message, dict) else None


class DashScopeChatModel(OpenAIChatModel):
    """A chat model served by DashScope's OpenAI-compatible API.

    Takes the messages of :class:`~agentscope_rt.formatter.DashScopeChatFormatter` and
    :class:`~agentscope_rt.formatter.DashScopeMultiAgentFormatter` (native parts are converted
    by :func:`compatible_messages`) as well as OpenAI-shaped messages.

    :param model_name: the model, e.g. ``"qwen-max"``.
    :param api_key: the API key; defaults to the ``DASHSCOPE_API_KEY`` environment variable.
    :param stream: whether calls return an async generator of cumulative chunks (forced on when
        ``enable_thinking`` is true, as DashScope requires).
    :param enable_thinking: sent as ``enable_thinking`` (Qwen3, QwQ, DeepSeek-R1 on DashScope).
    :param multimodality: ``True`` sends requests to the native multimodal endpoint, ``False``
        to the compatible one, ``None`` (default) chooses by the model name as AgentScope
        does (``qvq*`` and ``*-vl*`` models are multimodal); see the module docstring.
    :param generate_kwargs: sent with every request, e.g. ``{"temperature": 0}``.
    :param base_http_api_url: the endpoint; defaults to :data:`DASHSCOPE_BASE_URL` (a native
        base such as ``https://dashscope.aliyuncs.com/api/v1`` is used as is by the
        multimodal endpoint, and a compatible-mode URL is mapped to the native one).
    :param stream_tool_parsing: parse partial tool arguments in intermediate stream chunks.
    :param client_kwargs: passed to the ``openai`` SDK client.
    :param retry_config: the retry policy; ``None`` means ``RetryConfig()``.
    :raises ValueError: when no API key is available.
    """

    provider: ClassVar[str] = "dashscope"
    api_key_env: ClassVar[str] = "DASHSCOPE_API_KEY"

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        stream: bool = True,
        enable_thinking: bool | None = None,
        multimodality: bool | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        base_http_api_url: str | None = None,
        stream_tool_parsing: bool = True,
        client_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        if enable_thinking and not stream:
            logger.info("DashScopeChatModel: enable_thinking requires streaming; stream=True")
            stream = True
        # Resolve here so that the error names DASHSCOPE_API_KEY even with a base URL given.
        key = resolve_api_key(api_key, self.api_key_env, "DashScopeChatModel")
        client_kwargs = dict(client_kwargs or {})
        client_kwargs.setdefault("base_url", base_http_api_url or DASHSCOPE_BASE_URL)
        self.enable_thinking = enable_thinking
        self.multimodality = multimodality
        self._native: LoopClients[httpx.AsyncClient] | None = None
        if _uses_multimodal_endpoint(model_name, multimodality):
            native_base = _native_base_url(base_http_api_url)
            timeout = client_kwargs.get("timeout", _NATIVE_TIMEOUT)
            headers = {"Authorization": f"Bearer {key}", "Accept": "application/json"}
            self._native = LoopClients(
                lambda: httpx.AsyncClient(base_url=native_base, headers=headers, timeout=timeout),
                _close_httpx,
            )
        super().__init__(
            model_name,
            api_key=key,
            stream=stream,
            stream_tool_parsing=stream_tool_parsing,
            client_kwargs=client_kwargs,
            generate_kwargs=generate_kwargs,
            retry_config=retry_config,
            **kwargs,
        )

    def _request_kwargs(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        generate_kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        check_formatted_messages(messages)
        generate_kwargs = self._with_thinking(generate_kwargs)
        if self._native is not None:
            return self._native_body(
                messages, tools, tool_choice, structured_model, generate_kwargs
            )
        return super()._request_kwargs(
            compatible_messages(messages), tools, tool_choice, structured_model, generate_kwargs
        )

    def _with_thinking(self, generate_kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's *generate_kwargs* with ``enable_thinking`` added to the request body
        (through ``extra_body``), unless it is None or the call or ``generate_kwargs`` already
        set it. Added per request, as AgentScope does, so :attr:`generate_kwargs` stays what
        was passed."""
        thinking = self.enable_thinking
        if thinking is None:
            return generate_kwargs
        extra_body = generate_kwargs.get("extra_body", self.generate_kwargs.get("extra_body"))
        extra_body = extra_body if isinstance(extra_body, dict) else {}
        if "enable_thinking" in extra_body or any(
            "enable_thinking" in kwargs for kwargs in (generate_kwargs, self.generate_kwargs)
        ):
            return generate_kwargs
        return {**generate_kwargs, "extra_body": {**extra_body, "enable_thinking": thinking}}

    # -- the native multimodal endpoint ---------------------------------------------------

    @property
    def uses_multimodal_endpoint(self) -> bool:
        """Whether requests go to the native multimodal endpoint."""
        return self._native is not None

    def _native_body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        generate_kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        parameters: dict[str, Any] = {"result_format": "message"}
        for key, value in {**self.generate_kwargs, **generate_kwargs}.items():
            if key == "extra_body" and isinstance(value, dict):
                parameters.update(value)
            else:
                parameters[key] = value
        self._put_tools(parameters, tools, tool_choice, structured_model, self._native_tool_choice)
        if self.stream:
            parameters["incremental_output"] = True
        return {
            "model": self.model_name,
            "input": {"messages": native_messages(messages)},
            "parameters": parameters,
        }

    @classmethod
    def _native_tool_choice(cls, tool_choice: str) -> str | dict[str, Any]:
        """*tool_choice* as the native API takes it: ``"required"`` becomes ``"auto"``, with a
        warning (as AgentScope: the native API knows only ``"auto"``, ``"none"`` and a
        name)."""
        if tool_choice == "required":
            logger.warning(
                "DashScopeChatModel: tool_choice 'required' is not supported by "
                "DashScope's native API; 'auto' is sent"
            )
            tool_choice = "auto"
        return cls._format_tool_choice(tool_choice)

    async def _create(self, kwargs: dict[str, Any]) -> Any:
        if self._native is None:
            return await super()._create(kwargs)
        response = await self._native.get().post(MULTIMODAL_GENERATION_PATH, json=kwargs)
        response.raise_for_status()
        data: Any = response.json()  # JSONDecodeError: the caller's BadResponse
        if isinstance(data, dict) and data.get("code") and _native_message(data) is None:
            # An error in a 200 answer: judged (and redacted) by the retry policy.
            code = str(data.get("code"))
            raise StreamErrorEvent(
                f"{code}: {data.get('message')}", 200, code.startswith(DASHSCOPE_RETRYABLE_CODES)
            )
        return data

    def _parse_response(
        self, completion: Any, start: float, structured_model: StructuredModel | None
    ) -> ChatResponse:
        if self._native is None:
            return super()._parse_response(completion, start, structured_model)
        blocks: list[ResponseBlock] = []
        message = _native_message(completion)
        if message is None:
            raise BadResponse(
                f"the response is not a multimodal generation answer: {excerpt(completion)}"
            )
        reasoning = message.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            blocks.append(ThinkingBlock(reasoning))
        text = _text_of(message.get("content"))
        if text:
            blocks.append(TextBlock(text))
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            arguments = function.get("arguments")
            if isinstance(arguments, dict):
                arguments = json.dumps(arguments, ensure_ascii=False)
            tool_input, raw = parse_tool_input(arguments)
            blocks.append(
                ToolUseBlock(
                    str(call.get("id") or ""), str(function.get("name") or ""), tool_input, raw
                )
            )
        usage = _native_usage(completion)
        response = ChatResponse(
            blocks,
            usage=None if usage is None else ChatUsage(*usage, time.monotonic() - start),
        )
        request_id = completion.get("request_id")
        return self._answer(response, str(request_id) if request_id else None, structured_model)

    async def _stream_once(
        self, kwargs: dict[str, Any], structured_model: StructuredModel | None
    ) -> AsyncGenerator[ChatResponse, None]:
        if self._native is None:
            # Closed here when our consumer stops early: left to the garbage collector, the
            # compatible-mode stream (and its connection) would stay open until collected.
            async with aclosing(super()._stream_once(kwargs, structured_model)) as compatible:
                async for chunk in compatible:
                    yield chunk
            return
        start = time.monotonic()
        state = _NativeStream()
        client = self._native.get()
        request = client.build_request(
            "POST",
            MULTIMODAL_GENERATION_PATH,
            json=kwargs,
            headers={"Accept": "text/event-stream", "X-DashScope-SSE": "enable"},
        )
        response = await client.send(request, stream=True)
        try:
            if response.is_error:
                await response.aread()
                response.raise_for_status()
            parser = DashScopeEvents(_has_native_answer)
            async with response_lines(response) as lines:
                async for line in lines:
                    event = parser.feed(line)
                    if event is not None and state.add(event):
                        yield self._stream_chunk(
                            state.id, state.thinking, "", state.text, state.calls, False, None
                        )
            event = parser.end()
            if event is not None:
                state.add(event)
        finally:
            await close_shielded(response)
        if not state.finished:
            # A clean close before the choice's finish_reason: the answer is incomplete.
            raise BadResponse(
                f"the stream was cut: it ended after {state.events} event(s) without a "
                "finish_reason; the answer is incomplete and was discarded"
                if state.events
                else "the streaming request was answered without an event stream "
                f"(content-type {response.headers.get('content-type') or 'unknown'}, no events)"
            )
        final = self._stream_chunk(
            state.id,
            state.thinking,
            "",
            state.text,
            state.calls,
            True,
            ChatUsage(*(state.usage or (0, 0)), time.monotonic() - start),
        )
        yield self._with_structured(final, structured_model)

    async def aclose(self) -> None:
        """Close the running event loop's clients (the SDK's and, for the multimodal
        endpoint, the native one) now; see :meth:`OpenAIChatModel.aclose`."""
        await super().aclose()
        if self._native is not None:
            await self._native.aclose()


async def _close_httpx(client: httpx.AsyncClient) -> None:
    await client.aclose()


class _NativeStream:
    """A native multimodal answer, accumulated over incremental stream events."""

    __slots__ = ("calls", "events", "finished", "id", "text", "thinking", "usage")

    def __init__(self) -> None:
        self.events = 0
        self.finished = False
        self.id: str | None = None
        self.text = ""
        self.thinking = ""
        # index -> [id, name, arguments so far, last parsed input]
        self.calls: dict[int, list[Any]] = {}
        self.usage: tuple[int, int] | None = None

    def add(self, event: dict[str, Any]) -> bool:
        """Take one event in; whether it added content."""
        self.events += 1
        if self.id is None and event.get("request_id"):
            self.id = str(event["request_id"])
        self.usage = _native_usage(event) or self.usage
        message = _native_message(event)
        if message is None:
            return False
        # Intermediate events say "null" (a string); the last one names why it stopped.
        reason = event["output"]["choices"][0].get("finish_reason")
        if reason and reason != "null":
            self.finished = True
        changed = False
        piece = message.get("reasoning_content")
        if isinstance(piece, str) and piece:
            self.thinking += piece
            changed = True
        piece = _text_of(message.get("content"))
        if piece:
            self.text += piece
            changed = True
        for position, call in enumerate(message.get("tool_calls") or []):
            if not isinstance(call, dict):
                continue
            index = call.get("index", position)
            entry = self.calls.get(index)
            if entry is None:
                entry = self.calls[index] = [call.get("id") or "", "", "", {}]
            elif call.get("id") and not entry[0]:
                entry[0] = call["id"]
            function = call.get("function") or {}
            if function.get("name") and not entry[1]:
                entry[1] = function["name"]
            arguments = function.get("arguments")
            if isinstance(arguments, dict):
                entry[2] = json.dumps(arguments, ensure_ascii=False)
            elif arguments:
                entry[2] += arguments
            changed = True
        return changed
