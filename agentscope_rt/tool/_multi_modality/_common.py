"""What the multimodal tools share: reading media, the retry policy, error texts.

Media named by the model is a web URL (downloaded with ``httpx``) or a local path (plain or
``file://``, read through :class:`anyio.Path`, i.e. in a worker thread), so no tool blocks the
event loop. A local path is read only from the folders the application allowed with
:func:`agentscope_rt.formatter.allow_local_files`, as formatters read media blocks: the
model chooses the path, and the file goes to the provider. Provider requests go through
:func:`agentscope_rt.model._retry.call_with_retry`, the project's one retry policy, with the
API key scrubbed from every message.
"""

from __future__ import annotations

import base64
import functools
import mimetypes
import os
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import attrs

from ...message import AudioBlock, Base64Source, TextBlock
from .._response import ToolResponse

if TYPE_CHECKING:
    import httpx

    from ..._provider import FailureInfo, RetryConfig

__all__ = [
    "DOWNLOAD_TIMEOUT",
    "Media",
    "allowed_local_path",
    "error_response",
    "first_text",
    "http_client",
    "is_web_url",
    "local_path",
    "media_type_of",
    "read_media",
    "redact",
    "request",
    "retry_config",
    "ssl_context",
]

T = TypeVar("T")

DOWNLOAD_TIMEOUT = 60.0
"""Seconds one download of a web image or audio file may take."""

_retry_config: RetryConfig | None = None


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every download and DashScope request: building one
    takes ~30 ms of CPU on the event loop's thread, and a context is safe to share."""
    import httpx

    return httpx.create_ssl_context()


def http_client() -> httpx.AsyncClient:
    """A new HTTP client for one tool call (its requests share the connection)."""
    import httpx

    return httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=30.0), verify=ssl_context())


def retry_config() -> RetryConfig:
    """The retry policy of every provider request the multimodal tools make: two retries
    (as the ``openai`` SDK does by default) of 408/409/429/5xx answers, connection errors and
    timeouts, with exponential backoff from one second."""
    global _retry_config
    if _retry_config is None:
        from ..._provider import RetryConfig

        _retry_config = RetryConfig(max_retries=2, initial_delay=1.0, max_delay=20.0)
    return _retry_config


async def request(
    provider: str,
    send: Callable[[], Awaitable[T]],
    secrets: Iterable[str | None],
    classify: Callable[[BaseException], FailureInfo | None] | None = None,
) -> T:
    """Await ``send()`` under :func:`retry_config`.

    :raises ModelAPIError: after the last retryable failure or at once for another provider
        error, its message scrubbed of *secrets*.
    """
    from ..._provider import call_with_retry, classify_error

    return await call_with_retry(
        provider, send, retry_config(), classify=classify or classify_error, redact=secrets
    )


def error_response(text: str) -> ToolResponse:
    """A ToolResponse holding one text block: what the model reads when a tool fails."""
    return ToolResponse(content=[TextBlock(text=text)])


def audio_response(audio: bytes, media_type: str) -> ToolResponse:
    """A ToolResponse holding *audio* as one base64 audio block of *media_type*."""
    data = base64.b64encode(audio).decode("ascii")
    return ToolResponse(content=[AudioBlock(source=Base64Source(media_type=media_type, data=data))])


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """*text* with every non-empty secret replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def is_web_url(url: str) -> bool:
    """Whether *url* is an ``http://`` or ``https://`` URL."""
    return url.startswith(("http://", "https://"))


def local_path(url: str) -> str:
    """The filesystem path of a plain path or a ``file://`` URL (``~`` expanded)."""
    if url.startswith("file://"):
        return urllib.parse.unquote(url.removeprefix("file://"))
    return os.path.expanduser(url)


async def allowed_local_path(url: str) -> anyio.Path:
    """The real path of the local file *url* names (a plain path or ``file://`` URL), when it
    lies in a folder :func:`~agentscope_rt.formatter.allow_local_files` allowed.

    :raises LocalFileNotAllowedError: (a ``PermissionError``) otherwise, whether or not the
        file exists; the message names the path and how to allow its folder.
    """
    # Imported here: the tool package does not load the formatters until a file is read.
    from ...formatter import check_local_file

    real = await anyio.to_thread.run_sync(check_local_file, local_path(url), url)
    return anyio.Path(real)


# First bytes of the image and audio formats the providers accept.
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (8, b"WEBP", "image/webp"),
    (8, b"WAVE", "audio/wav"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"fLaC", "audio/flac"),
    (0, b"OggS", "audio/ogg"),
    (4, b"ftyp", "audio/mp4"),
)


def media_type_of(name: str, data: bytes, declared: str | None = None) -> str | None:
    """The MIME type of media named *name* holding *data*: the *declared* type (e.g. a
    Content-Type header) when it names an image or audio type, else the file extension's,
    else the one its first bytes show; ``None`` when nothing tells."""
    if declared:
        declared = declared.split(";", 1)[0].strip().lower()
        if declared.startswith(("image/", "audio/")):
            return declared
    guessed = mimetypes.guess_type(name)[0]
    if guessed is not None:
        return guessed
    for offset, signature, media_type in _SIGNATURES:
        if data[offset : offset + len(signature)] == signature:
            return media_type
    return None


@attrs.frozen
class Media:
    """Bytes of an image or audio file with the name and MIME type to upload them under.

    :ivar data: the file's content.
    :ivar name: the file name (the last part of the path or URL path).
    :ivar media_type: the MIME type, ``None`` when unknown.
    """

    data: bytes = attrs.field(repr=lambda data: f"<{len(data)} bytes>")
    name: str
    media_type: str | None

    def as_base64(self) -> str:
        """The content as base64 text."""
        return base64.b64encode(self.data).decode("ascii")


async def read_media(url: str, default_name: str, client: httpx.AsyncClient | None = None) -> Media:
    """Read the media at *url*: a web URL is downloaded, anything else is a local path.

    :param url: an ``http(s)://`` URL, a local path or a ``file://`` URL.
    :param default_name: the file name to use when the URL's path has none.
    :param client: the HTTP client to download with (a new one when ``None``).
    :raises LocalFileNotAllowedError: (a ``PermissionError``) for a local file outside the
        folders the application allowed (see :func:`allowed_local_path`).
    :raises FileNotFoundError: ``"File not found: <url>"`` for a missing local file.
    :raises IsADirectoryError: when the local path is not a regular file.
    :raises httpx.HTTPError: when the download fails (an error status included).
    :raises TimeoutError: when the download takes longer than :data:`DOWNLOAD_TIMEOUT`.
    """
    if is_web_url(url):
        if client is None:
            async with http_client() as own_client:
                return await read_media(url, default_name, own_client)
        # The client's timeout bounds each read; this bounds the whole download, which a
        # server sending a byte now and then would otherwise hold open for ever.
        response: httpx.Response | None = None
        with anyio.move_on_after(DOWNLOAD_TIMEOUT):
            response = await client.get(url, timeout=DOWNLOAD_TIMEOUT, follow_redirects=True)
        if response is None:
            # The host only: a signed URL's query may hold a credential.
            host = urllib.parse.urlsplit(url).hostname
            raise TimeoutError(f"the download from {host} took more than {DOWNLOAD_TIMEOUT:g} s")
        response.raise_for_status()
        name = os.path.basename(urllib.parse.urlsplit(url).path) or default_name
        data = response.content
        return Media(data, name, media_type_of(name, data, response.headers.get("content-type")))
    path = await allowed_local_path(url)
    if not await path.exists():
        raise FileNotFoundError(f"File not found: {url}")
    if not await path.is_file():
        raise IsADirectoryError(f"The path {url} is not a file.")
    data = await path.read_bytes()
    return Media(data, path.name or default_name, media_type_of(path.name, data))


def first_text(content: Any) -> str | None:
    """The text of a message ``content``: a string, or the ``text`` parts of a list joined;
    ``None`` when there is none."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        return "".join(texts) if texts else None
    return None
