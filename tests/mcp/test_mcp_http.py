"""HttpStatefulClient and HttpStatelessClient against real servers on 127.0.0.1.

Each test runs against a streamable-HTTP and an SSE server (the ``http_server`` fixture), on
asyncio and on trio.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.abc
import pytest

from agentscope_rt.exception import MCPError
from agentscope_rt.mcp import HttpStatefulClient, HttpStatelessClient
from agentscope_rt.message import ImageBlock
from agentscope_rt.tool import ToolResponse

from .conftest import HttpServer


def stateful(server: HttpServer, **kwargs: object) -> HttpStatefulClient:
    return HttpStatefulClient("web", server.client_transport, server.url, **kwargs)  # type: ignore[arg-type]


def stateless(server: HttpServer, **kwargs: object) -> HttpStatelessClient:
    return HttpStatelessClient("web", server.client_transport, server.url, **kwargs)  # type: ignore[arg-type]


async def test_stateful_list_call_image_and_error(http_server: HttpServer) -> None:
    async with stateful(http_server) as client:
        names = {t.name for t in await client.list_tools()}
        assert {"add", "image", "fail", "session_marker"} <= names
        add = await client.get_callable_function("add")
        assert add.json_schema["function"]["parameters"]["required"] == ["a", "b"]
        assert (await add(a=2, b=3)).get_text() == "5"  # type: ignore[union-attr]
        image = await (await client.get_callable_function("image"))()
        assert isinstance(image, ToolResponse)
        assert isinstance(image.content[1], ImageBlock)
        assert image.content[1].source.media_type == "image/png"  # type: ignore[union-attr]
        failed = await (await client.get_callable_function("fail"))(reason="quota")
        assert isinstance(failed, ToolResponse)
        assert failed.get_text().startswith("Error:")
        assert "quota" in failed.get_text()


async def test_stateful_keeps_one_session(http_server: HttpServer) -> None:
    async with stateful(http_server) as client:
        marker = await client.get_callable_function("session_marker")
        first = (await marker()).get_text()  # type: ignore[union-attr]
        second = (await marker()).get_text()  # type: ignore[union-attr]
        assert first == second


async def test_headers_reach_the_server(http_server: HttpServer) -> None:
    headers = {"X-Trace-Id": "trace-123"}
    async with stateful(http_server, headers=headers) as client:
        result = await client.call_tool("read_header", {"name": "X-Trace-Id"})
        assert result.content[0].text == "trace-123"  # type: ignore[union-attr]
    lone = stateless(http_server, headers=headers)
    result = await lone.call_tool("read_header", {"name": "X-Trace-Id"})
    assert result.content[0].text == "trace-123"  # type: ignore[union-attr]


async def test_stateless_opens_a_session_per_call(http_server: HttpServer) -> None:
    client = stateless(http_server)
    assert client.stateful is False
    names = {t.name for t in await client.list_tools()}
    assert "echo" in names
    marker = await client.get_callable_function("session_marker")
    markers = {(await marker()).get_text() for _ in range(3)}  # type: ignore[union-attr]
    assert len(markers) == 3
    echo = await client.get_callable_function("echo")
    assert (await echo(text="ping")).get_text() == "ping"  # type: ignore[union-attr]
    failed = await (await client.get_callable_function("fail"))(reason="stateless")
    assert failed.get_text().startswith("Error:")  # type: ignore[union-attr]


async def test_stateless_concurrent_calls(http_server: HttpServer) -> None:
    client = stateless(http_server)
    meet = await client.get_callable_function("meet")
    results: list[str] = []

    async def one() -> None:
        results.append((await meet(count=3)).get_text())  # type: ignore[union-attr]

    # Each call waits in the server until all three are in flight there (see demo_server.meet).
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(one)
    assert results == ["3"] * 3


async def test_cancel_mid_call_keeps_the_session(http_server: HttpServer) -> None:
    async with stateful(http_server) as client:
        sleep = await client.get_callable_function("sleep")
        with anyio.move_on_after(0.3) as scope:
            await sleep(seconds=30)
        assert scope.cancelled_caught
        assert (await client.call_tool("echo", {"text": "after"})).content[0].text == "after"  # type: ignore[union-attr]


async def test_execution_timeout(http_server: HttpServer) -> None:
    async with stateful(http_server) as client:
        sleep = await client.get_callable_function("sleep", execution_timeout=0.3)
        with (
            anyio.fail_after(10),
            pytest.raises(
                MCPError,
                match=r"^Timed out while waiting for response to ClientRequest\. "
                r"Waited 0\.3 seconds\.$",
            ),
        ):
            await sleep(seconds=30)
        assert (await client.call_tool("echo", {"text": "after"})).content[0].text == "after"  # type: ignore[union-attr]
    # Stateless: the limit covers the call once its session is open, and the session closes.
    lone = stateless(http_server)
    sleep = await lone.get_callable_function("sleep", execution_timeout=0.3)
    with anyio.fail_after(10), pytest.raises(MCPError, match=r"^Timed out .* Waited 0\.3 seconds"):
        await sleep(seconds=30)
    assert (await sleep(seconds=0)).get_text() == "slept 0.0"  # type: ignore[union-attr]


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_server_crash_mid_call(
    transport: str, fresh_http_server: Callable[[str], HttpServer]
) -> None:
    server = fresh_http_server(transport)
    async with stateful(server) as client:
        crash = await client.get_callable_function("crash")
        with anyio.fail_after(20):
            try:
                response = await crash()
            except MCPError as exc:
                assert "'web'" in str(exc)
            else:
                # A server may also answer with an error before the connection drops.
                assert isinstance(response, ToolResponse)
                assert response.get_text().startswith("Error:")
        with anyio.fail_after(20), pytest.raises(MCPError, match=r"'web'"):
            await client.call_tool("echo", {"text": "anyone?"})
    assert server.process.wait(timeout=5) == 3


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_stateless_server_crash_mid_call(
    transport: str, fresh_http_server: Callable[[str], HttpServer]
) -> None:
    server = fresh_http_server(transport)
    client = stateless(server)
    crash = await client.get_callable_function("crash")
    with anyio.fail_after(20), pytest.raises(MCPError, match=r"'web'"):
        await crash()
    with anyio.fail_after(20), pytest.raises(MCPError, match=r"could not connect"):
        await client.call_tool("echo", {"text": "anyone?"})


async def test_unreachable_server_is_a_clear_error() -> None:
    client = HttpStatefulClient("nowhere", "streamable_http", "http://127.0.0.1:9/mcp", timeout=2)
    with anyio.fail_after(20), pytest.raises(MCPError, match=r"could not connect.*'nowhere'"):
        await client.connect()
    lone = HttpStatelessClient("nowhere", "sse", "http://127.0.0.1:9/sse", timeout=2)
    with anyio.fail_after(20), pytest.raises(MCPError, match=r"could not connect.*'nowhere'"):
        await lone.list_tools()


async def test_connection_errors_hide_url_credentials_and_headers(
    http_server: HttpServer,
) -> None:
    # A wrong path: the server answers 404, and the HTTP error names the full URL.
    url = f"http://user:pw-SECRET@127.0.0.1:{http_server.port}/nothere?token=tok-SECRET"
    headers = {"Authorization": "Bearer hdr-SECRET"}
    transport = http_server.client_transport
    kept = HttpStatefulClient("web", transport, url, headers=headers)  # type: ignore[arg-type]
    lone = HttpStatelessClient("web", transport, url, headers=headers)  # type: ignore[arg-type]
    errors: list[BaseException] = []
    with anyio.fail_after(20):
        with pytest.raises(MCPError, match=r"could not connect") as caught:
            await kept.connect()
        errors.append(caught.value)
        with pytest.raises(MCPError, match=r"could not connect") as caught:
            await lone.call_tool("echo", {"text": "x"})
        errors.append(caught.value)
    for error in errors:
        assert f"127.0.0.1:{http_server.port}/nothere" in str(error)
        chain: BaseException | None = error
        while chain is not None:
            assert "SECRET" not in str(chain)
            chain = chain.__cause__


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
async def test_a_silent_server_cannot_hang_connecting(transport: str) -> None:
    # Accepts connections and reads requests but never answers (for SSE: never sends the
    # endpoint event), so only connect_timeout ends the wait.
    async def swallow(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            async for _ in stream:
                pass

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    url = f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}"
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, swallow)
        kept = HttpStatefulClient("mute", transport, url, connect_timeout=0.5)  # type: ignore[arg-type]
        lone = HttpStatelessClient("mute", transport, url, connect_timeout=0.5)  # type: ignore[arg-type]
        with anyio.fail_after(10):
            with pytest.raises(MCPError, match=r"'mute'.*handshake within 0\.5 s"):
                await kept.connect()
            with pytest.raises(MCPError, match=r"'mute'.*handshake within 0\.5 s"):
                await lone.list_tools()
        assert not kept.is_connected
        tg.cancel_scope.cancel()


def test_constructor_validation_and_secret_free_repr() -> None:
    with pytest.raises(ValueError, match=r"transport must be"):
        HttpStatefulClient("x", "websocket", "http://h/mcp")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"url"):
        HttpStatelessClient("x", "sse", "ftp://h/sse")
    with pytest.raises(ValueError, match=r"headers"):
        HttpStatefulClient("x", "sse", "http://h/sse", headers={"A": 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"timeout"):
        HttpStatelessClient("x", "sse", "http://h/sse", timeout=-1)
    client = HttpStatefulClient(
        "x",
        "streamable_http",
        "https://user:pw@h.example/mcp?token=abc",
        headers={"Authorization": "Bearer sk-secret"},
    )
    text = repr(client)
    assert "sk-secret" not in text
    assert "token=abc" not in text
    assert "pw" not in text
    assert "h.example/mcp" in text


async def test_a_cancelled_stateless_call_still_ends_its_session(
    fresh_http_server: Callable[[str], HttpServer],
) -> None:
    # A stateless call opens a session of its own and ends it with a DELETE when done; a
    # call cancelled meanwhile must still end it, or the server keeps it (30 minutes by
    # default), one more for every cancelled call.
    client = stateless(fresh_http_server("streamable-http"))
    count = await client.get_callable_function("open_sessions", wrap_tool_result=False)
    assert (await count()).structured_content == {"result": 1}  # type: ignore[union-attr]
    sleep = await client.get_callable_function("sleep", wrap_tool_result=False)
    for _ in range(2):
        with anyio.move_on_after(1) as scope:
            await sleep(seconds=30)
        assert scope.cancelled_caught
    assert (await count()).structured_content == {"result": 1}  # type: ignore[union-attr]
