"""Media loading for formatters: local files, ``file://`` URLs, web URLs and base64 data.

Formatting is async so that media can be read without blocking the event loop: local files
are read in a worker thread, and only from the folders the application allowed (see
:mod:`._local_files`), web URLs are fetched with ``httpx``
(only for providers that need the bytes rather than the URL). Every load is cached for the
duration of one ``format()`` call, so truncation, which may format the same messages a few
times, reads each file once.

The per-call state (the media cache and the set of dropped block types) lives in a context
variable rather than on the formatter, so one formatter instance can serve concurrent calls
from several tasks.
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import hashlib
import mimetypes
import os
import stat
import sys
import threading
from collections.abc import Awaitable, Callable
from types import CodeType, FrameType
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import httpx

from .._provider import redact_text
from .._urls import redact_url, url_redactions
from ._errors import FormatterError
from ._local_files import check_local_file, saved_media_dir

__all__ = [
    "CALL_STATE",
    "STATELESS_FORMAT_CODES",
    "FormatCall",
    "NeedsCallState",
    "current_call",
    "fetch_base64",
    "inside_stateless_format",
    "local_path_of",
    "read_local_base64",
    "read_local_image",
    "save_base64_data",
    "saved_media_dir",
    "sniff_media_type",
]

# How long one download of a media URL may take, and how often it is tried; AgentScope retries
# web media three times too.
DOWNLOAD_TIMEOUT_S = 30.0
DOWNLOAD_ATTEMPTS = 3


class FormatCall:
    """State of one ``format()`` call: loaded media and dropped block types."""

    __slots__ = ("cache", "dropped")

    def __init__(self) -> None:
        self.cache: dict[tuple[str, str], Any] = {}
        self.dropped: dict[str, int] = {}

    async def cached(self, key: tuple[str, str], load: Callable[[], Awaitable[Any]]) -> Any:
        """Return the cached value for *key*, computing it with *load* on first use."""
        try:
            return self.cache[key]
        except KeyError:
            pass
        # Loaded outside the except clause: a load error is not chained to the KeyError.
        value = await load()
        self.cache[key] = value
        return value

    def drop(self, block_type: str) -> None:
        """Record that a block of *block_type* was left out of the payload."""
        dropped = self.dropped
        dropped[block_type] = dropped.get(block_type, 0) + 1


# While a ``format()`` call runs, ``CALL_STATE`` holds its FormatCall, or ``_OPEN`` until
# something needs one: most calls (text and tool blocks only) never do, and building the state
# per call would cost more than formatting a short prompt.
_OPEN = object()
CALL_STATE: contextvars.ContextVar[object] = contextvars.ContextVar(
    "agentscope_rt_format_call", default=None
)
_CallToken = contextvars.Token[object]

STATELESS_FORMAT_CODES: set[CodeType] = set()
"""The code of the ``format()`` methods that run a ``_format`` without opening a call (and
catch :class:`NeedsCallState` to run it again inside one)."""


class NeedsCallState(BaseException):
    """Raised by :func:`current_call` inside a ``format()`` that opened no call: that
    ``format()`` catches it and formats again inside a call. A BaseException, so that no
    ``except Exception`` on the way swallows it."""


def current_call() -> FormatCall:
    """The state of the ``format()`` call in progress, created on first use (a fresh,
    unattached one outside any call).

    The state is shared by everything the call runs in its own task; a task started inside
    the call that creates it keeps it to itself.

    :raises NeedsCallState: inside a ``format()`` that started without a call (see
        :data:`STATELESS_FORMAT_CODES`), which then starts again with one.
    """
    call = CALL_STATE.get()
    if call.__class__ is FormatCall:
        return call
    if call is None and inside_stateless_format():
        raise NeedsCallState
    state = FormatCall()
    if call is _OPEN:
        # Inside a call: keep it for the rest of the call (the call's reset removes it).
        CALL_STATE.set(state)
    return state


def inside_stateless_format() -> bool:
    """Whether the function calling this one was called, directly or through awaits, by a
    ``format()`` that opened no call. For the rare paths only: it walks the stack."""
    # Used only while no call is open in this context: a format() that opened one sets the
    # context variable first, so any format() frame on the stack then is one that did not.
    # The stack runs through the awaiting coroutines, up to the task's first frame.
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code in STATELESS_FORMAT_CODES:
            return True
        frame = frame.f_back
    return False


def call_state() -> FormatCall | None:
    """The state of the ``format()`` call in progress, if anything has created it."""
    call = CALL_STATE.get()
    return call if call.__class__ is FormatCall else None


def enter_call() -> _CallToken | None:
    """Start a ``format()`` call; ``None`` when a formatter formats inside another (the inner
    call joins the outer one)."""
    if CALL_STATE.get() is not None:
        return None
    return CALL_STATE.set(_OPEN)


def exit_call(token: _CallToken | None) -> None:
    """End a call started by :func:`enter_call` (its state, if any, goes with it)."""
    if token is not None:
        CALL_STATE.reset(token)


def local_path_of(url: str) -> str | None:
    """The filesystem path *url* names (a plain path or ``file://``), or ``None`` for a web,
    data or other URL with a scheme.

    A ``file://`` URL is percent-decoded, as ``Path.as_uri()`` encodes it (``%20`` for a
    space, UTF-8 escapes for other characters), and may name ``localhost`` as its host.
    """
    if url.startswith("file://"):
        path = url.removeprefix("file://")
        if path.startswith("localhost/"):
            path = path.removeprefix("localhost")
        return unquote(path)
    scheme = urlparse(url).scheme
    # A one-letter scheme is a Windows drive ("C:\\img.png"), not a URL.
    if scheme == "" or (len(scheme) == 1 and os.name == "nt"):
        return url
    return None


def sniff_media_type(head: bytes) -> str | None:
    """Recognise common image/audio/video formats from their first bytes."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"ID3") or head[:2] in (b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"):
        return "audio/mpeg"
    if head[4:8] == b"ftyp":
        return "video/mp4"
    return None


def guess_media_type(path: str) -> str | None:
    """The MIME type of *path* from its extension (Python's ``mimetypes`` table)."""
    return mimetypes.guess_type(path)[0]


async def read_local_bytes(path: str) -> bytes:
    """Read a local media file without blocking the event loop, if it may be read.

    The file is read by its real path (symlinks and ``..`` resolved), which must lie in a
    folder :func:`~agentscope_rt.formatter.allow_local_files` allowed or in the package's own
    media folder; the check comes first, so a refusal says nothing about what exists.

    :raises LocalFileNotAllowedError: when the file is in no allowed folder.
    :raises FormatterError: when *path* is not an existing regular file.
    """
    return await anyio.to_thread.run_sync(_read_allowed_file, path)


def _read_allowed_file(path: str) -> bytes:
    real = check_local_file(path, path)
    try:
        # O_NOFOLLOW: the checked path is read, not a symlink put in its place since.
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        fd = -1
    if fd < 0 or not stat.S_ISREG(os.fstat(fd).st_mode):
        if fd >= 0:
            os.close(fd)
        raise FormatterError(
            f"media file {path!r} does not exist or is not a regular file; give an existing "
            "local path, a file:// URL, a web URL or base64 data"
        )
    with open(fd, "rb") as file:
        return file.read()


async def read_local_base64(path: str) -> tuple[str, bytes]:
    """Read *path* and return ``(base64 text, first 16 bytes)``, cached per format call.

    :raises FormatterError: when *path* is not an existing regular file.
    """

    async def load() -> tuple[str, bytes]:
        data = await read_local_bytes(path)
        return base64.b64encode(data).decode("ascii"), data[:16]

    result: tuple[str, bytes] = await current_call().cached(("file", path), load)
    return result


# Image types the OpenAI and Anthropic vision APIs accept, by file extension.
WEB_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


async def read_local_image(path: str, url: str, provider: str) -> tuple[str, str]:
    """Read a local image for a provider that takes png, jpeg, gif and webp.

    The media type comes from the extension, or from the file's first bytes when the
    extension is missing or unknown.

    :param path: the local path to read.
    :param url: what the user wrote (a path or ``file://`` URL), for the error message.
    :param provider: the provider's name, for the error message.
    :returns: ``(media type, base64 text)``.
    :raises FormatterError: for a missing file or one that is not such an image.
    """
    data, head = await read_local_base64(path)
    extension = os.path.splitext(path)[1].lower()
    media_type = WEB_IMAGE_TYPES.get(extension) or sniff_media_type(head)
    if media_type is None or media_type not in WEB_IMAGE_TYPES.values():
        raise FormatterError(f"{url!r} is not an image {provider} accepts (png, jpeg, gif, webp)")
    return media_type, data


async def fetch_base64(url: str) -> tuple[str, bytes, str | None]:
    """Download *url* and return ``(base64 text, first 16 bytes, Content-Type or None)``.

    Used only where a provider needs the bytes of web media (Gemini inline data, Ollama
    images, OpenAI input audio). Tried :data:`DOWNLOAD_ATTEMPTS` times.

    :raises FormatterError: when every attempt fails.
    """

    async def load() -> tuple[str, bytes, str | None]:
        last_error: Exception | None = None
        async with httpx.AsyncClient(timeout=DOWNLOAD_TIMEOUT_S, follow_redirects=True) as client:
            for _ in range(DOWNLOAD_ATTEMPTS):
                try:
                    response = await client.get(url)
                    response.raise_for_status()
                except httpx.HTTPError as error:
                    last_error = error
                    continue
                content_type = response.headers.get("content-type")
                media_type = content_type.split(";")[0].strip() if content_type else None
                data = response.content
                return base64.b64encode(data).decode("ascii"), data[:16], media_type
        raise FormatterError(
            f"could not download media from {redact_url(url)!r} after {DOWNLOAD_ATTEMPTS} attempts "
            f"({redact_text(str(last_error), url_redactions(url))}); this provider needs the "
            "bytes, so pass a reachable URL, a local file or base64 data"
        )

    result: tuple[str, bytes, str | None] = await current_call().cached(("web", url), load)
    return result


async def save_base64_data(media_type: str, data: str) -> str:
    """Write base64 *data* to a file named by its content hash and return the path.

    Tool results that carry base64 media are shown to text-only tool APIs as "can be found
    at: <path>" (AgentScope does the same with a fresh temporary file each time). The file
    goes to the package's private media folder (:func:`saved_media_dir`: owner-only, one per
    process, removed at exit), which formatters may always read back. Naming the file by hash
    means formatting the same history again writes nothing new.

    :raises FormatterError: when *data* is not valid base64.
    """

    async def load() -> str:
        try:
            raw = base64.b64decode(data, validate=True)
        except binascii.Error as error:
            raise FormatterError(
                f"base64 media of type {media_type!r} is not valid base64: {error}"
            ) from error
        extension = media_type.split("/")[-1]
        name = hashlib.sha256(raw).hexdigest()[:32] + "." + extension
        return await anyio.to_thread.run_sync(_write_private_media, name, raw)

    result: str = await current_call().cached(("save", data), load)
    return result


def _write_private_media(name: str, raw: bytes) -> str:
    """Write *raw* as *name* in the private media folder (owner-only) unless it is there."""
    directory = saved_media_dir()
    path = os.path.join(directory, name)
    if os.path.exists(path):
        return path
    # A unique temporary name first, so a concurrent reader never sees a half-written file.
    partial = os.path.join(directory, f".{name}.{threading.get_ident()}.part")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o600)
    with open(fd, "wb") as file:
        file.write(raw)
    os.replace(partial, path)
    return path
