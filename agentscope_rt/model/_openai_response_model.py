"""OpenAI's Responses API (``client.responses.create``) through the official ``openai`` SDK.

Works with any server that speaks the Responses API: pass ``client_kwargs={"base_url": ...}``.
The input is the list of items :class:`~agentscope_rt.formatter.OpenAIResponseChatFormatter`
and :class:`~agentscope_rt.formatter.OpenAIResponseMultiAgentFormatter` produce (messages with
``input_text`` / ``output_text`` parts, ``function_call`` and ``function_call_output`` items).

Guarantees:

* Retries follow :class:`RetryConfig` only (the SDK's own retries are switched off); after the
  last try a :class:`~agentscope_rt.exception.ModelAPIError` names provider, status and message.
  An ``error`` or ``response.failed`` event inside a stream counts as the failure it reports
  (rate limits and server errors are retried while nothing has been yielded yet).
* The response's output items become blocks in the order the model produced them: a
  ``reasoning`` item a :class:`ThinkingBlock` (its summary, or its reasoning text where a
  server sends that instead), a ``message`` a :class:`TextBlock`, a ``function_call`` a
  :class:`ToolUseBlock` whose id is the ``call_id`` that the ``function_call_output`` answers.
* Streaming yields cumulative :class:`ChatResponse` chunks from the typed events
  (``response.reasoning_summary_text.delta``, ``response.output_text.delta``,
  ``response.function_call_arguments.delta``, ...), all with the response's id; the last has
  ``is_last=True`` and the usage. Closing the generator early (``aclose``) or cancelling the
  consumer closes the HTTP response.
* Encrypted reasoning (returned when the request has ``include=["reasoning.encrypted_content"]``,
  which is added whenever ``store`` is ``False``) is kept in the thinking block's ``signature``
  and sent back by the Responses formatters as the ``reasoning`` item the API expects, so
  stateless conversations keep the model's reasoning across tool calls.
* Structured output is requested as AgentScope does, through ``text.format`` with a
  ``json_schema``; ``strict`` is set only when the schema meets the strict-mode rules (every
  property required), which the API enforces. The validated data is returned in
  ``ChatResponse.metadata``.
* The API key never appears in ``repr``, logs or error messages.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncGenerator
from typing import Any, ClassVar, Literal

import attrs

from .._provider import (
    BadResponse,
    RetryConfig,
    StreamErrorEvent,
    excerpt,
    reasoning_signature,
    resolve_api_key,
)
from .._schema import StructuredModel, structured_model_schema
from ..message import TextBlock, ThinkingBlock
from ._common import check_formatted_messages
from ._model_base import ToolChoice, validate_tool_choice
from ._model_response import ChatResponse, ChatUsage, ResponseBlock
from ._sdk_stream import SdkClientModel, route_extra_fields

__all__ = ["OpenAIResponseModel"]

_ENCRYPTED_REASONING = "reasoning.encrypted_content"

# Error codes of ``response.failed`` / ``error`` events that another attempt may cure, with the
# HTTP status they stand for.
_RETRYABLE_CODES = {"rate_limit_exceeded": 429, "server_error": 500, "vector_store_timeout": 504}

_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def _responses_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool schemas in the Responses API's flat form (``{"type": "function", "name": ...}``);
    the chat-completions form (``{"type": "function", "function": {...}}``) is unwrapped."""
    formatted = []
    for tool in tools:
        function = tool.get("function")
        if isinstance(function, dict):
            formatted.append({"type": "function", **function})
        else:
            formatted.append({**tool, "type": tool.get("type", "function")})
    return formatted


def _strict_ready(schema: Any) -> bool:
    """Whether every object in *schema* lists all its properties as required and allows no
    others: what the API's strict mode demands."""
    if isinstance(schema, list):
        return all(_strict_ready(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != set(properties):
            return False
    return all(_strict_ready(value) for value in schema.values())


def _text_format(structured_model: StructuredModel) -> dict[str, Any]:
    """The ``text.format`` that asks for JSON matching *structured_model*."""
    schema = structured_model_schema(structured_model)
    if isinstance(structured_model, type):
        name = structured_model.__name__
    else:
        name = str(schema.get("title") or "structured_output")
    return {
        "type": "json_schema",
        "name": _SCHEMA_NAME.sub("_", name)[:64],
        "schema": schema,
        "strict": _strict_ready(schema),
    }


@attrs.define(slots=True)
class _OutputItem:
    """One output item of a response, complete or as far as the stream has brought it."""

    kind: str
    item_id: str = ""
    summary: dict[int, str] = attrs.field(factory=dict)
    reasoning: dict[int, str] = attrs.field(factory=dict)
    text: dict[int, str] = attrs.field(factory=dict)
    encrypted: str | None = None
    call_id: str = ""
    name: str = ""
    arguments: str = ""
    partial_input: dict[str, Any] = attrs.field(factory=dict)

    def absorb(self, item: Any) -> None:
        """Take over what a (complete or newly added) SDK output item says."""
        self.item_id = getattr(item, "id", None) or self.item_id
        if self.kind == "reasoning":
            summary = getattr(item, "summary", None) or []
            if summary:
                self.summary = {
                    i: getattr(part, "text", "") or "" for i, part in enumerate(summary)
                }
            content = getattr(item, "content", None) or []
            if content:
                self.reasoning = {
                    i: getattr(part, "text", "") or "" for i, part in enumerate(content)
                }
            self.encrypted = getattr(item, "encrypted_content", None) or self.encrypted
        elif self.kind == "message":
            parts = getattr(item, "content", None) or []
            if parts:
                self.text = {i: _part_text(part) for i, part in enumerate(parts)}
        elif self.kind == "function_call":
            self.call_id = getattr(item, "call_id", None) or self.call_id or self.item_id
            self.name = getattr(item, "name", None) or self.name
            arguments = getattr(item, "arguments", None)
            if arguments:
                self.arguments = arguments

    def thinking(self) -> str:
        parts = self.summary or self.reasoning
        return "\n\n".join(parts[i] for i in sorted(parts) if parts[i])


def _part_text(part: Any) -> str:
    kind = getattr(part, "type", None)
    if kind == "output_text":
        return getattr(part, "text", "") or ""
    if kind == "refusal":
        return getattr(part, "refusal", "") or ""
    return ""


_ITEM_KINDS = ("reasoning", "message", "function_call")


def _tokens(raw: Any) -> tuple[int, int] | None:
    """The input and output tokens a response reports, if it reports usage."""
    usage = getattr(raw, "usage", None)
    if usage is None:
        return None
    return getattr(usage, "input_tokens", 0) or 0, getattr(usage, "output_tokens", 0) or 0


def _stream_error(code: str | None, message: str | None) -> StreamErrorEvent:
    text = f"{code}: {message}" if code else message or "the response failed"
    status = _RETRYABLE_CODES.get(code or "")
    return StreamErrorEvent(text, status, status is not None)


class OpenAIResponseModel(SdkClientModel):
    """A chat model served by OpenAI's Responses API (or a server that speaks it).

    :param model_name: the model, e.g. ``"o4-mini"``.
    :param api_key: the API key; defaults to the ``OPENAI_API_KEY`` environment variable. May
        be omitted when ``client_kwargs`` names a ``base_url`` (local compatible servers).
    :param stream: whether calls return an async generator of cumulative chunks.
    :param reasoning_effort: sent as ``reasoning.effort`` unless a call passes ``reasoning``.
    :param reasoning_summary: sent as ``reasoning.summary`` (``"auto"``, ``"concise"``,
        ``"detailed"``): the reasoning summaries that become thinking blocks.
    :param organization: the OpenAI organization id.
    :param stream_tool_parsing: parse partial tool arguments in intermediate stream chunks
        (otherwise their ``input`` stays ``{}`` until the last chunk).
    :param client_kwargs: passed to ``openai.AsyncOpenAI``, e.g. ``{"base_url": ...}``.
        ``max_retries`` is ignored: :paramref:`retry_config` governs retries.
    :param generate_kwargs: sent with every request, e.g. ``{"temperature": 0}`` or
        ``{"store": False}``.
    :param retry_config: the retry policy; ``None`` means ``RetryConfig()``.
    :raises ValueError: when no API key is available and no ``base_url`` is given.
    """

    provider: ClassVar[str] = "openai"
    api_key_env: ClassVar[str] = "OPENAI_API_KEY"

    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        stream: bool = True,
        reasoning_effort: Literal["minimal", "low", "medium", "high"] | str | None = None,
        reasoning_summary: Literal["auto", "concise", "detailed"] | None = None,
        organization: str | None = None,
        stream_tool_parsing: bool = True,
        client_kwargs: dict[str, Any] | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
        **kwargs: Any,
    ) -> None:
        client_kwargs = self._sdk_client_kwargs(client_kwargs, kwargs)
        key = resolve_api_key(
            api_key,
            self.api_key_env,
            type(self).__name__,
            required=not client_kwargs.get("base_url"),
        )
        super().__init__(
            model_name, stream, key, stream_tool_parsing, generate_kwargs, retry_config
        )
        self.reasoning_effort = reasoning_effort
        self.reasoning_summary = reasoning_summary

        import openai

        self.client = openai.AsyncOpenAI(
            api_key=key or "unused", organization=organization, max_retries=0, **client_kwargs
        )

    # -- request --------------------------------------------------------------------------

    def _request_kwargs(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | list[str] | None,
        structured_model: StructuredModel | None,
        generate_kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        check_formatted_messages(messages, typed_items=True)
        kwargs: dict[str, Any] = {
            "model": self.model_name,
            "input": messages,
            **self.generate_kwargs,
            **generate_kwargs,
        }
        if (self.reasoning_effort or self.reasoning_summary) and "reasoning" not in kwargs:
            reasoning: dict[str, Any] = {}
            if self.reasoning_effort:
                reasoning["effort"] = self.reasoning_effort
            if self.reasoning_summary:
                reasoning["summary"] = self.reasoning_summary
            kwargs["reasoning"] = reasoning
        if kwargs.get("store") is False:
            # Nothing is kept on the server: the reasoning must travel with the conversation.
            include = list(kwargs.get("include") or [])
            if _ENCRYPTED_REASONING not in include:
                kwargs["include"] = [*include, _ENCRYPTED_REASONING]
        if structured_model is not None:
            self._warn_tools_ignored(tools, tool_choice)
            kwargs.pop("tools", None)
            kwargs.pop("tool_choice", None)
            kwargs["text"] = {
                **(kwargs.get("text") or {}),
                "format": _text_format(structured_model),
            }
        else:
            formatted_tools = _responses_tools(tools) if tools else None
            if formatted_tools:
                kwargs["tools"] = formatted_tools
            if tool_choice or isinstance(tool_choice, list):  # an empty list is a mistake
                kwargs["tool_choice"] = self._format_tool_choice(tool_choice, formatted_tools)
        if self.stream:
            kwargs["stream"] = True
        return route_extra_fields(type(self.client.responses).create, kwargs)

    @staticmethod
    def _format_tool_choice(
        tool_choice: ToolChoice | list[str], tools: list[dict[str, Any]] | None
    ) -> str | dict[str, Any]:
        """The Responses API's ``tool_choice``: a mode, one function, or (for a list of
        names) ``allowed_tools``.

        :raises ValueError: for an unknown mode, an empty list or a name that is not offered.
        :raises TypeError: for a choice that is neither a string nor a list of strings.
        """
        offered = [{"function": {"name": t.get("name")}} for t in tools or []]
        if isinstance(tool_choice, list):
            if not tool_choice:
                raise ValueError("tool_choice list must name at least one offered tool")
            for name in tool_choice:
                if not isinstance(name, str):
                    raise TypeError(
                        f"tool_choice list items must be tool names, not {type(name).__name__}"
                    )
                validate_tool_choice(name, offered)
            return {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [{"type": "function", "name": name} for name in tool_choice],
            }
        validate_tool_choice(tool_choice, offered)
        if tool_choice in ("auto", "none", "required"):
            return tool_choice
        return {"type": "function", "name": tool_choice}

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | list[str] | None = None,
        structured_model: StructuredModel | None = None,
        **generate_kwargs: Any,
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Send one Responses API request.

        :param messages: Responses API input items (from a Responses formatter).
        :param tools: tool schemas, in OpenAI's chat-completions function format (as
            ``Toolkit.get_json_schemas`` returns) or already in the Responses API's flat form.
        :param tool_choice: ``"auto"``, ``"none"``, ``"required"``, a tool name, or a list of
            tool names the model may choose from (sent as ``allowed_tools``).
        :param structured_model: pydantic/attrs class or JSON schema; requested through
            ``text.format`` and returned validated in ``metadata`` (``tools`` and
            ``tool_choice`` are then ignored).
        :param generate_kwargs: extra request fields for this call.
        :returns: a :class:`ChatResponse`, or an async generator of cumulative chunks when
            streaming.
        :raises ModelAPIError: when the server fails after all retries.
        :raises ModelResponseError: when structured output does not validate.
        :raises TypeError: when *messages* is not a list.
        :raises ValueError: for malformed input items or an unknown tool_choice.
        """
        return await self._send(
            messages,
            tools,
            tool_choice,  # type: ignore[arg-type]
            structured_model,
            generate_kwargs,
        )

    async def _create(self, kwargs: dict[str, Any]) -> Any:
        return await self.client.responses.create(**kwargs)

    # -- responses ------------------------------------------------------------------------

    def _blocks(self, items: list[_OutputItem], is_last: bool) -> list[ResponseBlock]:
        blocks: list[ResponseBlock] = []
        for item in items:
            if item.kind == "reasoning":
                thinking = item.thinking()
                signature = reasoning_signature(item.item_id, item.encrypted) if is_last else None
                if thinking or signature:
                    blocks.append(ThinkingBlock(thinking, signature))
            elif item.kind == "message":
                text = "".join(item.text[i] for i in sorted(item.text))
                if text:
                    blocks.append(TextBlock(text))
            else:
                block = self._streamed_tool_use(
                    item.call_id or item.item_id,
                    item.name,
                    item.arguments,
                    item.partial_input,
                    is_last,
                )
                item.partial_input = block.input
                blocks.append(block)
        return blocks

    def _parse_response(
        self, raw: Any, start: float, structured_model: StructuredModel | None
    ) -> ChatResponse:
        outputs = getattr(raw, "output", None)
        if not isinstance(outputs, list):
            raise BadResponse(f"the response is not a response (no output list): {excerpt(raw)}")
        items: list[_OutputItem] = []
        for output in outputs:
            kind = getattr(output, "type", None)
            if kind in _ITEM_KINDS:
                item = _OutputItem(kind)
                item.absorb(output)
                items.append(item)
        tokens = _tokens(raw)
        usage = None if tokens is None else ChatUsage(*tokens, time.monotonic() - start)
        response = ChatResponse(self._blocks(items, True), usage=usage)
        return self._answer(response, getattr(raw, "id", None), structured_model)

    async def _stream_once(
        self, kwargs: dict[str, Any], structured_model: StructuredModel | None
    ) -> AsyncGenerator[ChatResponse, None]:
        """One streaming attempt: open the stream and yield cumulative chunks."""
        start, stream = await self._open_events(kwargs)
        state = _StreamState()
        try:
            async for event in stream:
                if state.apply(event):
                    yield self._chunk(state, False, None)
        finally:
            await stream.aclose()
        if not state.finished:
            # A clean close before response.completed: the connection was dropped mid-answer
            # (a call's arguments may be cut in half), so nothing is returned.
            raise stream.cut("response.completed")
        tokens = state.tokens or (0, 0)
        final = self._chunk(state, True, ChatUsage(*tokens, time.monotonic() - start))
        yield self._with_structured(final, structured_model)

    def _chunk(self, state: _StreamState, is_last: bool, usage: ChatUsage | None) -> ChatResponse:
        items = [state.items[i] for i in sorted(state.items)]
        response = ChatResponse(
            self._blocks(items, is_last), stream=True, is_last=is_last, usage=usage
        )
        if state.response_id:
            response.id = state.response_id
        return response


class _StreamState:
    """What the events of one streamed response have said so far."""

    __slots__ = ("by_id", "finished", "items", "response_id", "tokens")

    def __init__(self) -> None:
        self.items: dict[int, _OutputItem] = {}
        self.by_id: dict[str, int] = {}
        self.response_id: str | None = None
        self.tokens: tuple[int, int] | None = None
        self.finished = False
        """Whether the end marker (``response.completed`` or ``.incomplete``) came."""

    def _item(self, event: Any, kind: str) -> _OutputItem:
        """The item an event is about, found by its output index (or item id)."""
        index = getattr(event, "output_index", None)
        if index is None:
            index = self.by_id.get(getattr(event, "item_id", None) or "", len(self.items))
        item = self.items.get(index)
        if item is None:
            # A server that skips ``response.output_item.added``.
            item = self.items[index] = _OutputItem(kind, getattr(event, "item_id", None) or "")
        if item.item_id:
            self.by_id[item.item_id] = index
        return item

    def apply(self, event: Any) -> bool:
        """Take in one event; whether the visible content changed.

        :raises StreamErrorEvent: for an ``error`` or ``response.failed`` event.
        """
        kind = getattr(event, "type", None)
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            item = self._item(event, "message")
            index = getattr(event, "content_index", 0) or 0
            item.text[index] = item.text.get(index, "") + (event.delta or "")
            return bool(event.delta)
        if kind == "response.function_call_arguments.delta":
            item = self._item(event, "function_call")
            item.arguments += event.delta or ""
            return bool(event.delta)
        if kind == "response.reasoning_summary_text.delta":
            item = self._item(event, "reasoning")
            index = getattr(event, "summary_index", 0) or 0
            item.summary[index] = item.summary.get(index, "") + (event.delta or "")
            return bool(event.delta)
        if kind == "response.reasoning_text.delta":
            item = self._item(event, "reasoning")
            index = getattr(event, "content_index", 0) or 0
            item.reasoning[index] = item.reasoning.get(index, "") + (event.delta or "")
            return bool(event.delta)
        if kind == "response.function_call_arguments.done":
            item = self._item(event, "function_call")
            changed = bool(event.arguments) and event.arguments != item.arguments
            if event.arguments:
                item.arguments = event.arguments
            return changed
        if kind in ("response.output_item.added", "response.output_item.done"):
            output = event.item
            item_kind = getattr(output, "type", None)
            if item_kind not in _ITEM_KINDS:
                return False
            item = self._item(event, item_kind)
            before = (item.thinking(), dict(item.text), item.name, item.arguments)
            item.absorb(output)
            if item.item_id:
                self.by_id[item.item_id] = event.output_index
            # A newly announced tool call is shown at once (name known, arguments to come).
            added_call = kind == "response.output_item.added" and item_kind == "function_call"
            return added_call or before != (
                item.thinking(),
                dict(item.text),
                item.name,
                item.arguments,
            )
        if kind in ("response.created", "response.in_progress"):
            self.response_id = self.response_id or getattr(event.response, "id", None)
            return False
        if kind in ("response.completed", "response.incomplete"):
            self.finished = True
            response = event.response
            self.response_id = self.response_id or getattr(response, "id", None)
            self.tokens = _tokens(response) or self.tokens
            return False
        if kind == "response.failed":
            error = getattr(event.response, "error", None)
            raise _stream_error(getattr(error, "code", None), getattr(error, "message", None))
        if kind == "error":
            raise _stream_error(getattr(event, "code", None), getattr(event, "message", None))
        return False
