"""Messages and content blocks.

:class:`Msg` is what agents say and hear; its content is a string or a list of typed blocks.
All classes are attrs classes; blocks also read like AgentScope's dict blocks.
"""

from . import _convert  # noqa: F401  (fills _block.CONVERSION, which blocks and Msg call)
from ._block import (
    BLOCK_TYPES,
    AudioBlock,
    Base64Source,
    ContentBlock,
    ImageBlock,
    MediaBlock,
    MsgContent,
    Source,
    TextBlock,
    ThinkingBlock,
    ToolOutput,
    ToolResultBlock,
    ToolUseBlock,
    URLSource,
    VideoBlock,
)
from ._msg import Msg, Role, now_timestamp
from ._shared import is_shared, share

__all__ = [
    "BLOCK_TYPES",
    "AudioBlock",
    "Base64Source",
    "ContentBlock",
    "ImageBlock",
    "MediaBlock",
    "Msg",
    "MsgContent",
    "Role",
    "Source",
    "TextBlock",
    "ThinkingBlock",
    "ToolOutput",
    "ToolResultBlock",
    "ToolUseBlock",
    "URLSource",
    "VideoBlock",
    "is_shared",
    "now_timestamp",
    "share",
]
