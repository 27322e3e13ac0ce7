"""An MCP server that requires an OAuth bearer token, with its own authorization server.

Run as ``python auth_server.py streamable-http PORT`` or ``python auth_server.py sse PORT``.
Everything listens on ``http://127.0.0.1:PORT``:

* the MCP endpoint (``/mcp`` or ``/sse`` + ``/messages/``), protected by the SDK's bearer
  middleware: a request without a valid token gets ``401`` with a ``WWW-Authenticate: Bearer``
  header pointing at the protected resource metadata (``/.well-known/oauth-protected-resource``);
* an OAuth authorization server: metadata at ``/.well-known/oauth-authorization-server`` and a
  ``/token`` endpoint granting ``client_credentials`` to client ``agent`` with secret
  ``CLIENT_SECRET`` (sent in the form body or as HTTP basic auth);
* test controls: ``POST /admin/revoke`` invalidates every token issued so far (the next request
  with one of them gets 401), ``GET /admin/stats`` counts tokens issued and requests refused.
"""

from __future__ import annotations

import base64
import secrets
import sys

from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

CLIENT_ID = "agent"
CLIENT_SECRET = "s3cret-client-credential"

_valid_tokens: dict[str, str] = {}  # token -> client id
_stats = {"issued": 0, "refused": 0}


class _Verifier:
    def __init__(self, resource: str) -> None:
        self.resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        client_id = _valid_tokens.get(token)
        if client_id is None:
            _stats["refused"] += 1
            return None
        return AccessToken(token=token, client_id=client_id, scopes=[], resource=self.resource)


def build(transport: str, port: int) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    path = "/sse" if transport == "sse" else "/mcp"
    server = MCPServer(
        "guarded",
        log_level="ERROR",
        token_verifier=_Verifier(f"{base}{path}"),
        auth=AuthSettings(
            issuer_url=base, resource_server_url=f"{base}{path}", validate_token_resource=True
        ),
    )

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The OAuth client the call was authorized for."""
        headers = ctx.headers or {}
        token = headers.get("authorization", "").partition(" ")[2]
        return _valid_tokens.get(token, "unknown")

    @server.custom_route("/.well-known/oauth-authorization-server", methods=["GET"])
    async def metadata(request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": [
                    "client_secret_post",
                    "client_secret_basic",
                ],
                "response_types_supported": ["code"],
            }
        )

    @server.custom_route("/token", methods=["POST"])
    async def token(request: Request) -> Response:
        form = await request.form()
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        basic = request.headers.get("authorization", "")
        if basic.lower().startswith("basic "):
            decoded = base64.b64decode(basic[6:]).decode()
            client_id, _, client_secret = decoded.partition(":")
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        if client_id != CLIENT_ID or client_secret != CLIENT_SECRET:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        access_token = f"at-{secrets.token_hex(16)}"
        _valid_tokens[access_token] = str(client_id)
        _stats["issued"] += 1
        return JSONResponse(
            {"access_token": access_token, "token_type": "Bearer", "expires_in": 3600}
        )

    @server.custom_route("/admin/revoke", methods=["POST"])
    async def revoke(request: Request) -> Response:
        _valid_tokens.clear()
        return JSONResponse({"revoked": True})

    @server.custom_route("/admin/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse(_stats)

    return server


def main() -> None:
    transport, port = sys.argv[1], int(sys.argv[2])
    if transport not in ("streamable-http", "sse"):
        raise SystemExit(f"unknown transport {transport!r}; use streamable-http or sse")
    build(transport, port).run(transport, host="127.0.0.1", port=port)  # type: ignore[call-overload]


if __name__ == "__main__":
    main()
