"""The realtime model interface, AgentScope's :class:`RealtimeModelBase`, on anyio.

:meth:`RealtimeModelBase.connect` opens the WebSocket, starts the task that reads the
provider's messages (in the model's own task group, kept in an exit stack until
:meth:`RealtimeModelBase.disconnect`, so call both from one task) and sends the session
configuration. Each provider message becomes zero or more :class:`ModelEvents` sent to the
outgoing stream. The reader never raises into its task group: a failure is sent as a
``ModelErrorEvent``, the end of the connection as a ``WebsocketDisconnectEvent``.

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

__all__ = ["RealtimeModelBase"]

_NORMAL_CLOSURE = 1000


def _websocket() -> Any:
    try:
        from .._provider import websocket
    except ImportError as exc:
        from .._extras import missing_extra

        raise missing_extra("the realtime models", "dashscope", exc.name) from exc
    return websocket


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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_name={self.model_name!r})"

    @property
    def connected(self) -> bool:
        """Whether a connection is open (between :meth:`connect` and :meth:`disconnect`)."""
        return self._stack is not None

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

    def _error(self, exc: BaseException) -> ModelAPIError:
        text = getattr(exc, "body", None) or str(exc) or type(exc).__name__
        known = [(s, "***") for s in self._secrets if s]
        status = getattr(exc, "status_code", None)
        return ModelAPIError(self.provider, redact_text(text, known), status_code=status)

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
        websocket = _websocket()
        try:
            while True:
                message = await connection.receive()
                if isinstance(message, bytes):
                    message = message.decode("utf-8")
                events = await self.parse_api_message(message)
                if events is None:
                    continue
                if isinstance(events, ModelEvents.EventBase):
                    events = [events]
                for event in events:
                    await outgoing_queue.send(event)
        except websocket.WebSocketClosed as exc:
            if exc.code != _NORMAL_CLOSURE:
                # Providers close with a reason instead of sending an error (Gemini: 1008
                # for a bad key, 1011 for an internal error): the listener must see it.
                await outgoing_queue.send(
                    ModelEvents.ModelErrorEvent(
                        error_type="WebSocketClosed",
                        code=str(exc.code),
                        message=self._error(exc).message,
                    )
                )
            await outgoing_queue.send(ModelEvents.WebsocketDisconnectEvent())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # nobody listens any more
        except Exception as exc:
            error = self._error(exc)
            await outgoing_queue.send(
                ModelEvents.ModelErrorEvent(
                    error_type=type(exc).__name__, code="client_error", message=str(error)
                )
            )

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
