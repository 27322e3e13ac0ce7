"""The ReAct agent's answer when ``max_iters`` runs out: one model call, without tools,
asking for a summary of the situation."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import attrs

from ..message import Msg, TextBlock, ThinkingBlock, ToolUseBlock
from ..model import ChatResponse
from ._react_blocks import _blocks_of
from ._react_host import ReActHost

_SUMMARIZE_HINT = (
    "You have failed to generate response within the maximum iterations. Now respond "
    "directly by summarizing the current situation."
)
# The summary's text when the summarising call gave none (only tool calls, or nothing).
_ITERATION_LIMIT_TEXT = (
    "I stopped after reaching the maximum number of iterations ({max_iters}) without a final "
    "answer."
)


async def summarize(agent: ReActHost) -> Msg:
    """One model call without tools asking for a summary of the situation (used when
    ``max_iters`` is exhausted).

    The summary keeps no tool call: a model may call tools even when offered none, and a
    tool call left in memory without a result makes the next request invalid (OpenAI
    rejects it). What is left is printed and recorded; when no text or audio is left, a
    text saying the agent stopped at the iteration limit stands in for it.
    """
    prompt = await agent._prompt_with(Msg("user", _SUMMARIZE_HINT, "user"))
    res = await agent.model(prompt)
    fallback = _ITERATION_LIMIT_TEXT.format(max_iters=agent.max_iters)
    if isinstance(res, ChatResponse):
        res = _summary_response(res, fallback)
    else:
        res = _summary_stream(res, fallback)
    msg = Msg(agent.name, [], "assistant")
    await agent._receive(res, msg)
    return msg


def _summary_response(res: ChatResponse, fallback: str | None) -> ChatResponse:
    """*res* without its tool calls; with the text *fallback* appended when nothing but
    thinking is left (``None``: never)."""
    content: list[Any] = [b for b in _blocks_of(res.content) if b.__class__ is not ToolUseBlock]
    if fallback is not None and all(block.__class__ is ThinkingBlock for block in content):
        content.append(TextBlock(text=fallback))
    return attrs.evolve(res, content=content)


async def _summary_stream(
    stream: AsyncGenerator[ChatResponse, None], fallback: str
) -> AsyncGenerator[ChatResponse, None]:
    """The chunks of *stream* without tool calls (none is ever printed); when the last one
    has nothing but thinking left, one more chunk adds the text *fallback*."""
    last: ChatResponse | None = None
    async with aclosing(stream) as chunks:
        async for chunk in chunks:
            last = _summary_response(chunk, None)
            yield last
    if last is None:
        yield ChatResponse(content=[TextBlock(text=fallback)])
    elif all(block.__class__ is ThinkingBlock for block in last.content):
        yield _summary_response(last, fallback)
