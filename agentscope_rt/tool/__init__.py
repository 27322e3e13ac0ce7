"""Tools: the Toolkit, tool responses and built-in tools."""

from ._response import ToolResponse

__all__ = ["ToolResponse"]
