"""Anthropic messages API through the official ``anthropic`` SDK.

Guarantees (as for every provider): retries follow :class:`RetryConfig` only, a
:class:`~agentscope_rt.exception.ModelAPIError` after the last try, cumulative streaming chunks
with one id and ``is_last``/usage on the last, the HTTP response closed when the consumer stops
early or is cancelled, and the API key kept out of reprs, logs and errors.

Anthropic specifics:

* A leading ``system`` message is sent as the separate ``system`` parameter.
* Tools given in OpenAI's function format are converted to ``{"name", "description",
  "input_schema"}``; ``tool_choice`` maps ``"auto"``/``"none"``/``"required"``/a name to
  ``{"type": "auto"|"none"|"any"|"tool"}``.
* Thinking arrives as ``thinking`` blocks (``thinking_delta`` when streaming) and becomes
  :class:`ThinkingBlock`, with the block's ``signature`` (``signature_delta`` when streaming)
  kept so that the formatter can send it back unchanged in later turns. Thinking blocks in
  the request that have no signature are left out, since the API rejects them.
* Streamed tool arguments are assembled from ``input_json_delta`` events; text that is not a
  JSON object ends as ``ToolUseBlock(input={}, raw_input=<text>)``.
* Structured output is a forced call of the tool ``generate_structured_output``; the validated
  data is returned in ``ChatResponse.metadata``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Any, ClassVar

from .._provider import BadResponse, RetryConfig, excerpt, resolve_api_key
from .._schema import StructuredModel
from ..message import TextBlock, ThinkingBlock, ToolUseBlock
from ._common import (
    STRUCTURED_TOOL_NAME,
    check_formatted_messages,
    logger,
    parse_tool_value,
    structured_tool,
)
from ._model_base import ToolChoice, validate_tool_choice
from ._model_response import ChatResponse, ChatUsage, ResponseBlock
from ._sdk_stream import SdkClientModel, route_extra_fields

__all__ = ["AnthropicChatModel"]


def _anthropic_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """Convert an OpenAI function-format tool schema to Anthropic's tool format."""
    if "input_schema" in schema:
        return schema
    function = schema.get("function")
    if not isinstance(function, dict) or "name" not in function:
        raise ValueError(
            "each tool must be {'type': 'function', 'function': {'name': ..., 'parameters': "
            f"...}} (as Toolkit.get_json_schemas returns), got {schema!r}"
        )
    tool: dict[str, Any] = {
        "name": function["name"],
        "input_schema": function.get("parameters") or {"type": "object", "properties": {}},
    }
    if function.get("description"):
        tool["description"] = function["description"]
    return tool


def _anthropic_tool_choice(tool_choice: str) -> dict[str, Any]:
    if tool_choice == "auto":
        return {"type": "auto"}
    if tool_choice == "none":
        return {"type": "none"}
    if tool_choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": tool_choice}


def _unsigned_thinking(block: Any) -> bool:
    return (
        isinstance(block, dict) and block.get("type") == "thinking" and not block.get("signature")
    )


def _without_unsigned_thinking(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """*messages* without the thinking blocks that carry no signature.

    The API requires a ``signature`` on every thinking block sent back and rejects the
    request otherwise, while it allows thinking from earlier turns to be left out; so a block
    without one (reasoning from another provider, or written by hand) is omitted, and a
    message left with no content is omitted with it. Copy-on-write: only messages that hold
    such a block are copied; when none does, *messages* itself is returned.
    """
    kept: list[dict[str, Any]] | None = None
    dropped = 0
    for index, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list) and any(_unsigned_thinking(b) for b in content):
            if kept is None:
                kept = messages[:index]
            blocks = [b for b in content if not _unsigned_thinking(b)]
            dropped += len(content) - len(blocks)
            if blocks:
                kept.append({**message, "content": blocks})
        elif kept is not None:
            kept.append(message)
    if kept is None:
        return messages
    logger.debug("AnthropicChatModel: left out %d thinking block(s) without a signature", dropped)
    return kept


class AnthropicChatModel(SdkClientModel):
    """A chat model served by Anthropic's messages API.

    :param model_name: the model, e.g. ``"claude-sonnet-4-5"``.
    :param api_key: the API key; defaults to the ``ANTHROPIC_API_KEY`` environment variable
        (may be omitted when ``client_kwargs`` names a ``base_url``).
    :param max_tokens: the generation limit sent with every request.
    :param stream: whether calls return an async generator of cumulative chunks.
    :param thinking: extended-thinking configuration, e.g.
        ``{"type": "enabled", "budget_tokens": 1024}``.
    :param stream_tool_parsing: parse partial tool arguments in intermediate stream chunks.
    :param client_kwargs: passed to ``anthropic.AsyncAnthropic`` (``max_retries`` is ignored).
    :param generate_kwargs: sent with every request, e.g. ``{"temperature": 0}``.
    :param retry_config: the retry policy; ``None`` means ``RetryConfig()``.
    :raises ValueError: when no API key is available.
    """

    provider: ClassVar[str] = "anthropic"

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        max_tokens: int = 2048,
        stream: bool = True,
        thinking: dict[str, Any] | None = None,
        stream_tool_parsing: bool = True,
        client_kwargs: dict[str, Any] | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        client_kwargs = self._sdk_client_kwargs(client_kwargs, kwargs)
        key = resolve_api_key(
            api_key,
            "ANTHROPIC_API_KEY",
            "AnthropicChatModel",
            required=not client_kwargs.get("base_url"),
        )
        super().__init__(
            model_name, stream, key, stream_tool_parsing, generate_kwargs, retry_config
        )
        self._redact_header_secrets(client_kwargs)
        self.max_tokens = max_tokens
        self.thinking = thinking

        import anthropic

        self.client = anthropic.AsyncAnthropic(
            api_key=key or "unused", max_retries=0, **client_kwargs
        )

    def _request_kwargs(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        generate_kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        check_formatted_messages(messages, non_empty=True)
        kwargs: dict[str, Any] = {
            "model": self.model_name,
            "max_tokens": self.max_tokens,
            **self.generate_kwargs,
            **generate_kwargs,
        }
        if self.thinking and "thinking" not in kwargs:
            kwargs["thinking"] = self.thinking
        if structured_model is not None:
            self._warn_tools_ignored(tools, tool_choice)
            kwargs["tools"] = [_anthropic_tool(structured_tool(structured_model))]
            kwargs["tool_choice"] = {"type": "tool", "name": STRUCTURED_TOOL_NAME}
        else:
            if tools:
                kwargs["tools"] = [_anthropic_tool(t) for t in tools]
            if tool_choice:
                validate_tool_choice(tool_choice, tools)
                kwargs["tool_choice"] = _anthropic_tool_choice(tool_choice)
        if messages[0]["role"] == "system":
            kwargs["system"] = messages[0].get("content", "")
            messages = messages[1:]
        kwargs["messages"] = _without_unsigned_thinking(messages)
        if self.stream:
            kwargs["stream"] = True
        return route_extra_fields(type(self.client.messages).create, kwargs)

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        structured_model: StructuredModel | None = None,
        **generate_kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Send one messages request.

        :param messages: Anthropic-format messages; a leading system message is sent as
            ``system``.
        :param tools: tool schemas in OpenAI's function format (converted here).
        :param tool_choice: ``"auto"``, ``"none"``, ``"required"`` or a tool name.
        :param structured_model: pydantic/attrs class or JSON schema; the validated data is
            returned in ``metadata`` (``tools`` and ``tool_choice`` are then ignored).
        :param generate_kwargs: extra request fields for this call.
        :returns: a :class:`ChatResponse`, or an async generator of cumulative chunks.
        :raises ModelAPIError: when the server fails after all retries.
        :raises ModelResponseError: when structured output does not validate.
        :raises TypeError: when *messages* is not a list.
        :raises ValueError: for malformed messages, tools or tool_choice.
        """
        return await self._send(messages, tools, tool_choice, structured_model, generate_kwargs)

    async def _create(self, kwargs: dict[str, Any]) -> Any:
        return await self.client.messages.create(**kwargs)

    def _parse_response(
        self, message: Any, start: float, structured_model: StructuredModel | None
    ) -> ChatResponse:
        blocks: list[ResponseBlock] = []
        content = getattr(message, "content", None)
        if not isinstance(content, list):
            raise BadResponse(f"the response is not a message: {excerpt(message)}")
        for block in content:
            kind = getattr(block, "type", None)
            if kind == "text":
                blocks.append(TextBlock(block.text))
            elif kind == "thinking":
                blocks.append(
                    ThinkingBlock(block.thinking, getattr(block, "signature", None) or None)
                )
            elif kind == "tool_use":
                # Decoded by the SDK, which accepts NaN and lone surrogates: checked here.
                tool_input, raw = parse_tool_value(block.input)
                blocks.append(ToolUseBlock(block.id, block.name, tool_input, raw))
        usage = getattr(message, "usage", None)
        response = ChatResponse(
            blocks,
            usage=ChatUsage(
                getattr(usage, "input_tokens", 0) or 0,
                getattr(usage, "output_tokens", 0) or 0,
                time.monotonic() - start,
            ),
        )
        return self._answer(response, getattr(message, "id", None), structured_model)

    async def _stream_once(
        self, kwargs: dict[str, Any], structured_model: StructuredModel | None
    ) -> AsyncGenerator[ChatResponse, None]:
        """One streaming attempt: open the event stream and yield cumulative chunks."""
        start, stream = await self._open_events(kwargs)
        response_id: str | None = None
        input_tokens = 0
        output_tokens = 0
        # index -> [kind, text/thinking/json text, tool id or thinking signature, tool name,
        #           last parsed input]
        parts: dict[int, list[Any]] = {}
        finished = False
        try:
            async for event in stream:
                kind = event.type
                if kind == "message_stop":
                    finished = True
                elif kind == "message_start":
                    response_id = event.message.id
                    input_tokens = event.message.usage.input_tokens or 0
                    output_tokens = event.message.usage.output_tokens or 0
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "text":
                        parts[event.index] = ["text", block.text or "", None, None, None]
                    elif block.type == "thinking":
                        parts[event.index] = [
                            "thinking",
                            block.thinking or "",
                            getattr(block, "signature", None) or "",
                            None,
                            None,
                        ]
                    elif block.type == "tool_use":
                        parts[event.index] = ["tool_use", "", block.id, block.name, {}]
                    else:
                        continue
                    if parts[event.index][1]:
                        yield self._chunk(response_id, parts, False, None)
                elif kind == "content_block_delta":
                    part = parts.get(event.index)
                    delta = event.delta
                    if part is None:
                        continue
                    if delta.type == "text_delta":
                        part[1] += delta.text
                    elif delta.type == "thinking_delta":
                        part[1] += delta.thinking
                    elif delta.type == "input_json_delta":
                        part[1] += delta.partial_json
                    elif delta.type == "signature_delta":
                        # Opaque; arrives after the thinking text, so no new chunk is needed
                        # before the final one.
                        part[2] += delta.signature
                        continue
                    else:
                        continue
                    yield self._chunk(response_id, parts, False, None)
                elif kind == "message_delta":
                    usage = getattr(event, "usage", None)
                    if usage is not None and usage.output_tokens is not None:
                        output_tokens = usage.output_tokens
                    if usage is not None and getattr(usage, "input_tokens", None):
                        input_tokens = usage.input_tokens
        finally:
            await stream.aclose()
        if not finished:
            # A clean close before message_stop: the connection was dropped mid-answer.
            raise stream.cut("message_stop")
        final = self._chunk(
            response_id,
            parts,
            True,
            ChatUsage(input_tokens, output_tokens, time.monotonic() - start),
        )
        yield self._with_structured(final, structured_model)

    def _chunk(
        self,
        response_id: str | None,
        parts: dict[int, list[Any]],
        is_last: bool,
        usage: ChatUsage | None,
    ) -> ChatResponse:
        blocks: list[ResponseBlock] = []
        for part in parts.values():
            kind = part[0]
            if kind == "text":
                if part[1]:
                    blocks.append(TextBlock(part[1]))
            elif kind == "thinking":
                if part[1]:
                    blocks.append(ThinkingBlock(part[1], part[2] or None))
            else:
                block = self._streamed_tool_use(part[2], part[3], part[1], part[4], is_last)
                part[4] = block.input
                blocks.append(block)
        response = ChatResponse(blocks, stream=True, is_last=is_last, usage=usage)
        if response_id:
            response.id = response_id
        return response
