"""Tools: the Toolkit, tool responses and built-in tools.

:class:`Toolkit` registers functions as tools (JSON schema from signature and docstring),
manages tool groups, and calls tools on a model's behalf, turning every failure into a
:class:`ToolResponse` the model can read. Its module documentation states the concurrency,
timeout and interrupt contract.
"""

from ._coding import execute_python_code, execute_shell_command
from ._execution import INTERRUPTED_TEXT
from ._multi_modality import (
    dashscope_image_to_text,
    dashscope_text_to_audio,
    dashscope_text_to_image,
    openai_audio_to_text,
    openai_create_image_variation,
    openai_edit_image,
    openai_image_to_text,
    openai_text_to_audio,
    openai_text_to_image,
)
from ._response import ToolResponse
from ._skill import AgentSkill
from ._text_file import TextFileTools, insert_text_file, view_text_file, write_text_file
from ._toolkit import MCPClientLike, Middleware, Toolkit, ToolResponseStream
from ._types import PostprocessFunc, RegisteredToolFunction, ToolGroup

__all__ = [
    "INTERRUPTED_TEXT",
    "AgentSkill",
    "MCPClientLike",
    "Middleware",
    "PostprocessFunc",
    "RegisteredToolFunction",
    "TextFileTools",
    "ToolGroup",
    "ToolResponse",
    "ToolResponseStream",
    "Toolkit",
    "dashscope_image_to_text",
    "dashscope_text_to_audio",
    "dashscope_text_to_image",
    "execute_python_code",
    "execute_shell_command",
    "insert_text_file",
    "openai_audio_to_text",
    "openai_create_image_variation",
    "openai_edit_image",
    "openai_image_to_text",
    "openai_text_to_audio",
    "openai_text_to_image",
    "view_text_file",
    "write_text_file",
]
