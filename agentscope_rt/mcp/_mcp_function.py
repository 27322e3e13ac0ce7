"""The callable wrapper of one MCP tool: :class:`MCPToolFunction`."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import mcp.types

from ..message import TextBlock
from ..tool import ToolResponse
from ._content import convert_mcp_content

if TYPE_CHECKING:
    from ._client_base import MCPClientBase

__all__ = ["MCPToolFunction"]


def _json_schema_of(tool: mcp.types.Tool) -> dict[str, Any]:
    # Copied once here so a caller editing the schema cannot change the SDK's cached tool.
    parameters = copy.deepcopy(dict(tool.input_schema)) if tool.input_schema else {}
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    parameters.setdefault("required", [])
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": parameters,
        },
    }


class MCPToolFunction:
    """One tool of an MCP server, callable like an async tool function.

    ``await fn(**kwargs)`` calls the tool through the client that created it (the client's
    session for stateful clients, a fresh session for stateless ones) and returns a
    :class:`~agentscope_rt.tool.ToolResponse` (or the SDK's ``CallToolResult`` when
    ``wrap_tool_result`` is false).

    A tool that fails on the server (``is_error``) is not an exception: the response's first
    text block says ``Error: ...`` and ``metadata["is_error"]`` is true, so the model can read
    it and recover. Losing the connection, a timeout or a protocol error raises
    :class:`~agentscope_rt.exception.MCPError`; the toolkit turns that into a readable
    response too.

    :ivar name: the tool's name.
    :ivar description: the tool's description ("" if the server gave none).
    :ivar json_schema: the schema in OpenAI function format,
        ``{"type": "function", "function": {"name", "description", "parameters"}}``.
    :ivar mcp_name: the name of the client (server) the tool belongs to.
    """

    def __init__(
        self,
        mcp_name: str,
        tool: mcp.types.Tool,
        wrap_tool_result: bool,
        client: MCPClientBase,
        timeout: float | None = None,
    ) -> None:
        """
        :param mcp_name: the name of the client the tool belongs to.
        :param tool: the tool definition from the server's listing.
        :param wrap_tool_result: return ToolResponse objects instead of ``CallToolResult``.
        :param client: the client that performs the calls.
        :param timeout: seconds each call may take; ``None`` for no limit.
        """
        self.mcp_name = mcp_name
        self.name = tool.name
        self.description = tool.description or ""
        self.json_schema = _json_schema_of(tool)
        self.wrap_tool_result = wrap_tool_result
        self.timeout = timeout
        self.client = client
        # Read by code that names functions by ``__name__`` (logs, toolkit registration).
        self.__name__ = tool.name
        self.__doc__ = self.description

    def __repr__(self) -> str:
        return f"MCPToolFunction(name={self.name!r}, mcp_name={self.mcp_name!r})"

    async def __call__(self, **kwargs: Any) -> ToolResponse | mcp.types.CallToolResult:
        """Call the tool with *kwargs* as its arguments.

        :returns: a ToolResponse (or the raw ``CallToolResult``, see ``wrap_tool_result``).
        :raises MCPError: if the connection is lost, the call times out or the server
            answers with a protocol error.
        """
        result = await self.client.call_tool(self.name, kwargs, read_timeout_seconds=self.timeout)
        if not self.wrap_tool_result:
            return result
        return self._wrap(result)

    def _wrap(self, result: mcp.types.CallToolResult) -> ToolResponse:
        blocks = convert_mcp_content(result.content)
        metadata: dict[str, Any] = dict(result.meta) if result.meta else {}
        if result.structured_content is not None:
            metadata["structured_content"] = result.structured_content
        if result.is_error:
            metadata["is_error"] = True
            texts = [b.text for b in blocks if isinstance(b, TextBlock)]
            detail = "\n".join(texts) if texts else "no details given"
            header = TextBlock(
                text=f"Error: the MCP tool {self.name!r} on server {self.mcp_name!r} "
                f"reported an error: {detail}"
            )
            blocks = [header, *(b for b in blocks if not isinstance(b, TextBlock))]
        return ToolResponse(content=blocks, metadata=metadata or None)
