"""Real MCP clients registered into a Toolkit and called through ToolUseBlocks."""

from __future__ import annotations

import anyio
import pytest

from agentscope_rt.mcp import HttpStatefulClient, HttpStatelessClient, StdIOStatefulClient
from agentscope_rt.message import ImageBlock, TextBlock, ToolUseBlock
from agentscope_rt.tool import Toolkit, ToolResponse

from .conftest import HttpServer
from .helpers import stdio_client


async def call(toolkit: Toolkit, name: str, **kwargs: object) -> list[ToolResponse]:
    block = ToolUseBlock(id=f"call-{name}", name=name, input=dict(kwargs))
    return [chunk async for chunk in toolkit.call_tool_function(block)]


async def test_enable_funcs_registers_only_those(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    toolkit = Toolkit()
    await toolkit.register_mcp_client(client, enable_funcs=["add", "image"])
    names = {s["function"]["name"] for s in toolkit.get_json_schemas()}
    assert names == {"add", "image"}
    (response,) = await call(toolkit, "add", a=40, b=2)
    assert response.get_text() == "42"
    (picture,) = await call(toolkit, "image")
    assert isinstance(picture.content[1], ImageBlock)
    (missing,) = await call(toolkit, "echo", text="x")
    assert "FunctionNotFoundError" in missing.get_text()


async def test_disable_funcs_and_groups(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    toolkit = Toolkit()
    toolkit.create_tool_group("demo", "tools of the demo MCP server", active=False)
    await toolkit.register_mcp_client(client, group_name="demo", disable_funcs=["crash"])
    assert toolkit.get_json_schemas() == []
    toolkit.update_tool_groups(["demo"], active=True)
    names = {s["function"]["name"] for s in toolkit.get_json_schemas()}
    assert "crash" not in names
    assert {"add", "echo", "fail", "sleep"} <= names
    (echoed,) = await call(toolkit, "echo", text="hey", repeat=2)
    assert echoed.get_text() == "hey hey"


async def test_preset_kwargs_are_hidden_and_applied(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    toolkit = Toolkit()
    await toolkit.register_mcp_client(
        client, enable_funcs=["echo"], preset_kwargs_mapping={"echo": {"repeat": 3}}
    )
    (schema,) = toolkit.get_json_schemas()
    assert "repeat" not in schema["function"]["parameters"]["properties"]
    (response,) = await call(toolkit, "echo", text="la")
    assert response.get_text() == "la la la"


async def test_tool_error_and_bad_arguments_through_the_toolkit(
    shared_stdio: StdIOStatefulClient,
) -> None:
    client = shared_stdio
    toolkit = Toolkit()
    await toolkit.register_mcp_client(client)
    (failed,) = await call(toolkit, "fail", reason="no way")
    assert failed.get_text().startswith("Error:")
    assert "no way" in failed.get_text()
    (invalid,) = await call(toolkit, "add", a="one")
    assert invalid.get_text() != ""
    assert "42" not in invalid.get_text()


async def test_server_crash_through_the_toolkit_is_readable() -> None:
    async with stdio_client() as client:
        toolkit = Toolkit()
        await toolkit.register_mcp_client(client)
        with anyio.fail_after(20):
            (crashed,) = await call(toolkit, "crash")
        # AgentScope's wording for an MCP failure, then what happened.
        assert crashed.get_text().startswith("Error occurred when calling MCP tool: ")
        assert "lost the connection" in crashed.get_text()
        with anyio.fail_after(20):
            (after,) = await call(toolkit, "add", a=1, b=2)
        assert after.get_text().startswith("Error occurred when calling MCP tool: ")
        assert "'demo'" in after.get_text()


async def test_http_clients_through_the_toolkit(http_server: HttpServer) -> None:
    transport = http_server.client_transport
    lone = HttpStatelessClient("lone", transport, http_server.url)  # type: ignore[arg-type]
    async with HttpStatefulClient("kept", transport, http_server.url) as kept:  # type: ignore[arg-type]
        toolkit = Toolkit()
        await toolkit.register_mcp_client(kept, enable_funcs=["add"])
        with pytest.raises(ValueError):
            # Same tool name from another server: the toolkit refuses by default.
            await toolkit.register_mcp_client(lone, enable_funcs=["add"])
        await toolkit.register_mcp_client(lone, enable_funcs=["echo"])
        (summed,) = await call(toolkit, "add", a=5, b=6)
        assert summed.get_text() == "11"
        (echoed,) = await call(toolkit, "echo", text="stateless")
        assert echoed.get_text() == "stateless"
        await toolkit.remove_mcp_clients("kept")
        assert {s["function"]["name"] for s in toolkit.get_json_schemas()} == {"echo"}


TIMEOUT_TEXT = (
    "Error occurred when calling MCP tool: Timed out while waiting for response to "
    "ClientRequest. Waited {} seconds."
)


async def cancelled_sleeps(client: StdIOStatefulClient) -> int:
    return int((await client.call_tool("cancelled_sleeps")).content[0].text)  # type: ignore[union-attr]


async def test_execution_timeout_reads_as_in_agentscope(shared_stdio: StdIOStatefulClient) -> None:
    client = shared_stdio
    before = await cancelled_sleeps(client)
    toolkit = Toolkit()
    await toolkit.register_mcp_client(client, enable_funcs=["sleep", "echo"], execution_timeout=0.3)
    with anyio.fail_after(20):
        (timed_out,) = await call(toolkit, "sleep", seconds=30)
    assert timed_out.get_text() == TIMEOUT_TEXT.format("0.3")
    assert timed_out.is_last and not timed_out.is_interrupted
    # Calls within the limit are untouched, and the session goes on.
    (slept,) = await call(toolkit, "sleep", seconds=0.01)
    assert slept.get_text() == "slept 0.01"
    (echoed,) = await call(toolkit, "echo", text="still here")
    assert echoed.get_text() == "still here"
    # The server was told to stop the call that timed out (the notice may trail the result;
    # it lives in another process, so it is polled).
    for _ in range(400):
        if await cancelled_sleeps(client) > before:
            break
        await anyio.sleep(0.05)
    else:
        pytest.fail("the server never saw the timed-out sleep cancelled")


async def test_execution_timeout_in_whole_seconds_and_postprocess(
    shared_stdio: StdIOStatefulClient,
) -> None:
    client = shared_stdio
    seen: list[str] = []

    def postprocess(tool_call: ToolUseBlock, response: ToolResponse) -> ToolResponse:
        seen.append(response.get_text())
        return ToolResponse(content=[*response.content, TextBlock(text="[checked]")])

    toolkit = Toolkit()
    await toolkit.register_mcp_client(
        client, enable_funcs=["sleep"], execution_timeout=1, postprocess_func=postprocess
    )
    with anyio.fail_after(20):
        (timed_out,) = await call(toolkit, "sleep", seconds=30)
    # An int limit reads as AgentScope shows it (seconds as a float).
    assert seen == [TIMEOUT_TEXT.format("1.0")]
    assert timed_out.get_text() == TIMEOUT_TEXT.format("1.0") + "[checked]"
    (slept,) = await call(toolkit, "sleep", seconds=0)
    assert slept.get_text() == "slept 0.0[checked]"


@pytest.mark.parametrize("bad", [0, -1, float("inf"), True, "5"])
async def test_execution_timeout_is_checked(shared_stdio: StdIOStatefulClient, bad: object) -> None:
    toolkit = Toolkit()
    with pytest.raises(ValueError, match="execution_timeout"):
        await toolkit.register_mcp_client(shared_stdio, execution_timeout=bad)  # type: ignore[arg-type]
    assert toolkit.tools == {}


async def test_stateless_execution_timeout_through_the_toolkit(http_server: HttpServer) -> None:
    lone = HttpStatelessClient("lone", http_server.client_transport, http_server.url)  # type: ignore[arg-type]
    toolkit = Toolkit()
    await toolkit.register_mcp_client(lone, enable_funcs=["sleep"], execution_timeout=0.3)
    with anyio.fail_after(20):
        (timed_out,) = await call(toolkit, "sleep", seconds=30)
    assert timed_out.get_text() == TIMEOUT_TEXT.format("0.3")
