"""StdIOStatefulClient against a real MCP server subprocess."""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import anyio
import mcp.types
import pytest

from agentscope_rt.exception import FunctionNotFoundError, MCPError
from agentscope_rt.mcp import MCPToolFunction, StdIOStatefulClient
from agentscope_rt.message import AudioBlock, Base64Source, ImageBlock, TextBlock
from agentscope_rt.tool import ToolResponse

from .helpers import process_alive, stdio_client


async def test_list_tools_and_schema(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    tools = await client.list_tools()
    names = {t.name for t in tools}
    assert {"add", "echo", "image", "fail", "crash", "sleep"} <= names
    add = await client.get_callable_function("add")
    assert isinstance(add, MCPToolFunction)
    assert add.name == "add"
    assert add.description.startswith("Add two integers.")
    schema = add.json_schema
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "add"
    params = schema["function"]["parameters"]
    assert params["type"] == "object"
    assert params["properties"]["a"]["type"] == "integer"
    assert sorted(params["required"]) == ["a", "b"]
    # A tool without parameters still gets a complete object schema.
    pid = await client.get_callable_function("pid")
    assert pid.json_schema["function"]["parameters"]["required"] == []


async def test_call_text_and_structured_result(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    add = await client.get_callable_function("add")
    response = await add(a=20, b=22)
    assert isinstance(response, ToolResponse)
    assert response.get_text() == "42"
    assert response.metadata == {"structured_content": {"result": 42}}
    echo = await client.get_callable_function("echo", wrap_tool_result=False)
    raw = await echo(text="hi", repeat=3)
    assert isinstance(raw, mcp.types.CallToolResult)
    assert raw.content[0].text == "hi hi hi"  # type: ignore[union-attr]


async def test_image_audio_and_resource_results(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    image = await (await client.get_callable_function("image"))()
    assert isinstance(image, ToolResponse)
    caption, picture = image.content
    assert caption == TextBlock(text="a 1x1 pixel")
    assert isinstance(picture, ImageBlock)
    assert isinstance(picture.source, Base64Source)
    assert picture.source.media_type == "image/png"
    assert base64.b64decode(picture.source.data).startswith(b"\x89PNG")

    audio = await (await client.get_callable_function("audio"))()
    assert isinstance(audio, ToolResponse)
    (clip,) = audio.content
    assert isinstance(clip, AudioBlock)
    assert clip.source == Base64Source(
        media_type="audio/wav", data=base64.b64encode(b"RIFF\x00\x00\x00\x00WAVE").decode()
    )

    resources = await (await client.get_callable_function("resources"))()
    assert isinstance(resources, ToolResponse)
    text, blob, link = resources.content
    assert isinstance(text, TextBlock)
    assert "file:///notes.txt" in text.text
    assert "remember the milk" in text.text
    assert isinstance(blob, ImageBlock)
    assert blob.source.media_type == "image/png"  # type: ignore[union-attr]
    assert isinstance(link, TextBlock)
    assert "https://example.org/report.pdf" in link.text
    assert "the quarterly report" in link.text


async def test_tool_error_is_a_readable_response(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    fail = await client.get_callable_function("fail")
    response = await fail(reason="no budget")
    assert isinstance(response, ToolResponse)
    text = response.get_text()
    assert text.startswith("Error:")
    assert "'fail'" in text
    assert "no budget" in text
    assert response.metadata == {"is_error": True}
    # The session survives a tool error.
    add = await client.get_callable_function("add")
    assert (await add(a=1, b=1)).get_text() == "2"  # type: ignore[union-attr]


async def test_invalid_arguments_are_reported_by_the_server(
    shared_stdio: StdIOStatefulClient,
) -> None:
    client = shared_stdio
    add = await client.get_callable_function("add")
    response = await add(a="many")
    assert isinstance(response, ToolResponse)
    assert response.get_text().startswith("Error:")
    assert "validation error" in response.get_text()


async def test_unknown_tool_name(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    with pytest.raises(FunctionNotFoundError, match=r"no tool named 'nope'.*add"):
        await client.get_callable_function("nope")


async def test_session_state_is_kept_across_calls(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    increment = await client.get_callable_function("increment")
    values = [int((await increment()).get_text()) for _ in range(3)]  # type: ignore[union-attr]
    # Other tests share this session: the counter keeps growing, one step per call.
    assert values == [values[0], values[0] + 1, values[0] + 2]


async def test_concurrent_calls_share_the_session(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    meet = await client.get_callable_function("meet")
    results: list[str] = []

    async def one(i: int) -> None:
        response = await meet(count=4)
        results.append(response.get_text())  # type: ignore[union-attr]

    # Each call waits in the server until all four are in flight there: four calls that
    # overlap each return 4; calls made one at a time would each see only itself.
    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(one, i)
    assert results == ["4"] * 4


async def test_server_crash_mid_call_is_a_clear_error() -> None:
    async with stdio_client() as client:
        pid = int((await (await client.get_callable_function("pid"))()).get_text())  # type: ignore[union-attr]
        crash = await client.get_callable_function("crash")
        with anyio.fail_after(15), pytest.raises(MCPError, match=r"lost the connection.*'crash'"):
            await crash()
        # Later calls fail fast with the same clear error instead of hanging.
        with anyio.fail_after(15), pytest.raises(MCPError, match=r"lost the connection"):
            await client.call_tool("add", {"a": 1, "b": 2})
    assert not process_alive(pid)


async def test_close_ends_the_server_process() -> None:
    client = stdio_client()
    await client.connect()
    assert client.is_connected
    pid = int((await (await client.get_callable_function("pid"))()).get_text())  # type: ignore[union-attr]
    assert process_alive(pid)
    await client.close()
    assert not client.is_connected
    assert not process_alive(pid)
    # A closed client can connect again, to a new process.
    async with client:
        new_pid = int((await client.call_tool("pid")).content[0].text)
        assert new_pid != pid


async def test_cancel_mid_call_leaves_no_process() -> None:
    pids: list[int] = []
    with anyio.move_on_after(10) as outer:
        async with stdio_client() as client:
            pids.append(int((await client.call_tool("pid")).content[0].text))  # type: ignore[union-attr]
            sleep = await client.get_callable_function("sleep")
            with anyio.move_on_after(0.3) as inner:
                await sleep(seconds=30)
            assert inner.cancelled_caught
            # The session is still usable after a cancelled call.
            assert (await client.call_tool("echo", {"text": "ok"})).content[0].text == "ok"  # type: ignore[union-attr]
            outer.cancel()
            await sleep(seconds=30)
    assert outer.cancelled_caught
    assert not process_alive(pids[0])


async def test_execution_timeout(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
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
    assert (await client.call_tool("echo", {"text": "still here"})).content[0].text == (  # type: ignore[union-attr]
        "still here"
    )


async def test_bad_command_is_a_clear_error() -> None:
    client = StdIOStatefulClient("ghost", "/nonexistent/mcp-server-binary")
    with pytest.raises(MCPError, match=r"could not connect to MCP server 'ghost'"):
        await client.connect()
    assert not client.is_connected


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[TextIO]:
    with open(tmp_path / "stderr.txt", "w+") as file:
        yield file


async def test_handshake_timeout_kills_the_silent_process(errlog: TextIO) -> None:
    # A process that never speaks MCP: the handshake times out and the process is killed.
    script = "import os, sys, time; print(os.getpid(), file=sys.stderr, flush=True); time.sleep(60)"
    client = StdIOStatefulClient(
        "silent", sys.executable, ["-c", script], connect_timeout=0.5, errlog=errlog
    )
    with anyio.fail_after(15), pytest.raises(MCPError, match=r"handshake within 0\.5 s"):
        await client.connect()
    errlog.seek(0)
    pid = int(errlog.read().strip())
    assert not process_alive(pid)


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match=r"non-empty command"):
        StdIOStatefulClient("x", "")
    with pytest.raises(ValueError, match=r"args"):
        StdIOStatefulClient("x", "python", args="-V")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"env"):
        StdIOStatefulClient("x", "python", env={"A": 1})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"cwd"):
        StdIOStatefulClient("x", "python", cwd="/definitely/not/here")
    with pytest.raises(ValueError, match=r"connect_timeout"):
        StdIOStatefulClient("x", "python", connect_timeout=0)
    with pytest.raises(ValueError, match=r"name"):
        StdIOStatefulClient("", "python")


def test_repr_hides_the_environment() -> None:
    client = StdIOStatefulClient("x", "python", env={"API_KEY": "sk-secret-value"})
    assert "sk-secret-value" not in repr(client)
    assert "x" in repr(client)
