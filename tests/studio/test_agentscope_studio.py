"""connect_studio against a stand-in AgentScope Studio (tRPC routes + python-socketio server),
on both backends: the run is registered, every printed chunk is pushed, StudioUserInput waits on
an awaited event, and a Studio that is down or slow never holds up an agent."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from agentscope_rt.agent import ReActAgent, TerminalUserInput, UserAgent
from agentscope_rt.exception import AgentError
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.studio import StudioUserInput, connect_studio, disconnect_studio
from agentscope_rt.studio._remote import _link

from .._servers import free_port
from ._fake_studio import FakeStudio

VOTE = {
    "type": "object",
    "properties": {"vote": {"type": "string", "enum": ["for", "against"]}},
    "required": ["vote"],
}


@pytest.fixture
def fake() -> Iterator[FakeStudio]:
    with FakeStudio().running() as studio:
        try:
            yield studio
        finally:
            disconnect_studio()


def talker(name: str, text: str, replies: int = 1) -> ReActAgent:
    return ReActAgent(
        name=name,
        sys_prompt="Talk.",
        model=ScriptedChatModel([text] * replies, stream=True),
        formatter=OpenAIChatFormatter(),
    )


async def until(condition: Callable[[], Any]) -> None:
    """Wait for what another thread (the fake Studio, the link's loop) makes true."""
    with anyio.fail_after(30):
        while not condition():  # noqa: ASYNC110 (set by another thread: no event to await)
            await anyio.sleep(0.01)


async def test_the_run_is_registered_and_every_printed_chunk_is_pushed(fake: FakeStudio) -> None:
    connect_studio(fake.url, project="proj", name="run-name", run_id="run-1")
    ada = talker("Ada", "Bicycles win on short trips.")
    dana = UserAgent("Dana")
    dana.override_instance_input_method(lambda **kwargs: "I agree.")
    said = await ada()
    heard = await dana()

    def pushes_done() -> bool:
        texts = [p["msg"]["content"] for p in fake.posted("/trpc/pushMessage")]
        return "I agree." in str(texts) and any(
            t == [{"type": "text", "text": "Bicycles win on short trips."}] for t in texts
        )

    await until(pushes_done)
    [run] = fake.posted("/trpc/registerRun")
    assert run["id"] == "run-1" and run["project"] == "proj" and run["name"] == "run-name"
    assert run["status"] == "running" and run["run_dir"] == "" and isinstance(run["pid"], int)
    assert fake.posts[0][0] == "/trpc/registerRun"
    pushes = fake.posted("/trpc/pushMessage")
    ada_pushes = [p for p in pushes if p["replyName"] == "Ada"]
    assert {p["runId"] for p in pushes} == {"run-1"}
    assert {p["replyId"] for p in ada_pushes} == {said.invocation_id}
    assert {p["replyRole"] for p in ada_pushes} == {"assistant"}
    assert {p["msg"]["id"] for p in ada_pushes} == {said.id}
    [dana_push] = [p for p in pushes if p["replyName"] == "Dana"]
    assert dana_push["replyRole"] == "user"
    assert dana_push["replyId"] == heard.invocation_id
    assert dana_push["msg"]["content"] == "I agree."


async def test_studio_user_input_is_an_awaited_event_the_other_tasks_run_meanwhile(
    fake: FakeStudio,
) -> None:
    connect_studio(fake.url, project="proj", name="n", run_id="run-2")
    dana = UserAgent("Dana")
    ticks = 0
    answers = []

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.001)

    async def ask() -> None:
        answers.append(await dana(structured_model=VOTE))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        tg.start_soon(ask)
        await until(
            lambda: fake.posted("/trpc/requestUserInput") and _link(fake.url, "run-2").connected
        )
        [request] = fake.posted("/trpc/requestUserInput")
        ticks_while_waiting = ticks
        await until(lambda: ticks > ticks_while_waiting + 5)
        assert not answers  # still waiting, and the loop is free
        fake.forward_user_input("someone-else", [{"type": "text", "text": "no"}], None)
        fake.forward_user_input(
            request["requestId"], [{"type": "text", "text": "Yes."}], {"vote": "for"}
        )
        await until(lambda: answers)
        tg.cancel_scope.cancel()
    assert request["runId"] == "run-2"
    assert request["agentId"] == dana.id and request["agentName"] == "Dana"
    assert request["structuredInput"] == VOTE
    assert fake.auths == [{"run_id": "run-2"}]
    assert answers[0].content == "Yes."
    assert answers[0].metadata == {"vote": "for"}
    assert answers[0].role == "user"


async def test_malformed_events_from_studio_are_skipped_and_the_answer_after_them_arrives(
    fake: FakeStudio, caplog: pytest.LogCaptureFixture
) -> None:
    connect_studio(fake.url, project="proj", name="n", run_id="run-9")
    dana = UserAgent("Dana")
    answers: list[Msg] = []

    async def ask() -> None:
        answers.append(await dana())

    with caplog.at_level(logging.WARNING, logger="agentscope_rt.studio"):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await until(
                lambda: fake.posted("/trpc/requestUserInput") and _link(fake.url, "run-9").connected
            )
            [request] = fake.posted("/trpc/requestUserInput")
            for raw in (
                '2/python,["forwardUserInput", ["not", "an", "id"], [], null]',
                '2/python,["forwardUserInput", {"not": "an id"}]',
                '2/python,["forwardUserInput", ',
                '2/python,{"an": "object"}',
                "2/python," + "[" * 5000 + "]" * 5000,
                "2/python,[]",
                "2/python,[1, 2]",
                "2/python,no array at all",
            ):
                fake.send_raw(raw)
            fake.forward_user_input(request["requestId"], [{"type": "text", "text": "Yes."}], None)
            await until(lambda: answers)
    assert answers[0].content == "Yes."
    assert len(fake.auths) == 1  # the socket was never dropped and joined again
    assert "malformed event" in caplog.text


async def test_an_interrupt_ends_the_wait_for_studio_input(fake: FakeStudio) -> None:
    connect_studio(fake.url, project="proj", name="n", run_id="run-3")
    dana = UserAgent("Dana")
    answers = []

    async def ask() -> None:
        answers.append(await dana())

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        await until(lambda: fake.posted("/trpc/requestUserInput"))
        dana.interrupt()
        await until(lambda: answers)
    assert answers[0].metadata == {"_is_interrupted": True}
    assert dana.generate_reason == "interrupted"


async def test_a_studio_that_is_down_costs_a_warning_and_nothing_else(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    caplog.set_level(logging.WARNING, logger="agentscope_rt.studio")
    try:
        connect_studio(url, project="proj", name="n", run_id="run-4")
        ada = talker("Ada", "Still here.", replies=3)
        with anyio.fail_after(30):
            for _ in range(3):
                said = await ada()
        assert said.get_text_content() == "Still here."
        await until(lambda: "Failed to send" in caplog.text)
        # A question nobody can receive fails clearly instead of hanging.
        with anyio.fail_after(60), pytest.raises(AgentError, match="Failed to get user input"):
            await UserAgent("Dana")()
    finally:
        disconnect_studio(timeout=0.1)


async def test_a_slow_studio_never_slows_the_agents() -> None:
    with FakeStudio(slow=True).running() as slow:
        connect_studio(slow.url, project="proj", name="n", run_id="run-5")
        ada = talker("Ada", "Quick words.", replies=20)
        with anyio.fail_after(30):
            for _ in range(20):
                await ada()
        # Studio has not answered a single post, yet every reply is done.
        assert slow.posts == []
        disconnect_studio(timeout=0.1)


async def test_connecting_twice_keeps_one_hook_and_disconnecting_restores_the_terminal(
    fake: FakeStudio,
) -> None:
    connect_studio(fake.url, project="proj", name="n", run_id="run-6")
    connect_studio(fake.url, project="proj", name="n", run_id="run-6")
    ada = talker("Ada", "Once.")
    said = await ada()
    await until(lambda: fake.posted("/trpc/pushMessage"))
    await anyio.sleep(0.2)
    finals = [p for p in fake.posted("/trpc/pushMessage") if p["msg"]["content"] != []]
    assert finals and all(p["replyId"] == said.invocation_id for p in finals)
    assert len(fake.posted("/trpc/registerRun")) == 2
    assert isinstance(UserAgent._input_method, StudioUserInput)
    disconnect_studio()
    assert isinstance(UserAgent._input_method, TerminalUserInput)
    with pytest.raises(ValueError, match="http"):
        connect_studio("localhost:3000", project="p", name="n", run_id="r")


async def test_credentials_in_the_studio_url_stay_out_of_logs_and_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"http://admin:hunter2@127.0.0.1:{free_port()}"
    caplog.set_level(logging.INFO, logger="agentscope_rt.studio")
    try:
        connect_studio(url, project="proj", name="n", run_id="run-7")
        with anyio.fail_after(60), pytest.raises(AgentError) as raised:
            await UserAgent("Dana")()
        await until(lambda: "Failed to send" in caplog.text)
        assert "hunter2" not in str(raised.value)
        assert "hunter2" not in repr(_link(url, "run-7"))
    finally:
        disconnect_studio(timeout=0.1)
    assert "hunter2" not in caplog.text
    assert "127.0.0.1" in caplog.text


def test_a_studio_url_refused_is_named_without_its_credentials() -> None:
    with pytest.raises(ValueError, match="studio_url") as refused:
        connect_studio(
            "ftp://admin:hunter2@127.0.0.1:9/?key=s3cret", project="p", name="n", run_id="r"
        )
    assert "hunter2" not in str(refused.value) and "s3cret" not in str(refused.value)
    assert "127.0.0.1:9" in str(refused.value)
