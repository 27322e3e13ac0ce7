"""Turning MCP tool results into agentscope-rt content blocks.

The mapping is total: every MCP content type becomes a block the model can read, so nothing a
server returns is silently dropped (AgentScope 1.0 logs and skips blob resources and resource
links; we do not).
"""

from __future__ import annotations

import base64
import binascii

import mcp.types

from ..message import AudioBlock, Base64Source, ImageBlock, MediaBlock, TextBlock, VideoBlock

__all__ = ["convert_mcp_content"]


def _blob_block(resource: mcp.types.BlobResourceContents) -> MediaBlock:
    mime = resource.mime_type or "application/octet-stream"
    source = Base64Source(media_type=mime, data=resource.blob)
    if mime.startswith("image/"):
        return ImageBlock(source=source)
    if mime.startswith("audio/"):
        return AudioBlock(source=source)
    if mime.startswith("video/"):
        return VideoBlock(source=source)
    # Other binary data cannot be shown to a model; describe it instead of dropping it.
    try:
        size = f"{len(base64.b64decode(resource.blob, validate=True))} bytes"
    except (binascii.Error, ValueError):
        size = "undecodable base64 data"
    return TextBlock(text=f"[binary resource {resource.uri} ({mime}), {size}]")


def _convert_one(content: mcp.types.ContentBlock) -> MediaBlock:
    if isinstance(content, mcp.types.TextContent):
        return TextBlock(text=content.text)
    if isinstance(content, mcp.types.ImageContent):
        return ImageBlock(source=Base64Source(media_type=content.mime_type, data=content.data))
    if isinstance(content, mcp.types.AudioContent):
        return AudioBlock(source=Base64Source(media_type=content.mime_type, data=content.data))
    if isinstance(content, mcp.types.EmbeddedResource):
        resource = content.resource
        if isinstance(resource, mcp.types.TextResourceContents):
            mime = f" ({resource.mime_type})" if resource.mime_type else ""
            return TextBlock(text=f"[resource {resource.uri}{mime}]\n{resource.text}")
        return _blob_block(resource)
    if isinstance(content, mcp.types.ResourceLink):
        parts = [f"[resource link] {content.name}: {content.uri}"]
        if content.mime_type:
            parts.append(f"({content.mime_type})")
        if content.description:
            parts.append(f"- {content.description}")
        return TextBlock(text=" ".join(parts))
    # A content type newer than this module: keep it readable as its JSON form.
    return TextBlock(text=content.model_dump_json(by_alias=True, exclude_none=True))


def convert_mcp_content(contents: list[mcp.types.ContentBlock]) -> list[MediaBlock]:
    """Convert the content of an MCP tool result into content blocks, one block per item.

    Text becomes :class:`TextBlock`; images and audio become :class:`ImageBlock` /
    :class:`AudioBlock` with a :class:`Base64Source` carrying the MIME type; an embedded text
    resource becomes text headed by its URI; an embedded blob becomes an image, audio or video
    block by MIME type, or a one-line description for other binary data; a resource link
    becomes a line naming its URI.

    :param contents: the ``content`` list of a ``CallToolResult``.
    :returns: the blocks, in order.
    """
    return [_convert_one(c) for c in contents]
