"""Closing the ``openai`` / ``anthropic`` SDK streams completely.

An SDK ``AsyncStream`` reads its events through a chain of async generators (its event
iterator, the SSE decoder, the HTTP client's byte iterators). ``async for`` never closes the
generator it iterates, so when the stream stops early — or when the SDK itself stops at
``[DONE]`` — the inner generators stay suspended until the garbage collector finalises them,
which trio reports as a ResourceWarning. So the whole chain is closed explicitly, outermost
first (the outermost one's ``finally`` closes the HTTP response), then the response itself, all
inside a shield so a cancelled consumer still releases the connection.
"""

from __future__ import annotations

import codecs
import functools
import inspect
import time
import types
from abc import abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, ClassVar, Self

import anyio

from .._provider import (
    CLOSE_TIMEOUT,
    BadResponse,
    LoopClients,
    RetryConfig,
    Secrets,
    call_with_retry,
    close_generator_chain,
    close_orphans,
    close_sdk_client,
    header_secrets,
    loop_copy,
    parsed_sdk_answer,
    sdk_owns_http_client,
    shape_checked,
    stream_with_retry,
    suspended_generator_chain,
)
from .._schema import StructuredModel
from ..message import ToolUseBlock
from ._common import (
    logger,
    parse_partial_json,
    parse_tool_input,
    scrub_surrogates,
    structured_from_blocks,
)
from ._model_base import ChatModelBase, ToolChoice
from ._model_response import ChatResponse

__all__ = [
    "SdkClientModel",
    "SdkEvents",
    "route_extra_fields",
    "suspended_generator_chain",
]


def _generators_in_traceback(tb: types.TracebackType | None) -> list[Any]:
    """The suspended generator chains referenced by the local variables of *tb*'s frames."""
    found: list[Any] = []
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            if isinstance(value, types.AsyncGeneratorType):
                found.extend(suspended_generator_chain(value))
        tb = tb.tb_next
    return found


async def _utf8_checked(chunks: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
    """*chunks*, each checked to continue valid UTF-8 text.

    The SDKs decode each event line strictly, inside a generator that iterates another one;
    their ``UnicodeDecodeError`` would leave that inner generator suspended (trio reports
    it when collected). Raised here, at the bottom of the chain, the error unwinds every
    generator above it and :class:`BadResponse` says what came.

    :raises BadResponse: at the first bytes that are not UTF-8.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        async for chunk in chunks:
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                raise BadResponse(f"a stream event is not UTF-8 text ({exc.reason})") from None
            yield chunk
    finally:
        # The HTTP library's byte generators below this one, which nothing else closes.
        await close_generator_chain(chunks)


class _Utf8CheckedDecoder:
    """An SDK's server-sent-event decoder reading bytes through :func:`_utf8_checked`."""

    __slots__ = ("_decoder",)

    def __init__(self, decoder: Any) -> None:
        self._decoder = decoder

    def aiter_bytes(self, iterator: AsyncIterator[bytes]) -> Any:
        return self._decoder.aiter_bytes(_utf8_checked(iterator))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._decoder, name)


class SdkEvents:
    """The events of an SDK ``AsyncStream``, with a complete :meth:`aclose`.

    Iterate it with ``async for`` (it is a plain iterator, not a generator, so iterating
    creates nothing that could be left suspended) and always ``await events.aclose()`` in a
    ``finally``. The generator chain is recorded when the first event arrives, while every
    link is still suspended inside the one before it; the SDK may later finish the outer
    generator (e.g. at ``[DONE]``) and so drop its own reference to the inner ones.
    """

    __slots__ = ("_chain", "_stream", "count", "done_marker")

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._chain: list[types.AsyncGeneratorType[Any, Any]] = []
        self.count = 0
        """How many events have arrived."""
        self.done_marker = False
        """Whether the stream's ``data: [DONE]`` arrived (OpenAI's end marker, which the SDK
        consumes without yielding)."""
        decoder = getattr(stream, "_decoder", None)
        if hasattr(decoder, "aiter_bytes") and not isinstance(decoder, _Utf8CheckedDecoder):
            stream._decoder = _Utf8CheckedDecoder(decoder)
        iter_events = getattr(stream, "_iter_events", None)
        if iter_events is not None and "_iter_events" not in vars(stream):
            # The openai SDK reads its server-sent events through this method, first called
            # at the first event; watching them is the only way to see [DONE].
            stream._iter_events = functools.partial(self._watch_done, iter_events)

    async def _watch_done(self, iter_events: Any) -> AsyncGenerator[Any, None]:
        async for sse in iter_events():
            if sse.data.startswith("[DONE]"):
                self.done_marker = True
            yield sse

    def __aiter__(self) -> SdkEvents:
        return self

    async def __anext__(self) -> Any:
        try:
            event = await self._stream.__anext__()
        except Exception as exc:
            if not self._chain:
                # The SDK raised (e.g. an error event) before yielding anything: its outer
                # generator is finished, but the frames of the traceback still hold the
                # inner generators it was iterating.
                self._chain = _generators_in_traceback(exc.__traceback__)
            raise
        if not self._chain:
            # The SDKs keep the generator in ``_iterator`` (a plain attribute in openai, a
            # cached property in anthropic); ``__dict__`` avoids creating one that never ran.
            self._chain = suspended_generator_chain(vars(self._stream).get("_iterator"))
        self.count += 1
        return event

    def cut(self, marker: str) -> BadResponse:
        """The error for a stream that ended (a clean close) before its end *marker*: it
        names how many events came, and when none did, the content type that came instead of
        an event stream."""
        if self.count:
            return BadResponse(
                f"the stream was cut: it ended after {self.count} event(s) without {marker}; "
                "the answer is incomplete and was discarded"
            )
        response = getattr(self._stream, "response", None)
        headers = getattr(response, "headers", None)
        kind = headers.get("content-type") if headers is not None else None
        return BadResponse(
            "the streaming request was answered without an event stream "
            f"(content-type {kind or 'unknown'}, no events)"
        )

    async def aclose(self) -> None:
        """Close the generator chain, outermost first, then the HTTP response; shielded and
        bounded by :data:`CLOSE_TIMEOUT`, so a cancelled consumer still releases the
        connection. Closing twice is harmless."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
            chain = self._chain or suspended_generator_chain(vars(self._stream).get("_iterator"))
            for generator in chain:
                await generator.aclose()
            await self._stream.close()


@functools.cache
def _accepted_parameters(method: Any) -> frozenset[str]:
    # Computed once per SDK method: the overloads share one implementation signature.
    return frozenset(inspect.signature(method).parameters)


def route_extra_fields(method: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Move request fields the SDK method does not declare into ``extra_body``.

    SDK releases differ in which request fields they name (e.g. ``temperature``); the server
    accepts them all, so unknown ones travel in the JSON body instead of failing with a
    ``TypeError`` inside the SDK.
    """
    accepted = _accepted_parameters(method)
    unknown = [key for key in kwargs if key not in accepted]
    if not unknown:
        return kwargs
    routed = {key: value for key, value in kwargs.items() if key in accepted}
    extra_body = dict(kwargs.get("extra_body") or {})
    for key in unknown:
        extra_body.setdefault(key, kwargs[key])
    routed["extra_body"] = extra_body
    return routed


class SdkClientModel(ChatModelBase):
    """A chat model that owns an SDK client (``self.client``): closable, and an async context
    manager that closes it on exit.

    The client assigned to ``self.client`` is a template: inside an event loop ``self.client``
    is a copy of it with its own connection pool, made on the first call in that loop, reused
    by later calls there and closed when the loop ends (see :mod:`._loop_client`), so a model
    that the program never closes leaves no connection behind, on asyncio and trio alike. A
    client built with the user's own ``http_client`` is used as given.

    A call is one template for every SDK provider (:meth:`_send`): the subclass builds the
    request (:meth:`_request_kwargs`), names the SDK call (:meth:`_create`), parses a complete
    response (:meth:`_parse_response`) and runs one streaming attempt (:meth:`_stream_once`);
    the retry policy, the timing and the redaction of the API key are applied here.

    :param model_name: the provider's model name.
    :param stream: whether calls return an async generator of cumulative chunks.
    :param api_key: the resolved API key (``None`` for servers that need none); scrubbed from
        every error message.
    :param stream_tool_parsing: parse partial tool arguments in intermediate stream chunks.
    :param generate_kwargs: sent with every request.
    :param retry_config: the retry policy; ``None`` means ``RetryConfig()``.
    """

    provider: ClassVar[str]
    _client_template: Any = None
    _loop_clients: LoopClients[Any] | None = None

    @property
    def client(self) -> Any:
        """The SDK client of the running event loop (outside an event loop: the template,
        which has opened no connection)."""
        clients = self._loop_clients
        if clients is not None:
            try:
                return clients.get()
            except anyio.NoEventLoopError:
                pass
        return self._client_template

    @client.setter
    def client(self, value: Any) -> None:
        self._client_template = value
        self._loop_clients = (
            LoopClients(functools.partial(loop_copy, value), close_sdk_client)
            if sdk_owns_http_client(value)
            else None
        )

    def __init__(
        self,
        model_name: str,
        stream: bool,
        api_key: str | None,
        stream_tool_parsing: bool,
        generate_kwargs: dict[str, Any] | None,
        retry_config: RetryConfig | None,
    ) -> None:
        super().__init__(model_name, stream)
        self._secrets = Secrets((api_key,) if api_key else ())
        self.stream_tool_parsing = stream_tool_parsing
        self.generate_kwargs: dict[str, Any] = dict(generate_kwargs or {})
        self.retry_config = retry_config or RetryConfig()

    def _warn_tools_ignored(
        self, tools: list[dict[str, Any]] | None, tool_choice: ToolChoice | list[str] | None
    ) -> None:
        """Log that *tools* and *tool_choice*, when given, are ignored: a structured-output
        request offers its own tool (or format) only."""
        if tools or tool_choice:
            logger.warning(
                "%s: structured_model given, so tools and tool_choice are ignored",
                type(self).__name__,
            )

    def _redact_header_secrets(self, client_kwargs: dict[str, Any]) -> None:
        """Scrub the credentials *client_kwargs* sends as extra headers (``default_headers``)
        from errors, like the API key."""
        self._secrets = Secrets(
            (*self._secrets, *header_secrets(client_kwargs.get("default_headers")))
        )

    @classmethod
    def _sdk_client_kwargs(
        cls, client_kwargs: dict[str, Any] | None, unknown: dict[str, Any]
    ) -> dict[str, Any]:
        """A copy of *client_kwargs* without ``max_retries`` (the retry policy is
        ``retry_config`` alone); logs a warning for that key and for *unknown* arguments."""
        if unknown:
            logger.warning(
                "%s ignores unknown keyword arguments: %s", cls.__name__, sorted(unknown)
            )
        client_kwargs = dict(client_kwargs or {})
        if client_kwargs.pop("max_retries", None) is not None:
            logger.warning(
                "%s: client_kwargs['max_retries'] is ignored; use retry_config", cls.__name__
            )
        return client_kwargs

    @abstractmethod
    def _request_kwargs(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        generate_kwargs: dict[str, Any],
    ) -> dict[str, Any]:
        """The SDK call's keyword arguments for one request (validating the input)."""

    @abstractmethod
    async def _create(self, kwargs: dict[str, Any]) -> Any:
        """Make the SDK call with *kwargs*: a complete response, or a stream when streaming."""

    @abstractmethod
    def _parse_response(
        self, raw: Any, start: float, structured_model: StructuredModel | None
    ) -> ChatResponse:
        """The :class:`ChatResponse` of a complete SDK response received since *start*."""

    @abstractmethod
    def _stream_once(
        self, kwargs: dict[str, Any], structured_model: StructuredModel | None
    ) -> AsyncGenerator[ChatResponse, None]:
        """One streaming attempt: open the stream and yield cumulative chunks."""

    async def _send(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: ToolChoice | None,
        structured_model: StructuredModel | None,
        generate_kwargs: dict[str, Any],
    ) -> ChatResponse | AsyncGenerator[ChatResponse, None]:
        """Build the request and send it under :attr:`retry_config`: the parsed response, or
        the retried stream of cumulative chunks when streaming."""
        await close_orphans()
        kwargs = self._request_kwargs(
            messages, tools, tool_choice, structured_model, generate_kwargs
        )
        if self.stream:
            return stream_with_retry(
                self.provider,
                lambda: shape_checked(
                    self._stream_once(kwargs, structured_model), scrub_surrogates
                ),
                self.retry_config,
                redact=self._secrets,
            )
        start = time.monotonic()

        async def attempt() -> ChatResponse:
            # Parsed inside the retried attempt: an answer that is not what the protocol
            # promises raises BadResponse, which the policy retries as a server fault.
            return await parsed_sdk_answer(
                lambda: self._create(kwargs),
                lambda raw: scrub_surrogates(self._parse_response(raw, start, structured_model)),
            )

        return await call_with_retry(
            self.provider, attempt, self.retry_config, redact=self._secrets
        )

    async def _open_events(self, kwargs: dict[str, Any]) -> tuple[float, SdkEvents]:
        """Open one streaming attempt: when it started (``time.monotonic()``, for the usage's
        time) and the SDK's events, which the caller must ``aclose`` in a ``finally``."""
        start = time.monotonic()
        return start, SdkEvents(await self._create(kwargs))

    def _answer(
        self,
        response: ChatResponse,
        response_id: str | None,
        structured_model: StructuredModel | None,
    ) -> ChatResponse:
        """*response* (a complete, not streamed one) with the provider's *response_id* when
        it gave one (else the id the response made itself) and, when one was requested, the
        validated structured output in ``metadata``.

        :raises ModelResponseError: when the structured output does not validate.
        """
        if response_id:
            response.id = response_id
        return self._with_structured(response, structured_model)

    def _with_structured(
        self, response: ChatResponse, structured_model: StructuredModel | None
    ) -> ChatResponse:
        """*response* with the validated structured output in ``metadata`` when one was
        requested.

        :raises ModelResponseError: when the structured output does not validate.
        """
        if structured_model is not None:
            response.metadata = structured_from_blocks(
                response.content, structured_model, self.provider
            )
        return response

    def _streamed_tool_use(
        self, call_id: str, name: str, arguments: str, previous: dict[str, Any], is_last: bool
    ) -> ToolUseBlock:
        """A tool call as a stream chunk shows it, from the argument text so far.

        On the last chunk the text is parsed completely (text that is not a JSON object is
        kept in ``raw_input``); before it, with :attr:`stream_tool_parsing`, the input is the
        best partial parse, *previous* (the last one) while the text does not parse, and
        ``{}`` without it.
        """
        if is_last:
            tool_input, raw = parse_tool_input(arguments)
            return ToolUseBlock(call_id, name, tool_input, raw)
        if not self.stream_tool_parsing:
            return ToolUseBlock(call_id, name, {})
        partial = parse_partial_json(arguments)
        return ToolUseBlock(call_id, name, previous if partial is None else partial)

    async def aclose(self) -> None:
        """Close the running event loop's SDK client and its connection pool now (safe to call
        twice; a later call opens a new one). Clients used in other event loops are closed
        when those loops end; a client built with the user's ``http_client`` is closed."""
        if self._loop_clients is not None:
            await self._loop_clients.aclose()
        elif self._client_template is not None:
            await close_sdk_client(self._client_template)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
