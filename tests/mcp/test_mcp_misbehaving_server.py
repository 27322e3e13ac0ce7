"""A misbehaving stdio MCP server (``servers/misbehaving_server.py``, raw JSON-RPC) against the
stdio client, alone and through a Toolkit and a ReActAgent.

Whatever the server does (a truncated line, a result of the wrong shape, a JSON-RPC error, a
4 MiB result, no answer, an answer to an id nobody asked for, an exit mid-call, bytes that are
not JSON or not UTF-8 on stdout, ignoring SIGTERM, failing the handshake) the client raises
:class:`~agentscope_rt.exception.MCPError` (the model gets a tool error through a toolkit), no
call outlives its timeout, the session stays usable where the server still is, and the server
process is gone (reaped, not a zombie) once the client is closed. Every ``anyio.fail_after``
here is a hang detector far above the timeouts under test, not a measurement.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import MCPError
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.mcp import StdIOStatefulClient
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel, reply, tool_call
from agentscope_rt.tool import Toolkit

from ..react._support import tool_pair_problems

SERVER = Path(__file__).parent / "servers" / "misbehaving_server.py"
HUGE_CHARS = 4 * 1024 * 1024  # servers/misbehaving_server.py HUGE_CHARS
CALL_TIMEOUT = 0.5
# Far above every bound under test (the SDK's shutdown of a stubborn server takes about 4 s).
HANG_GUARD = 60.0


class BadServer:
    """Builds clients for the bad server and knows the process id each one started."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.pid_files: list[Path] = []

    def client(self, startup: str = "normal", **kwargs: object) -> StdIOStatefulClient:
        pid_file = self.directory / f"server-{len(self.pid_files)}.pid"
        self.pid_files.append(pid_file)
        return StdIOStatefulClient(
            "bad",
            sys.executable,
            [str(SERVER), startup],
            env={"BAD_MCP_PID_FILE": str(pid_file)},
            **kwargs,  # type: ignore[arg-type]
        )

    def pids(self) -> list[int]:
        return [int(f.read_text()) for f in self.pid_files if f.exists() and f.read_text()]


def process_exists(pid: int) -> bool:
    """Whether *pid* still exists; a zombie (exited, never reaped) does."""
    try:
        Path(f"/proc/{pid}").stat()
    except FileNotFoundError:
        return False
    return True


@pytest.fixture
def bad_server(tmp_path: Path) -> Iterator[BadServer]:
    """Every server process a test started must be gone (reaped) when the test ends."""
    server = BadServer(tmp_path)
    yield server
    started = server.pids()
    assert started, "the test started no server"
    leaked = [pid for pid in started if process_exists(pid)]
    assert not leaked, f"server processes left behind: {leaked}"


async def test_each_bad_answer_is_an_mcp_error_and_the_session_goes_on(
    bad_server: BadServer,
) -> None:
    async with bad_server.client() as client:
        with anyio.fail_after(HANG_GUARD):
            # Dropped by the SDK as unparseable, or never sent: the call's timeout ends it.
            for name in ("malformed", "result_not_object", "hang", "wrong_id"):
                with pytest.raises(MCPError, match="Timed out while waiting for response"):
                    await client.call_tool(name, read_timeout_seconds=CALL_TIMEOUT)
            with pytest.raises(MCPError, match=r"wrong_shape.*ValidationError"):
                await client.call_tool("wrong_shape", read_timeout_seconds=CALL_TIMEOUT)
            # -32000 is also the code the SDK uses for a closed connection: not confused.
            with pytest.raises(MCPError, match=r"answered .* with error -32000: bad"):
                await client.call_tool("error")
            result = await client.call_tool("ok", {"text": "still here"})
        assert result.content[0].text == "still here"  # type: ignore[union-attr]
        assert client.is_connected


async def test_a_huge_result_arrives_whole(bad_server: BadServer) -> None:
    async with bad_server.client() as client:
        with anyio.fail_after(HANG_GUARD):
            result = await client.call_tool("huge")
            after = await client.call_tool("ok", {"text": "next"})
    assert len(result.content[0].text) == HUGE_CHARS  # type: ignore[union-attr]
    assert after.content[0].text == "next"  # type: ignore[union-attr]


async def test_a_crash_mid_call_is_an_error_and_the_process_is_reaped(
    bad_server: BadServer,
) -> None:
    client = bad_server.client()
    with anyio.fail_after(HANG_GUARD):
        await client.connect()
        with pytest.raises(MCPError, match="lost the connection"):
            await client.call_tool("crash")  # no timeout: the dead server ends the call
        with pytest.raises(MCPError, match=r"session .* has ended|lost the connection"):
            await client.call_tool("ok", {"text": "x"})
        await client.close()
    # The client can start a fresh server.
    async with bad_server.client() as again:
        assert (await again.call_tool("ok", {"text": "back"})).content[0].text == "back"  # type: ignore[union-attr]


async def test_bytes_that_are_not_utf8_end_the_session_instead_of_hanging_it(
    bad_server: BadServer,
) -> None:
    """Strict decoding (the default): the SDK's reader would stop reading for good and every
    call would wait forever; the session ends with an error naming the cause instead."""
    client = bad_server.client()
    with anyio.fail_after(HANG_GUARD):
        await client.connect()
        with pytest.raises(MCPError, match="not valid utf-8"):
            await client.call_tool("garbage")  # no timeout
        with pytest.raises(MCPError, match="not valid utf-8"):
            await client.call_tool("ok", {"text": "x"})
        with pytest.raises(MCPError, match="not valid utf-8"):
            await client.close(ignore_errors=False)


async def test_garbage_lines_are_skipped_when_decoding_tolerates_them(
    bad_server: BadServer,
) -> None:
    async with bad_server.client(encoding_error_handler="replace") as client:
        with anyio.fail_after(HANG_GUARD):
            result = await client.call_tool("garbage")
            after = await client.call_tool("ok", {"text": "fine"})
    assert result.content[0].text == "after garbage"  # type: ignore[union-attr]
    assert after.content[0].text == "fine"  # type: ignore[union-attr]


async def test_a_server_ignoring_sigterm_is_killed_on_close(bad_server: BadServer) -> None:
    client = bad_server.client()
    with anyio.fail_after(HANG_GUARD):
        await client.connect()
        with pytest.raises(MCPError, match="Timed out"):
            await client.call_tool("stubborn", read_timeout_seconds=CALL_TIMEOUT)
        await client.close()
    # The fixture checks the process is gone.


@pytest.mark.parametrize(
    ("startup", "reason"),
    [
        ("crash", "Connection closed"),
        ("silent", "no answer to the MCP handshake within 2 s"),
        ("garbage", "no answer to the MCP handshake within 2 s"),
        ("bad_init", "ValidationError"),
    ],
)
async def test_a_failed_handshake_is_an_error_and_leaves_no_process(
    bad_server: BadServer, startup: str, reason: str
) -> None:
    client = bad_server.client(startup, connect_timeout=2)
    with anyio.fail_after(HANG_GUARD):
        with pytest.raises(MCPError, match=f"could not connect to MCP server 'bad'.*{reason}"):
            await client.connect()
    assert not client.is_connected
    if startup == "crash":
        # The process may exit before it writes its pid; the fixture needs one to check.
        async with bad_server.client() as other:
            await other.call_tool("ok", {"text": "x"})


async def test_arguments_json_cannot_carry_are_refused_before_sending(
    bad_server: BadServer,
) -> None:
    """A lone surrogate or NaN would make the SDK's writer task fail, ending the session for
    every call; they are refused up front and the session goes on."""
    async with bad_server.client() as client:
        with anyio.fail_after(HANG_GUARD):
            for bad in ("a\ud800b", float("nan"), float("inf"), object()):
                with pytest.raises(MCPError, match="cannot be sent as JSON"):
                    await client.call_tool("ok", {"text": bad})
            result = await client.call_tool("ok", {"text": "ok"})
    assert result.content[0].text == "ok"  # type: ignore[union-attr]


async def test_the_agent_stays_usable_whatever_the_server_does(bad_server: BadServer) -> None:
    """Through a Toolkit and a ReActAgent: every misbehaviour is a tool error the model reads,
    the memory stays consistent, the agent answers and saves its state, even after the server
    died."""
    async with bad_server.client() as client:
        toolkit = Toolkit()
        await toolkit.register_mcp_client(client, execution_timeout=CALL_TIMEOUT)
        bad_calls = ["malformed", "wrong_shape", "result_not_object", "error", "hang", "wrong_id"]
        model = ScriptedChatModel(
            [
                reply(*(tool_call(name, id=f"c{i}") for i, name in enumerate(bad_calls))),
                reply(tool_call("ok", {"text": "alive"}, id="ok1")),
                "First answer.",
                reply(tool_call("crash", id="boom"), tool_call("ok", {"text": "x"}, id="ok2")),
                "Second answer.",
            ]
        )
        memory = InMemoryMemory()
        agent = ReActAgent(
            name="Friday",
            sys_prompt="You use tools.",
            model=model,
            formatter=OpenAIChatFormatter(),
            toolkit=toolkit,
            memory=memory,
        )
        agent.set_console_output_enabled(False)
        with anyio.fail_after(HANG_GUARD):
            first = await agent(Msg("user", "go", "user"))
            second = await agent(Msg("user", "again", "user"))
        assert first.get_text_content() == "First answer."
        assert second.get_text_content() == "Second answer."

        msgs = list(await memory.get_memory())
        assert tool_pair_problems(msgs) == []
        outputs = {
            block.id: str(block.output)
            for msg in msgs
            for block in msg.get_content_blocks()
            if block.type == "tool_result"
        }
        for index in range(len(bad_calls)):
            assert "Error occurred when calling MCP tool" in outputs[f"c{index}"]
        assert "alive" in outputs["ok1"]
        assert "lost the connection" in outputs["boom"]
        assert "Error occurred when calling MCP tool" in outputs["ok2"]
        state = agent.state_dict()
        assert state["memory"]
