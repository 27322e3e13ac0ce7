"""DashScope image synthesis, speech synthesis and vision as tool functions.

The requests are the ones the ``dashscope`` SDK sends, spoken directly (see the
`official documentation <https://help.aliyun.com/zh/model-studio/>`_):

* :func:`dashscope_text_to_image` — an asynchronous task: ``POST
  {base}/services/aigc/text2image/image-synthesis`` with ``X-DashScope-Async: enable`` returns a
  task id, then ``GET {base}/tasks/{task_id}`` is polled (after 1 s, the interval doubling
  every third poll up to 5 s, as the SDK does) until the task succeeds, fails or
  :data:`TASK_TIMEOUT` passes.
* :func:`dashscope_image_to_text` — ``POST {base}/services/aigc/multimodal-generation/generation``.
  Local images are sent inline as base64 data URLs (the SDK uploads them to temporary OSS
  storage instead).
* :func:`dashscope_text_to_audio` — Sambert speech synthesis, which DashScope serves over
  WebSocket only: ``run-task`` is sent to ``{ws_base}``, the audio arrives as binary messages
  until ``task-finished`` (or ``task-failed``). Needs ``wsproto``
  (the ``dashscope`` extra).

``{base}`` is ``DASHSCOPE_HTTP_BASE_URL`` when set, else
``https://dashscope.aliyuncs.com/api/v1``; ``{ws_base}`` is ``DASHSCOPE_WEBSOCKET_BASE_URL``
when set, else ``wss://dashscope.aliyuncs.com/api-ws/v1/inference`` — the environment
variables the SDK reads. An empty ``api_key`` falls back to ``DASHSCOPE_API_KEY``.

HTTP requests follow the project's retry policy (429 and 5xx answers, connection errors and
timeouts are retried). Every failure becomes a ToolResponse whose text starts as AgentScope's
does (``"Failed to generate images: ..."``) and carries DashScope's error code and message;
the API key never appears in it.
"""

from __future__ import annotations

import json
import os
import urllib.parse
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio

from ..._extras import missing_extra
from ..._version import __version__
from ...message import Base64Source, ImageBlock, TextBlock, URLSource
from .._response import ToolResponse
from ._common import (
    allowed_local_path,
    audio_response,
    error_response,
    first_text,
    http_client,
    is_web_url,
    read_media,
    redact,
    request,
)

if TYPE_CHECKING:
    import httpx

    from ..._provider import FailureInfo

__all__ = [
    "DASHSCOPE_HTTP_BASE_URL",
    "DASHSCOPE_WEBSOCKET_BASE_URL",
    "TASK_TIMEOUT",
    "dashscope_image_to_text",
    "dashscope_text_to_audio",
    "dashscope_text_to_image",
]

DASHSCOPE_HTTP_BASE_URL = "https://dashscope.aliyuncs.com/api/v1"
"""DashScope's native HTTP API (``DASHSCOPE_HTTP_BASE_URL`` overrides it)."""

DASHSCOPE_WEBSOCKET_BASE_URL = "wss://dashscope.aliyuncs.com/api-ws/v1/inference"
"""DashScope's WebSocket inference endpoint (``DASHSCOPE_WEBSOCKET_BASE_URL`` overrides it)."""

TASK_TIMEOUT = 600.0
"""Seconds an image synthesis task may take, polling included, before the tool gives up."""

SPEECH_TIMEOUT = 300.0
"""Seconds a speech synthesis may take, connecting included (the SDK's request timeout)."""

# Polling an asynchronous task: the first wait, the longest wait, and after how many polls
# the wait doubles — the schedule of the dashscope SDK's ``wait``.
POLL_INITIAL_WAIT = 1.0
POLL_MAX_WAIT = 5.0
_POLL_DOUBLING_STEPS = 3

_FINISHED_STATES = frozenset({"SUCCEEDED", "FAILED", "CANCELED", "UNKNOWN"})
_USER_AGENT = f"agentscope-rt/{__version__}"


class DashScopeTaskError(Exception):
    """DashScope reported a failed task or a failed speech synthesis."""


def _base_url() -> str:
    return os.environ.get("DASHSCOPE_HTTP_BASE_URL", DASHSCOPE_HTTP_BASE_URL).rstrip("/")


def _key(api_key: str) -> str:
    """*api_key*, else ``DASHSCOPE_API_KEY``.

    :raises ValueError: when neither is set (the message says how to give one).
    """
    key = api_key or os.environ.get("DASHSCOPE_API_KEY", "")
    if not key:
        raise ValueError(
            "no DashScope API key: preset api_key when registering the tool "
            "(register_tool_function(..., preset_kwargs={'api_key': ...})) or set "
            "DASHSCOPE_API_KEY"
        )
    return key


def _headers(key: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json",
        "user-agent": _USER_AGENT,
    }


def _classify(exc: BaseException) -> FailureInfo | None:
    """The project's failure classification, with DashScope's error ``code`` kept in front of
    its message (``InvalidApiKey: Invalid API-key provided.``)."""
    import attrs
    import httpx

    from ..._provider import classify_error

    info = classify_error(exc)
    if info is not None and isinstance(exc, httpx.HTTPStatusError):
        try:
            body = exc.response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("code"):
            info = attrs.evolve(info, message=f"{body['code']}: {body.get('message', '')}")
    return info


async def _send_json(
    client: httpx.AsyncClient,
    method: Literal["GET", "POST"],
    url: str,
    key: str,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One DashScope HTTP request under the retry policy; the JSON answer.

    :raises ModelAPIError: for an error answer (code and message of DashScope's body).
    :raises DashScopeTaskError: for an answer that is not a JSON object.
    """

    async def send() -> httpx.Response:
        response = await client.request(
            method, url, json=body, headers={**_headers(key), **(headers or {})}
        )
        response.raise_for_status()
        return response

    response = await request("dashscope", send, (key,), _classify)
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise DashScopeTaskError(f"DashScope answered with something other than JSON: {data!r}")
    return data


def _task_error(output: dict[str, Any]) -> str:
    code = output.get("code") or output.get("task_status") or "Failed"
    message = output.get("message") or "no message"
    return f"{code}: {message}"


async def _run_image_task(
    client: httpx.AsyncClient, key: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Submit an image synthesis task and poll it to its end; its final ``output``.

    :raises DashScopeTaskError: when the task fails, or has not finished within
        :data:`TASK_TIMEOUT`.
    """
    base = _base_url()
    submitted = await _send_json(
        client,
        "POST",
        f"{base}/services/aigc/text2image/image-synthesis",
        key,
        body,
        {"X-DashScope-Async": "enable"},
    )
    output = submitted.get("output") or {}
    task_id = output.get("task_id")
    if not task_id:
        raise DashScopeTaskError(f"no task id in DashScope's answer: {_task_error(output)}")
    wait = POLL_INITIAL_WAIT
    step = 0
    with anyio.move_on_after(TASK_TIMEOUT):
        while True:
            step += 1
            if step % _POLL_DOUBLING_STEPS == 0:
                wait = min(wait * 2, POLL_MAX_WAIT)
            polled = await _send_json(client, "GET", f"{base}/tasks/{task_id}", key)
            output = polled.get("output") or {}
            status = output.get("task_status")
            if status in _FINISHED_STATES:
                if status != "SUCCEEDED":
                    raise DashScopeTaskError(_task_error(output))
                return output
            await anyio.sleep(wait)
    raise DashScopeTaskError(
        f"the image synthesis task {task_id} did not finish within {TASK_TIMEOUT:g} s"
    )


async def _image_block(client: httpx.AsyncClient, url: str, use_base64: bool) -> ImageBlock:
    if not use_base64:
        return ImageBlock(source=URLSource(url=url))
    media = await read_media(url, "image.png", client)
    return ImageBlock(
        source=Base64Source(media_type=media.media_type or "image/png", data=media.as_base64())
    )


async def dashscope_text_to_image(
    prompt: str,
    api_key: str,
    n: int = 1,
    size: Literal["1024*1024", "720*1280", "1280*720"] = "1024*1024",
    model: str = "wanx-v1",
    use_base64: bool = False,
) -> ToolResponse:
    """Generate image(s) based on the given prompt, and return image url(s)
    or base64 data.

    Args:
        prompt (`str`):
            The text prompt to generate image.
        api_key (`str`):
            The api key for the dashscope api.
        n (`int`, defaults to `1`):
            The number of images to generate.
        size (`Literal["1024*1024", "720*1280", "1280*720"]`, defaults to `"1024*1024"`):
            Size of the image.
        model (`str`, defaults to `"wanx-v1"`):
            The model to use, such as "wanx-v1", "qwen-image",
            "wan2.2-t2i-flash", etc.
        use_base64 (`bool`, defaults to `False`):
            Whether to use base64 data for images.

    Returns:
        `ToolResponse`:
            The generated images (URL or base64 image blocks), or a text block
            saying why the generation failed.
    """
    key = ""
    try:
        key = _key(api_key)
        body = {"model": model, "input": {"prompt": prompt}, "parameters": {"n": n, "size": size}}
        async with http_client() as client:
            output = await _run_image_task(client, key, body)
            results = [r for r in output.get("results") or [] if isinstance(r, dict)]
            urls = [r["url"] for r in results if isinstance(r.get("url"), str)]
            failed = [r for r in results if not isinstance(r.get("url"), str)]
            if not urls:
                detail = f": {_task_error(failed[0])}" if failed else ""
                return error_response(f"Error: Failed to generate images{detail}")
            content: list[ImageBlock | TextBlock] = [
                await _image_block(client, url, use_base64) for url in urls
            ]
    except Exception as exc:
        return error_response(f"Failed to generate images: {redact(str(exc), (key, api_key))}")
    if failed:
        content.append(
            TextBlock(
                text=f"{len(failed)} of {len(results)} images failed: {_task_error(failed[0])}"
            )
        )
    return ToolResponse(content=list(content))


async def _image_content(url: str) -> dict[str, str] | ToolResponse:
    """The ``{"image": ...}`` part for *url*: a local file as a base64 data URL, anything
    else as given (a web URL, or something DashScope will judge); a ToolResponse for a local
    path that is not a file.

    :raises LocalFileNotAllowedError: for a local file outside the allowed folders.
    """
    if is_web_url(url) or url.startswith(("data:", "oss://")):
        return {"image": url}
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme and scheme != "file" and len(scheme) > 1:
        return {"image": url}  # another scheme: DashScope judges it
    path = await allowed_local_path(url)
    if not await path.exists():
        # Maybe a web URL without a scheme or an invalid one: DashScope says which.
        return {"image": url}
    if not await path.is_file():
        return error_response(f'Error: The input image url "{url}" is not a file.')
    media = await read_media(url, "image")
    return {"image": f"data:{media.media_type or 'image/png'};base64,{media.as_base64()}"}


async def dashscope_image_to_text(
    image_urls: str | Sequence[str],
    api_key: str,
    prompt: str = "Describe the image",
    model: str = "qwen-vl-plus",
) -> ToolResponse:
    """Generate text based on the given images.

    Args:
        image_urls (`str | Sequence[str]`):
            The url of single or multiple images.
        api_key (`str`):
            The api key for the dashscope api.
        prompt (`str`, defaults to `"Describe the image"`):
            The text prompt.
        model (`str`, defaults to `"qwen-vl-plus"`):
            The model to use in DashScope MultiModal API.

    Returns:
        `ToolResponse`:
            The generated text as a text block, or a text block saying why it
            failed.
    """
    urls = [image_urls] if isinstance(image_urls, str) else list(image_urls)
    key = ""
    try:
        contents: list[dict[str, str]] = []
        for url in urls:
            part = await _image_content(url)
            if isinstance(part, ToolResponse):
                return part
            contents.append(part)
        contents.append({"text": prompt})
        key = _key(api_key)
        messages = [
            {"role": "system", "content": [{"text": "You are a helpful assistant."}]},
            {"role": "user", "content": contents},
        ]
        async with http_client() as client:
            answer = await _send_json(
                client,
                "POST",
                f"{_base_url()}/services/aigc/multimodal-generation/generation",
                key,
                {"model": model, "input": {"messages": messages}, "parameters": {}},
            )
        choices = (answer.get("output") or {}).get("choices") or []
        message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
        text = first_text(message.get("content")) if isinstance(message, dict) else None
    except Exception as exc:
        return error_response(f"Failed to generate text: {redact(str(exc), (key, api_key))}")
    if text is None:
        return error_response("Error: Failed to generate text")
    return ToolResponse(content=[TextBlock(text=text)])


async def _synthesize_speech(key: str, payload: dict[str, Any]) -> bytes:
    """Run one Sambert ``run-task`` over WebSocket; the audio bytes, joined.

    :raises DashScopeTaskError: for ``task-failed`` or an unexpected event.
    :raises WebSocketHandshakeError: when the server refuses the connection.
    :raises WebSocketClosed: when the connection ends before ``task-finished``.
    """
    try:
        from ..._provider import websocket as _websocket
    except ImportError as exc:
        raise missing_extra("dashscope_text_to_audio", "dashscope", exc.name) from exc

    url = os.environ.get("DASHSCOPE_WEBSOCKET_BASE_URL", DASHSCOPE_WEBSOCKET_BASE_URL)
    task_id = uuid.uuid4().hex
    run_task = {
        "header": {"action": "run-task", "task_id": task_id, "streaming": "out"},
        "payload": payload,
    }
    audio = bytearray()
    try:
        async with _websocket.connect(url, _headers(key)) as connection:
            await connection.send_text(json.dumps(run_task, ensure_ascii=False))
            while True:
                message = await connection.receive()
                if isinstance(message, bytes):
                    audio += message
                    continue
                event = json.loads(message)
                header = event.get("header") or {}
                name = header.get("event")
                if name == "task-finished":
                    return bytes(audio)
                if name == "task-failed":
                    raise DashScopeTaskError(
                        f"{header.get('error_code') or 'TaskFailed'}: "
                        f"{header.get('error_message') or 'no message'}"
                    )
                if name not in ("task-started", "result-generated"):
                    raise DashScopeTaskError(f"unexpected event from DashScope: {name!r}")
    except _websocket.WebSocketHandshakeError as exc:
        # Refused before switching protocols (e.g. a wrong key): DashScope's JSON error body.
        try:
            body = json.loads(exc.body)
        except ValueError:
            body = None
        detail = _task_error(body) if isinstance(body, dict) and body.get("code") else exc.body
        raise DashScopeTaskError(
            f"dashscope request failed (HTTP {exc.status_code}): {detail}"
        ) from None


async def dashscope_text_to_audio(
    text: str,
    api_key: str,
    model: str = "sambert-zhichu-v1",
    sample_rate: int = 48000,
) -> ToolResponse:
    """Convert the given text to audio.

    Args:
        text (`str`):
            The text to be converted into audio.
        api_key (`str`):
            The api key for the dashscope API.
        model (`str`, defaults to `"sambert-zhichu-v1"`):
            The model to use. Full model list can be found in the official document
            <https://help.aliyun.com/zh/model-studio/sambert-python-sdk>.
        sample_rate (`int`, defaults to `48000`):
            Sample rate of the audio.

    Returns:
        `ToolResponse`:
            The speech as a base64 WAV audio block, or a text block saying why it
            failed.
    """
    key = ""
    payload = {
        "model": model,
        "task_group": "audio",
        "task": "tts",
        "function": "SpeechSynthesizer",
        "input": {"text": text},
        "parameters": {"text_type": "PlainText", "format": "wav", "sample_rate": sample_rate},
    }
    try:
        key = _key(api_key)
        with anyio.fail_after(SPEECH_TIMEOUT):
            audio = await _synthesize_speech(key, payload)
    except TimeoutError:
        return error_response("Failed to generate audio: DashScope did not answer in time")
    except Exception as exc:
        return error_response(f"Failed to generate audio: {redact(str(exc), (key, api_key))}")
    if not audio:
        return error_response("Error: Failed to generate audio")
    return audio_response(audio, "audio/wav")
