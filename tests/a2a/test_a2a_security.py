"""A2AServer on a network: credentials (A2AAuth, and A2AAgent sending them to our server and to
a2a-sdk's), the refusal to serve beyond loopback without them, body size limits, and errors
that stay JSON-RPC errors (never HTTP 500, never a logged traceback) whatever the input."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest
from a2a.client import A2AClientError
from a2a.types import HTTPAuthSecurityScheme, SecurityScheme
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from agentscope_rt.a2a import A2AAgent, A2AAuth, A2AServer, WellKnownAgentCardResolver
from agentscope_rt.exception import A2AError
from agentscope_rt.message import Msg

from .test_a2a_server import Counter, _send, _serve

TIMEOUT_S = 30
TOKEN = "tok-5ecret-bearer-0000"
KEY = "key-5ecret-api-1111"


async def _signed(headers: Any) -> bool:
    return bool(headers.get("x-signature") == "signed-by-the-proxy")


def _auth() -> A2AAuth:
    custom = SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Signature"))
    return A2AAuth(
        bearer_tokens=[TOKEN, "another-token"],
        api_keys=[KEY],
        check=_signed,
        check_schemes={"signature": custom},
    )


@pytest.fixture
async def secured() -> AsyncIterator[str]:
    extended = {"name": "Counter", "url": "http://127.0.0.1:9/", "version": "2", "description": "x"}
    server = A2AServer(Counter("Counter"), auth=_auth(), extended_agent_card=extended)
    async for url in _serve(server):
        yield url


async def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        with anyio.fail_after(TIMEOUT_S):
            if isinstance(body, bytes):
                return await http.post(url, content=body, headers=headers)
            return await http.post(url, json=body, headers=headers)


_EXTENDED = {"jsonrpc": "2.0", "id": 3, "method": "GetExtendedAgentCard", "params": {}}
_EXTENDED_V03 = {"jsonrpc": "2.0", "id": 3, "method": "agent/getAuthenticatedExtendedCard"}


@pytest.mark.parametrize(
    "body",
    [
        _send("SendMessage", "hi"),
        _send("SendStreamingMessage", "hi"),
        _send("message/stream", "hi"),
        {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
        _EXTENDED,
        _EXTENDED_V03,
    ],
)
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"X-API-Key": "wrong"},
        {"X-Signature": "forged"},
    ],
)
async def test_every_rpc_without_valid_credentials_is_refused(
    secured: str, body: dict[str, Any], headers: dict[str, str]
) -> None:
    answer = await _post(secured, body, headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == 'Bearer realm="a2a"'
    assert answer.json()["error"]["code"] == -32600
    assert "needs credentials" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": f"Bearer {TOKEN}"},
        {"Authorization": "bearer another-token"},
        {"X-API-Key": KEY},
        {"x-api-key": KEY},
        {"X-Signature": "signed-by-the-proxy"},
    ],
)
async def test_any_accepted_credential_lets_a_request_in(
    secured: str, headers: dict[str, str]
) -> None:
    answer = await _post(secured, _send("SendMessage", "hi"), headers)
    assert answer.status_code == 200
    assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_the_public_card_is_open_and_declares_the_schemes(secured: str) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        card = (await http.get(secured + ".well-known/agent-card.json")).json()
    schemes = card["securitySchemes"]
    assert schemes["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert schemes["apiKey"]["apiKeySecurityScheme"] == {"location": "header", "name": "X-API-Key"}
    assert "signature" in schemes
    # Each scheme is enough on its own: one requirement per scheme (1.0), and 0.3's list.
    requirements = [set(r["schemes"]) for r in card["securityRequirements"]]
    assert requirements == [{"bearer"}, {"apiKey"}, {"signature"}]
    assert [set(r) for r in card["security"]] == requirements
    assert card["capabilities"]["extendedAgentCard"] is True
    assert TOKEN not in json.dumps(card) and KEY not in json.dumps(card)


@pytest.mark.parametrize("body", [_EXTENDED, _EXTENDED_V03])
async def test_the_extended_card_is_for_authenticated_clients(
    secured: str, body: dict[str, Any]
) -> None:
    answer = await _post(secured, body, {"Authorization": f"Bearer {TOKEN}"})
    card = answer.json()["result"]
    assert (card["name"], card["version"]) == ("Counter", "2")
    assert "bearer" in card["securitySchemes"]


async def test_without_an_extended_card_the_method_says_so() -> None:
    async for url in _serve(A2AServer(Counter("C"), auth=A2AAuth(api_keys=[KEY]))):
        answer = await _post(url, _EXTENDED, {"X-API-Key": KEY})
    assert answer.json()["error"]["code"] == -32007


def test_an_extended_card_needs_auth_and_auth_needs_a_credential() -> None:
    card = {"name": "x", "url": "http://127.0.0.1:9/", "version": "1", "description": "x"}
    with pytest.raises(ValueError, match="pass auth=A2AAuth"):
        A2AServer(Counter("C"), extended_agent_card=card)
    with pytest.raises(ValueError, match="accepts nothing"):
        A2AAuth()
    with pytest.raises(ValueError, match="empty string"):
        A2AAuth(bearer_tokens=[""])
    with pytest.raises(ValueError, match="not one string"):
        A2AAuth(api_keys="abc")
    with pytest.raises(TypeError, match="must be an A2AAuth"):
        A2AServer(Counter("C"), auth={"bearer": TOKEN})  # type: ignore[arg-type]


async def test_credentials_never_show_in_reprs_logs_or_state(
    secured: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth = _auth()
    card = await WellKnownAgentCardResolver(secured).get_agent_card()
    agent = A2AAgent(card, credentials={"bearer": TOKEN})
    with anyio.fail_after(TIMEOUT_S):
        reply = await agent(Msg("user", "hi", "user"))
        await _post(secured, _send("SendMessage", "x"), {"Authorization": f"Bearer {TOKEN}x"})
    assert reply.get_text_content() == "Counter #1"
    shown = [
        repr(auth),
        repr(A2AServer(Counter("C"), auth=auth)),
        repr(agent),
        repr(agent._credentials),
        json.dumps(agent.state_dict()),
        caplog.text,
    ]
    for text in shown:
        assert TOKEN not in text and KEY not in text
    assert "bearer_tokens=2" in repr(auth)


@pytest.mark.parametrize(
    ("credentials", "works"),
    [({"bearer": TOKEN}, True), ({"apiKey": KEY}, True), ({"bearer": "wrong"}, False), ({}, False)],
)
async def test_our_agent_sends_credentials_to_our_server(
    secured: str, credentials: dict[str, str], works: bool
) -> None:
    card = await WellKnownAgentCardResolver(secured).get_agent_card()
    agent = A2AAgent(card, credentials=credentials)
    with anyio.fail_after(TIMEOUT_S):
        if works:
            reply = await agent(Msg("user", "hi", "user"))
            assert reply.get_text_content() == "Counter #1"
            return
        with pytest.raises(A2AClientError, match="401"):
            await agent(Msg("user", "hi", "user"))


async def test_our_agent_sends_credentials_to_the_sdk_server(sdk_secured_url: str) -> None:
    card = await WellKnownAgentCardResolver(sdk_secured_url).get_agent_card()
    assert "bearer" in card.security_schemes
    with anyio.fail_after(TIMEOUT_S):
        with pytest.raises(A2AClientError, match="401"):
            await A2AAgent(card)(Msg("user", "hi", "user"))
        reply = await A2AAgent(card, credentials={"bearer": "sdk-token"})(Msg("user", "hi", "user"))
    assert reply.get_text_content() == "sdk echo: hi"


def test_credentials_must_be_strings_by_scheme() -> None:
    card = {"name": "x", "url": "http://127.0.0.1:9/", "version": "1", "description": "x"}
    with pytest.raises(TypeError, match="security scheme"):
        A2AAgent(card, credentials={"bearer": 42})  # type: ignore[dict-item]


async def test_serving_beyond_loopback_needs_auth_or_an_explicit_opt_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(A2AError, match=r"refuses to serve '0\.0\.0\.0' without authentication"):
        await A2AServer(Counter("C")).serve("0.0.0.0", 0)
    with anyio.fail_after(TIMEOUT_S):
        async with anyio.create_task_group() as group:
            url = await group.start(A2AServer(Counter("C"), auth=_auth()).serve, "0.0.0.0", 0)
            assert url.startswith("http://0.0.0.0:")
            opted = await group.start(
                lambda task_status: A2AServer(Counter("C")).serve(
                    "0.0.0.0", 0, allow_unauthenticated=True, task_status=task_status
                )
            )
            port = opted.rsplit(":", 1)[1]
            answer = await _post(f"http://127.0.0.1:{port}", _send("SendMessage", "hi"))
            assert answer.status_code == 200
            group.cancel_scope.cancel()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("without authentication" in r.getMessage() for r in warnings)


# -- size limits -------------------------------------------------------------------------------


async def _raw_exchange(url: str, head: bytes, body: bytes) -> bytes:
    """Send *head* and *body* on a raw connection and read the answer's status line and
    headers (the server answers before it has the whole body it was promised)."""
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    with anyio.fail_after(TIMEOUT_S):
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(head + body)
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive()
    return answer


@pytest.fixture
async def small() -> AsyncIterator[str]:
    async for url in _serve(A2AServer(Counter("Counter"), max_body_bytes=4096)):
        yield url


async def test_a_declared_body_over_the_limit_is_refused_before_it_is_read(url: str) -> None:
    # 300 MiB promised, a few bytes sent: the answer comes without waiting for the rest.
    head = (
        b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 314572800\r\n\r\n"
    )
    answer = await _raw_exchange(url, head, b'{"jsonrpc": "2.0", "id": "')
    assert answer.startswith(b"HTTP/1.1 413")


async def test_a_chunked_body_over_the_limit_is_refused_when_it_passes_it(small: str) -> None:
    head = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"x" * 3000
    body = b"%x\r\n%s\r\n" % (len(chunk), chunk) * 2
    answer = await _raw_exchange(small, head, body)
    assert answer.startswith(b"HTTP/1.1 413")


async def test_a_body_within_the_limit_is_served(small: str) -> None:
    body = _send("SendMessage", "x" * 3500)
    answer = await _post(small, body)
    assert answer.status_code == 200 and "result" in answer.json()
    refused = await _post(small, _send("SendMessage", "x" * 4096))
    assert refused.status_code == 413
    assert "max_body_bytes" in refused.json()["error"]["message"]


async def test_long_ids_are_cut_short_in_errors(url: str) -> None:
    long_id = "z" * 1_000_000
    get = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": long_id}}
    answer = (await _post(url, get)).json()
    message = answer["error"]["message"]
    assert answer["error"]["code"] == -32001
    assert len(message) < 300 and "1000002 characters" in message
    method = (await _post(url, {"jsonrpc": "2.0", "id": 1, "method": long_id})).json()
    assert method["error"]["code"] == -32601 and len(method["error"]["message"]) < 300
    # A request id too long to echo back is refused instead.
    request = (await _post(url, {"jsonrpc": "2.0", "id": long_id, "method": "GetTask"})).json()
    assert (request["id"], request["error"]["code"]) == (None, -32600)


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async for address in _serve(A2AServer(Counter("Counter"))):
        yield address


# -- errors, never 500 ---------------------------------------------------------------------------


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def _v03_file_part(data: str) -> dict[str, Any]:
    body = _send("message/send", "x")
    body["params"]["message"]["parts"] = [
        {"kind": "file", "file": {"bytes": data, "mimeType": "image/png"}}
    ]
    return body


def _with_metadata(method: str, metadata: Any) -> dict[str, Any]:
    body = _send(method, "x")
    body["params"]["message"]["metadata"] = metadata
    return body


def _v10_parts(parts: Any) -> dict[str, Any]:
    body = _send("SendMessage", "x")
    body["params"]["message"]["parts"] = parts
    return body


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"[" * 100_000, -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "\xff"}}', -32700),
        (_with_metadata("SendMessage", _nested(500)), -32602),
        (_with_metadata("message/send", _nested(500)), -32602),
        (_with_metadata("SendMessage", _nested(80)), -32602),
        (_v03_file_part("!!!not base64"), -32602),
        (_v10_parts([{}]), -32602),
        (_v10_parts([{"url": 5}]), -32602),
        ({"jsonrpc": "2.0", "id": [1], "method": "GetTask"}, -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"historyLength": []}}, -32602),
    ],
)
async def test_bad_input_is_a_json_rpc_error_without_a_traceback(
    url: str, body: Any, code: int, caplog: pytest.LogCaptureFixture
) -> None:
    answer = await _post(url, json.dumps(body).encode() if isinstance(body, dict) else body)
    assert answer.status_code == 200
    assert answer.json()["error"]["code"] == code
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


# -- fuzzing the JSON-RPC shapes ---------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
# Mostly the right shapes with wrong values in them: that is where the converters are reached.
_value = st.text(max_size=12) | _json
_part = st.fixed_dictionaries(
    {},
    optional={
        "text": _value,
        "raw": _value,
        "url": _value,
        "data": _json,
        "kind": st.sampled_from(["text", "file", "data", "x"]),
        "file": st.fixed_dictionaries(
            {}, optional={"bytes": _value, "uri": _value, "mimeType": _value, "name": _value}
        ),
        "mediaType": _value,
        "filename": _value,
        "metadata": _json,
    },
)
_message = st.fixed_dictionaries(
    {"parts": st.lists(_part, min_size=1, max_size=3)},
    optional={
        "messageId": _value,
        "role": st.sampled_from(["ROLE_USER", "ROLE_AGENT", "ROLE_UNSPECIFIED", "user", "agent"]),
        "kind": st.just("message"),
        "taskId": _value,
        "contextId": _value,
        "metadata": _json,
        "referenceTaskIds": _json,
        "extensions": _json,
    },
)
_params = st.fixed_dictionaries(
    {},
    optional={
        "message": _message,
        "id": _value,
        "historyLength": _json,
        "configuration": st.fixed_dictionaries(
            {}, optional={"returnImmediately": _json, "historyLength": _json, "blocking": _json}
        ),
        "metadata": _json,
    },
)
_METHODS = [
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "CancelTask",
    "SubscribeToTask",
    "GetExtendedAgentCard",
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
    "agent/getAuthenticatedExtendedCard",
]
_requests = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "method": st.sampled_from(_METHODS), "params": _params},
    optional={"id": _json},
)


@pytest.fixture(scope="module", params=["asyncio", "trio"])
def app_client(request: pytest.FixtureRequest) -> Iterator[TestClient]:
    server = A2AServer(Counter("Counter"), max_body_bytes=1 << 16)
    with TestClient(server.app, backend=request.param) as client:
        yield client


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=_requests)
def test_no_json_rpc_shape_gets_a_500_or_a_logged_traceback(
    app_client: TestClient, body: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.clear()
    answer = app_client.post("/", content=json.dumps(body))
    assert answer.status_code == 200, answer.text
    if answer.headers["content-type"].startswith("text/event-stream"):
        # A stream (the served agent answers at once, so it ends): every event is an answer.
        events = [line for line in answer.text.splitlines() if line.startswith("data: ")]
        assert events and all('"result"' in line for line in events)
    else:
        assert "result" in answer.json() or "error" in answer.json()
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_a_check_that_raises_refuses_and_logs_no_credential(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(headers: Any) -> bool:
        raise ValueError(f"cannot verify {headers.get('authorization')}")

    async for url in _serve(A2AServer(Counter("C"), auth=A2AAuth(check=broken))):
        answer = await _post(url, _send("SendMessage", "hi"), {"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 401
    assert "A2AAuth's check raised ValueError" in caplog.text
    assert TOKEN not in caplog.text
