"""A trio program: a ReActAgent is one task of a nursery, beside a ticker and a file watcher.

``23_hub_in_trio_nursery.py`` runs MsgHubs of hand-written agents in a nursery; this one is the
everyday shape of an application: a ``trio.run`` program whose nursery holds

* a **ticker** that ticks every 50 ms (standing in for any periodic work: a heartbeat, a metrics
  flush) and keeps ticking while the agent generates, because the local model runs in worker
  threads and never blocks the event loop;
* a **file watcher** that polls an inbox folder and hands each new question file to the agent
  over a trio memory channel;
* the **agent worker**: a ``ReActAgent`` (local SmolLM2-135M through llama.cpp, or OpenAI with
  ``OPENAI_API_KEY``) that answers each question, streaming its reply to the console, and writes
  the answer next to the question;
* a **client** that drops a question into the inbox and reads the answer file once the worker
  says it is written, then asks for a story and cancels the whole nursery while the answer is
  streaming (the worker reads the agent's printed chunks with ``stream_printing_messages``, so
  it knows when the answer has begun).

The cancellation is plain trio (``nursery.cancel_scope.cancel()``): every task stops at its next
checkpoint, the model's generation stops after the token being computed, the nursery exits
without an error, and the same agent answers again afterwards (nothing was left locked).

It is a trio program on purpose, so it runs on trio only:
``python examples/25_agents_in_trio_nursery.py``. ``22_hub_in_asyncio_app.py`` is the asyncio
counterpart. It runs by itself, with or without ``AGENTSCOPE_RT_EXAMPLES=1``.

What to look for:

* ``[watcher] new question: q1.txt`` and then ``Friday: ...`` streaming the answer;
* ``[client] answer file a1.txt: ...`` as each answer lands on disk;
* ``[client] cancelling the nursery while Friday is replying``, then
  ``nursery exited cleanly``, the tick count, and one more answer after the cancellation.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import trio

import agentscope_rt.formatter
from agentscope_rt.agent import ReActAgent
from agentscope_rt.message import Msg
from agentscope_rt.pipeline import stream_printing_messages

# The examples share a helper module next to them; make it importable however we are run.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _models import pick_chat_model

QUESTIONS = [
    "What do bees make?",
    "Write a long story about a dragon who learns to fly.",
]


class Ticker:
    """Periodic work beside the agent: counts ticks, and which of them came while it replied."""

    def __init__(self) -> None:
        self.ticks = 0
        self.ticks_while_replying = 0

    async def run(self, agent: ReActAgent) -> None:
        while True:
            await trio.sleep(0.05)
            self.ticks += 1
            if agent.is_replying:
                self.ticks_while_replying += 1


async def watch_inbox(inbox: trio.Path, questions: trio.MemorySendChannel[trio.Path]) -> None:
    """Poll *inbox* for new ``q*.txt`` files and send each one to the agent once."""
    seen: set[str] = set()
    async with questions:
        while True:
            for path in sorted(await inbox.glob("q*.txt")):
                if path.name not in seen:
                    seen.add(path.name)
                    print(f"[watcher] new question: {path.name}")
                    await questions.send(path)
            await trio.sleep(0.05)


async def answer_questions(
    agent: ReActAgent,
    questions: trio.MemoryReceiveChannel[trio.Path],
    events: trio.MemorySendChannel[tuple[str, trio.Path]],
) -> None:
    """The agent worker: answer each question file with an ``a*.txt`` file beside it, and tell
    the client when the answer starts streaming and when its file is written."""
    async with questions, events:
        async for path in questions:
            question = await path.read_text(encoding="utf-8")
            reply = agent(Msg("user", question, "user"))
            answer: str | None = None
            # What the agent prints (it still prints to the console too), chunk by chunk.
            async for msg, _ in stream_printing_messages([agent], reply):
                if answer is None:
                    await events.send(("streaming", path))
                answer = msg.get_text_content() or ""
            target = path.with_name(path.name.replace("q", "a", 1))
            await target.write_text(answer or "", encoding="utf-8")
            await events.send(("answered", target))


async def client(
    inbox: trio.Path,
    events: trio.MemoryReceiveChannel[tuple[str, trio.Path]],
    nursery: trio.Nursery,
) -> None:
    """Ask a question and read the answer, then cancel everything mid-way through the next."""
    await (inbox / "q1.txt").write_text(QUESTIONS[0], encoding="utf-8")
    async with events:
        async for event, path in events:
            if event == "answered":
                print(f"[client] answer file {path.name}: {await path.read_text()!r}")
                number = int(path.stem[1:]) + 1
                await (inbox / f"q{number}.txt").write_text(QUESTIONS[number - 1])
            elif path.name == f"q{len(QUESTIONS)}.txt":
                await trio.sleep(0.3)  # the reply is streaming: let a few more tokens come
                print("\n[client] cancelling the nursery while Friday is replying")
                nursery.cancel_scope.cancel()


async def main() -> None:
    model, formatter_name = pick_chat_model(
        stream=True, generate_kwargs={"temperature": 0.0, "seed": 7, "max_tokens": 32}
    )
    agent = ReActAgent(
        name="Friday",
        sys_prompt="You are Friday, a helpful assistant. Answer in a few words.",
        model=model,
        formatter=getattr(agentscope_rt.formatter, formatter_name)(),
        max_iters=2,
    )
    ticker = Ticker()
    send, receive = trio.open_memory_channel[trio.Path](0)
    send_event, receive_event = trio.open_memory_channel[tuple[str, trio.Path]](0)
    with tempfile.TemporaryDirectory() as folder:
        inbox = trio.Path(folder)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ticker.run, agent)
            nursery.start_soon(watch_inbox, inbox, send)
            nursery.start_soon(answer_questions, agent, receive, send_event)
            nursery.start_soon(client, inbox, receive_event, nursery)
        print(f"[main] nursery exited cleanly; cancelled: {nursery.cancel_scope.cancelled_caught}")
        print(
            f"[main] the ticker ticked {ticker.ticks} times, {ticker.ticks_while_replying} of "
            "them while Friday was replying: the event loop never waited for the model"
        )
        last_answer = inbox / f"a{len(QUESTIONS)}.txt"
        print(f"[main] {last_answer.name} written: {await last_answer.exists()}")
    with trio.fail_after(60):
        again = await agent(Msg("user", "Are you still there? Say yes.", "user"))
    print(f"[main] after the cancellation Friday still answers: {bool(again.get_text_content())}")


if __name__ == "__main__":
    trio.run(main)
