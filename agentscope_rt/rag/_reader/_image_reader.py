"""The image reader: each image URL or local path as a one-chunk document, as AgentScope's
``ImageReader`` (for multimodal retrieval; the embedding model must accept images)."""

from __future__ import annotations

import hashlib
import os

import anyio.to_thread

from ...exception import ReaderError
from ...message import ImageBlock, URLSource
from .._document import Document
from ._reader_base import ReaderBase, number_chunks

__all__ = ["ImageReader"]


def _is_local(url: str) -> bool:
    return "://" not in url and not url.startswith("data:")


def _check_local(urls: list[str]) -> None:
    for url in urls:
        if not _is_local(url):
            continue
        if not os.path.isfile(url):
            what = "it is not a file" if os.path.exists(url) else "no such file"
            raise ReaderError(f"cannot read image {url!r}: {what}", path=url)
        if os.path.getsize(url) == 0:
            raise ReaderError(f"cannot read image {url!r}: the file is empty", path=url)


class ImageReader(ReaderBase):
    """Wrap images, given by URL or local path, into documents (one chunk each)."""

    async def __call__(
        self, image_url: str | os.PathLike[str] | list[str | os.PathLike[str]]
    ) -> list[Document]:
        """One document per image, in the order given, holding a URL image block.

        Remote URLs are not fetched; local paths must name non-empty files.

        :raises ReaderError: for a local path that is missing, not a file, or empty.
        """
        if isinstance(image_url, str | os.PathLike):
            urls = [os.fspath(image_url)]
        else:
            urls = [os.fspath(u) for u in image_url]
        await anyio.to_thread.run_sync(_check_local, urls)
        docs: list[Document] = []
        for url in urls:
            docs.extend(
                number_chunks(self.get_doc_id(url), [ImageBlock(source=URLSource(url=url))])
            )
        return docs

    def get_doc_id(self, image_path: str | os.PathLike[str]) -> str:
        """The document id of an image: the hex MD5 of its URL or path (AgentScope's scheme)."""
        name = os.fspath(image_path)
        return hashlib.md5(name.encode("utf-8"), usedforsecurity=False).hexdigest()
