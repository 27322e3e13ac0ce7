"""OpenAI chat completions through the official ``openai`` SDK.

Works with any OpenAI-compatible server: pass ``client_kwargs={"base_url": ...}``.

Guarantees:

* Retries follow :class:`RetryConfig` only (the SDK's own retries are switched off); after the
  last try a :class:`~agentscope_rt.exception.ModelAPIError` names provider, status and message.
* Streaming yields cumulative :class:`ChatResponse` chunks as the server sends them, all with
  the response's id; the last has ``is_last=True`` and the usage. Closing the generator early
  (``aclose``) or cancelling the consumer closes the HTTP response.
* Tool-argument text that is not a JSON object yields ``ToolUseBlock(input={},
  raw_input=<text>)`` instead of an exception.
* Structured output is requested as a forced call of the function
  ``generate_structured_output`` whose parameters are the model's JSON schema. This works on
  every OpenAI-compatible server that supports tools (DashScope, DeepSeek, vLLM, ...), unlike
  ``response_format={"type": "json_schema"}``, whose strict mode also rejects schemas with
  optional fields. The validated data is returned in ``ChatResponse.metadata``.
* A server that rejects the forced call (DashScope in thinking mode answers HTTP 400 "The
  tool_choice parameter does not support being set to required or object in thinking mode",
  before the stream or as its first event) gets the same request once more with
  ``tool_choice="auto"``; with the structured tool the only one offered, the model calls it.
  The model object remembers the rejection and sends ``"auto"`` from then on.
* The API key never appears in ``repr``, logs or error messages.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from typing import Any, ClassVar, Literal

from .._provider import BadResponse, RetryConfig, excerpt, resolve_api_key
from .._schema import StructuredModel
from ..exception import ModelAPIError
from ..message import AudioBlock, Base64Source, TextBlock, ThinkingBlock, ToolUseBlock
from ._common import (
    STRUCTURED_TOOL_NAME,
    check_formatted_messages,
    logger,
    parse_tool_input,
    structured_tool,
)
from ._model_base import ToolChoice, validate_tool_choice
from ._model_response import ChatResponse, ChatUsage, ResponseBlock
from ._sdk_stream import SdkClientModel, route_extra_fields

__all__ = ["OpenAIChatModel"]


def rejects_forced_tool_choice(exc: ModelAPIError) -> bool:
    """Whether *exc* is a server refusing a forced ``tool_choice`` (an HTTP 400, or an error
    event inside the stream, whose message names ``tool_choice``), as DashScope does in
    thinking mode."""
    return exc.status_code in (400, None) and "tool_choice" in exc.message


def _reasoning_of(obj: Any) -> str:
    """Reasoning text of a message or delta (``reasoning_content`` or ``reasoning``)."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(obj, name, None)
        if isinstance(value, str):
            return value
    return ""


class OpenAIChatModel(SdkClientModel):
    """A chat model served by OpenAI's chat completions API (or a compatible server).

    :param model_name: the model, e.g. ``"gpt-4o-mini"``.
    :param api_key: the API key; defaults to the ``OPENAI_API_KEY`` environment variable. May
        be omitted when ``client_kwargs`` names a ``base_url`` (local compatible servers).
    :param stream: whether calls return an async generator of cumulative chunks.
    :param reasoning_effort: sent as ``reasoning_effort`` unless a call overrides it.
    :param organization: the OpenAI organization id.
    :param stream_tool_parsing: parse partial tool arguments in intermediate stream chunks
        (otherwise their ``input`` stays ``{}`` until the last chunk).
    :param client_type: ``"openai"`` or ``"azure"`` (``AsyncAzureOpenAI``).
    :param client_kwargs: passed to the SDK client, e.g. ``{"base_url": ..., "timeout": 30}``.
        ``max_retries`` is ignored: :paramref:`retry_config` governs retries.
    :param generate_kwargs: sent with every request, e.g. ``{"temperature": 0}``.
    :param retry_config: the retry policy; ``None`` means ``RetryConfig()``.
    :raises ValueError: when no API key is available, or for an unknown ``client_type``.
    """

    provider: ClassVar[str] = "openai"
    api_key_env: ClassVar[str] = "OPENAI_API_KEY"

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        stream: bool = True,
        reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"]
        | str
        | None = None,
        organization: str | None = None,
        stream_tool_parsing: bool = True,
        client_type: Literal["openai", "azure"] = "openai",
        client_kwargs: dict[str, Any] | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        client_kwargs = self._sdk_client_kwargs(client_kwargs, kwargs)
        if client_type not in ("openai", "azure"):
            raise ValueError(f"client_type must be 'openai' or 'azure', not {client_type!r}")
        has_endpoint = bool(client_kwargs.get("base_url") or client_kwargs.get("azure_endpoint"))
        key = resolve_api_key(
            api_key, self.api_key_env, type(self).__name__, required=not has_endpoint
        )
        super().__init__(
            model_name, stream, key, stream_tool_parsing, generate_kwargs, retry_config
        )
        self._redact_header_secrets(client_kwargs)
        self.reasoning_effort = reasoning_effort
        # Set when the server refused a forced tool_choice for structured output: later
        # structured calls send tool_choice="auto" at once instead of failing first.
        self._forced_tool_choice_rejected = False

        import openai

        cls = openai.AsyncAzureOpenAI if client_type == "azure" else openai.AsyncOpenAI
        self.client = cls(
            api_key=key or "unused",
            organization=organization,
            max_retries=0,
            **client_kwargs,
        )

    # -- request --------------------------------------------------------------------------

    def _request_kwargs(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        generate_kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        check_formatted_messages(messages)
        kwargs: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages,
            **self.generate_kwargs,
            **generate_kwargs,
        }
        if self.reasoning_effort and "reasoning_effort" not in kwargs:
            kwargs["reasoning_effort"] = self.reasoning_effort
        self._put_tools(kwargs, tools, tool_choice, structured_model, self._format_tool_choice)
        if self.stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        return route_extra_fields(type(self.client.chat.completions).create, kwargs)

    def _put_tools(
        self,
        target: dict[str, Any],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        format_choice: Callable[[str], str | dict[str, Any]],
    ) -> None:
        """Set ``tools`` and ``tool_choice`` in *target* (the request, or DashScope's native
        ``parameters``).

        With *structured_model* the structured-output tool is the only one offered and its
        call is forced, or left to the model with ``"auto"`` once the server has refused the
        forced choice (see :meth:`_send`); the caller's tools are then ignored, with a
        warning. Otherwise *tools* are sent as given and *tool_choice*, validated, as
        *format_choice* writes it.

        :raises ValueError: for a *tool_choice* that is unknown or names no offered tool.
        """
        if structured_model is not None:
            self._warn_tools_ignored(tools, tool_choice)
            target["tools"] = [structured_tool(structured_model)]
            target["tool_choice"] = (
                "auto"
                if self._forced_tool_choice_rejected
                else {"type": "function", "function": {"name": STRUCTURED_TOOL_NAME}}
            )
            return
        if tools:
            target["tools"] = tools
        if tool_choice:
            validate_tool_choice(tool_choice, tools)
            target["tool_choice"] = format_choice(tool_choice)

    @staticmethod
    def _format_tool_choice(tool_choice: str) -> str | dict[str, Any]:
        if tool_choice in ("auto", "none", "required"):
            return tool_choice
        return {"type": "function", "function": {"name": tool_choice}}

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        structured_model: StructuredModel | None = None,
        **generate_kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Send one chat completion request.

        :param messages: OpenAI-format messages (from an OpenAI-style formatter).
        :param tools: tool schemas in OpenAI's function format.
        :param tool_choice: ``"auto"``, ``"none"``, ``"required"`` or a tool name.
        :param structured_model: pydantic/attrs class or JSON schema; forces a call of
            ``generate_structured_output`` and returns the validated data in ``metadata``
            (``tools`` and ``tool_choice`` are then ignored).
        :param generate_kwargs: extra request fields for this call.
        :returns: a :class:`ChatResponse`, or an async generator of cumulative chunks when
            streaming.
        :raises ModelAPIError: when the server fails after all retries.
        :raises ModelResponseError: when structured output does not validate.
        :raises TypeError: when *messages* is not a list.
        :raises ValueError: for malformed messages or an unknown tool_choice.
        """
        return await self._send(messages, tools, tool_choice, structured_model, generate_kwargs)

    async def _send(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        generate_kwargs: dict[str, Any],
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Send the request; a structured-output request whose forced ``tool_choice`` the
        server refuses is sent once more with ``tool_choice="auto"``."""

        def send() -> Awaitable[ChatResponse | AsyncGenerator[ChatResponse, None]]:
            return super(OpenAIChatModel, self)._send(
                messages, tools, tool_choice, structured_model, generate_kwargs
            )

        if structured_model is None or self._forced_tool_choice_rejected:
            return await send()
        try:
            result = await send()
        except ModelAPIError as exc:
            if not rejects_forced_tool_choice(exc):
                raise
            self._note_forced_choice_rejected(exc)
            return await send()
        if isinstance(result, AsyncGenerator):
            return self._stream_with_choice_fallback(result, send)
        return result

    async def _stream_with_choice_fallback(
        self,
        first: AsyncGenerator[ChatResponse, None],
        send: Callable[[], Awaitable[ChatResponse | AsyncGenerator[ChatResponse, None]]],
    ) -> AsyncGenerator[ChatResponse, None]:
        """The chunks of *first*; when it fails with a refused forced ``tool_choice`` before
        yielding anything, the chunks of the request sent again with ``"auto"``."""
        yielded = False
        try:
            async with aclosing(first):
                async for chunk in first:
                    yielded = True
                    yield chunk
            return
        except ModelAPIError as exc:
            if yielded or not rejects_forced_tool_choice(exc):
                raise
            self._note_forced_choice_rejected(exc)
        again = await send()
        assert isinstance(again, AsyncGenerator)
        async with aclosing(again):
            async for chunk in again:
                yield chunk

    def _note_forced_choice_rejected(self, exc: ModelAPIError) -> None:
        logger.warning(
            "%s: the server refused a forced tool_choice for structured output (%s); "
            "sending tool_choice='auto' instead, for this and later calls",
            type(self).__name__,
            exc.message,
        )
        self._forced_tool_choice_rejected = True

    async def _create(self, kwargs: dict[str, Any]) -> Any:
        return await self.client.chat.completions.create(**kwargs)

    # -- responses ------------------------------------------------------------------------

    def _audio_type(self) -> str:
        audio = self.generate_kwargs.get("audio")
        fmt = audio.get("format") if isinstance(audio, dict) else None
        return f"audio/{fmt or 'wav'}"

    def _parse_response(
        self, completion: Any, start: float, structured_model: StructuredModel | None
    ) -> ChatResponse:
        blocks: list[ResponseBlock] = []
        choices = getattr(completion, "choices", None)
        message = (
            getattr(choices[0], "message", None) if isinstance(choices, list) and choices else None
        )
        if message is None:
            raise BadResponse(f"the response is not a chat completion: {excerpt(completion)}")
        if message.content is not None and not isinstance(message.content, str):
            raise BadResponse(f"the message content is not text: {excerpt(message.content)}")
        reasoning = _reasoning_of(message)
        if reasoning:
            blocks.append(ThinkingBlock(reasoning))
        if message.content:
            blocks.append(TextBlock(message.content))
        audio = getattr(message, "audio", None)
        if audio is not None and getattr(audio, "data", None):
            blocks.append(AudioBlock(Base64Source(self._audio_type(), audio.data)))
            if getattr(audio, "transcript", None):
                blocks.append(TextBlock(audio.transcript))
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is None:
                continue
            tool_input, raw = parse_tool_input(function.arguments)
            blocks.append(ToolUseBlock(call.id, function.name, tool_input, raw))
        usage = None
        if getattr(completion, "usage", None) is not None:
            usage = ChatUsage(
                completion.usage.prompt_tokens or 0,
                completion.usage.completion_tokens or 0,
                time.monotonic() - start,
            )
        response = ChatResponse(blocks, usage=usage)
        return self._answer(response, getattr(completion, "id", None), structured_model)

    async def _stream_once(
        self, kwargs: dict[str, Any], structured_model: StructuredModel | None
    ) -> AsyncGenerator[ChatResponse, None]:
        """One streaming attempt: open the stream and yield cumulative chunks."""
        start, stream = await self._open_events(kwargs)
        response_id: str | None = None
        text = ""
        thinking = ""
        audio = ""
        transcript = ""
        calls: dict[int, list[Any]] = {}  # index -> [id, name, arguments, last parsed input]
        usage: ChatUsage | None = None
        finished = False
        try:
            async for chunk in stream:
                if response_id is None and chunk.id:
                    response_id = chunk.id
                if chunk.usage is not None:
                    usage = ChatUsage(
                        chunk.usage.prompt_tokens or 0,
                        chunk.usage.completion_tokens or 0,
                    )
                # Some compatible servers send chunks with an empty ``choices`` list or a
                # null ``delta`` (keep-alives, usage or moderation records): nothing to add.
                if not chunk.choices:
                    continue
                if chunk.choices[0].finish_reason:
                    finished = True
                delta = chunk.choices[0].delta
                if delta is None:
                    continue
                changed = False
                piece = _reasoning_of(delta)
                if piece:
                    thinking += piece
                    changed = True
                if delta.content:
                    text += delta.content
                    changed = True
                delta_audio = getattr(delta, "audio", None)
                if isinstance(delta_audio, dict):
                    if delta_audio.get("data"):
                        audio += delta_audio["data"]
                        changed = True
                    if delta_audio.get("transcript"):
                        transcript += delta_audio["transcript"]
                        changed = True
                for call in delta.tool_calls or []:
                    entry = calls.get(call.index)
                    function = call.function
                    if entry is None:
                        entry = calls[call.index] = [call.id or "", "", "", {}]
                    elif call.id and not entry[0]:
                        entry[0] = call.id
                    if function is not None:
                        if function.name and not entry[1]:
                            entry[1] = function.name
                        if function.arguments:
                            entry[2] += function.arguments
                    changed = True
                if changed:
                    yield self._stream_chunk(
                        response_id, thinking, audio, text + transcript, calls, False, None
                    )
        finally:
            await stream.aclose()
        if not (finished or stream.done_marker):
            # A clean close before the choice's finish_reason and [DONE]: the connection was
            # dropped mid-answer (tool arguments may be cut in half), so nothing is returned.
            raise stream.cut("a finish_reason or [DONE]")
        final = self._stream_chunk(
            response_id,
            thinking,
            audio,
            text + transcript,
            calls,
            True,
            ChatUsage(
                usage.input_tokens if usage else 0,
                usage.output_tokens if usage else 0,
                time.monotonic() - start,
            ),
        )
        yield self._with_structured(final, structured_model)

    def _stream_chunk(
        self,
        response_id: str | None,
        thinking: str,
        audio: str,
        text: str,
        calls: dict[int, list[Any]],
        is_last: bool,
        usage: ChatUsage | None,
    ) -> ChatResponse:
        blocks: list[ResponseBlock] = []
        if thinking:
            blocks.append(ThinkingBlock(thinking))
        if audio:
            blocks.append(AudioBlock(Base64Source(self._audio_type(), audio)))
        if text:
            blocks.append(TextBlock(text))
        for entry in calls.values():
            block = self._streamed_tool_use(entry[0], entry[1], entry[2], entry[3], is_last)
            entry[3] = block.input
            blocks.append(block)
        response = ChatResponse(blocks, stream=True, is_last=is_last, usage=usage)
        if response_id:
            response.id = response_id
        return response
