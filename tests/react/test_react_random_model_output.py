"""Random model output through a ReAct loop: a library error or a valid reply, never anything
else, and the agent's memory and state stay sound.

A :class:`~agentscope_rt.model.FunctionChatModel` answers each call with the next of a few
random responses: text and thinking blocks with any characters, and tool calls with random
names (real tools, unknown names, empty or odd ones) and unique ids, whose
arguments go through the model layer's own parsing exactly as a provider's do (argument text
through ``parse_tool_input``, already-decoded arguments through ``parse_tool_value``): valid
and invalid JSON, ``NaN``/``Infinity``, numbers beyond any float, lone surrogates (raw and
escaped), deep nesting, non-objects. Text and thinking get the model layer's surrogate
scrubbing, as every provider response does. After each reply:

* the reply is a ``Msg``, or the call raised an :class:`AgentScopeRTError` subclass;
* every tool_use in memory has exactly one tool_result, after it;
* ``agent.state_dict()`` succeeds, is strict JSON (``allow_nan=False``), and loads into a
  fresh agent whose own state is then the same JSON.

The budget is the project's (``tests/conftest.py``: 50 examples under CI); an example is a
handful of model calls on in-process tools, a few milliseconds.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentscope_rt.agent import ReActAgent
from agentscope_rt.exception import AgentScopeRTError
from agentscope_rt.memory import InMemoryMemory
from agentscope_rt.message import Msg, TextBlock, ThinkingBlock, ToolUseBlock
from agentscope_rt.model import ChatResponse, FunctionChatModel
from agentscope_rt.model._common import parse_tool_input, parse_tool_value, scrub_surrogates
from agentscope_rt.tool import ToolResponse

from ._support import make_agent, tool_pair_problems, toolkit_of


async def echo(text: str) -> ToolResponse:
    """Return the text.

    Args:
        text: what to return.
    """
    return ToolResponse(content=[TextBlock(text=text)])


def add(a: int, b: int) -> ToolResponse:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return ToolResponse(content=[TextBlock(text=str(a + b))])


def fail(reason: str = "no reason") -> ToolResponse:
    """Always fail.

    Args:
        reason: why.
    """
    raise RuntimeError(f"failed: {reason}")


TOOLS = [echo, add, fail]
TOOL_NAMES = [tool.__name__ for tool in TOOLS]

# Any code point, lone surrogates included (hypothesis' default text leaves them out).
any_char = st.characters(codec=None, exclude_categories=())
wild_text = st.text(any_char, max_size=24)
plain_text = st.text(max_size=24)

# Decoded JSON-ish values as a provider's SDK may hand them over: NaN, infinities, huge
# integers and lone surrogates included.
wild_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300, max_value=10**310)
    | st.floats()
    | wild_text
)
wild_values: st.SearchStrategy[Any] = st.recursive(
    wild_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(wild_text, inner, max_size=3),
    max_leaves=10,
)


def _nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


argument_texts = st.one_of(
    # Valid objects, for the real tools and otherwise.
    st.builds(json.dumps, st.fixed_dictionaries({"text": plain_text})),
    st.builds(json.dumps, st.fixed_dictionaries({"a": st.integers(), "b": st.integers()})),
    st.builds(json.dumps, st.dictionaries(plain_text, wild_values, max_size=3)),
    # Not strict JSON, or not an object.
    st.sampled_from(
        [
            "",
            "   ",
            "{",
            '{"text": ',
            "null",
            "[]",
            '"just a string"',
            "42",
            '{"a": NaN, "b": 1}',
            '{"a": Infinity, "b": -Infinity}',
            '{"a": 123456789012345678901234567890123456789, "b": 1}',
            '{"text": "\\ud800"}',
            '{"text": "\\udc00\\ud800"}',
            "{'text': 'single quotes'}",
            '{"text": "ok"} trailing',
            '{"text": "a", "text": "b"}',
        ]
    ),
    st.builds(_nested, st.sampled_from([20, 150]), st.sampled_from(["list", "object"])),
    wild_text,
    st.builds(lambda s: '{"text": "' + s + '"}', wild_text),
)

tool_names = st.sampled_from(TOOL_NAMES) | st.sampled_from(["", " ", "echo ", "ECHO"]) | wild_text


@st.composite
def tool_uses(draw: st.DrawFn, ids: itertools.count[int]) -> ToolUseBlock:
    name = draw(tool_names)
    if draw(st.booleans()):
        tool_input, raw = parse_tool_input(draw(argument_texts))
    else:
        tool_input, raw = parse_tool_value(draw(wild_values))
    return ToolUseBlock(id=f"call_{next(ids)}", name=name, input=tool_input, raw_input=raw)


@st.composite
def responses(draw: st.DrawFn) -> list[ChatResponse]:
    ids = itertools.count()
    block = (
        st.builds(TextBlock, text=wild_text)
        | st.builds(ThinkingBlock, thinking=wild_text)
        | tool_uses(ids)
    )
    script = draw(st.lists(st.lists(block, max_size=4), max_size=4))
    return [scrub_surrogates(ChatResponse(content=blocks)) for blocks in script]


def tools_agent(model: FunctionChatModel, parallel: bool, max_iters: int) -> ReActAgent:
    return make_agent(
        model,
        toolkit_of(*TOOLS),
        memory=InMemoryMemory(),
        parallel_tool_calls=parallel,
        max_iters=max_iters,
    )


def scripted(script: list[ChatResponse], stream: bool = False) -> FunctionChatModel:
    pending = list(script)

    def answer(messages: list[dict[str, Any]], tools: Any) -> ChatResponse:
        return pending.pop(0) if pending else ChatResponse(content=[TextBlock(text="Done.")])

    return FunctionChatModel(answer, stream=stream)


async def check_reply_memory_and_state(agent: ReActAgent) -> None:
    try:
        result = await agent(Msg("user", "Go.", "user"))
    except AgentScopeRTError:
        pass
    else:
        assert isinstance(result, Msg)
    msgs = list(await agent.memory.get_memory())
    assert tool_pair_problems(msgs) == []
    state = agent.state_dict()
    saved = json.dumps(state, allow_nan=False)
    fresh = tools_agent(scripted([]), parallel=False, max_iters=1)
    fresh.load_state_dict(json.loads(saved))
    assert json.dumps(fresh.state_dict(), allow_nan=False) == saved


@given(responses(), st.booleans(), st.booleans(), st.integers(min_value=1, max_value=3))
async def test_random_model_output_gives_a_reply_or_a_library_error(
    script: list[ChatResponse], stream: bool, parallel: bool, max_iters: int
) -> None:
    agent = tools_agent(scripted(script, stream), parallel, max_iters)
    await check_reply_memory_and_state(agent)
    # The agent stays usable: a second reply on the same memory.
    agent.model = scripted([])  # type: ignore[assignment]
    await check_reply_memory_and_state(agent)
