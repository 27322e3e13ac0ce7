"""DashScope's CosyVoice speech synthesis (``cosyvoice-v3-plus``, ``cosyvoice-v3-flash``, ...)
over its duplex WebSocket protocol.

What AgentScope's ``dashscope.audio.tts_v2.SpeechSynthesizer`` speaks, at ``{ws}``
(``$DASHSCOPE_WEBSOCKET_BASE_URL`` when set, else DashScope's): the client sends ``run-task``
(``streaming: duplex``, 24 kHz PCM, the voice), waits for ``task-started``, sends each piece of
text in a ``continue-task`` and ends with ``finish-task``; the audio comes as binary messages
until ``task-finished`` (``task-failed`` fails the synthesis).

:class:`DashScopeCosyVoiceTTSModel` speaks a whole text per connection;
:class:`DashScopeCosyVoiceRealtimeTTSModel` takes the text as it streams.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncGenerator
from typing import Any, ClassVar, Literal

from .._provider import RetryConfig, Secrets
from ..message import Msg
from ._dashscope_common import (
    RETRYABLE_CODES,
    dashscope_headers,
    dashscope_key,
    dashscope_websocket_url,
)
from ._tts_base import TTSModelBase
from ._tts_response import PCM_24K, TTSResponse, TTSUsage
from ._websocket_tts import (
    READ_TIMEOUT,
    ProviderError,
    Session,
    WebSocketTTSModel,
    json_event,
    open_websocket,
    positive_timeout,
)

__all__ = ["DashScopeCosyVoiceRealtimeTTSModel", "DashScopeCosyVoiceTTSModel"]

_Voice = Literal["longanyang", "longanhuan", "longhuhu_v3", "longyingmu_v3"]


class _CosyVoice:
    """The protocol, shared by both models (they keep ``model_name``, ``voice``,
    ``client_kwargs``, ``generate_kwargs`` and the key headers)."""

    model_name: str
    voice: str
    client_kwargs: dict[str, Any]
    generate_kwargs: dict[str, Any]
    _key_headers: dict[str, str]

    def _url(self) -> str:
        return str(self.client_kwargs.get("url") or dashscope_websocket_url())

    def _headers(self) -> dict[str, str]:
        return {**dict(self.client_kwargs.get("headers") or {}), **self._key_headers}

    async def _start(self, session: Session) -> None:
        await self._run_task(session)
        await session.wait_started()

    async def _run_task(self, session: Session) -> None:
        task_id = session.values["task_id"] = uuid.uuid4().hex
        parameters = {
            "text_type": "PlainText",
            "voice": self.voice,
            "format": "pcm",
            "sample_rate": 24000,
            **self.generate_kwargs,
        }
        payload = {
            "task_group": "audio",
            "task": "tts",
            "function": "SpeechSynthesizer",
            "model": self.model_name,
            "parameters": parameters,
            "input": {},
        }
        await session.send_json(_header("run-task", task_id, payload))

    async def _send_text(self, session: Session, text: str) -> None:
        payload = {"input": {"text": text}}
        await session.send_json(_header("continue-task", session.values["task_id"], payload))

    async def _finish_input(self, session: Session) -> None:
        payload: dict[str, Any] = {"input": {}}
        await session.send_json(_header("finish-task", session.values["task_id"], payload))

    def _on_message(self, session: Session, message: str | bytes) -> None:
        if isinstance(message, bytes):
            if not session.started.is_set():
                raise ProviderError("the provider sent audio before task-started")
            session.buffer.add(message)
            return
        header = json_event(message, "CosyVoice's duplex protocol").get("header") or {}
        if not isinstance(header, dict):
            raise ProviderError(f"the provider sent a header that is not an object: {header!r:.80}")
        name = header.get("event")
        if name == "task-started":
            session.started.set()
        elif name == "task-finished":
            session.done = True
        elif name == "task-failed":
            code = str(header.get("error_code") or "TaskFailed")
            raise ProviderError(
                f"{code}: {header.get('error_message') or 'no message'}",
                retryable=code.startswith(RETRYABLE_CODES),
            )
        elif name != "result-generated":
            raise ProviderError(f"unexpected event from DashScope: {name!r}")


def _header(action: str, task_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "header": {"action": action, "task_id": task_id, "streaming": "duplex"},
        "payload": payload,
    }


class DashScopeCosyVoiceRealtimeTTSModel(_CosyVoice, WebSocketTTSModel):
    """DashScope CosyVoice with streaming input, as AgentScope's (one message at a time).

    :param api_key: the API key; defaults to ``$DASHSCOPE_API_KEY``.
    :param model_name: ``"cosyvoice-v3-plus"``, ``"cosyvoice-v3-flash"``, ...
    :param voice: ``"longanyang"``, ``"longanhuan"``, ...
    :param stream: whether :meth:`synthesize` yields the audio as it arrives.
    :param cold_start_length: characters the first text needs before it is sent.
    :param cold_start_words: words the first text needs before it is sent.
    :param client_kwargs: ``url`` of the endpoint and ``headers`` of the upgrade request.
    :param generate_kwargs: more ``run-task`` parameters (``volume``, ``rate``, ``pitch``).
    :param max_retries: retries of a refused or failed connection.
    :param retry_delay: seconds before the first retry (doubling after each).
    :param read_timeout: seconds a synthesis waits for the provider's next message.
    :raises ValueError: when no API key is given or found, or *read_timeout* is not positive.
    """

    provider: ClassVar[str] = "dashscope"

    def __init__(
        self,
        api_key: str | None = None,
        model_name: str = "cosyvoice-v3-plus",
        voice: _Voice | str = "longanyang",
        stream: bool = True,
        cold_start_length: int | None = None,
        cold_start_words: int | None = None,
        client_kwargs: dict[str, Any] | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        max_retries: int = 3,
        retry_delay: float = 5.0,
        *,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        key = dashscope_key(api_key, type(self).__name__)
        super().__init__(
            model_name,
            stream,
            secrets=(key,),
            cold_start_length=cold_start_length,
            cold_start_words=cold_start_words,
            retry_config=RetryConfig(max_retries=max_retries, initial_delay=retry_delay),
            read_timeout=read_timeout,
        )
        self._key_headers = dashscope_headers(key)
        self.voice = voice
        self.client_kwargs = dict(client_kwargs or {})
        self.generate_kwargs = dict(generate_kwargs or {})
        self.max_retries = max_retries
        self.retry_delay = retry_delay


class DashScopeCosyVoiceTTSModel(_CosyVoice, TTSModelBase):
    """DashScope CosyVoice speaking a whole text, as AgentScope's (one connection per
    synthesis; :meth:`push` gives nothing).

    :param api_key: the API key; defaults to ``$DASHSCOPE_API_KEY``.
    :param model_name: ``"cosyvoice-v3-plus"``, ``"cosyvoice-v3-flash"``, ...
    :param voice: ``"longanyang"``, ``"longanhuan"``, ...
    :param stream: whether :meth:`synthesize` yields the audio as it arrives (AgentScope's
        default here is ``False``).
    :param client_kwargs: ``url`` of the endpoint and ``headers`` of the upgrade request.
    :param generate_kwargs: more ``run-task`` parameters (``volume``, ``rate``, ``pitch``).
    :param retry_config: the retry policy of the connection (default: 3 retries).
    :param read_timeout: seconds a synthesis waits for the provider's next message.
    :raises ValueError: when no API key is given or found, or *read_timeout* is not positive.
    """

    supports_streaming_input: bool = False
    provider: ClassVar[str] = "dashscope"

    def __init__(
        self,
        api_key: str | None = None,
        model_name: str = "cosyvoice-v3-plus",
        voice: _Voice | str = "longanyang",
        stream: bool = False,
        client_kwargs: dict[str, Any] | None = None,
        generate_kwargs: dict[str, Any] | None = None,
        retry_config: RetryConfig | None = None,
        *,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        super().__init__(model_name, stream)
        self.read_timeout = positive_timeout(read_timeout)
        key = dashscope_key(api_key, type(self).__name__)
        self._key_headers = dashscope_headers(key)
        self._secrets = Secrets((key,))
        self.voice = voice
        self.client_kwargs = dict(client_kwargs or {})
        self.generate_kwargs = dict(generate_kwargs or {})
        self.retry_config = retry_config

    async def push(self, msg: Msg, **kwargs: Any) -> TTSResponse:
        """Nothing (AgentScope's answer): this model speaks whole texts."""
        return TTSResponse(content=None)

    async def synthesize(
        self, msg: Msg | None = None, **kwargs: Any
    ) -> TTSResponse | AsyncGenerator[TTSResponse, None]:
        """The speech of *msg*'s text over a connection of its own.

        :raises ModelAPIError: when the provider fails (in stream mode from the generator).
        """
        text = msg.get_text_content() if msg is not None else None
        if not text:
            return TTSResponse(content=None)
        if self.stream:
            return self._speak(text)
        # Without stream the generator yields only its final response.
        return [response async for response in self._speak(text)][-1]

    async def _speak(self, text: str) -> AsyncGenerator[TTSResponse, None]:
        """One connection, read in this task: all the text is known, so no reader task."""
        started = time.monotonic()
        async with open_websocket(
            self.provider, self._url(), self._headers(), self._secrets, self.retry_config
        ) as connection:
            session = Session(
                connection,
                PCM_24K,
                provider=self.provider,
                secrets=self._secrets,
                read_timeout=self.read_timeout,
            )
            try:
                await self._run_task(session)
                while not session.started.is_set():
                    self._on_message(session, await session.receive())
                await self._send_text(session, text)
                await self._finish_input(session)
                while not session.done:
                    size = session.buffer.size
                    self._on_message(session, await session.receive())
                    if session.buffer.size > size and self.stream:
                        yield session.buffer.response(final=False)
            except Exception as exc:
                raise session.failure(exc) from None
        usage = TTSUsage(input_tokens=0, output_tokens=0, time=time.monotonic() - started)
        yield session.buffer.response(final=True, usage=usage)
