"""Pipelines: a chain, a bounded fan-out, and everything the agents print as one stream.

* ``sequential_pipeline``: a drafter, a reviewer and an editor (ReAct agents), each working on
  the previous one's output;
* ``fanout_pipeline``: ten reviewers each get their own copy of the draft and answer side by
  side, at most three at a time (``max_concurrency``); a failing reviewer cancels the rest;
* ``stream_printing_messages``: the chunks a streaming model prints, consumed as they come,
  stopping early with ``break`` (the running task is cancelled cleanly).

The agents' models are ``FunctionChatModel`` doubles (offline, deterministic) that transform
the text they are given, so the pipelines' behaviour is what the output shows.

Run: ``python examples/21_pipelines_and_streaming.py`` (asyncio) or
``python examples/21_pipelines_and_streaming.py trio``.

What to look for: the chain prints three agent lines, each adding a word to the last. The
fan-out prints ten reviewer lines in the order they finish, then the results in agent order,
a peak concurrency of 3 and about 0.2 s (four waves of 0.05 s). The failing reviewer's error is
raised and the three 10-second reviewers print nothing: they were cancelled. In the streaming
part the writer prints its story on the console as usual, and the loop beside it reports each
chunk it received from ``stream_printing_messages``; the second writer is stopped after its
first chunk.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import anyio

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel
from agentscope_rt.pipeline import fanout_pipeline, sequential_pipeline, stream_printing_messages

RUNNING = {"now": 0, "peak": 0}


def text_of(message: dict[str, Any]) -> str:
    """The text of an OpenAI-format message (a string, or a list of parts)."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def worker(name: str, suffix: str, seconds: float = 0.0, fail: bool = False) -> ReActAgent:
    """A ReAct agent whose model appends *suffix* to the text it was given, taking *seconds*."""

    async def transform(messages: list[dict[str, Any]], tools: Any) -> str:
        RUNNING["now"] += 1
        RUNNING["peak"] = max(RUNNING["peak"], RUNNING["now"])
        try:
            await anyio.sleep(seconds)
            if fail:
                raise RuntimeError(f"{name} could not finish")
        finally:
            RUNNING["now"] -= 1
        return f"{text_of(messages[-1])} {suffix}".strip()

    return ReActAgent(
        name=name,
        sys_prompt="You improve the text you are given.",
        model=FunctionChatModel(transform),
        formatter=OpenAIChatFormatter(),
    )


def streaming_writer(name: str) -> ReActAgent:
    story = "Once upon a time a small agent streamed its answer, one piece after another."

    def write(messages: list[dict[str, Any]], tools: Any) -> str:
        return story

    return ReActAgent(
        name=name,
        sys_prompt="You write one-line stories.",
        model=FunctionChatModel(write, stream=True),
        formatter=OpenAIChatFormatter(),
    )


async def main() -> None:
    print("== sequential_pipeline")
    chain = [worker("drafter", "draft"), worker("reviewer", "reviewed"), worker("editor", "edited")]
    final = await sequential_pipeline(chain, Msg("user", "essay:", "user"))
    assert isinstance(final, Msg)

    print("\n== fanout_pipeline, 10 reviewers, at most 3 at a time")
    reviewers = [worker(f"r{i}", f"ok from r{i}", seconds=0.05) for i in range(10)]
    draft = Msg("user", "draft v1:", "user")
    started = anyio.current_time()
    results = await fanout_pipeline(reviewers, draft, max_concurrency=3)
    elapsed = anyio.current_time() - started
    print(f"-> {len(results)} replies in agent order: {[r.name for r in results][:4]}...")
    print(f"-> peak concurrency {RUNNING['peak']}, {elapsed:.2f} s (4 waves of 0.05 s)")
    assert draft.content == "draft v1:"  # each reviewer got its own copy

    print("\n== fanout_pipeline with a failing reviewer")
    slow = [worker(f"slow{i}", "never", seconds=10) for i in range(3)]
    try:
        await fanout_pipeline([*slow, worker("broken", "", fail=True)], draft)
    except RuntimeError as exc:
        print(f"-> raised {exc!r}; the three slow reviewers were cancelled at once")

    print("\n== stream_printing_messages")
    writer = streaming_writer("writer")
    task = writer(Msg("user", "Tell me a story.", "user"))
    # One item per print, as in AgentScope: the whole text comes three times at the end — the
    # model's last content chunk, its closing chunk (with the usage), and the agent's final
    # print with last=True.
    received = []
    async with contextlib.aclosing(stream_printing_messages([writer], task)) as stream:
        async for msg, last in stream:
            received.append(f"{len(msg.get_text_content() or '')} chars (last={last})")
    print(f"-> the loop received {len(received)} chunks: {', '.join(received)}")

    print("\n== the same, stopping after the first chunk")
    writer2 = streaming_writer("writer2")
    task = writer2(Msg("user", "Tell me a story.", "user"))
    async with contextlib.aclosing(stream_printing_messages([writer2], task)) as stream:
        async for msg, _ in stream:
            print(f"\n-> first chunk: {msg.get_text_content()!r}; stopping")
            break
    print(f"-> writer2 feeds no stream any more: {writer2.msg_queue is None}")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
