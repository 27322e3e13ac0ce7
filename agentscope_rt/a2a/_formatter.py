"""A2AChatFormatter: AgentScope messages to A2A messages and back.

A2A messages are a2a-sdk 1.x's protobuf ``Message`` (protocol 1.0). Messages and tasks of
protocol 0.3 (a2a-sdk 0.3's pydantic models, as AgentScope's servers build them) are read too:
they are converted to 1.0 first.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import mimetypes
import uuid
from typing import Any, Literal

from a2a.compat.v0_3 import types as types_v03
from a2a.compat.v0_3.conversions import to_core_message, to_core_task
from a2a.types import Message, Part, Role, Task
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict

from ..exception import MessageFormatError
from ..formatter import FormatterBase
from ..message import Msg

__all__ = ["A2AChatFormatter", "to_python"]

logger = logging.getLogger("agentscope_rt.a2a")

_MEDIA = ("image", "video", "audio")
# Integers survive a protobuf Struct (which holds every number as a double) up to 2**53.
_MAX_EXACT_INT = 2**53


def to_python(value: struct_pb2.Value) -> Any:
    """The JSON value *value* holds, with whole numbers as ``int`` (a protobuf ``Struct``
    keeps every number as a double, so ``{"n": 1}`` comes back as ``{"n": 1.0}`` otherwise)."""
    return _ints_back(MessageToDict(value))


def _ints_back(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_EXACT_INT:
        return int(value)
    if isinstance(value, dict):
        return {key: _ints_back(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_ints_back(item) for item in value]
    return value


def _data_part(data: Any) -> Part:
    part = Part()
    ParseDict(data, part.data)
    return part


class A2AChatFormatter(FormatterBase):
    """Converts AgentScope messages into one A2A message, and A2A messages and tasks into
    AgentScope messages (AgentScope's ``A2AChatFormatter``)."""

    async def format(self, msgs: list[Msg], tools: list[dict[str, Any]] | None = None) -> Message:
        """Merge *msgs* into one A2A ``Message`` with role user (an A2A request carries one
        message): text and thinking become text parts, media become url or raw parts, tool
        calls and results become data parts holding the block. Other blocks are left out
        with a warning, as in AgentScope.

        :param tools: not used (A2A carries no tool schemas); accepted as every formatter's
            ``format`` accepts it.
        :raises TypeError: when *msgs* is not a list of :class:`Msg`.
        :raises MessageFormatError: for base64 media whose data is not valid base64.
        """
        self.assert_list_of_msgs(msgs)
        parts: list[Part] = []
        for msg in msgs:
            for block in msg.get_content_blocks():
                part = self._block_to_part(block)
                if part is not None:
                    parts.append(part)
        return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts)

    def _block_to_part(self, block: Any) -> Part | None:
        kind = block["type"]
        if kind == "text":
            return Part(text=block["text"]) if block["text"] else None
        if kind == "thinking":
            return Part(text=block["thinking"]) if block["thinking"] else None
        if kind in _MEDIA:
            return self._media_part(block)
        if kind in ("tool_use", "tool_result"):
            return _data_part(block.to_dict())
        logger.error("Unsupported block type %s in A2AFormatter.", kind)
        return None

    @staticmethod
    def _media_part(block: Any) -> Part:
        source = block["source"]
        if source["type"] == "url":
            return Part(url=source["url"])
        try:
            raw = base64.b64decode(source["data"], validate=True)
        except (binascii.Error, ValueError):
            raise MessageFormatError(
                f"a {block['type']} block's base64 source is not valid base64 "
                f"({len(source['data'])} characters)"
            ) from None
        return Part(raw=raw, media_type=source["media_type"])

    async def format_a2a_message(self, name: str, message: Any) -> Msg:
        """The AgentScope message for A2A *message* (1.0, or 0.3's pydantic model): role
        ``"user"`` for a user message, ``"assistant"`` for an agent's.

        :raises MessageFormatError: for a message of neither role.
        """
        message = _core_message(message)
        content = [self._part_to_block(part) for part in message.parts]
        if message.role == Role.ROLE_USER:
            role: Literal["user", "assistant"] = "user"
        elif message.role == Role.ROLE_AGENT:
            role = "assistant"
        else:
            raise MessageFormatError(f"Unsupported role: {Role.Name(message.role)} in A2A message.")
        return Msg(name=name, role=role, content=content)

    async def format_a2a_task(self, name: str, task: Any) -> list[Msg]:
        """The AgentScope messages for A2A *task* (1.0, or 0.3's pydantic model): the
        status message, then the artifacts' parts (merged into the preceding assistant
        message, whose metadata becomes the artifact's, as in AgentScope).

        :raises MessageFormatError: for a status message of neither role.
        """
        task = _core_task(task)
        merged: list[Msg] = []
        if task.HasField("status") and task.status.HasField("message"):
            merged.append(await self.format_a2a_message(name, task.status.message))
        for artifact in task.artifacts:
            metadata: dict[str, Any] | None = (
                MessageToDict(artifact.metadata) if artifact.HasField("metadata") else None
            )
            found = Msg(
                name=name,
                role="assistant",
                content=[self._part_to_block(part) for part in artifact.parts],
                metadata=metadata,
            )
            if merged and merged[-1].role == "assistant":
                merged[-1].content = [*merged[-1].get_content_blocks(), *found.get_content_blocks()]
                merged[-1].metadata = found.metadata
            else:
                merged.append(found)
        return merged

    @staticmethod
    def _guess_type(
        uri: str | None = None, mime_type: str | None = None
    ) -> Literal["image", "video", "audio", "unknown"]:
        """The kind of media *uri* or *mime_type* names.

        :raises ValueError: when neither is given.
        """
        if mime_type is None and uri is None:
            raise ValueError("Either uri or mime_type must be provided to guess the content type.")
        if not mime_type:
            mime_type, _ = mimetypes.guess_type(uri or "")
        if isinstance(mime_type, str):
            for kind in _MEDIA:
                if mime_type.startswith(f"{kind}/"):
                    return kind  # type: ignore[return-value]
        return "unknown"

    def _part_to_block(self, part: Part) -> dict[str, Any]:
        kind = part.WhichOneof("content")
        if kind == "text":
            return {"type": "text", "text": part.text}
        if kind == "url":
            media = self._guess_type(part.url, part.media_type or None)
            if media == "unknown":
                return {"type": "text", "text": part.url}
            return {"type": media, "source": {"type": "url", "url": part.url}}
        if kind == "raw":
            return self._raw_block(part)
        if kind == "data":
            return self._data_block(to_python(part.data))
        raise MessageFormatError(f"Unsupported Part type: an empty part in A2A message: {part}")

    def _raw_block(self, part: Part) -> dict[str, Any]:
        media_type = part.media_type or "application/octet-stream"
        media = self._guess_type(mime_type=media_type)
        if media != "unknown":
            data = base64.b64encode(part.raw).decode("ascii")
            source = {"type": "base64", "media_type": media_type, "data": data}
            return {"type": media, "source": source}
        # No block holds other files: text is shown as text, anything else described.
        if media_type.startswith("text/") or media_type == "application/json":
            return {"type": "text", "text": part.raw.decode("utf-8", errors="replace")}
        label = part.filename or "file"
        return {"type": "text", "text": f"[{label}: {media_type}, {len(part.raw)} bytes]"}

    @staticmethod
    def _data_block(data: Any) -> dict[str, Any]:
        # Tool calls and results travel as the block itself.
        if isinstance(data, dict):
            if data.get("type") == "tool_use" and {"name", "input", "id"} <= data.keys():
                return data
            if data.get("type") == "tool_result" and {"name", "output", "id"} <= data.keys():
                return data
        return {"type": "text", "text": json.dumps(data, ensure_ascii=False)}


def _core_message(message: Any) -> Message:
    if isinstance(message, Message):
        return message
    if isinstance(message, types_v03.Message):
        return to_core_message(message)
    raise TypeError(f"message must be an a2a-sdk Message, not {type(message).__name__}")


def _core_task(task: Any) -> Task:
    if isinstance(task, Task):
        return task
    if isinstance(task, types_v03.Task):
        return to_core_task(task)
    raise TypeError(f"task must be an a2a-sdk Task, not {type(task).__name__}")
