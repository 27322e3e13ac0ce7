"""The SDK's HTTP transports (streamable HTTP and SSE) built from AgentScope's arguments, and
the constructor both HTTP clients share (``auth=`` included, see :mod:`._auth`).

Credentials in the URL. The SDK and the HTTP libraries log the URL they are given (``httpx2``
every request at INFO, the SDK's transports at DEBUG), and the SSE transport copies its user
info into the message endpoint it derives. Two measures keep them out of the logs:

* user info (``https://user:pass@host/mcp``) never reaches the libraries: it is taken out of
  the URL and sent as HTTP basic auth, as httpx itself does with a URL's user info when no
  other ``auth`` is given (and ignores when one is: so does this client). Sending it as a
  header is also what makes it work at all here, since the client always installs an auth
  flow (:class:`~._auth.AuthBridge`), which makes httpx2 drop the URL's user info;
* the query string has to reach the server as it is, so the libraries' loggers get a filter
  (:mod:`agentscope_rt._log_redaction`) that replaces every URL query value, URL user info
  and credential header value in their records, plus every secret this client knows (header
  values, the URL's password and query values, each credential the auth flow sent).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx2
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from .._cleanup import cleanup_scope
from ..exception import MCPError
from ._auth import AuthBridge, HttpAuth, normalize_auth
from ._client_base import (
    DEFAULT_CONNECT_TIMEOUT,
    MCPClientBase,
    check_timeout,
    redact_url,
    url_redactions,
    value_redactions,
)
from ._session import TransportFactory

__all__ = ["HttpClientBase", "HttpTransportKind", "http_transport_factory"]

HttpTransportKind = Literal["streamable_http", "sse"]


def _validate_http_arguments(
    name: str,
    transport: str,
    url: str,
    headers: dict[str, str] | None,
    timeout: float,
    sse_read_timeout: float,
) -> None:
    if transport not in ("streamable_http", "sse"):
        raise ValueError(
            f"MCP client {name!r}: transport must be 'streamable_http' or 'sse', got {transport!r}"
        )
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"MCP client {name!r}: url must be an http:// or https:// URL")
    if headers is not None and not (
        isinstance(headers, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
    ):
        raise ValueError(f"MCP client {name!r}: headers must map strings to strings")
    for label, value in (("timeout", timeout), ("sse_read_timeout", sse_read_timeout)):
        check_timeout(f"MCP client {name!r}: {label}", value)


def split_user_info(url: str) -> tuple[str, tuple[str, str] | None]:
    """*url* without its user info, and the ``(username, password)`` it held (percent-decoded,
    as httpx reads them), or ``None`` when it held none."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    bare = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    username, password = unquote(parts.username or ""), unquote(parts.password or "")
    return bare, ((username, password) if username or password else None)


def http_transport_factory(
    transport: HttpTransportKind,
    url: str,
    headers: dict[str, str] | None,
    timeout: float,
    sse_read_timeout: float,
    client_kwargs: dict[str, Any],
    auth: httpx2.Auth | None = None,
) -> TransportFactory:
    """A factory of fresh SDK transport contexts for one HTTP server.

    :param transport: ``"streamable_http"`` or ``"sse"``.
    :param client_kwargs: extra keyword arguments for the SDK's transport function.
    :param auth: the authentication flow every request of the transport goes through.
    """
    headers = dict(headers or {})
    if transport == "sse":
        return lambda: sse_client(
            url,
            headers=headers,
            timeout=timeout,
            sse_read_timeout=sse_read_timeout,
            auth=auth,
            **client_kwargs,
        )

    terminate = bool(client_kwargs.get("terminate_on_close", True))

    @asynccontextmanager
    async def streamable() -> AsyncIterator[Any]:
        # SDK 2.x takes headers and timeouts through the HTTP client it is given, and leaves
        # closing that client to whoever created it.
        watch = _SessionWatch()
        http_client = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(timeout, read=sse_read_timeout),
            auth=auth,
            event_hooks={"response": [watch.observe]},
        )
        async with http_client:
            try:
                async with streamable_http_client(
                    url, http_client=http_client, **client_kwargs
                ) as streams:
                    yield streams
            finally:
                if terminate:
                    await watch.end_session(http_client, url)

    return streamable


class _SessionWatch:
    """What the responses of one streamable-HTTP connection say about its session: the id
    the server gave it and whether a DELETE has ended it.

    The SDK ends the session with a DELETE in its own cleanup, which a cancelled caller
    (a timeout, an interrupt) cuts short at its first await: the server would then keep the
    session until its idle timeout (30 minutes by default), one more for every cancelled
    call of a stateless client. :meth:`end_session` sends that DELETE when it did not go.
    """

    __slots__ = ("ended", "protocol_version", "session_id")

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.ended = False

    async def observe(self, response: httpx2.Response) -> None:
        request = response.request
        if request.method == "DELETE":
            self.ended = True
            return
        self.session_id = self.session_id or response.headers.get("mcp-session-id")
        self.protocol_version = request.headers.get("mcp-protocol-version") or (
            self.protocol_version
        )

    async def end_session(self, client: httpx2.AsyncClient, url: str) -> None:
        """Send the DELETE ending the session, unless there is none or it was sent; shielded
        from the caller's cancellation and bounded. Best effort: a failure is ignored (the
        server forgets an idle session in the end), so it never hides the call's own error."""
        if self.session_id is None or self.ended:
            return
        headers = {"mcp-session-id": self.session_id}
        if self.protocol_version:
            headers["mcp-protocol-version"] = self.protocol_version
        with cleanup_scope(), contextlib.suppress(Exception):
            await client.delete(url, headers=headers)


class HttpClientBase(MCPClientBase):
    """The arguments, repr and transport shared by the two HTTP clients."""

    def __init__(
        self,
        name: str,
        transport: HttpTransportKind,
        url: str,
        headers: dict[str, str] | None = None,
        timeout: float = 30,
        sse_read_timeout: float = 60 * 5,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        auth: HttpAuth | None = None,
        **client_kwargs: Any,
    ) -> None:
        """
        :param name: the name identifying the MCP server.
        :param transport: ``"streamable_http"`` (URLs usually end in ``/mcp``) or ``"sse"``
            (URLs usually end in ``/sse``).
        :param url: the server's endpoint; user info in it (``https://user:pass@host/mcp``)
            is sent as HTTP basic auth unless *auth* is given (as httpx does).
        :param headers: extra HTTP headers sent with every request.
        :param timeout: seconds for each HTTP operation (connect, write, pool).
        :param sse_read_timeout: seconds to wait for the next event on an open stream.
        :param connect_timeout: seconds allowed for connecting plus the handshake, and for
            each listing of the tools.
        :param auth: an ``httpx.Auth`` (as AgentScope users pass it: basic auth, a bearer
            flow that fetches and refreshes its token, ...), anything else httpx takes as
            ``auth`` (a ``(username, password)`` pair, a function of the request), or an
            ``httpx2.Auth`` (such as the ``mcp`` SDK's ``OAuthClientProvider``); every HTTP
            request of both transports goes through it. Credentials it sets never appear in
            reprs, errors or logs.
        :param client_kwargs: passed to the SDK's ``streamable_http_client`` or
            ``sse_client``.
        :raises ValueError: on an empty name, an unknown transport, a non-HTTP URL, malformed
            headers or a non-positive timeout.
        :raises TypeError: if *auth* is none of these.
        """
        super().__init__(name, connect_timeout=connect_timeout)
        _validate_http_arguments(name, transport, url, headers, timeout, sse_read_timeout)
        auth_flow = normalize_auth(name, auth)
        self.transport = transport
        self.url = url
        self._add_redactions(url_redactions(url))
        self._add_redactions(value_redactions((headers or {}).values()))
        library_url, user_info = split_user_info(url)
        if user_info is not None and auth_flow is None:
            auth_flow = httpx2.BasicAuth(*user_info)
        self._auth = AuthBridge(auth_flow, self._add_credentials)
        self._factory = http_transport_factory(
            transport,
            library_url,
            headers,
            float(timeout),
            float(sse_read_timeout),
            client_kwargs,
            self._auth,
        )

    def _add_credentials(self, texts: list[str]) -> None:
        # Called by the auth flow with each credential it sends: redact it from now on.
        self._add_redactions(value_redactions(texts))

    def _with_refusal(self, error: MCPError) -> MCPError:
        """*error*, saying so when the server's latest answer refused the credentials (the
        SDK reports that only as a generic error response)."""
        refusal = self._auth.refusal
        if refusal is None:
            return error
        hint = (
            "the credentials sent were refused; check what auth= provides"
            if self._auth.auth is not None
            else "the server requires credentials: pass auth= (an httpx.Auth) or headers="
        )
        return MCPError(f"{error} (HTTP {refusal}: {hint})")

    def _connect_error(self, exc: BaseException, action: str | None = None) -> MCPError:
        return self._with_refusal(super()._connect_error(exc, action))

    def _translate_error(self, exc: BaseException, action: str) -> MCPError:
        return self._with_refusal(super()._translate_error(exc, action))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, transport={self.transport!r}, "
            f"url={redact_url(self.url)!r})"
        )

    def _transport(self) -> TransportFactory:
        return self._factory

    def _describe_target(self) -> str:
        return f"{self.transport} at {redact_url(self.url)}"
