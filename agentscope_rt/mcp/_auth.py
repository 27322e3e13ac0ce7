"""HTTP authentication for the MCP HTTP clients: ``auth=`` as AgentScope users pass it.

AgentScope 1.x hands ``auth`` to the ``mcp`` SDK 1.x, whose transports run on ``httpx``, so
users pass an ``httpx.Auth`` (a bearer-token flow that fetches and refreshes its token, for
example). The ``mcp`` SDK 2.x used here runs on ``httpx2``, a fork of httpx with the same API
but its own classes: an ``httpx2.AsyncClient`` refuses an ``httpx.Auth``. :class:`AuthBridge`
is the ``httpx2.Auth`` the SDK's client gets; it drives the user's flow, whichever library its
class comes from:

* requests the flow yields are sent as they are when they are ``httpx2`` requests (the
  request being authenticated, which the flow usually just decorates with a header), and are
  rebuilt as ``httpx2`` requests when the flow builds its own ``httpx.Request`` (say, a POST to
  a token endpoint);
* the responses the flow receives are ``httpx2.Response`` objects, which offer the httpx API
  such flows use (``status_code``, ``headers``, ``json()``, ``aread()``).

The SDK's own OAuth providers (``mcp.client.auth.OAuthClientProvider`` and its
client-credentials variants) are ``httpx2.Auth`` subclasses and go through unchanged.

Credentials never reach reprs, logs or errors: every ``Authorization`` value the flow sets
(and the credential inside it) is handed to the client, which redacts it from error messages
from then on; the bridge's repr names only the class of the wrapped flow.

The bridge is installed without ``auth=`` too, as a plain observer: the SDK reports a refused
request only as "Server returned an error response", and the status the bridge saw last (a
401 or 403) is what lets the client say the server wants credentials.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

import httpx
import httpx2

__all__ = ["AuthBridge", "HttpAuth", "normalize_auth"]

HttpAuth = (
    httpx.Auth
    | httpx2.Auth
    | tuple[str | bytes, str | bytes]
    | Callable[[httpx2.Request], httpx2.Request]
)
"""What ``auth=`` accepts: what httpx accepts (an ``httpx.Auth``, a ``(username, password)``
pair for basic auth, or a function taking and returning the request), or an ``httpx2.Auth``."""

_CREDENTIAL_HEADERS = ("authorization", "proxy-authorization")


def normalize_auth(name: str, auth: object) -> httpx.Auth | httpx2.Auth | None:
    """*auth* as an auth object: ``None`` and ``httpx``/``httpx2`` auth objects as they are, a
    ``(username, password)`` pair as basic auth, a function as a function auth (as httpx
    reads them).

    :raises TypeError: for anything else; the message names the type only (the value may
        hold a password).
    """
    if auth is None or isinstance(auth, httpx.Auth | httpx2.Auth):
        return auth
    if (
        isinstance(auth, tuple)
        and len(auth) == 2
        and all(isinstance(part, str | bytes) for part in auth)
    ):
        return httpx2.BasicAuth(auth[0], auth[1])
    if callable(auth):
        return httpx2.FunctionAuth(auth)
    raise TypeError(
        f"MCP client {name!r}: auth must be an httpx.Auth (or httpx2.Auth) instance, such as "
        "httpx.BasicAuth(user, password) or a subclass implementing auth_flow(), a "
        f"(username, password) pair or a function of the request, not a {type(auth).__name__}"
    )


async def _as_httpx2_request(request: Any) -> httpx2.Request:
    """*request* as an ``httpx2.Request`` (the same object if it already is one)."""
    if isinstance(request, httpx2.Request):
        return request
    if isinstance(request, httpx.Request):
        try:
            content = request.content
        except httpx.RequestNotRead:
            content = await request.aread()
        return httpx2.Request(
            request.method,
            str(request.url),
            headers=request.headers.multi_items(),
            content=content,
        )
    raise TypeError(
        "an auth flow must yield httpx.Request or httpx2.Request objects, not "
        f"{type(request).__name__}"
    )


class AuthBridge(httpx2.Auth):
    """The ``httpx2.Auth`` running a user's auth flow on the SDK's ``httpx2`` client.

    :param auth: the user's ``httpx.Auth`` or ``httpx2.Auth``; ``None`` sends every request
        as it is (the bridge then only observes refusals).
    :param on_credential: called with each new credential text the flow puts in an
        ``Authorization`` header (the whole value and the part after the scheme), so the
        client can keep it out of error messages.
    :ivar refusal: ``"401 Unauthorized"`` or ``"403 Forbidden"`` (with the request path) when
        the latest answer the server gave was such a refusal, else ``None``.
    """

    def __init__(
        self, auth: httpx.Auth | httpx2.Auth | None, on_credential: Callable[[list[str]], None]
    ) -> None:
        self.auth = auth
        self.refusal: str | None = None
        self._on_credential = on_credential
        self._seen: set[str] = set()

    def __repr__(self) -> str:
        return f"AuthBridge({type(self.auth).__name__})"

    def _observe(self, request: httpx2.Request, response: httpx2.Response) -> None:
        status = response.status_code
        if status in (401, 403):
            self.refusal = f"{status} {response.reason_phrase} for {request.url.path}"
        elif status < 400:
            self.refusal = None

    def _note_credentials(self, request: httpx2.Request) -> None:
        for header in _CREDENTIAL_HEADERS:
            value = request.headers.get(header)
            if value and value not in self._seen:
                self._seen.add(value)
                _, _, credential = value.partition(" ")
                self._on_credential([value, credential.strip()] if credential else [value])

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """Drive the wrapped flow: its requests go out as ``httpx2`` requests and the
        responses go back to it until it finishes."""
        if self.auth is None:
            response = yield request
            self._observe(request, response)
            return
        # Both libraries' Auth classes offer async_auth_flow, which reads bodies as the flow
        # asks (requires_request_body / requires_response_body) and defers to auth_flow().
        flow: AsyncGenerator[Any, Any] = self.auth.async_auth_flow(request)  # type: ignore[arg-type]
        try:
            outgoing = await flow.__anext__()
            while True:
                converted = await _as_httpx2_request(outgoing)
                self._note_credentials(converted)
                response = yield converted
                self._observe(converted, response)
                try:
                    outgoing = await flow.asend(response)
                except StopAsyncIteration:
                    return
        finally:
            await flow.aclose()
