"""MCP (Model Context Protocol) clients on the official ``mcp`` SDK.

Three clients share one interface (``name``, ``list_tools()``, ``call_tool()`` and
``get_callable_function()``), which is all
:meth:`~agentscope_rt.tool.Toolkit.register_mcp_client` needs:

* :class:`StdIOStatefulClient` — a server run as a subprocess, spoken to over stdio;
* :class:`HttpStatefulClient` — a streamable-HTTP or SSE server, one session for all calls;
* :class:`HttpStatelessClient` — a streamable-HTTP or SSE server, a session per call.

Concurrency promise: a stateful client's session lives in a runner task inside a task group
(its own, or one the caller passes to ``connect``), so the SDK's scopes are entered and
exited by one task; closing, cancellation or a dead server always ends in a released server
(no leaked subprocess or stream), and no call hangs on a dead server. Results become
:class:`~agentscope_rt.tool.ToolResponse` blocks via :class:`MCPToolFunction`.
"""

from ._client_base import MCPClientBase
from ._content import convert_mcp_content
from ._http_stateful_client import HttpStatefulClient
from ._http_stateless_client import HttpStatelessClient
from ._mcp_function import MCPToolFunction
from ._stateful_client_base import StatefulClientBase
from ._stdio_stateful_client import StdIOStatefulClient

__all__ = [
    "HttpStatefulClient",
    "HttpStatelessClient",
    "MCPClientBase",
    "MCPToolFunction",
    "StatefulClientBase",
    "StdIOStatefulClient",
    "convert_mcp_content",
]
