"""Pipelines: a chain, a bounded fan-out, and everything the agents print as one stream.

* ``sequential_pipeline``: a drafter, a reviewer and an editor, each working on the previous
  one's output;
* ``fanout_pipeline``: ten reviewers each get their own copy of the draft and answer side by
  side, at most three at a time (``max_concurrency``); a failing reviewer cancels the rest;
* ``stream_printing_messages``: the chunks a streaming model prints, consumed as they come,
  stopping early with ``break`` (the running task is cancelled cleanly).

Offline, on asyncio or trio: ``python examples/21_pipelines_and_streaming.py [trio]``.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import anyio

from agentscope_rt.agent import AgentBase, ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import FunctionChatModel
from agentscope_rt.pipeline import fanout_pipeline, sequential_pipeline, stream_printing_messages


class Worker(AgentBase):
    """Transforms the text it is given; takes *seconds*; can be told to fail."""

    running = 0
    peak = 0

    def __init__(self, name: str, suffix: str, seconds: float = 0.0, fail: bool = False) -> None:
        super().__init__()
        self.name = name
        self.suffix = suffix
        self.seconds = seconds
        self.fail = fail
        self.set_console_output_enabled(False)

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        Worker.running += 1
        Worker.peak = max(Worker.peak, Worker.running)
        try:
            await anyio.sleep(self.seconds)
            if self.fail:
                raise RuntimeError(f"{self.name} could not finish")
        finally:
            Worker.running -= 1
        text = msg.get_text_content() if isinstance(msg, Msg) else ""
        return Msg(self.name, f"{text} {self.suffix}".strip(), "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None


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
    chain = [Worker("drafter", "draft"), Worker("reviewer", "reviewed"), Worker("editor", "edited")]
    final = await sequential_pipeline(chain, Msg("user", "essay:", "user"))
    assert isinstance(final, Msg)
    print(f"{final.name}: {final.content}")

    print("== fanout_pipeline, 10 reviewers, at most 3 at a time")
    reviewers = [Worker(f"r{i}", f"ok from r{i}", seconds=0.05) for i in range(10)]
    draft = Msg("user", "draft v1:", "user")
    started = anyio.current_time()
    results = await fanout_pipeline(reviewers, draft, max_concurrency=3)
    elapsed = anyio.current_time() - started
    print(f"{len(results)} replies in agent order: {[r.name for r in results][:4]}...")
    print(f"peak concurrency {Worker.peak}, {elapsed:.2f} s (4 waves of 0.05 s)")
    assert draft.content == "draft v1:"  # each reviewer got its own copy

    print("== fanout_pipeline with a failing reviewer")
    slow = [Worker(f"slow{i}", "never", seconds=10) for i in range(3)]
    try:
        await fanout_pipeline([*slow, Worker("broken", "", fail=True)], draft)
    except RuntimeError as exc:
        print(f"raised {exc!r}; the three slow reviewers were cancelled at once")

    print("== stream_printing_messages")
    writer = streaming_writer("writer")
    writer.set_console_output_enabled(False)
    task = writer(Msg("user", "Tell me a story.", "user"))
    # One item per print, as in AgentScope: the whole text comes three times at the end — the
    # model's last content chunk, its closing chunk (with the usage), and the agent's final
    # print with last=True.
    async with contextlib.aclosing(stream_printing_messages([writer], task)) as stream:
        async for msg, last in stream:
            print(f"  chunk (last={last}): {msg.get_text_content()!r}")
    print("== the same, stopping after the first chunk")
    writer2 = streaming_writer("writer2")
    writer2.set_console_output_enabled(False)
    task = writer2(Msg("user", "Tell me a story.", "user"))
    async with contextlib.aclosing(stream_printing_messages([writer2], task)) as stream:
        async for msg, _ in stream:
            print(f"  first chunk: {msg.get_text_content()!r}; stopping")
            break
    print(f"writer2 feeds no stream any more: {writer2.msg_queue is None}")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
