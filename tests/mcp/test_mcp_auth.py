"""``auth=`` on the HTTP clients, against a real MCP server on 127.0.0.1 that requires an OAuth
bearer token (``servers/auth_server.py``): 401 with ``WWW-Authenticate`` without a valid token,
tokens from its own ``client_credentials`` token endpoint.

Two kinds of auth are exercised, on streamable HTTP and SSE, stateful and stateless, on asyncio
and trio: an ``httpx.Auth`` subclass that fetches a token when the server answers 401 (what
AgentScope users pass), and the ``mcp`` SDK's own ``ClientCredentialsOAuthProvider`` (an
``httpx2.Auth`` doing discovery through the protected resource metadata).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncGenerator

import httpx
import httpx2
import pytest
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from agentscope_rt.exception import MCPError
from agentscope_rt.mcp import HttpStatefulClient, HttpStatelessClient
from agentscope_rt.mcp._auth import AuthBridge
from agentscope_rt.tool import Toolkit

from .conftest import HttpServer

CLIENT_ID = "agent"
CLIENT_SECRET = "s3cret-client-credential"  # the test server's, see servers/auth_server.py
STALE_TOKEN = "stale-token-from-yesterday"


class RefreshingBearerAuth(httpx.Auth):
    """A bearer token flow: send the current token; on a 401, fetch a new one from the token
    endpoint (client credentials) and send the request again.

    ``async_auth_flow`` is overridden, as httpx recommends for flows doing I/O, so that only
    the token response is read (``requires_response_body`` would read every response, the
    never-ending SSE stream included).
    """

    def __init__(self, token_url: str, secret: str = CLIENT_SECRET, token: str = "") -> None:
        self.token_url = token_url
        self.secret = secret
        self.token = token
        self.refreshes = 0

    async def async_auth_flow(  # type: ignore[override]
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self.token:
            request.headers["Authorization"] = f"Bearer {self.token}"
        response = yield request
        if response.status_code != 401:
            return
        assert response.headers["www-authenticate"].startswith("Bearer ")
        token_response = yield httpx.Request(
            "POST",
            self.token_url,
            data={
                "grant_type": "client_credentials",
                "client_id": CLIENT_ID,
                "client_secret": self.secret,
            },
        )
        await token_response.aread()
        token_response.raise_for_status()
        self.token = token_response.json()["access_token"]
        self.refreshes += 1
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


class MemoryTokenStorage:
    """The SDK's TokenStorage protocol, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


async def admin(server: HttpServer, action: str) -> dict[str, int]:
    async with httpx.AsyncClient() as http:
        if action == "revoke":
            response = await http.post(f"{server.base_url}/admin/revoke")
        else:
            response = await http.get(f"{server.base_url}/admin/stats")
        response.raise_for_status()
        result: dict[str, int] = response.json()
        return result


def bearer(server: HttpServer, **kwargs: object) -> RefreshingBearerAuth:
    return RefreshingBearerAuth(f"{server.base_url}/token", **kwargs)  # type: ignore[arg-type]


def sdk_provider(server: HttpServer, storage: MemoryTokenStorage) -> ClientCredentialsOAuthProvider:
    return ClientCredentialsOAuthProvider(
        server_url=server.url,
        storage=storage,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        token_endpoint_auth_method="client_secret_post",
        issuer=server.base_url,
    )


def assert_no_secret(texts: list[str], *secrets: str) -> None:
    for text in texts:
        for secret in secrets:
            assert secret not in text, f"{secret!r} leaked into {text!r}"


async def test_without_a_token_the_server_refuses(auth_server: HttpServer) -> None:
    transport = auth_server.client_transport
    stateless = HttpStatelessClient("guarded", transport, auth_server.url)  # type: ignore[arg-type]
    with pytest.raises(MCPError, match=r"could not connect to MCP server 'guarded'.*401"):
        await stateless.list_tools()
    stateful = HttpStatefulClient("guarded", transport, auth_server.url)  # type: ignore[arg-type]
    with pytest.raises(MCPError, match=r"401"):
        await stateful.connect()
    assert not stateful.is_connected


async def test_stateful_bearer_flow_refreshes_after_401(
    auth_server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth = bearer(auth_server, token=STALE_TOKEN)
    before = await admin(auth_server, "stats")
    client = HttpStatefulClient(
        "guarded",
        auth_server.client_transport,  # type: ignore[arg-type]
        auth_server.url,
        auth=auth,
    )
    async with client:
        # The stale token was refused once, a new one fetched, and the handshake went on.
        assert auth.refreshes == 1
        assert (await client.call_tool("whoami")).content[0].text == CLIENT_ID  # type: ignore[union-attr]
        first_token = auth.token
        # The server forgets every token: the next request gets 401 and the flow refreshes
        # in the middle of the session, which carries on.
        await admin(auth_server, "revoke")
        echoed = await client.call_tool("echo", {"text": "still here"})
        assert echoed.content[0].text == "still here"  # type: ignore[union-attr]
        assert auth.refreshes == 2
        assert auth.token != first_token
        toolkit = Toolkit()
        await toolkit.register_mcp_client(client, enable_funcs=["whoami"])
        (response,) = [
            chunk
            async for chunk in toolkit.call_tool_function(
                {"type": "tool_use", "id": "c1", "name": "whoami", "input": {}}  # type: ignore[arg-type]
            )
        ]
        assert response.get_text() == CLIENT_ID
    after = await admin(auth_server, "stats")
    assert after["issued"] - before["issued"] == 2
    assert after["refused"] - before["refused"] >= 2
    assert_no_secret(
        [repr(client), caplog.text], first_token, auth.token, CLIENT_SECRET, STALE_TOKEN
    )


async def test_stateless_bearer_flow_keeps_its_token_across_sessions(
    auth_server: HttpServer,
) -> None:
    auth = bearer(auth_server)
    client = HttpStatelessClient(
        "guarded",
        auth_server.client_transport,  # type: ignore[arg-type]
        auth_server.url,
        auth=auth,
    )
    assert {t.name for t in await client.list_tools()} == {"echo", "whoami"}
    echo = await client.get_callable_function("echo")
    for word in ("one", "two", "three"):
        assert (await echo(text=word)).get_text() == word  # type: ignore[union-attr]
    # One token served every session (each call opens its own).
    assert auth.refreshes == 1
    await admin(auth_server, "revoke")
    assert (await echo(text="four")).get_text() == "four"  # type: ignore[union-attr]
    assert auth.refreshes == 2


@pytest.mark.parametrize("stateful", [True, False], ids=["stateful", "stateless"])
async def test_mcp_sdk_oauth_provider(
    auth_server: HttpServer, stateful: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    storage = MemoryTokenStorage()
    provider = sdk_provider(auth_server, storage)
    kwargs = {"auth": provider}
    transport = auth_server.client_transport
    if stateful:
        async with HttpStatefulClient("guarded", transport, auth_server.url, **kwargs) as kept:  # type: ignore[arg-type]
            result = await kept.call_tool("whoami")
            await admin(auth_server, "revoke")
            # The provider sees the 401, gets a new token and retries.
            again = await kept.call_tool("echo", {"text": "after revoke"})
    else:
        lone = HttpStatelessClient("guarded", transport, auth_server.url, **kwargs)  # type: ignore[arg-type]
        result = await lone.call_tool("whoami")
        await admin(auth_server, "revoke")
        again = await lone.call_tool("echo", {"text": "after revoke"})
    assert result.content[0].text == CLIENT_ID  # type: ignore[union-attr]
    assert again.content[0].text == "after revoke"  # type: ignore[union-attr]
    assert storage.tokens is not None
    assert storage.tokens.access_token.startswith("at-")
    assert_no_secret([caplog.text], storage.tokens.access_token, CLIENT_SECRET)


async def test_refused_credentials_are_a_clear_error_without_secrets(
    auth_server: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    wrong_secret = "not-the-right-secret"
    auth = bearer(auth_server, secret=wrong_secret, token=STALE_TOKEN)
    transport = auth_server.client_transport
    stateless = HttpStatelessClient("guarded", transport, auth_server.url, auth=auth)  # type: ignore[arg-type]
    with pytest.raises(MCPError, match=r"'guarded'.*401 Unauthorized.*/token") as lone_error:
        await stateless.list_tools()
    stateful = HttpStatefulClient("guarded", transport, auth_server.url, auth=auth)  # type: ignore[arg-type]
    with pytest.raises(MCPError, match=r"'guarded'") as kept_error:
        await stateful.connect()
    texts = [str(lone_error.value), str(kept_error.value), repr(stateless), caplog.text]
    assert_no_secret(texts, wrong_secret, STALE_TOKEN)


async def test_credentials_sent_are_redacted_from_errors(auth_server: HttpServer) -> None:
    auth = bearer(auth_server)
    client = HttpStatelessClient(
        "guarded",
        auth_server.client_transport,  # type: ignore[arg-type]
        auth_server.url,
        auth=auth,
    )
    await client.list_tools()
    token = auth.token
    # An SDK or server error that quotes the request's Authorization header.
    error = client._translate_error(
        RuntimeError(f"bad request with header Authorization: Bearer {token}"), "list_tools()"
    )
    assert token not in str(error)
    assert "***" in str(error)


def test_auth_argument_is_checked_without_showing_it() -> None:
    for bad in (["user", "hunter2-password"], ("user", "hunter2-password", "extra"), 42):
        with pytest.raises(TypeError, match=r"auth must be an httpx.Auth") as info:
            HttpStatelessClient(
                "guarded",
                "streamable_http",
                "http://127.0.0.1:1/mcp",
                auth=bad,  # type: ignore[arg-type]
            )
        assert "hunter2" not in str(info.value)
    basic = HttpStatefulClient(
        "guarded", "sse", "http://127.0.0.1:1/sse", auth=httpx.BasicAuth("user", "hunter2")
    )
    assert "hunter2" not in repr(basic)
    assert repr(AuthBridge(httpx.BasicAuth("u", "hunter2"), lambda _: None)) == (
        "AuthBridge(BasicAuth)"
    )


async def test_what_httpx_takes_as_auth_reaches_the_server(http_server: HttpServer) -> None:
    """A (username, password) pair, an httpx.BasicAuth and a function of the request, as httpx
    (and so AgentScope with the SDK 1.x) takes them; the demo server echoes request headers."""
    expected_basic = "Basic " + base64.b64encode(b"user:hunter2-password").decode()

    def api_key(request: httpx2.Request) -> httpx2.Request:
        request.headers["X-Api-Key"] = "key-0123456789"
        return request

    transport = http_server.client_transport
    cases = [
        (("user", "hunter2-password"), "Authorization", expected_basic),
        (httpx.BasicAuth("user", "hunter2-password"), "Authorization", expected_basic),
        (api_key, "X-Api-Key", "key-0123456789"),
    ]
    for auth, header, value in cases:
        lone = HttpStatelessClient("web", transport, http_server.url, auth=auth)  # type: ignore[arg-type]
        result = await lone.call_tool("read_header", {"name": header})
        assert result.content[0].text == value  # type: ignore[union-attr]
        async with HttpStatefulClient("web", transport, http_server.url, auth=auth) as kept:  # type: ignore[arg-type]
            result = await kept.call_tool("read_header", {"name": header})
            assert result.content[0].text == value  # type: ignore[union-attr]
        assert "hunter2" not in repr(lone) + repr(kept)


async def test_bridge_turns_httpx_requests_into_httpx2_requests() -> None:
    """What the bridge hands the SDK's client, step by step, for a flow that builds its own
    httpx.Request (a token request) between two sends of the original request."""
    seen: list[list[str]] = []
    auth = RefreshingBearerAuth("http://127.0.0.1:1/token", token="old-token-value")
    bridge = AuthBridge(auth, seen.append)
    original = httpx2.Request("POST", "http://127.0.0.1:1/mcp", content=b"{}")
    flow = bridge.async_auth_flow(original)
    first = await flow.__anext__()
    assert first is original
    assert first.headers["authorization"] == "Bearer old-token-value"
    refused = httpx2.Response(401, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    token_request = await flow.asend(refused)
    assert isinstance(token_request, httpx2.Request)
    assert token_request.method == "POST"
    assert str(token_request.url) == "http://127.0.0.1:1/token"
    assert b"grant_type=client_credentials" in token_request.content
    granted = httpx2.Response(
        200, json={"access_token": "new-token-value", "token_type": "Bearer"}, request=token_request
    )
    retried = await flow.asend(granted)
    assert retried is original
    assert retried.headers["authorization"] == "Bearer new-token-value"
    with pytest.raises(StopAsyncIteration):
        await flow.asend(httpx2.Response(200))
    assert seen == [
        ["Bearer old-token-value", "old-token-value"],
        ["Bearer new-token-value", "new-token-value"],
    ]
