"""Tool behaviours checked against AgentScope 1.0.21: what insert_text_file writes and shows,
and what a tool that raises ``CancelledError`` itself gives its caller."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import ScriptedChatModel, tool_call
from agentscope_rt.tool import Toolkit, ToolResponse, insert_text_file

INTERRUPTED = "<system-info>The tool call has been interrupted by the user.</system-info>"

# (file, content, line_number) -> (the file afterwards, the numbered view the tool answers
# with), as AgentScope 1.0.21's insert_text_file gives them.
_AGENTSCOPE_INSERTS = [
    (("a\nb", "x", 3), ("a\nb\nx", "1: a\n2: b\n3: x")),
    (("a\nb", "x\n", 3), ("a\nb\nx\n", "1: a\n2: b\n3: x\n")),
    (("a\nb", "x", 1), ("x\na\nb", "1: x\n2: a\n3: b")),
    (("a\nb", "x", 2), ("a\nx\nb", "1: a\n2: x\n3: b")),
]


@pytest.mark.parametrize(("given", "expected"), _AGENTSCOPE_INSERTS)
async def test_insert_into_a_file_without_a_final_newline_matches_agentscope(
    given: tuple[str, str, int], expected: tuple[str, str], tmp_path: Path
) -> None:
    text, content, line_number = given
    path = tmp_path / "f.txt"
    path.write_text(text, encoding="utf-8")
    response = await insert_text_file(str(path), content, line_number)
    after, view = expected
    assert path.read_text(encoding="utf-8") == after
    assert response.get_text() == (
        f"Insert content into {path} at line {line_number} successfully. The new content "
        f"between lines 1-{len(after.splitlines())} is:\n"
        f"```\n{view}```"
    )


async def test_appended_content_is_written_as_given_without_an_empty_line_before_it(
    tmp_path: Path,
) -> None:
    # AgentScope writes "\n" + content here, leaving an empty line (docs/migration.md).
    path = tmp_path / "f.txt"
    path.write_text("a\nb\n", encoding="utf-8")
    await insert_text_file(str(path), "x", 3)
    assert path.read_text(encoding="utf-8") == "a\nb\nx"


async def _raises_cancelled() -> ToolResponse:
    """Raise CancelledError."""
    raise asyncio.CancelledError


async def _streams_then_raises_cancelled() -> Any:
    """Yield a chunk, then raise CancelledError."""
    yield ToolResponse(content=[TextBlock("partial")], stream=True, is_last=False)
    raise asyncio.CancelledError


_TOOLS = [_raises_cancelled, _streams_then_raises_cancelled]


@pytest.mark.parametrize("tool", _TOOLS, ids=["coroutine", "async-generator"])
async def test_a_tool_raising_cancelled_error_reaches_the_caller_whatever_its_kind(
    tool: Any, anyio_backend_name: str
) -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(tool)
    chunks: list[ToolResponse] = []
    with pytest.raises(asyncio.CancelledError):
        async for chunk in toolkit.call_tool_function(ToolUseBlock("1", tool.__name__, {})):
            chunks.append(chunk)
    if anyio_backend_name == "asyncio":
        # The loop's own cancellation: the interrupted chunk first, as for an interrupt.
        assert chunks[-1].is_interrupted and chunks[-1].get_text().endswith(INTERRUPTED)
    else:
        # A foreign exception on trio: it is not a cancellation, and no chunk says it was.
        assert not any(chunk.is_interrupted for chunk in chunks)


@pytest.mark.parametrize("tool", _TOOLS, ids=["coroutine", "async-generator"])
async def test_an_agent_records_the_tool_as_interrupted_and_the_error_propagates(
    tool: Any,
) -> None:
    toolkit = Toolkit()
    toolkit.register_tool_function(tool)
    model = ScriptedChatModel([tool_call(tool.__name__, {}), "never reached"])
    agent = ReActAgent("a", "", model, OpenAIChatFormatter(), toolkit=toolkit)
    agent.set_console_output_enabled(False)
    with pytest.raises(asyncio.CancelledError):
        await agent(Msg("user", "go", "user"))
    memory = await agent.memory.get_memory()
    results = [block for msg in memory for block in msg.get_content_blocks("tool_result")]
    assert len(results) == 1
    assert results[0].output[-1].text == INTERRUPTED  # type: ignore[index,union-attr]
    assert model.remaining == 1
