"""The studio server without a browser: the token, the event feed, drops instead of waiting,
answers and interrupts through the routes, span trees from the OpenTelemetry SDK, and the hub
membership observer it is fed by."""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider

from agentscope_rt import _intercept
from agentscope_rt.agent import AgentBase, ReActAgent, UserAgent
from agentscope_rt.exception import AgentError
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.pipeline import MsgHub, add_hub_observer, remove_hub_observer
from agentscope_rt.studio import MAX_BODY_BYTES, Studio, serve
from agentscope_rt.studio import _server as studio_server
from agentscope_rt.studio._agents import STATES, AgentRegistry
from agentscope_rt.studio._state import EventBus, StudioState

VOTE = {
    "type": "object",
    "properties": {"vote": {"type": "string", "enum": ["for", "against"]}},
    "required": ["vote"],
}


def talker(name: str, text: str, replies: int = 1) -> ReActAgent:
    return ReActAgent(
        name=name,
        sys_prompt="Talk.",
        model=ScriptedChatModel([text] * replies, stream=True),
        formatter=OpenAIChatFormatter(),
    )


async def settle(studio: Studio) -> None:
    """Let the fan-out task apply what was published (it runs in this loop)."""
    for _ in range(20):
        await anyio.lowlevel.checkpoint()


async def test_no_token_no_data_and_the_token_stays_out_of_the_repr() -> None:
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        for path in ("/", "/events", "/api/state"):
            assert (await client.get(path)).status_code == 403
            assert (await client.get(path, params={"token": "nope"})).status_code == 403
        post = await client.post("/api/interrupt", json={"agent_id": "x"})
        assert post.status_code == 403
        page = await client.get("/", params={"token": studio.token})
        assert page.status_code == 200 and "EventSource" in page.text
        state = await client.get("/api/state", headers={"X-Studio-Token": studio.token})
        assert state.status_code == 200
        assert studio.token in studio.url and studio.url.startswith("http://127.0.0.1:")
        assert studio.token not in repr(studio)


async def test_a_page_gets_a_snapshot_then_every_chunk_and_membership_change() -> None:
    ada = talker("Ada", "Bicycles win on short trips.")
    brook = talker("Brook", "Cars matter.")
    received: list[dict[str, Any]] = []
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        studio.watch(ada)
        await settle(studio)
        async with client.stream("GET", "/events", params={"token": studio.token}) as stream:
            lines = stream.aiter_lines()

            async def next_event() -> dict[str, Any]:
                async for line in lines:
                    if line.startswith("data: "):
                        return dict(json.loads(line[6:]))
                raise AssertionError("the stream ended")

            snapshot = await next_event()
            assert snapshot["type"] == "snapshot"
            agents = await client.get("/api/agents", params={"token": studio.token})
            assert [a["name"] for a in agents.json()["items"]] == ["Ada"]
            async with MsgHub([ada], name="debate") as hub:
                hub.add(brook)
                said = await ada()
                hub.delete(brook)

            def seen_all() -> bool:
                hub_exited = any(
                    e.get("kind") == "hub" and e["data"]["event"] == "exit" for e in received
                )
                return hub_exited and _totals(received).get("replies") == 1

            with anyio.fail_after(30):
                while not seen_all():
                    received.append(await next_event())
    chunks = [e["data"] for e in received if e["kind"] == "msg" and e["key"] == said.id]
    assert len(chunks) > 1, "a streamed reply arrives chunk by chunk"
    assert [c["last"] for c in chunks][-1] is True and not chunks[0]["last"]
    assert chunks[-1]["content"] == [{"type": "text", "text": "Bicycles win on short trips."}]
    assert chunks[-1]["reply_id"] == said.invocation_id
    hubs = [
        (e["data"]["event"], e["data"]["count"], [m["name"] for m in e["data"]["members"]])
        for e in received
        if e["kind"] == "hub"
    ]
    assert hubs == [
        ("enter", 1, ["Ada"]),
        ("add", 2, ["Ada", "Brook"]),
        ("delete", 1, ["Ada"]),
        ("exit", 0, []),
    ]
    totals = _totals(received)
    assert totals["agents"] == 2 and totals["states"]["idle"] == 2
    assert totals["messages"] == 1 and totals["model_calls"] == 1


def _totals(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The last totals among *events* (``{}`` when none came)."""
    found = [e["data"] for e in events if e.get("kind") == "stats" and e["key"] == "totals"]
    return found[-1] if found else {}


async def test_a_page_that_does_not_read_loses_events_not_time_and_then_gets_a_snapshot() -> None:
    bus = EventBus(StudioState(), page_buffer=5, intake_size=50)
    feed = bus.feed()
    async with anyio.create_task_group() as tg:
        tg.start_soon(bus.run)
        [first] = map(json.loads, await feed.__anext__())
        assert first["type"] == "snapshot"
        for round_ in range(4):
            for n in range(40):  # never waits: publish is send_nowait
                bus.publish("msg", f"m{round_}-{n}", {"key": f"m{round_}-{n}", "n": n})
            await anyio.sleep(0.01)
        assert bus.page_dropped > 0
        assert bus.dropped == 0
        [again] = map(json.loads, await feed.__anext__())
        assert again["type"] == "snapshot"
        assert len(again["entities"]["msg"]) == 160
        assert again["entities"]["stats"][0]["pages"] == bus.page_dropped
        # Observers faster than the fan-out: the intake drops and counts too.
        for n in range(200):
            bus.publish("msg", f"burst-{n}", {"key": f"burst-{n}"})
        # 50 fit the intake (one more may go straight to the waiting fan-out task).
        assert bus.dropped in (149, 150)
        bus.close()
    await feed.aclose()


async def test_the_person_answers_a_user_agent_and_bad_fields_are_refused() -> None:
    dana = UserAgent("Dana")
    answers: list[Msg] = []
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        dana.override_instance_input_method(studio.user_input)
        params = {"token": studio.token}

        async def ask() -> None:
            answers.append(await dana(structured_model=VOTE))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            with anyio.fail_after(30):
                while not studio.user_input.requests:  # noqa: ASYNC110 (no event to await)
                    await anyio.sleep(0.01)
            [request_id] = studio.user_input.requests
            waiting = await client.get("/api/agents", params={**params, "state": "waiting"})
            [agent_data] = waiting.json()["items"]
            assert agent_data["name"] == "Dana" and agent_data["state"] == "waiting"
            assert agent_data["input"] == {"request_id": request_id, "schema": VOTE}
            bad = await client.post(
                "/api/input",
                params=params,
                json={"request_id": request_id, "text": "hm", "structured": {"vote": "maybe"}},
            )
            assert bad.status_code == 422 and "vote" in bad.json()["error"]
            missing = await client.post(
                "/api/input", params=params, json={"request_id": "nope", "text": "x"}
            )
            assert missing.status_code == 404
            assert (await client.post("/api/input", params=params, json=[1])).status_code == 400
            assert not answers
            good = await client.post(
                "/api/input",
                params=params,
                json={"request_id": request_id, "text": "Yes.", "structured": {"vote": "for"}},
            )
            assert good.status_code == 200
        [agent_data] = (await client.get("/api/agents", params=params)).json()["items"]
        assert agent_data["input"] is None and agent_data["state"] == "idle"
    assert answers[0].content == "Yes." and answers[0].metadata == {"vote": "for"}


async def test_of_two_answers_posted_at_once_only_the_first_counts() -> None:
    dana = UserAgent("Dana")
    answers: list[Msg] = []
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        dana.override_instance_input_method(studio.user_input)
        params = {"token": studio.token}

        async def ask() -> None:
            answers.append(await dana())

        responses: dict[str, httpx.Response] = {}

        async def post(text: str, request_id: str) -> None:
            responses[text] = await client.post(
                "/api/input", params=params, json={"request_id": request_id, "text": text}
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            with anyio.fail_after(30):
                while not studio.user_input.requests:  # noqa: ASYNC110 (no event to await)
                    await anyio.sleep(0.01)
            [request_id] = studio.user_input.requests
            async with anyio.create_task_group() as posts:
                posts.start_soon(post, "first", request_id)
                posts.start_soon(post, "second", request_id)
        statuses = sorted(r.status_code for r in responses.values())
        assert statuses == [200, 409], statuses
        [kept] = [text for text, r in responses.items() if r.status_code == 200]
        [refused] = [r for r in responses.values() if r.status_code == 409]
        assert "already answered" in refused.json()["error"]
        assert [m.content for m in answers] == [kept]
        # Later still, the question is known to have been answered.
        late = await client.post(
            "/api/input", params=params, json={"request_id": request_id, "text": "late"}
        )
        assert late.status_code == 409 and "already answered" in late.json()["error"]


async def test_bad_bodies_are_refused_with_4xx_never_500() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        params = {"token": studio.token}
        for route in ("/api/input", "/api/interrupt"):

            async def send(body: bytes, route: str = route) -> httpx.Response:
                return await client.post(
                    route, params=params, content=body, headers={"content-type": "application/json"}
                )

            too_deep = await send(deep)
            assert too_deep.status_code == 400 and "deeper" in too_deep.json()["error"]
            one_past = await send(b"[" * 201 + b"]" * 201)
            assert one_past.status_code == 400 and "200" in one_past.json()["error"]
            huge = await send(b'{"text": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}')
            assert huge.status_code == 413 and "larger" in huge.json()["error"]

            # No content-length announced: the studio stops reading at the limit and answers.
            answer_head = await _chunked_past_the_limit(studio, route)
            assert answer_head.startswith(b"HTTP/1.1 413"), answer_head[:100]
            for bad in (b"", b"{", b"\xff\xfe", b'{"a": NaN}', b"[1]", b'{"request_id": 1}'):
                answer = await send(bad)
                assert answer.status_code == 400, (route, bad, answer.status_code)
                assert "error" in answer.json()
            assert (await send(b'{"request_id": "x", "agent_id": "x"}')).status_code == 404


async def _chunked_past_the_limit(studio: Studio, route: str) -> bytes:
    """POST a chunked body longer than MAX_BODY_BYTES on a raw connection, sending until the
    studio answers (it may close the connection on the rest: an HTTP client that insists on
    sending it all would see a reset instead of the answer); the answer's head."""
    head = (
        f"POST {route}?token={studio.token} HTTP/1.1\r\nHost: studio\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
    answer = b""
    with anyio.fail_after(30):
        async with await anyio.connect_tcp("127.0.0.1", studio.port) as stream:

            async def send_all() -> None:
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await stream.send(head)
                    for _ in range(MAX_BODY_BYTES // 65536 + 2):
                        await stream.send(chunk)

            async with anyio.create_task_group() as tg:
                tg.start_soon(send_all)
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                    while b"\r\n\r\n" not in answer:
                        answer += await stream.receive()
                tg.cancel_scope.cancel()
    return answer


async def test_a_body_that_stops_arriving_is_answered_408(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(studio_server, "BODY_READ_SECONDS", 0.2)
    async with serve() as studio:
        with anyio.fail_after(30):
            async with await anyio.connect_tcp("127.0.0.1", studio.port) as stream:
                await stream.send(
                    f"POST /api/input?token={studio.token} HTTP/1.1\r\nHost: studio\r\n"
                    "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
                )
                answer = b""
                while b"\r\n\r\n" not in answer:
                    answer += await stream.receive()
    assert answer.startswith(b"HTTP/1.1 408")


async def test_the_state_route_answers_strict_json_whatever_the_spans_hold() -> None:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        provider = TracerProvider()
        provider.add_span_processor(studio.span_processor)
        tracer = provider.get_tracer("test")
        with tracer.start_as_current_span("odd") as span:
            span.set_attribute("gen_ai.usage.ratio", float("nan"))
            span.set_attribute("agentscope.score", float("inf"))
        await settle(studio)
        state = await client.get("/api/state", params={"token": studio.token})
        assert state.status_code == 200
        [odd] = json.loads(state.text, parse_constant=refuse)["entities"]["span"]
        assert odd["attributes"] == {"gen_ai.usage.ratio": "nan", "agentscope.score": "inf"}
        provider.shutdown()


async def test_the_interrupt_route_interrupts_the_replying_agent() -> None:
    dana = UserAgent("Dana")
    answers: list[Msg] = []
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        dana.override_instance_input_method(studio.user_input)
        params = {"token": studio.token}

        async def ask() -> None:
            answers.append(await dana())

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            with anyio.fail_after(30):
                while not studio.user_input.requests:  # noqa: ASYNC110 (no event to await)
                    await anyio.sleep(0.01)
            unknown = await client.post("/api/interrupt", params=params, json={"agent_id": "x"})
            assert unknown.status_code == 404
            bad = await client.post("/api/interrupt", params=params, json={})
            assert bad.status_code == 400
            ok = await client.post("/api/interrupt", params=params, json={"agent_id": dana.id})
            assert ok.status_code == 200
        [shown] = (await client.get("/api/agents", params=params)).json()["items"]
        assert shown["state"] == "interrupted"
    assert answers[0].metadata == {"_is_interrupted": True}


async def test_a_question_still_open_when_the_studio_closes_fails_clearly() -> None:
    dana = UserAgent("Dana")
    errors: list[BaseException] = []

    async def ask() -> None:
        try:
            await dana()
        except AgentError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg, serve() as studio:
        dana.override_instance_input_method(studio.user_input)
        tg.start_soon(ask)
        with anyio.fail_after(30):
            while not studio.user_input.requests:  # noqa: ASYNC110 (no event to await)
                await anyio.sleep(0.01)
    assert "Dana" in str(errors[0])
    with pytest.raises(AgentError, match="closed"):
        await studio.user_input("id", "Dana")


async def test_spans_make_a_tree_with_latencies_also_from_worker_threads() -> None:
    ada = talker("Ada", "Hi.")
    provider = TracerProvider()
    tracer = provider.get_tracer("test")
    async with serve() as studio:
        provider.add_span_processor(studio.span_processor)
        studio.watch(ada)
        with tracer.start_as_current_span(
            "invoke_agent Ada", attributes={"gen_ai.agent.id": ada.id, "gen_ai.agent.name": "Ada"}
        ) as root:
            with tracer.start_as_current_span("chat scripted"):
                pass

            def in_thread() -> None:
                with tracer.start_as_current_span("execute_tool slow_tool"):
                    pass

            await anyio.to_thread.run_sync(in_thread)
        await settle(studio)
        spans = {s["name"]: s for s in studio.bus.state.entities["span"].values()}
    provider.shutdown()
    root_id = format(root.get_span_context().span_id, "016x")
    assert spans["invoke_agent Ada"]["parent_id"] is None
    assert spans["chat scripted"]["parent_id"] == root_id
    assert spans["execute_tool slow_tool"]["parent_id"] == root_id
    assert all(s["duration_ms"] is not None and s["duration_ms"] >= 0 for s in spans.values())
    assert spans["invoke_agent Ada"]["agent_id"] == ada.id
    assert spans["invoke_agent Ada"]["attributes"]["gen_ai.agent.name"] == "Ada"


def _studio_watches() -> dict[str, int]:
    counts = {
        kind: sum("studio" in repr(item) for item in items)
        for kind, items in _intercept.installed().items()
    }
    return {kind: count for kind, count in counts.items() if count}


async def test_the_studio_intercepts_only_while_a_studio_is_open() -> None:
    assert not any(_studio_watches().values())
    async with serve():
        async with serve():
            # Each studio watches replies itself; the detail observers are shared.
            assert _studio_watches() == {"reply": 2, "print": 1, "reasoning": 1, "acting": 1}
        assert _studio_watches() == dict.fromkeys(("reply", "print", "reasoning", "acting"), 1)
    assert not any(_studio_watches().values())


async def test_without_span_trees_the_runtime_s_tracing_stays_as_it_was() -> None:
    from agentscope_rt import tracing

    before = tracing.is_tracing_enabled()
    async with serve(spans=False) as studio:
        assert tracing.is_tracing_enabled() == before
        await talker("Ada", "hello")()
        await settle(studio)
        assert not studio.bus.state.entities["span"]
        assert [m["agent_name"] for m in studio.bus.state.entities["msg"].values()] == ["Ada"]


async def test_clearing_class_hooks_does_not_blind_the_studio() -> None:
    ada = talker("Ada", "hello")
    async with serve() as studio:
        studio.watch(ada)
        AgentBase.clear_class_hooks()
        await ada(Msg("user", "hi", "user"))
        await settle(studio)
        printed = studio.bus.state.entities["msg"].values()
        assert [m["agent_name"] for m in printed] == ["Ada"]
        assert studio.observer.agents.state(ada.id) == STATES.index("idle")


async def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="token"):
        async with serve(token=""):
            pass
    with pytest.raises(ValueError, match="page_buffer"):
        async with serve(page_buffer=0):
            pass
    async with serve() as studio:
        with pytest.raises(TypeError, match="agents"):
            studio.watch("Ada")  # type: ignore[arg-type]


async def test_hub_observers_see_membership_changes_and_cannot_break_a_hub(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[tuple[str, str, list[str]]] = []

    def observer(hub: MsgHub, event: str) -> None:
        seen.append((hub.name, event, [a.name for a in hub.participants]))  # type: ignore[attr-defined]

    def broken(hub: MsgHub, event: str) -> None:
        raise RuntimeError("observer bug")

    ada, brook = talker("Ada", "a"), talker("Brook", "b")
    add_hub_observer(observer)
    add_hub_observer(observer)  # once only
    add_hub_observer(broken)
    try:
        with caplog.at_level(logging.ERROR, logger="agentscope_rt.pipeline"):
            async with MsgHub([ada], name="h") as hub:
                hub.add(brook)
                hub.delete(ada)
    finally:
        remove_hub_observer(observer)
        remove_hub_observer(broken)
    async with MsgHub([ada], name="after"):
        pass
    assert seen == [
        ("h", "enter", ["Ada"]),
        ("h", "add", ["Ada", "Brook"]),
        ("h", "delete", ["Brook"]),
        ("h", "exit", []),
    ]
    assert "observer bug" in caplog.text
    with pytest.raises(TypeError, match="callable"):
        add_hub_observer("nope")  # type: ignore[arg-type]


async def test_bookkeeping_of_agents_that_are_gone_is_bounded() -> None:
    import gc

    async with serve() as studio:
        for n in range(2_500):
            studio.watch(UserAgent(f"u{n}"))  # each one is garbage right after
        gc.collect()
        last = UserAgent("last")
        studio.watch(last)
        assert len(studio.observer.agents) == 1
        assert studio.observer.totals()["states"] == {
            "idle": 1,
            "replying": 0,
            "interrupted": 0,
            "waiting": 0,
        }


async def test_the_block_s_own_error_comes_out_unwrapped() -> None:
    with pytest.raises(ZeroDivisionError):
        async with serve():
            1 / 0  # noqa: B018


async def test_a_reply_that_raised_is_shown_as_ended() -> None:
    class Failing(AgentBase):
        name = "Flaky"

        async def reply(self, *args: Any, **kwargs: Any) -> Msg:
            raise RuntimeError("model down")

        async def observe(self, msg: Msg | list[Msg] | None) -> None:
            return None

    flaky = Failing()
    async with serve(spans=False) as studio:
        with pytest.raises(RuntimeError):
            await flaky()
        # Ended by the studio's reply observer itself, with no span and no later check.
        assert studio.observer.agents.state(flaky.id) == STATES.index("idle")
        assert studio.observer.replies == 1


async def test_a_reply_through_super_counts_once_as_do_replies_from_many_tasks() -> None:
    class Said(AgentBase):
        name = "Said"

        async def reply(self, *args: Any, **kwargs: Any) -> Msg:
            await anyio.lowlevel.checkpoint()
            return Msg(self.name, "said", "assistant")

        async def observe(self, msg: Msg | list[Msg] | None) -> None:
            return None

    class Repeated(Said):
        async def reply(self, *args: Any, **kwargs: Any) -> Msg:
            said = await super().reply(*args, **kwargs)
            return Msg(self.name, f"{said.content} again", "assistant")

    agents = [Repeated() for _ in range(20)]
    async with serve(spans=False) as studio:
        async with anyio.create_task_group() as tg:
            for agent in agents:
                tg.start_soon(agent)
        assert studio.observer.replies == 20
        assert studio.observer.agents.counts[STATES.index("idle")] == 20


async def test_several_open_pages_each_get_every_event() -> None:
    ada = talker("Ada", "Hello both.")
    async with serve() as studio, httpx.AsyncClient(base_url=studio.base_url) as client:
        params = {"token": studio.token}
        async with (
            client.stream("GET", "/events", params=params) as first,
            client.stream("GET", "/events", params=params) as second,
        ):
            pages = [first.aiter_lines(), second.aiter_lines()]
            for lines in pages:  # each page's snapshot
                async for line in lines:
                    if line.startswith("data: "):
                        assert json.loads(line[6:])["type"] == "snapshot"
                        break
            said = await ada()
            for lines in pages:
                with anyio.fail_after(30):
                    async for line in lines:
                        if not line.startswith("data: "):
                            continue
                        event = json.loads(line[6:])
                        if event.get("kind") == "msg" and event["data"]["last"]:
                            assert event["key"] == said.id
                            break
        with anyio.fail_after(30):  # the server notices both pages closing
            while studio.bus.pages:  # noqa: ASYNC110 (the server's tasks change it)
                await anyio.sleep(0.01)


async def test_the_feed_goes_on_when_keepalives_are_due_more_often_than_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A keepalive deadline shorter than the pause between two writes never ends the feed.
    monkeypatch.setattr(studio_server, "KEEPALIVE_SECONDS", studio_server.GATHER_SECONDS / 5)
    ada = talker("Ada", "Hello.", replies=3)
    async with (
        serve(spans=False) as studio,
        httpx.AsyncClient(base_url=studio.base_url) as client,
        client.stream("GET", "/events", params={"token": studio.token}) as stream,
    ):
        lines = stream.aiter_lines()
        for _ in range(3):
            said = await ada()
            shown = False
            with anyio.fail_after(30):
                async for line in lines:
                    if line.startswith("data: ") and said.id in line and '"last": true' in line:
                        shown = True
                        break
            assert shown, "the feed ended"


async def test_a_failing_studio_never_breaks_a_reply(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: AgentRegistry, *args: Any) -> None:
        raise RuntimeError("the registry is broken")

    async with serve():
        monkeypatch.setattr(AgentRegistry, "started", broken)
        monkeypatch.setattr(AgentRegistry, "ended", broken)
        with caplog.at_level(logging.ERROR, "agentscope_rt"):
            reply = await talker("Ada", "hello")()
    assert reply.get_text_content() == "hello"
    failed = [r.getMessage() for r in caplog.records if r.exc_info]
    assert failed == [
        "<the studio's observer of replies> failed in before; the call it watches carries on",
        "<the studio's observer of replies> failed in after; the call it watches carries on",
    ]
