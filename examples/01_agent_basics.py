"""Agent basics: hooks, streaming print, interrupt, broadcasting — offline, no model needed.

This is the example about writing your own agent: ``Storyteller`` subclasses ``AgentBase``
and implements ``reply``, ``observe`` and ``handle_interrupt`` itself. Everywhere else the
examples use ``ReActAgent`` and ``UserAgent``, as AgentScope programs do.

Run: ``python examples/01_agent_basics.py`` (asyncio) or
``python examples/01_agent_basics.py trio``.

What to look for: ``Alice:`` streams her greeting word by word on the console (thinking first,
printed once), and Bob heard it without the thinking block. Bob prints his greeting as usual,
but the reply his caller gets is upper-cased: the ``post_reply`` hook rewrote it after it was
printed. The interrupted reply stops after "Hello" and returns "(stopped by the user)" with
``generate_reason=interrupted``; an outer timeout is a ``TimeoutError`` instead, after which the
agent answers again at once.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from agentscope_rt.agent import AgentBase
from agentscope_rt.message import Msg, TextBlock, ThinkingBlock


class Storyteller(AgentBase):
    """Streams a short answer word by word, thinking first; takes its time."""

    def __init__(self, name: str, pause: float = 0.02) -> None:
        super().__init__()
        self.name = name
        self.pause = pause
        self.memory: list[Msg] = []
        self.register_state("name")

    async def reply(self, msg: Msg | None = None) -> Msg:
        if msg is not None:
            self.memory.append(msg)
        thought = "The user wants a greeting."
        words = f"Hello {msg.name if msg else 'there'}, nice to meet you!".split()
        reply_id_msg = Msg(self.name, "", "assistant")
        for count in range(1, len(words) + 1):
            await anyio.sleep(self.pause)
            chunk = Msg(
                self.name,
                [ThinkingBlock(thinking=thought), TextBlock(text=" ".join(words[:count]))],
                "assistant",
                id=reply_id_msg.id,
            )
            await self.print(chunk, last=count == len(words))
        self.memory.append(chunk)
        return chunk

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        if isinstance(msg, Msg):
            self.memory.append(msg)
        elif isinstance(msg, list):
            self.memory.extend(msg)

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        return Msg(self.name, "(stopped by the user)", "assistant")


async def main() -> None:
    alice, bob = Storyteller("Alice"), Storyteller("Bob")
    # Each hears the other's replies (AgentScope's subscriber interface; a MsgHub, see
    # examples/20_msghub_debate.py, sets this up for a whole group).
    alice.reset_subscribers("room", [bob])
    bob.reset_subscribers("room", [alice])

    def shout(self: AgentBase, kwargs: dict[str, Any], output: Msg) -> Msg:
        return Msg(output.name, (output.get_text_content() or "").upper(), "assistant")

    print("1. A streamed reply (each character printed once):")
    reply = await alice(Msg("user", "Hi!", "user"))
    print(f"   -> reply id {reply.invocation_id}; Bob heard: {bob.memory[-1].get_text_content()!r}")
    print("   (thinking blocks are never broadcast)")

    print("\n2. A post_reply hook rewrites the output:")
    bob.register_instance_hook("post_reply", "shout", shout)
    reply = await bob(Msg("user", "Hi!", "user"))
    print(f"   -> {reply.content}")
    bob.remove_instance_hook("post_reply", "shout")

    print("\n3. Interrupting a slow reply from another task:")
    alice.pause = 0.5

    async def stop_soon() -> None:
        await anyio.sleep(0.6)
        alice.interrupt()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_soon)
        reply = await alice(Msg("user", "Tell me more", "user"))
    print(f"   -> {reply.content!r}, generate_reason={alice.generate_reason}")

    print("\n4. An outer timeout is not an interrupt; it propagates:")
    try:
        with anyio.fail_after(0.3):
            await alice(Msg("user", "Again?", "user"))
    except TimeoutError:
        print("   -> TimeoutError, as expected")
    alice.pause = 0.0
    reply = await alice(Msg("user", "Still there?", "user"))
    print(f"   -> the agent answers again at once: {reply.get_text_content()!r}")


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
