"""A2A end to end across processes: our server called by our A2AAgent and by a2a-sdk's client,
our A2AAgent calling a2a-sdk's own server, in protocol 1.0 and 0.3, cancellation both ways,
input-required, and a hundred concurrent tasks. The server process runs the same backend as
the test (asyncio or trio)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import aclosing
from typing import Any

import anyio
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)

from agentscope_rt.a2a import A2AAgent, WellKnownAgentCardResolver, card_to_dict
from agentscope_rt.message import Msg

TIMEOUT_S = 60


def _legacy(card: AgentCard) -> dict[str, Any]:
    """The card as a protocol 0.3 server publishes it (no 1.0 interfaces)."""
    data = card_to_dict(card)
    del data["supportedInterfaces"]
    assert data["protocolVersion"].startswith("0.3")
    return data


async def _card(url: str) -> AgentCard:
    return await WellKnownAgentCardResolver(url).get_agent_card()


def _text(msg: Msg) -> str | None:
    return msg.get_text_content()


@pytest.fixture
def our_url(served_url: Callable[[str], str], anyio_backend: str) -> str:
    return served_url(anyio_backend)


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
async def test_our_agent_calls_our_server(our_url: str, protocol: str) -> None:
    card = await _card(our_url)
    agent = A2AAgent(card if protocol == "1.0" else _legacy(card))
    await agent.observe(Msg("alice", "first", "user"))
    with anyio.fail_after(TIMEOUT_S):
        reply = await agent(Msg("bob", "second", "user"))
    # The observed message and the input travel as one A2A message, then are forgotten.
    assert (reply.name, reply.role, _text(reply)) == ("Served", "assistant", "echo: first\nsecond")
    assert agent.state_dict() == {"_observed_msgs": []}


async def _sdk_events(card: AgentCard, text: str, **ids: str) -> list[StreamResponse]:
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        client = ClientFactory(ClientConfig(httpx_client=http)).create(card)
        message = Message(message_id=f"m-{text}", role=Role.ROLE_USER, parts=[Part(text=text)])
        for key, value in ids.items():
            setattr(message, key, value)
        return [event async for event in client.send_message(SendMessageRequest(message=message))]


async def test_sdk_client_streams_a_task_from_our_server(our_url: str) -> None:
    card = await _card(our_url)
    with anyio.fail_after(TIMEOUT_S):
        events = await _sdk_events(card, "hello")
    kinds = [event.WhichOneof("payload") for event in events]
    assert kinds[0] == "task"
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    assert states[0] == TaskState.TASK_STATE_WORKING
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
    final = events[-1].status_update
    assert final.task_id == events[0].task.id
    assert final.status.message.role == Role.ROLE_AGENT
    assert [p.text for p in final.status.message.parts] == ["echo: hello"]


async def test_sdk_client_reads_and_cancels_tasks_on_our_server(our_url: str) -> None:
    card = await _card(our_url)
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        client = ClientFactory(ClientConfig(httpx_client=http)).create(card)
        request = SendMessageRequest(
            message=Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="slow")])
        )
        task_id = ""
        with anyio.fail_after(TIMEOUT_S):
            async with aclosing(client.send_message(request)) as events:
                async for event in events:
                    if event.HasField("task"):
                        task_id = event.task.id
                    message = event.status_update.status.message
                    if message.parts and message.parts[0].text == "working on it":
                        break  # the agent is in its reply
            cancelled = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            # The interrupted reply's answer is the task's status message.
            assert "interrupted" in cancelled.status.message.parts[0].text
            fetched = await client.get_task(GetTaskRequest(id=task_id))
        assert fetched.status.state == TaskState.TASK_STATE_CANCELED
        # The history holds the request and the progress message.
        assert [m.parts[0].text for m in fetched.history][:2] == ["slow", "working on it"]


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
async def test_interrupting_our_agent_cancels_the_task_on_our_server(
    our_url: str, protocol: str
) -> None:
    card = await _card(our_url)
    await _interrupt_cancels_remote_task(card, card if protocol == "1.0" else _legacy(card))


async def test_interrupting_our_agent_cancels_the_task_on_the_sdk_server(sdk_url: str) -> None:
    card = await _card(sdk_url)
    await _interrupt_cancels_remote_task(card, card)


async def _interrupt_cancels_remote_task(card: AgentCard, called: Any) -> None:
    """Interrupt an A2AAgent built from *called* (a card of either version) mid-reply; the
    remote task is then cancelled (read with a 1.0 client from *card*)."""
    seen: list[StreamResponse] = []
    agent = A2AAgent(called, consumers=[lambda event, _card: seen.append(event)])
    working = anyio.Event()

    async def watch(event: StreamResponse, _card: AgentCard) -> None:
        message = event.status_update.status.message
        if message.parts and message.parts[0].text == "working on it":
            working.set()

    agent._consumers.append(watch)
    with anyio.fail_after(TIMEOUT_S):
        async with anyio.create_task_group() as group:
            replies: list[Msg] = []

            async def call() -> None:
                replies.append(await agent(Msg("user", "slow please", "user")))

            group.start_soon(call)
            await working.wait()
            agent.interrupt()
    assert replies[0].metadata == {"_is_interrupted": True}
    # The unanswered input and the notice wait for the next reply, as in AgentScope.
    assert [m.get_text_content() for m in agent._observed_msgs] == [
        "slow please",
        replies[0].get_text_content(),
    ]
    task_id = next(e.task.id for e in seen if e.HasField("task"))
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        client = ClientFactory(ClientConfig(httpx_client=http)).create(card)
        with anyio.fail_after(TIMEOUT_S):
            task = await client.get_task(GetTaskRequest(id=task_id))
    assert task.status.state == TaskState.TASK_STATE_CANCELED


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
async def test_a_user_agent_input_need_becomes_input_required(our_url: str, protocol: str) -> None:
    card = await _card(our_url)
    agent = A2AAgent(card if protocol == "1.0" else _legacy(card))
    with anyio.fail_after(TIMEOUT_S):
        question = await agent(Msg("user", "ask me", "user"))
        assert _text(question) == "Shall I go on?"
        assert agent._waiting_task is not None
        # The next reply continues the same task with the user's answer.
        answer = await agent(Msg("user", "yes", "user"))
    assert _text(answer) == "you said: yes"
    assert agent._waiting_task is None


async def test_sdk_client_answers_input_required(our_url: str) -> None:
    card = await _card(our_url)
    with anyio.fail_after(TIMEOUT_S):
        first = await _sdk_events(card, "ask")
        waiting = first[-1].status_update
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert waiting.status.message.parts[0].text == "Shall I go on?"
        second = await _sdk_events(
            card, "no", task_id=waiting.task_id, context_id=waiting.context_id
        )
    final = second[-1].status_update
    assert (final.task_id, final.status.state) == (waiting.task_id, TaskState.TASK_STATE_COMPLETED)
    assert final.status.message.parts[0].text == "you said: no"


async def test_a_hundred_concurrent_tasks_get_their_own_replies(our_url: str) -> None:
    card = await _card(our_url)
    replies: dict[int, str | None] = {}

    async def ask(index: int) -> None:
        # One A2AAgent per caller: an agent's own calls run one at a time.
        agent = A2AAgent(card)
        reply = await agent(Msg("user", f"task {index}", "user"))
        replies[index] = _text(reply)

    with anyio.fail_after(TIMEOUT_S * 3):
        async with anyio.create_task_group() as group:
            for index in range(100):
                group.start_soon(ask, index)
    assert replies == {index: f"echo: task {index}" for index in range(100)}


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
async def test_our_agent_calls_the_sdk_server(sdk_url: str, protocol: str) -> None:
    card = await _card(sdk_url)
    agent = A2AAgent(card if protocol == "1.0" else _legacy(card))
    with anyio.fail_after(TIMEOUT_S):
        reply = await agent(Msg("user", "hi there", "user"))
    assert (reply.name, _text(reply)) == ("SdkAgent", "sdk echo: hi there")
