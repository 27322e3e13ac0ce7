"""Quick synchronous tools called in the caller's task (``inline=True``), and extended schemas
shared by every toolkit that extends the same function with the same structured model."""

from __future__ import annotations

import threading

from pydantic import BaseModel

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse, ScriptedChatModel
from agentscope_rt.tool import Toolkit, ToolResponse


def where() -> ToolResponse:
    """Say which thread runs the tool."""
    return ToolResponse(content=[TextBlock(text=str(threading.get_ident()))])


async def _thread_of(toolkit: Toolkit) -> int:
    chunks = [c async for c in toolkit.call_tool_function(ToolUseBlock("1", "where", {}))]
    text = chunks[-1].content[0]
    assert isinstance(text, TextBlock)
    return int(text.text)


async def test_inline_sync_tool_runs_in_the_callers_thread() -> None:
    threaded, inline = Toolkit(), Toolkit()
    threaded.register_tool_function(where)
    inline.register_tool_function(where, inline=True)
    here = threading.get_ident()
    assert await _thread_of(inline) == here
    assert await _thread_of(threaded) != here


class Answer(BaseModel):
    value: int


def finish(**kwargs: object) -> ToolResponse:
    """Finish."""
    return ToolResponse(content=[TextBlock(text="done")])


def test_toolkits_extending_one_function_with_one_model_share_the_schema() -> None:
    first, second = Toolkit(), Toolkit()
    for toolkit in (first, second):
        toolkit.register_tool_function(finish, include_var_keyword=True)
        toolkit.set_extended_model("finish", Answer)
    a, b = first.tools["finish"], second.tools["finish"]
    assert a.extended_json_schema is b.extended_json_schema
    assert "value" in a.extended_json_schema["function"]["parameters"]["properties"]
    # Removing the extension from one leaves the other's as it was.
    first.set_extended_model("finish", None)
    assert "value" not in a.extended_json_schema["function"]["parameters"]["properties"]
    assert "value" in b.extended_json_schema["function"]["parameters"]["properties"]


async def test_the_react_finish_function_runs_in_the_agents_thread() -> None:
    seen: list[int] = []

    class Recording(ReActAgent):
        def generate_response(self, **kwargs: object) -> ToolResponse:
            seen.append(threading.get_ident())
            return super().generate_response(**kwargs)

    call = ToolUseBlock(id="c1", name="generate_response", input={"value": 3})
    model = ScriptedChatModel([ChatResponse(content=[TextBlock(text="3."), call])])
    agent = Recording("a", "sys", model, OpenAIChatFormatter())
    agent.set_console_output_enabled(False)
    reply = await agent(Msg("user", "hi", "user"), structured_model=Answer)
    assert reply.metadata == {"value": 3}
    assert seen == [threading.get_ident()]
