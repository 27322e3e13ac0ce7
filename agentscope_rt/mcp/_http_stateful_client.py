"""MCP over HTTP with one long-lived session: :class:`HttpStatefulClient`."""

from __future__ import annotations

from ._http_transport import HttpClientBase
from ._stateful_client_base import StatefulClientBase

__all__ = ["HttpStatefulClient"]


class HttpStatefulClient(HttpClientBase, StatefulClientBase):
    """A streamable-HTTP or SSE MCP server, with one session kept across calls.

    ``HttpStatefulClient(name, transport, url, headers=None, timeout=30,
    sse_read_timeout=300, *, connect_timeout=30, auth=None, **client_kwargs)``; connect and
    close it as described in :class:`StatefulClientBase`. Recommended for servers that keep
    per-session state (browsers, shells). ``auth`` takes an ``httpx.Auth`` (e.g. a bearer
    flow that refreshes its token on a 401) or an ``httpx2.Auth`` such as the SDK's OAuth
    providers; a token refreshed in the middle of the session is used from the next request
    on. The headers (often carrying credentials), the credentials the auth flow sends and the
    URL's credentials and query string never appear in reprs, errors or logs.
    """
