"""The text-to-speech model interface, as AgentScope's :class:`TTSModelBase`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator
from typing import Any, Self

from ..message import Msg
from ._tts_response import TTSResponse

__all__ = ["TTSModelBase"]


class TTSModelBase(ABC):
    """A text-to-speech model.

    A model without streaming input (``supports_streaming_input = False``) speaks a whole
    text: :meth:`synthesize` with the message. A model with streaming input is used inside
    ``async with model:`` (which calls :meth:`connect` and :meth:`close`, in one task): the
    text is given as it grows with :meth:`push` (each call with the whole text so far, as a
    streamed message's chunks are), then :meth:`synthesize` ends the input and returns the
    rest of the speech.

    With ``stream=True`` :meth:`synthesize` returns an async generator of
    :class:`TTSResponse` whose audio grows chunk by chunk (the last has ``is_last=True``);
    otherwise one response with all the audio.

    :param model_name: the provider's model name.
    :param stream: whether :meth:`synthesize` streams its audio.
    """

    supports_streaming_input: bool = False
    """Whether the model takes its text as it streams (:meth:`push`)."""

    model_name: str
    stream: bool

    def __init__(self, model_name: str, stream: bool) -> None:
        if not isinstance(model_name, str) or not model_name:
            raise ValueError(f"model_name must be a non-empty string, not {model_name!r}")
        self.model_name = model_name
        self.stream = bool(stream)

    def __repr__(self) -> str:
        # Never the API key: only the class, the model and whether it streams.
        return f"{type(self).__name__}(model_name={self.model_name!r}, stream={self.stream})"

    async def __aenter__(self) -> Self:
        if self.supports_streaming_input:
            await self.connect()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self.supports_streaming_input:
            await self.close()

    async def connect(self) -> None:
        """Open the connection a streaming-input model needs (called by ``async with``).

        :raises NotImplementedError: for a model without streaming input.
        """
        raise NotImplementedError(f"{type(self).__name__} takes no streaming input (no connect)")

    async def close(self) -> None:
        """Close what :meth:`connect` opened.

        :raises NotImplementedError: for a model without streaming input.
        """
        raise NotImplementedError(f"{type(self).__name__} takes no streaming input (no close)")

    async def push(self, msg: Msg, **kwargs: Any) -> TTSResponse:
        """Give the text of *msg* so far to a streaming-input model; the audio received so
        far (``content=None`` when there is none yet). Does not wait for audio.

        :raises NotImplementedError: for a model without streaming input.
        """
        raise NotImplementedError(f"{type(self).__name__} takes no streaming input (no push)")

    @abstractmethod
    async def synthesize(
        self, msg: Msg | None = None, **kwargs: Any
    ) -> TTSResponse | AsyncGenerator[TTSResponse, None]:
        """The speech of *msg*'s text (for a streaming-input model: the end of the pushed
        text, then the speech of all of it). ``None`` or a message without text gives a
        response with ``content=None``.

        :raises ModelAPIError: when the provider fails (after the retries the model makes).
        """

    async def aclose(self) -> None:  # noqa: B027 (a default that does nothing)
        """Release what the model holds between calls (an HTTP client); nothing by default.
        Safe to call twice."""
