"""The realtime model interface, AgentScope's :class:`RealtimeModelBase`, on anyio.

:meth:`RealtimeModelBase.connect` opens the WebSocket, starts the task that reads the
provider's messages (in the model's own task group, kept in an exit stack until
:meth:`RealtimeModelBase.disconnect`, so call both from one task) and sends the session
configuration. Each provider message becomes zero or more :class:`ModelEvents` sent to the
outgoing stream. The reader never raises into its task group: a failure is sent as a
``ModelErrorEvent``, the end of the connection as a ``WebsocketDisconnectEvent``.

A session is never left open and unread. A message the provider's parser cannot take (a
binary frame that is not UTF-8, an ``error`` that is not an object, an audio delta that is a
number, ...) becomes one ``ModelErrorEvent`` with code ``invalid_message`` and the reader goes
on with the next message, the same rule for every provider. When the reader itself ends (the
provider closed the connection, the connection failed, nobody reads the events any more), it
closes the connection: ``connected`` turns false and a later send raises ``ModelAPIError``.
Error texts sent or raised have the API key scrubbed, whichever path they took.

Needs ``wsproto`` (the ``dashscope`` extra).
"""

from __future__ import annotations

import contextlib
import json
from abc import ABC, abstractmethod
from typing import Any

import anyio

from .._provider import Secrets, redact_text
from ..exception import ModelAPIError
from ..message import AudioBlock, Base64Source, ImageBlock, TextBlock, ToolResultBlock
from ._model_events import ModelEvents

__all__ = ["RealtimeModelBase", "error_event", "response_id_of"]

_NORMAL_CLOSURE = 1000
_INVALID_MESSAGE = "invalid_message"


def _websocket() -> Any:
    try:
        from .._provider import websocket
    except ImportError as exc:
        from .._extras import missing_extra

        raise missing_extra("the realtime models", "dashscope", exc.name) from exc
    return websocket


def error_event(error: Any, type_field: str = "type") -> ModelEvents.ModelErrorEvent:
    """The ``ModelErrorEvent`` of a provider's ``error`` field: an object with *type_field*,
    ``code`` and ``message``, or anything else taken as the message itself."""
    if not isinstance(error, dict):
        message = str(error) if error else "An unknown error occurred."
        return ModelEvents.ModelErrorEvent(error_type="unknown", code="unknown", message=message)
    return ModelEvents.ModelErrorEvent(
        error_type=str(error.get(type_field, "unknown")),
        code=str(error.get("code", "unknown")),
        message=str(error.get("message", "An unknown error occurred.")),
    )


def response_id_of(data: dict[str, Any]) -> str:
    """The id of a ``response.created`` / ``response.done`` event's response, as text
    (``""`` when absent). The model keeps it for the response's later events, so a number
    here is taken as its text rather than failing each of them."""
    response = data.get("response")
    if not isinstance(response, dict) or response.get("id") is None:
        return ""
    return str(response["id"])


class RealtimeModelBase(ABC):
    """A realtime (speech in, speech out) model reached over one WebSocket.

    :param model_name: the provider's model name.
    """

    model_name: str
    support_input_modalities: list[str]
    websocket_url: str
    websocket_headers: dict[str, str]
    input_sample_rate: int
    output_sample_rate: int
    provider: str = "realtime"

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self._stack: contextlib.AsyncExitStack | None = None
        self._connection: Any = None
        self._secrets: tuple[str, ...] = Secrets()
        self._reading = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_name={self.model_name!r})"

    @property
    def connected(self) -> bool:
        """Whether a connection is open and read: true from :meth:`connect` until
        :meth:`disconnect`, or until the provider closes the connection or it fails (after
        which a ``WebsocketDisconnectEvent`` has been sent; still call :meth:`disconnect`)."""
        return self._stack is not None and self._reading

    async def connect(
        self, outgoing_queue: Any, instructions: str, tools: list[dict[str, Any]] | None = None
    ) -> None:
        """Connect, start reading, and configure the session.

        :param outgoing_queue: where the :class:`ModelEvents` go: an anyio memory object send
            stream (anything with ``async send(event)``).
        :param instructions: the system instructions.
        :param tools: tool JSON schemas (a Toolkit's ``get_json_schemas()``).
        :raises RuntimeError: when already connected.
        :raises ModelAPIError: when the provider refuses or cannot be reached.
        """
        if self._stack is not None:
            raise RuntimeError(f"{type(self).__name__} is already connected")
        if not callable(getattr(outgoing_queue, "send", None)):
            raise TypeError("outgoing_queue must have an async send(event), e.g. an anyio stream")
        websocket = _websocket()
        stack = contextlib.AsyncExitStack()
        try:
            try:
                connection = await stack.enter_async_context(
                    websocket.connect(self.websocket_url, self.websocket_headers)
                )
            except (OSError, websocket.WebSocketHandshakeError, websocket.WebSocketClosed) as exc:
                raise self._error(exc) from None
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)  # first on exit: the reader stops
            self._reading = True
            group.start_soon(self._receive_model_event_loop, outgoing_queue, connection)
            self._connection = connection
            await self._send_json(self._build_session_config(instructions, tools))
        except BaseException:
            self._connection = None
            await stack.aclose()
            raise
        self._stack = stack

    async def disconnect(self) -> None:
        """Stop reading and close the connection (safe to call twice)."""
        stack, self._stack, self._connection = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    def _inline_source(self, block: AudioBlock | ImageBlock, what: str) -> Base64Source:
        """*block*'s base64 data: realtime APIs take media inline, and fetching a URL here
        would hold the session up.

        :raises ValueError: for media given by URL.
        """
        if not isinstance(block.source, Base64Source):
            raise ValueError(f"{type(self).__name__} sends base64 {what} only, not a URL")
        return block.source

    def _redact(self, text: str) -> str:
        return redact_text(text, [(s, "***") for s in self._secrets if s])

    def _error(self, exc: BaseException) -> ModelAPIError:
        text = getattr(exc, "body", None) or str(exc) or type(exc).__name__
        status = getattr(exc, "status_code", None)
        return ModelAPIError(self.provider, self._redact(text), status_code=status)

    async def _send_json(self, message: dict[str, Any]) -> None:
        """Send one JSON message.

        :raises RuntimeError: when not connected.
        """
        if self._connection is None:
            raise RuntimeError(
                f"WebSocket is not connected for model {self.model_name}. "
                "Call the `connect` method first."
            )
        websocket = _websocket()
        try:
            await self._connection.send_text(json.dumps(message, ensure_ascii=False))
        except websocket.WebSocketClosed as exc:
            # The provider ended the session: say so in the package's own terms.
            raise self._error(exc) from None

    async def _receive_model_event_loop(self, outgoing_queue: Any, connection: Any) -> None:
        """Read until the connection ends; then close it, so that a session is never left
        open and unread (``connected`` turns false, later sends raise ``ModelAPIError``)."""
        websocket = _websocket()
        try:
            while True:
                for event in await self._events_of(await connection.receive()):
                    await outgoing_queue.send(event)
        except websocket.WebSocketClosed as exc:
            if exc.code != _NORMAL_CLOSURE:
                # Providers close with a reason instead of sending an error (Gemini: 1008
                # for a bad key, 1011 for an internal error): the listener must see it.
                await self._tell_end(outgoing_queue, "WebSocketClosed", str(exc.code), exc)
            else:
                await self._tell_end(outgoing_queue)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # nobody listens any more
        except Exception as exc:
            await self._tell_end(outgoing_queue, type(exc).__name__, "client_error", exc)
        finally:
            self._reading = False
            await connection.aclose()  # shielded and bounded by the WebSocket client

    async def _events_of(self, message: str | bytes) -> list[ModelEvents.EventBase]:
        """The model events of one provider message. The rule for a message that cannot be
        read (not UTF-8, a field of the wrong type, ...), the same for every provider: it
        becomes one ``ModelErrorEvent`` (code ``invalid_message``) and reading goes on, as
        a provider's own ``error`` event does not end a session either."""
        try:
            text = message.decode("utf-8") if isinstance(message, bytes) else message
            events = await self.parse_api_message(text)
        except Exception as exc:
            return [
                ModelEvents.ModelErrorEvent(
                    error_type=type(exc).__name__,
                    code=_INVALID_MESSAGE,
                    message=self._redact(
                        f"a message from {self.provider} could not be read and was skipped: {exc}"
                    ),
                )
            ]
        if events is None:
            return []
        if isinstance(events, ModelEvents.EventBase):
            events = [events]
        for event in events:
            if isinstance(event, ModelEvents.ModelErrorEvent):
                # A provider may quote the request, key included, in its error text.
                event.message = self._redact(event.message)
        return events

    async def _tell_end(
        self,
        outgoing_queue: Any,
        error_type: str | None = None,
        code: str = "",
        exc: BaseException | None = None,
    ) -> None:
        """Send the error that ended the session (when there is one), then the disconnect."""
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            if error_type is not None and exc is not None:
                message = self._error(exc).message
                await outgoing_queue.send(
                    ModelEvents.ModelErrorEvent(error_type=error_type, code=code, message=message)
                )
            await outgoing_queue.send(ModelEvents.WebsocketDisconnectEvent())

    async def truncate(self, item_id: str, audio_end_ms: int) -> bool:
        """Trim the provider's copy of the agent's spoken item *item_id* to its first
        *audio_end_ms* milliseconds (what the user heard before speaking over it).

        :returns: whether a trim was sent; this default sends nothing (a provider that trims
            its context itself when the user barges in).
        :raises RuntimeError: when not connected (providers that send a trim).
        """
        return False

    @abstractmethod
    async def send(self, data: AudioBlock | TextBlock | ImageBlock | ToolResultBlock) -> None:
        """Send user audio, text, an image or a tool result to the model.

        :raises RuntimeError: when not connected.
        """

    @abstractmethod
    def _build_session_config(
        self, instructions: str, tools: list[dict[str, Any]] | None, **kwargs: Any
    ) -> dict[str, Any]:
        """The message that configures the session."""

    @abstractmethod
    async def parse_api_message(
        self, message: str
    ) -> ModelEvents.EventBase | list[ModelEvents.EventBase] | None:
        """The model event(s) of one provider message (``None`` for none)."""
