"""Credentials never reach a log record: not in the records of the package, nor in those of the
libraries it drives (``httpx2`` and ``httpx`` log every request URL at INFO, ``httpcore2`` and
the ``mcp`` SDK's transports log URLs, headers and messages at DEBUG).

Every logger is turned up to DEBUG and a handler on the root logger keeps every record; the
clients connect with a URL holding ``user:pass@`` and a ``?token=`` query to real servers on
127.0.0.1 (the bearer-protected ``servers/auth_server.py`` and the demo server, which echoes
request headers), stateless and stateful, over streamable HTTP and SSE, on asyncio and trio.
"""

from __future__ import annotations

import base64
import logging
import sys
from collections.abc import Iterator

import httpx
import pytest

from agentscope_rt._provider import SecretRedactingFilter, install_library_log_redaction
from agentscope_rt.mcp import HttpStatefulClient, HttpStatelessClient

from .conftest import HttpServer
from .test_mcp_auth import CLIENT_SECRET, RefreshingBearerAuth

USER = "alice-7Qx"
PASSWORD = "pa55-Zk93-word"
QUERY_TOKEN = "s3cret-Tq81-query"
HEADER_KEY = "hdr-key-4410-value"
BASIC = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


class Capture(logging.Handler):
    """Keeps every record, and each as the application's handlers would print it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        # Formatted now: the message with its arguments, the traceback, the stack, and the
        # raw message and arguments too (a structured handler would ship those).
        self.texts.append(
            f"{self.format(record)}\n{record.msg!s}\n{record.args!r}\n{record.exc_text or ''}"
        )

    def names(self) -> set[str]:
        return {record.name for record in self.records}


@pytest.fixture
def every_logger_at_debug() -> Iterator[Capture]:
    """Every existing logger and the root at DEBUG, a capturing handler on the root; the
    levels are restored afterwards."""
    manager = logging.Logger.manager
    saved = {
        name: logger.level
        for name, logger in manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    root_level = logging.root.level
    capture = Capture()
    capture.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    for name in saved:
        logging.getLogger(name).setLevel(logging.DEBUG)
    logging.root.setLevel(logging.DEBUG)
    logging.root.addHandler(capture)
    try:
        yield capture
    finally:
        logging.root.removeHandler(capture)
        logging.root.setLevel(root_level)
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def secret_url(server: HttpServer) -> str:
    host = server.url.removeprefix("http://")
    return f"http://{USER}:{PASSWORD}@{host}?token={QUERY_TOKEN}&page=2"


def assert_clean(capture: Capture, *secrets: str) -> None:
    for text in capture.texts:
        for secret in secrets:
            assert secret not in text, f"a log record holds a secret: {text[:500]!r}"


async def test_url_and_bearer_credentials_never_reach_a_log_record(
    auth_server: HttpServer, every_logger_at_debug: Capture
) -> None:
    """URL user info and query token, the bearer token the auth flow fetched and the client
    secret it posted: none of them in any record of any logger, for both clients."""
    capture = every_logger_at_debug
    auth = RefreshingBearerAuth(f"{auth_server.base_url}/token")
    transport = auth_server.client_transport
    url = secret_url(auth_server)
    lone = HttpStatelessClient("guarded", transport, url, auth=auth)
    assert (await lone.call_tool("whoami")).content[0].text == "agent"  # type: ignore[union-attr]
    async with HttpStatefulClient("guarded", transport, url, auth=auth) as kept:
        result = await kept.call_tool("echo", {"text": "hello"})
        assert result.content[0].text == "hello"  # type: ignore[union-attr]
    assert auth.token
    # The libraries did log the requests: the check below is not vacuous.
    assert "httpx2" in capture.names()
    assert any("token=***" in text for text in capture.texts)
    assert_clean(capture, PASSWORD, QUERY_TOKEN, auth.token, CLIENT_SECRET, BASIC)


async def test_url_user_info_is_sent_as_basic_auth_without_logging_it(
    http_server: HttpServer, every_logger_at_debug: Capture
) -> None:
    """Without auth=, the URL's user info reaches the server as basic auth (as httpx sends
    it), and neither it nor the query token nor a header value appears in a record, even
    where the server's answer (the echoed header) is logged by the SDK at DEBUG."""
    capture = every_logger_at_debug
    transport = http_server.client_transport
    url = secret_url(http_server)
    headers = {"X-Api-Key": HEADER_KEY}
    lone = HttpStatelessClient("web", transport, url, headers=headers)
    result = await lone.call_tool("read_header", {"name": "Authorization"})
    assert result.content[0].text == f"Basic {BASIC}"  # type: ignore[union-attr]
    async with HttpStatefulClient("web", transport, url, headers=headers) as kept:
        result = await kept.call_tool("read_header", {"name": "X-Api-Key"})
        assert result.content[0].text == HEADER_KEY  # type: ignore[union-attr]
        result = await kept.call_tool("read_header", {"name": "Authorization"})
        assert result.content[0].text == f"Basic {BASIC}"  # type: ignore[union-attr]
    assert {"httpx2", f"mcp.client.{'sse' if transport == 'sse' else 'streamable_http'}"} <= (
        capture.names()
    )
    assert_clean(capture, PASSWORD, QUERY_TOKEN, BASIC, HEADER_KEY)
    assert USER not in repr(lone) + repr(kept)


async def test_plain_httpx_requests_are_redacted_too(
    http_server: HttpServer, every_logger_at_debug: Capture
) -> None:
    """httpx (which AgentScope's SDK 1.x used, and auth flows may import) logs at INFO under
    its own logger; it gets the same filter once an MCP client exists."""
    capture = every_logger_at_debug
    HttpStatelessClient("web", http_server.client_transport, http_server.url)
    url = f"http://{USER}:{PASSWORD}@127.0.0.1:{http_server.port}/?api_key={QUERY_TOKEN}"
    async with httpx.AsyncClient() as client:
        await client.get(url)
    assert "httpx" in capture.names()
    assert_clean(capture, PASSWORD, QUERY_TOKEN, BASIC)


def test_filter_redacts_exceptions_arguments_and_malformed_records() -> None:
    """Exceptions (the SDK logs with logger.exception), %-arguments, header shapes and a
    record whose arguments do not fit its message."""
    filt = SecretRedactingFilter()
    owner = HttpStatelessClient("x", "streamable_http", "http://127.0.0.1:1/mcp")
    filt.remember(owner, [(HEADER_KEY, "***")])

    def record(msg: str, args: tuple[object, ...], exc: bool = False) -> logging.LogRecord:
        exc_info = None
        if exc:
            try:
                raise ValueError(f"refused http://{USER}:{PASSWORD}@h/x?sig={QUERY_TOKEN}")
            except ValueError:
                exc_info = sys.exc_info()
        return logging.LogRecord("mcp.client.sse", logging.ERROR, __file__, 1, msg, args, exc_info)

    cases = [
        record("Error in post_writer", (), exc=True),
        record("HTTP Request: %s %s", ("GET", f"http://{USER}:{PASSWORD}@h/?token={QUERY_TOKEN}")),
        record("headers %r", ({"authorization": f"Basic {BASIC}", "x-api-key": HEADER_KEY},)),
        record("response headers %s", ([(b"Authorization", f"Bearer {QUERY_TOKEN}".encode())],)),
        record("client_secret=%s&password=%s", (CLIENT_SECRET, PASSWORD)),
        record('{"access_token": "%s"}', (QUERY_TOKEN,)),
        record("two args %s %s", (f"http://{USER}:{PASSWORD}@h/",)),
    ]
    formatter = logging.Formatter()
    for case in cases:
        assert filt.filter(case) is True
        text = f"{formatter.format(case)} {case.msg} {case.args!r}"
        for secret in (PASSWORD, QUERY_TOKEN, BASIC, HEADER_KEY, CLIENT_SECRET):
            assert secret not in text, text
    # Records without a secret keep their arguments for structured handlers.
    plain = record("listed %d tools", (3,))
    filt.filter(plain)
    assert plain.args == (3,) and plain.getMessage() == "listed 3 tools"
    # Readable text survives: the host, the path and the parameter names.
    url_case = record("GET %s", (f"http://{USER}:{PASSWORD}@example.org:8/mcp?token=x&page=2",))
    filt.filter(url_case)
    assert url_case.getMessage() == "GET http://***@example.org:8/mcp?token=***&page=***"


def test_filter_is_on_every_library_logger_once() -> None:
    """Installed on the libraries' loggers, idempotently, including one registered later."""
    late = logging.getLogger("mcp.client.some_later_module")
    first = install_library_log_redaction()
    install_library_log_redaction()
    for name in ("httpx", "httpx2", "httpcore2.http11", "mcp.client.sse", "client", late.name):
        assert logging.getLogger(name).filters.count(first) == 1, name
