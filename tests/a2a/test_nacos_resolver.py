"""NacosAgentCardResolver against a local HTTP server speaking Nacos 3's API: the login, the
admin A2A card route (namespace, version), an unknown agent, a malformed card, a down server."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from agentscope_rt.a2a import A2AAgent, NacosAgentCardResolver, NacosClientConfig
from agentscope_rt.exception import A2AError
from tests._local_http import LocalHTTPServer, QuietHandler, send_body, send_json
from tests._servers import free_port

PASSWORD = "nacos-secret-pw"
TOKEN = "nacos-token-123"


def _card(name: str, version: str, url: str) -> dict[str, Any]:
    # Nacos's AgentCardDetailInfo: protocol 0.3's JSON plus registrationType.
    return {
        "protocolVersion": "0.3.0",
        "name": name,
        "description": f"{name} {version}",
        "version": version,
        "url": url,
        "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": True},
        "skills": [{"id": "chat", "name": "chat", "description": "chat", "tags": []}],
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "iconUrl": None,
        "registrationType": "URL",
    }


# (namespace, agent) -> {version: card}; the last version is the latest.
REGISTRY: dict[tuple[str, str], dict[str, Any]] = {
    ("public", "weather"): {
        "1.0.0": _card("weather", "1.0.0", "http://127.0.0.1:9001/"),
        "1.1.0": _card("weather", "1.1.0", "http://127.0.0.1:9002/"),
    },
    ("team-a", "weather"): {"2.0.0": _card("weather", "2.0.0", "http://127.0.0.1:9003/")},
    # Published without any URL to reach the agent.
    ("public", "broken"): {"1.0.0": {"name": "broken", "version": "1.0.0", "skills": []}},
}


class _Nacos(QuietHandler):
    requests: list[tuple[str, str, dict[str, str], dict[str, str]]] = []  # noqa: RUF012
    lock = threading.Lock()

    def _record(self, body: str = "") -> tuple[str, dict[str, str]]:
        parsed = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        with self.lock:
            self.requests.append((self.command, parsed.path, query, dict(self.headers)))
        return parsed.path, {**query, **dict(urllib.parse.parse_qsl(body))}

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", 0))
        path, form = self._record(self.rfile.read(length).decode())
        if path != "/nacos/v3/auth/user/login":
            send_json(self, 404, {"code": 404, "message": "no route"})
        elif form.get("username") == "nacos" and form.get("password") == PASSWORD:
            send_json(self, 200, {"accessToken": TOKEN, "tokenTtl": 18000, "globalAdmin": True})
        else:
            send_body(self, 403, b"user not found!", "text/plain")

    def do_GET(self) -> None:
        path, query = self._record()
        if path != "/nacos/v3/admin/ai/a2a":
            send_json(self, 404, {"code": 404, "message": "no route"})
            return
        if self.headers.get("accessToken") != TOKEN:
            send_body(self, 403, b"authorization failed!", "text/plain")
            return
        if query.get("agentName") == "garbled":
            send_body(self, 200, b"<html>proxy error</html>", "text/html")
            return
        versions = REGISTRY.get((query.get("namespaceId", ""), query.get("agentName", "")))
        version = query.get("version") or (list(versions)[-1] if versions else "")
        if not versions or version not in versions:
            send_json(self, 404, {"code": 20004, "message": "resource not found",
                                  "data": f"Agent {query.get('agentName')} not found"})  # fmt: skip
            return
        send_json(self, 200, {"code": 0, "message": "success", "data": versions[version]})


@pytest.fixture
def nacos() -> Iterator[str]:
    _Nacos.requests = []
    with LocalHTTPServer(_Nacos) as server:
        yield server.url.removeprefix("http://")


def _config(address: str, **kwargs: Any) -> NacosClientConfig:
    return NacosClientConfig(address, username="nacos", password=PASSWORD, **kwargs)


async def test_the_latest_card_or_a_version_of_a_namespace(nacos: str) -> None:
    latest = await NacosAgentCardResolver("weather", _config(nacos)).get_agent_card()
    assert (latest.name, latest.version) == ("weather", "1.1.0")
    assert latest.supported_interfaces[0].url == "http://127.0.0.1:9002/"
    assert latest.supported_interfaces[0].protocol_version == "0.3.0"
    older = await NacosAgentCardResolver("weather", _config(nacos), "1.0.0").get_agent_card()
    assert older.supported_interfaces[0].url == "http://127.0.0.1:9001/"
    team = NacosAgentCardResolver("weather", _config(nacos, namespace_id="team-a"))
    card = await team.get_agent_card()
    assert card.version == "2.0.0"
    # The card makes an agent, as any resolver's does.
    assert A2AAgent(card).name == "weather"
    logins = [r for r in _Nacos.requests if r[0] == "POST"]
    gets = [r for r in _Nacos.requests if r[0] == "GET"]
    assert len(logins) == len(gets) == 3
    assert [g[2] for g in gets] == [
        {"namespaceId": "public", "agentName": "weather"},
        {"namespaceId": "public", "agentName": "weather", "version": "1.0.0"},
        {"namespaceId": "team-a", "agentName": "weather"},
    ]
    assert all(g[3]["accessToken"] == TOKEN for g in gets)


async def test_an_sdk_style_config_and_a_dict_are_read(nacos: str) -> None:
    # nacos-sdk-python's ClientConfig keeps the servers in server_list.
    sdk = SimpleNamespace(
        server_list=[f"127.0.0.1:{free_port()}", nacos],
        namespace_id="",
        context_path="",
        username="nacos",
        password=PASSWORD,
        timeout_ms=5000,
    )
    card = await NacosAgentCardResolver("weather", sdk).get_agent_card()
    assert card.version == "1.1.0"  # the first server is down: the second answered
    plain = {"server_addresses": f"http://{nacos}", "username": "nacos", "password": PASSWORD}
    assert (await NacosAgentCardResolver("weather", plain).get_agent_card()).version == "1.1.0"


async def test_without_login_the_token_is_missing_and_nacos_refuses(nacos: str) -> None:
    resolver = NacosAgentCardResolver("weather", NacosClientConfig(nacos))
    with pytest.raises(A2AError, match=r"HTTP 403.*authorization failed"):
        await resolver.get_agent_card()
    assert not [r for r in _Nacos.requests if r[0] == "POST"]


async def test_a_refused_login_never_shows_the_password(nacos: str) -> None:
    config = NacosClientConfig(nacos, username="nacos", password="wrong-" + PASSWORD)
    resolver = NacosAgentCardResolver("weather", config)
    with pytest.raises(A2AError, match=r"refused the login of user 'nacos' \(HTTP 403\)") as err:
        await resolver.get_agent_card()
    assert PASSWORD not in str(err.value)
    assert PASSWORD not in repr(resolver) and PASSWORD not in repr(config)


async def test_an_unknown_agent_or_version_is_a_clear_error(nacos: str) -> None:
    with pytest.raises(A2AError, match=r"'nobody' is not registered in namespace 'public'"):
        await NacosAgentCardResolver("nobody", _config(nacos)).get_agent_card()
    with pytest.raises(A2AError, match=r"version '9.9' is not registered.*Agent weather not"):
        await NacosAgentCardResolver("weather", _config(nacos), "9.9").get_agent_card()


async def test_a_malformed_card_is_a_clear_error(nacos: str) -> None:
    with pytest.raises(A2AError, match=r"'broken' from .* not a valid A2A agent card.*no URL"):
        await NacosAgentCardResolver("broken", _config(nacos)).get_agent_card()
    with pytest.raises(A2AError, match=r"answer for agent card 'garbled' is not JSON"):
        await NacosAgentCardResolver("garbled", _config(nacos)).get_agent_card()


async def test_no_server_answering_and_bad_arguments() -> None:
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(A2AError, match=r"no Nacos server answered .*ConnectError"):
        await NacosAgentCardResolver("weather", NacosClientConfig(address)).get_agent_card()
    with pytest.raises(ValueError, match="remote_agent_name cannot be empty"):
        NacosAgentCardResolver("", NacosClientConfig(address))
    with pytest.raises(ValueError, match="nacos_client_config cannot be None"):
        NacosAgentCardResolver("weather", None)
    with pytest.raises(ValueError, match="names no server"):
        NacosAgentCardResolver("weather", NacosClientConfig(" , "))
