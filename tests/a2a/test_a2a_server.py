"""A2AServer in this process, on both backends: the JSON-RPC answers of protocol 1.0 and 0.3,
errors for bad requests, agents per context, failing replies."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

from agentscope_rt.a2a import A2AAgent, A2AServer, A2AUserInput, WellKnownAgentCardResolver
from agentscope_rt.agent import AgentBase
from agentscope_rt.exception import A2AError
from agentscope_rt.message import Msg

TIMEOUT_S = 30


class Counter(AgentBase):
    """Answers with its own name and how many replies it gave; fails on "boom"."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.replies = 0

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        assert isinstance(msg, Msg)
        if msg.get_text_content() == "boom":
            raise RuntimeError("the reply broke")
        self.replies += 1
        return Msg(self.name, f"{self.name} #{self.replies}", "assistant")


async def _serve(server: A2AServer) -> AsyncIterator[str]:
    async with anyio.create_task_group() as group:
        url = await group.start(server.serve)
        yield url
        group.cancel_scope.cancel()


@pytest.fixture
async def url() -> AsyncIterator[str]:
    async for address in _serve(A2AServer(Counter("Counter"))):
        yield address


async def _rpc(url: str, body: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        response = await http.post(
            url,
            content=body if isinstance(body, bytes) else None,
            json=None if isinstance(body, bytes) else body,
        )
        data: dict[str, Any] = response.json()
        return data


def _send(method: str, text: str, **message: Any) -> dict[str, Any]:
    if "/" in method:  # protocol 0.3
        msg = {
            "kind": "message",
            "messageId": "m",
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
            **message,
        }
    else:
        msg = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}], **message}
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": msg}}


async def test_the_card_serves_both_protocol_versions(url: str) -> None:
    async with httpx.AsyncClient() as http:
        card = (await http.get(url + ".well-known/agent-card.json")).json()
    assert card["name"] == "Counter"
    assert {(i["url"], i["protocolVersion"]) for i in card["supportedInterfaces"]} == {
        (url, "1.0"),
        (url, "0.3"),
    }
    # Protocol 0.3's fields, for AgentScope's a2a-sdk 0.3 clients.
    assert card["url"] == url and card["protocolVersion"].startswith("0.3")


async def test_send_message_answers_in_the_request_s_protocol(url: str) -> None:
    with anyio.fail_after(TIMEOUT_S):
        v10 = await _rpc(url, _send("SendMessage", "hi"))
        v03 = await _rpc(url, _send("message/send", "hi"))
    task = v10["result"]["task"]
    assert v10["id"] == 7
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["status"]["message"]["parts"] == [{"text": "Counter #1"}]
    legacy = v03["result"]
    assert (legacy["kind"], legacy["status"]["state"]) == ("task", "completed")
    assert legacy["status"]["message"]["parts"] == [{"kind": "text", "text": "Counter #2"}]
    with anyio.fail_after(TIMEOUT_S):
        fetched = await _rpc(
            url, {"jsonrpc": "2.0", "id": 8, "method": "tasks/get", "params": {"id": legacy["id"]}}
        )
    assert fetched["result"]["status"]["state"] == "completed"


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        ([1, 2], -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": "Nope"}, -32601),
        ({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 3}}, -32602),
        ({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {}}}, -32602),
        ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "missing"}}, -32001),
        ({"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"id": "x"}}, -32001),
    ],
)
async def test_bad_requests_get_json_rpc_errors(url: str, body: Any, code: int) -> None:
    with anyio.fail_after(TIMEOUT_S):
        answer = await _rpc(url, body)
    assert answer["error"]["code"] == code
    assert answer["error"]["message"]
    # The answer names the request it answers, when the request had an id to name.
    assert answer["id"] == (body.get("id") if isinstance(body, dict) else None)


async def test_an_ended_task_takes_no_message_and_cannot_be_cancelled(url: str) -> None:
    with anyio.fail_after(TIMEOUT_S):
        task = (await _rpc(url, _send("SendMessage", "hi")))["result"]["task"]
        again = await _rpc(url, _send("SendMessage", "more", taskId=task["id"]))
        cancel = await _rpc(
            url, {"jsonrpc": "2.0", "id": 2, "method": "CancelTask", "params": {"id": task["id"]}}
        )
    assert again["error"]["code"] == -32004
    assert cancel["error"]["code"] == -32002


async def test_a_message_without_parts_is_refused(url: str) -> None:
    body = _send("SendMessage", "x")
    body["params"]["message"]["parts"] = []
    with anyio.fail_after(TIMEOUT_S):
        answer = await _rpc(url, body)
    assert answer["error"]["code"] == -32602


async def test_a_failing_reply_fails_the_task_with_the_error(url: str) -> None:
    with anyio.fail_after(TIMEOUT_S):
        task = (await _rpc(url, _send("SendMessage", "boom")))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["parts"][0]["text"] == (
        "The agent failed: RuntimeError: the reply broke"
    )


async def test_a_factory_gives_each_context_its_own_agent() -> None:
    made: list[str] = []

    def factory(context_id: str) -> Counter:
        made.append(context_id)
        return Counter(f"C{len(made)}")

    async for url in _serve(A2AServer(factory, description="counters")):
        with anyio.fail_after(TIMEOUT_S):
            a1 = await _rpc(url, _send("SendMessage", "x", contextId="a"))
            b1 = await _rpc(url, _send("SendMessage", "x", contextId="b"))
            a2 = await _rpc(url, _send("SendMessage", "x", contextId="a"))
        texts = [r["result"]["task"]["status"]["message"]["parts"][0]["text"] for r in (a1, b1, a2)]
        assert texts == ["C1 #1", "C2 #1", "C1 #2"]
        assert made == ["a", "b"]


async def test_our_agent_gets_the_failure_as_the_reply(url: str) -> None:
    agent = A2AAgent(await _rpc_card(url))
    with anyio.fail_after(TIMEOUT_S):
        reply = await agent(Msg("user", "boom", "user"))
    assert reply.get_text_content() == "The agent failed: RuntimeError: the reply broke"


async def _rpc_card(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        card: dict[str, Any] = (await http.get(url + ".well-known/agent-card.json")).json()
        return card


async def test_a2a_user_input_outside_a_served_task_is_an_error() -> None:
    with pytest.raises(A2AError, match="no task served by A2AServer"):
        await A2AUserInput()(agent_id="a", agent_name="user")


def test_the_server_refuses_what_is_not_an_agent() -> None:
    with pytest.raises(TypeError, match="AgentBase or a callable"):
        A2AServer(42)  # type: ignore[arg-type]


class Sleeper(AgentBase):
    """Prints that it started, then waits until interrupted."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "Sleeper"
        self.started = 0

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        self.started += 1
        await self.print(Msg(self.name, "started", "assistant"))
        await anyio.sleep_forever()
        raise AssertionError("not reached")


def _call(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 3, "method": method, "params": params}


async def test_cancel_a_waiting_task_then_a_running_one_seen_by_a_subscriber() -> None:
    sleeper = Sleeper()
    async for url in _serve(A2AServer(sleeper)):
        with anyio.fail_after(TIMEOUT_S):
            first, second = await _start_two(url)
            # The second task waits for the agent the first one holds.
            assert second["status"]["state"] == "TASK_STATE_SUBMITTED"
            cancelled = await _rpc(url, _call("CancelTask", id=second["id"]))
            assert cancelled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
            assert "message" not in cancelled["result"]["status"]

            async with (
                httpx.AsyncClient(timeout=TIMEOUT_S) as http,
                http.stream("POST", url, json=_call("SubscribeToTask", id=first["id"])) as stream,
            ):
                lines = stream.aiter_lines()
                head = await anext(lines)
                assert '"task"' in head and first["id"] in head
                await _rpc(url, _call("CancelTask", id=first["id"]))
                rest = [line async for line in lines if line.startswith("data:")]
            assert "TASK_STATE_CANCELED" in rest[-1]
            assert "interrupted" in rest[-1]
        assert sleeper.started == 1


def _immediately(body: dict[str, Any]) -> dict[str, Any]:
    body["params"]["configuration"] = {"returnImmediately": True}
    return body


async def _start_two(url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    first = (await _rpc(url, _immediately(_send("SendMessage", "one"))))["result"]["task"]
    second = (await _rpc(url, _immediately(_send("SendMessage", "two"))))["result"]["task"]
    return first, second


class Printer(AgentBase):
    """Prints its reply before returning it, as a ReActAgent does."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "Printer"

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        assert isinstance(msg, Msg)
        await self.print(Msg(self.name, "thinking it over", "assistant"))
        answer = Msg(self.name, f"said: {msg.get_text_content()}", "assistant")
        await self.print(answer)
        return answer


@pytest.fixture
async def printer_url() -> AsyncIterator[str]:
    async for address in _serve(A2AServer(Printer())):
        yield address


async def test_a_printed_reply_is_streamed_once(printer_url: str) -> None:
    card = await WellKnownAgentCardResolver(printer_url).get_agent_card()
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        client = ClientFactory(ClientConfig(httpx_client=http)).create(card)
        request = SendMessageRequest(
            message=Message(message_id="m", role=Role.ROLE_USER, parts=[Part(text="hi")])
        )
        with anyio.fail_after(TIMEOUT_S):
            events = [event async for event in client.send_message(request)]
            updates = [e.status_update for e in events if e.HasField("status_update")]
            texts = [[p.text for p in u.status.message.parts] for u in updates]
            assert texts == [[], ["thinking it over"], ["said: hi"], []]
            assert updates[-1].status.state == TaskState.TASK_STATE_COMPLETED
            # The task itself still ends with the reply as its status message.
            task = await client.get_task(GetTaskRequest(id=updates[-1].task_id))
    assert task.status.message.parts[0].text == "said: hi"


def _agentscope_python() -> str | None:
    """An interpreter with AgentScope 1.x and a2a-sdk 0.3 installed ($AGENTSCOPE_PYTHON)."""
    path = os.environ.get("AGENTSCOPE_PYTHON", "")
    if not path or not os.path.exists(path):
        return None
    probe = subprocess.run([path, "-c", "import agentscope, a2a"], capture_output=True)
    return path if probe.returncode == 0 else None


async def test_agentscope_s_own_client_prints_our_reply_once(printer_url: str) -> None:
    python = _agentscope_python()
    if python is None:
        pytest.skip(
            "set AGENTSCOPE_PYTHON to an interpreter with agentscope==1.0.21 and a2a-sdk "
            "(bench/_agentscope_env.py makes one) to run AgentScope's own client against ours"
        )
    script = str(Path(__file__).with_name("_agentscope_client.py"))
    with anyio.fail_after(TIMEOUT_S * 2):
        done = await anyio.run_process([python, script, printer_url, "hi"])
    result = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert result == {"reply": "said: hi", "printed": ["thinking it over", "said: hi"]}
