"""The Nacos agent card resolver, over Nacos 3's HTTP API (AgentScope uses nacos-sdk-python's
gRPC client).

Nacos 3 publishes A2A agent cards on its HTTP admin API: ``GET
{server}/{context}/v3/admin/ai/a2a?namespaceId=&agentName=&version=`` answers
``{"code": 0, "message": "success", "data": <the card, protocol 0.3 JSON, plus Nacos's
registrationType>}``; an unknown agent or version is HTTP 404. With authentication on, a
token comes first from ``POST {server}/{context}/v3/auth/user/login`` (form ``username``,
``password``; answers ``{"accessToken": ..., "tokenTtl": ...}``) and travels in the
``accessToken`` header. (Nacos has no client-side HTTP route for cards: its SDKs use gRPC.)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import httpx
from a2a.types import AgentCard

from ..exception import A2AError
from ._card import AgentCardResolverBase, _card_from_json
from ._http import new_http_client

__all__ = ["NacosAgentCardResolver", "NacosClientConfig"]

_CARD_PATH = "/v3/admin/ai/a2a"
_LOGIN_PATH = "/v3/auth/user/login"
_DEFAULT_NAMESPACE = "public"


@dataclasses.dataclass(frozen=True)
class NacosClientConfig:
    """Where a Nacos server is and how to log in; the fields of nacos-sdk-python's
    ``ClientConfig`` that the HTTP API needs (an SDK ``ClientConfig`` is accepted as well).

    :param server_addresses: ``"host:port"``, several separated by commas (tried in order
        until one answers), each optionally with ``http://`` or ``https://``.
    :param namespace_id: the namespace (``""`` is Nacos's ``public``).
    :param context_path: the server's context path (Nacos's default ``nacos``).
    :param username: the user to log in as (no login when ``None``).
    :param password: the user's password (never shown in a repr or an error).
    :param timeout_ms: the timeout of each HTTP request, in milliseconds.
    """

    server_addresses: str
    namespace_id: str = ""
    context_path: str = "nacos"
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    timeout_ms: int = 10_000


class NacosAgentCardResolver(AgentCardResolverBase):
    """Fetches an agent card from a Nacos 3 A2A registry (AgentScope's
    ``NacosAgentCardResolver``, over Nacos's HTTP API instead of its gRPC SDK).

    :param remote_agent_name: the agent's name in Nacos.
    :param nacos_client_config: a :class:`NacosClientConfig`, nacos-sdk-python's
        ``ClientConfig`` (its ``server_list``, ``namespace_id``, ``context_path``,
        ``username``, ``password`` and ``timeout_ms`` are read) or a mapping of
        :class:`NacosClientConfig`'s fields.
    :param version: the card version to fetch (the latest when ``None``).
    :raises ValueError: for an empty agent name, no config, or a config without a server.
    """

    def __init__(
        self,
        remote_agent_name: str,
        nacos_client_config: Any,
        version: str | None = None,
    ) -> None:
        if not remote_agent_name:
            raise ValueError("The remote_agent_name cannot be empty.")
        if not nacos_client_config:
            raise ValueError("The nacos_client_config cannot be None.")
        self._remote_agent_name = remote_agent_name
        self._config = _as_config(nacos_client_config)
        self._version = version

    def __repr__(self) -> str:
        return (
            f"NacosAgentCardResolver(remote_agent_name={self._remote_agent_name!r}, "
            f"server_addresses={self._config.server_addresses!r}, version={self._version!r})"
        )

    async def get_agent_card(self) -> AgentCard:
        """The card Nacos holds for the agent (the version asked for, else the latest).

        :raises A2AError: when no server answers, the login is refused, the agent or version
            is not registered, or Nacos's answer is not an agent card (the message says which;
            it never holds the password or the token).
        """
        failures: list[str] = []
        async with await new_http_client(self._config.timeout_ms / 1000) as http:
            for base in _base_urls(self._config):
                try:
                    return await self._fetch(http, base)
                except httpx.TransportError as exc:
                    # Another server of the cluster may answer.
                    failures.append(f"{base}: {type(exc).__name__}: {exc}")
        raise A2AError(
            f"no Nacos server answered for agent card {self._remote_agent_name!r}: "
            + "; ".join(failures)
        )

    async def _fetch(self, http: httpx.AsyncClient, base: str) -> AgentCard:
        headers = {}
        if self._config.username:
            headers["accessToken"] = await self._login(http, base)
        params = {
            "namespaceId": self._config.namespace_id or _DEFAULT_NAMESPACE,
            "agentName": self._remote_agent_name,
        }
        if self._version:
            params["version"] = self._version
        response = await http.get(base + _CARD_PATH, params=params, headers=headers)
        what = f"agent card {self._remote_agent_name!r}" + (
            f" version {self._version!r}" if self._version else ""
        )
        where = f"namespace {params['namespaceId']!r} of Nacos at {base}"
        if response.status_code == 404:
            raise A2AError(f"{what} is not registered in {where}: {_detail(response)}")
        if response.status_code != 200:
            raise A2AError(
                f"Nacos refused {what} (HTTP {response.status_code}) in {where}: "
                f"{_detail(response)}"
            )
        data = _result_data(response, f"Nacos's answer for {what}")
        card = {k: v for k, v in data.items() if k != "registrationType"}
        return _card_from_json(card, f"{what} from {where}")

    async def _login(self, http: httpx.AsyncClient, base: str) -> str:
        form = {"username": self._config.username or "", "password": self._config.password or ""}
        response = await http.post(base + _LOGIN_PATH, data=form)
        if response.status_code != 200:
            raise A2AError(
                f"Nacos at {base} refused the login of user {self._config.username!r} "
                f"(HTTP {response.status_code}): {_detail(response)}"
            )
        try:
            token = response.json().get("accessToken")
        except (ValueError, AttributeError):
            token = None
        if not isinstance(token, str) or not token:
            raise A2AError(f"Nacos at {base} answered the login without an accessToken")
        return token


def _as_config(config: Any) -> NacosClientConfig:
    """A :class:`NacosClientConfig` of any accepted form.

    :raises ValueError: when it names no server.
    """
    if isinstance(config, NacosClientConfig):
        found = config
    elif isinstance(config, Mapping):
        found = NacosClientConfig(**config)
    else:
        servers: Any = getattr(config, "server_list", None) or getattr(
            config, "server_addresses", ""
        )
        if not isinstance(servers, str):
            servers = ",".join(str(server) for server in servers or ())
        found = NacosClientConfig(
            server_addresses=servers,
            namespace_id=getattr(config, "namespace_id", "") or "",
            context_path=getattr(config, "context_path", "") or "nacos",
            username=getattr(config, "username", None),
            password=getattr(config, "password", None),
            timeout_ms=getattr(config, "timeout_ms", 10_000) or 10_000,
        )
    if not found.server_addresses.strip(" ,"):
        raise ValueError("The nacos_client_config names no server (server_addresses)")
    return found


def _base_urls(config: NacosClientConfig) -> list[str]:
    """Each server's API root, e.g. ``http://127.0.0.1:8848/nacos``."""
    context = config.context_path.strip("/")
    urls = []
    for address in config.server_addresses.split(","):
        address = address.strip().rstrip("/")
        if not address:
            continue
        if "://" not in address:
            address = "http://" + address
        urls.append(f"{address}/{context}" if context else address)
    return urls


def _detail(response: httpx.Response) -> str:
    """Nacos's own words about a failure: its result's ``data`` or ``message``, else the
    start of the body."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict):
        detail = body.get("data") or body.get("message")
        if detail:
            return str(detail)[:300]
    return json.dumps(body)[:300]


def _result_data(response: httpx.Response, what: str) -> dict[str, Any]:
    """The ``data`` of a successful Nacos result.

    :raises A2AError: when the body is not such a result, or its ``data`` not an object.
    """
    try:
        body = response.json()
    except ValueError:
        raise A2AError(f"{what} is not JSON: {response.text[:200]!r}") from None
    if not isinstance(body, dict) or body.get("code", 0) != 0:
        raise A2AError(f"{what} is an error: {json.dumps(body)[:300]}")
    data = body.get("data")
    if not isinstance(data, dict):
        raise A2AError(f"{what} holds no agent card (data is {type(data).__name__})")
    return data
