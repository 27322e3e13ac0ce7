"""DashScope's multimodal embedding API (``multimodal-embedding-v1``,
``tongyi-embedding-vision-plus`` / ``-flash``, ...), over httpx.

The request is the one the ``dashscope`` SDK's ``MultiModalEmbedding.call`` sends:
``POST {base}/services/embeddings/multimodal-embedding/multimodal-embedding`` with
``{"model", "input": {"contents": [{"text": ...} | {"image": ...} | {"video": ...}]},
"parameters": {**kwargs}}`` and the key as a bearer token; the answer holds
``output.embeddings`` (each with its ``index``) and ``usage.input_tokens`` (plus
``usage.image_tokens`` for some models).
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from .._provider import RetryConfig
from ..exception import ModelAPIError
from ..formatter import (
    WEB_IMAGE_TYPES,
    FormatterError,
    LocalFileNotAllowedError,
    local_path_of,
    read_local_bytes,
    sniff_media_type,
)
from ..message import ImageBlock, TextBlock, VideoBlock
from ._cache_base import EmbeddingCacheBase
from ._cached import embed_all, timed
from ._dashscope_embedding import dashscope_connection
from ._embedding_response import EmbeddingResponse, EmbeddingUsage
from ._http_embedding import HttpEmbeddingModel

__all__ = ["DashScopeMultiModalEmbedding"]

logger = logging.getLogger(__name__)

_PATH = "/services/embeddings/multimodal-embedding/multimodal-embedding"
_DOC_URL = "https://bailian.console.aliyun.com/?tab=api#/api/?type=model&url=2712517"

# (model-name prefix, contents per request, the only vector length the model returns).
_MODEL_FAMILIES: tuple[tuple[str, int, int], ...] = (
    ("tongyi-embedding-vision-plus", 8, 1152),
    ("tongyi-embedding-vision-flash", 8, 768),
    ("multimodal-embedding-v", 1, 1024),
)
_DEFAULT_BATCH = 1
_DEFAULT_DIMENSIONS = 1024


class DashScopeMultiModalEmbedding(HttpEmbeddingModel):
    """A DashScope multimodal embedding model: texts, images and videos into one vector space.

    As in AgentScope, the batch size and the vector length depend on the model:
    ``tongyi-embedding-vision-plus*`` takes 8 contents per request and returns 1152 numbers,
    ``tongyi-embedding-vision-flash*`` 8 and 768, ``multimodal-embedding-v*`` 1 and 1024; any
    other model gets one content per request, and ``dimensions`` (default 1024) is only what
    the model reports. Longer lists go out as consecutive batches, one request after another,
    each cached on its own. The vector length is not sent; pass ``dimension=`` to the call to
    ask a model that supports it for another one.

    :param api_key: the API key; defaults to ``$DASHSCOPE_API_KEY``. It travels only in the
        ``Authorization`` header and never appears in reprs or errors.
    :param model_name: e.g. ``"tongyi-embedding-vision-plus"``, ``"multimodal-embedding-v1"``.
    :param dimensions: the length of the returned vectors; ``None`` means the model's own
        (1024 for a model outside the families above).
    :param embedding_cache: where to keep embeddings already computed.
    :param base_http_api_url: DashScope's native API base; defaults to
        ``$DASHSCOPE_HTTP_BASE_URL`` or ``https://dashscope.aliyuncs.com/api/v1``.
    :param retry_config: the retry policy (default: 3 retries with exponential backoff).
    :param client_kwargs: arguments for ``httpx.AsyncClient`` (``timeout``, ...).
    :raises ValueError: without an API key, or for *dimensions* other than the model's fixed
        length (the message names the model and the length it needs).
    """

    provider: ClassVar[str] = "dashscope"
    supported_modalities: ClassVar[list[str]] = ["text", "image", "video"]
    """Text, image and video blocks are embedded."""

    batch_size_limit: int
    """Contents per request."""

    def __init__(
        self,
        api_key: str | None,
        model_name: str,
        dimensions: int | None = None,
        embedding_cache: EmbeddingCacheBase | None = None,
        base_http_api_url: str | None = None,
        retry_config: RetryConfig | None = None,
        client_kwargs: dict[str, Any] | None = None,
    ) -> None:
        batch_size, resolved = _DEFAULT_BATCH, dimensions
        for prefix, family_batch, fixed in _MODEL_FAMILIES:
            if model_name.startswith(prefix):
                if dimensions is not None and dimensions != fixed:
                    raise ValueError(
                        f"The dimension of model {model_name} must be {fixed}, got "
                        f"{dimensions}: pass dimensions={fixed} or leave it out. See "
                        f"DashScope's documentation for more details: {_DOC_URL}"
                    )
                batch_size, resolved = family_batch, fixed
                break
        super().__init__(
            model_name,
            _DEFAULT_DIMENSIONS if resolved is None else resolved,
            **dashscope_connection(api_key, base_http_api_url, "DashScopeMultiModalEmbedding"),
            client_kwargs=client_kwargs,
            retry_config=retry_config,
        )
        self.batch_size_limit = batch_size
        self.embedding_cache = embedding_cache

    # AgentScope names the argument ``inputs``, not the base class's ``text``; kept for
    # callers that pass it by keyword.
    async def __call__(  # type: ignore[override]
        self,
        inputs: Sequence[str | TextBlock | ImageBlock | VideoBlock | Mapping[str, Any]],
        **kwargs: Any,
    ) -> EmbeddingResponse:
        """Embed *inputs*, one vector each, in order, in batches of :attr:`batch_size_limit`.

        Every item is checked before anything is sent: one bad item sends no request.

        :param inputs: text, image and video blocks (attrs blocks or AgentScope-style dicts),
            or plain strings as texts. An image is a web URL, a local file (a path or
            ``file://`` URL, sent inline as base64 data; only from a folder
            :func:`~agentscope_rt.formatter.allow_local_files` allowed) or base64 data; a video
            must be a web URL.
        :param kwargs: more request parameters (``dimension``, ``fps``, ``instruct``, ...).
        :raises LocalFileNotAllowedError: (a ``ValueError``) for a local image outside the
            allowed folders; nothing is sent.
        :raises ValueError: for an item that is none of these (the message names its position),
            a local image file that is missing or not an image, or a video that is not given
            by web URL.
        :raises ModelAPIError: when DashScope fails (after retries); batches already embedded
            stay in the cache.
        """
        contents = _contents_of(inputs)
        for index, content in enumerate(contents):
            contents[index] = await _inline_local_file(index, content)
        size = self.batch_size_limit
        if len(contents) > size:
            logger.info(
                "The inputs (%d) will be embedded with %d API calls due to the batch size "
                "limit of %d for the DashScope multimodal embedding model %s.",
                len(contents),
                (len(contents) + size - 1) // size,
                size,
                self.model_name,
            )
        fields = {"model": self.model_name, **kwargs}
        return await embed_all(
            self.embedding_cache,
            contents,
            size,
            fields,
            self._embed_batch,
            dimension_key="dimension",
        )

    async def _embed_batch(self, batch: dict[str, Any]) -> EmbeddingResponse:
        contents = batch["input"]
        body = {
            "model": batch["model"],
            "input": {"contents": contents},
            "parameters": {k: v for k, v in batch.items() if k not in ("input", "model")},
        }
        data, seconds = await timed(lambda: self._post(_PATH, body))
        output = data.get("output")
        items = output.get("embeddings") if isinstance(output, dict) else None
        if (
            not isinstance(items, list)
            or len(items) != len(contents)
            or not all(isinstance(item, dict) and "embedding" in item for item in items)
        ):
            raise ModelAPIError(
                self.provider,
                f"expected {len(contents)} embeddings in output.embeddings, got "
                f"{len(items) if isinstance(items, list) else 'none'}",
            )
        embeddings, usage = self._parsed(data, lambda d: _vectors_and_usage(d, items, seconds))
        return EmbeddingResponse(embeddings=embeddings, usage=usage)


def _vectors_and_usage(
    data: dict[str, Any], items: list[Any], seconds: float
) -> tuple[list[list[float]], EmbeddingUsage]:
    """The vectors of an answer's *items* in content order, and its usage."""
    # DashScope numbers each vector with its content's position; order by it.
    ordered = sorted(enumerate(items), key=lambda pair: int(pair[1].get("index", pair[0])))
    usage = data.get("usage") or {}
    used = int(usage.get("input_tokens") or 0) + int(usage.get("image_tokens") or 0)
    return [list(map(float, item["embedding"])) for _, item in ordered], EmbeddingUsage(
        time=seconds, tokens=used
    )


def _contents_of(inputs: Sequence[Any]) -> list[dict[str, str]]:
    """DashScope's ``input.contents`` for *inputs*.

    :raises ValueError: for an item that is not a string, a text block, an image block with a
        URL or base64 source, or a video block with a URL source.
    """
    if isinstance(inputs, (str, bytes, Mapping, TextBlock, ImageBlock, VideoBlock)):
        raise ValueError(
            "Inputs must be a list of TextBlock, ImageBlock or VideoBlock, got a single "
            f"{type(inputs).__name__}: wrap it in a list."
        )
    return [_content_of(i, item) for i, item in enumerate(inputs)]


def _content_of(index: int, item: Any) -> dict[str, str]:
    if isinstance(item, str):
        return {"text": item}
    where = f"inputs[{index}]"
    if not isinstance(item, (Mapping, TextBlock, ImageBlock, VideoBlock)):
        raise ValueError(
            f"{where} ({type(item).__name__}) is not a text, image or video block; the inputs "
            "must be TextBlock, ImageBlock or VideoBlock (or their dicts)."
        )
    kind = item.get("type")
    if kind == "text":
        text = item.get("text")
        if not isinstance(text, str):
            raise ValueError(f"{where} is a text block without a string 'text' field.")
        return {"text": text}
    if kind not in ("image", "video"):
        raise ValueError(
            f"{where} is a block of type {kind!r}; the inputs must be TextBlock, ImageBlock or "
            "VideoBlock (or their dicts)."
        )
    source: Any = item.get("source")
    source_type = source.get("type") if hasattr(source, "get") else None
    if source_type == "url" and isinstance(source.get("url"), str):
        return {kind: source["url"]}
    if kind == "video":
        raise ValueError(
            f"{where} is a video block with a {source_type or 'missing'} source; the multimodal "
            "embedding API only supports URL input for video data: give the video as a "
            "URLSource."
        )
    if (
        source_type == "base64"
        and isinstance(source.get("media_type"), str)
        and isinstance(source.get("data"), str)
    ):
        return {kind: f"data:{source['media_type']};base64,{source['data']}"}
    raise ValueError(
        f"{where} is an image block without a valid source; give a URLSource(url=...) or a "
        "Base64Source(media_type=..., data=...)."
    )


async def _inline_local_file(index: int, content: dict[str, str]) -> dict[str, str]:
    """*content* with a local image file (a path or ``file://`` URL) as a data URL.

    DashScope cannot read the caller's disk (the ``dashscope`` SDK uploads such files to
    DashScope's storage first); the API takes an image inline as base64 data, but a video only
    from a web URL.

    :raises LocalFileNotAllowedError: (a ``ValueError``) for a file outside the folders
        :func:`~agentscope_rt.formatter.allow_local_files` allowed.
    :raises ValueError: for a local video, a missing file, or a file that is not an image.
    """
    ((kind, url),) = content.items()
    if kind == "text" or url.startswith("data:"):
        return content
    path = local_path_of(url)
    if path is None:
        return content
    where = f"inputs[{index}]"
    if kind == "video":
        raise ValueError(
            f"{where} is a local video ({url!r}); the multimodal embedding API reads videos from "
            "web URLs only: upload it and give its URL."
        )
    try:
        data = await read_local_bytes(path)
    except LocalFileNotAllowedError as error:
        raise LocalFileNotAllowedError(f"{where}: {error}") from None
    except FormatterError:
        raise ValueError(
            f"{where}: the image file {url!r} does not exist or is not a regular file; give an "
            "existing path, a web URL or base64 data."
        ) from None
    media_type = WEB_IMAGE_TYPES.get(os.path.splitext(path)[1].lower()) or sniff_media_type(
        data[:16]
    )
    if media_type is None or not media_type.startswith("image/"):
        raise ValueError(f"{where}: {url!r} is not an image file (png, jpeg, gif or webp).")
    return {"image": f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"}
