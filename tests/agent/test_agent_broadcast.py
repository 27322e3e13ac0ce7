"""Broadcasting replies through hub links and plain subscribers."""

from __future__ import annotations

import logging
from collections.abc import Awaitable

import anyio
import pytest

from agentscope_rt.agent import AgentBase, HubLink
from agentscope_rt.message import Msg, TextBlock, ThinkingBlock

from ._support import EchoAgent, FakeHubLink


def user(text: str = "hi") -> Msg:
    return Msg("user", text, "user")


def test_fake_link_satisfies_protocol() -> None:
    assert isinstance(FakeHubLink([]), HubLink)


class _DeliverOnlyLink:
    def recipients(self, sender: object) -> list[object]:
        return []

    async def deliver(self, sender: object, msg: Msg, recipients: object) -> None:
        return None


def test_a_link_without_publish_is_not_a_hub_link() -> None:
    # The single-link broadcast calls publish unconditionally: the protocol says so.
    assert not isinstance(_DeliverOnlyLink(), HubLink)


async def test_an_only_link_is_published_to() -> None:
    published: list[Msg] = []

    class CountingLink(FakeHubLink):
        def publish(self, sender: AgentBase, msg: Msg) -> Awaitable[None]:
            published.append(msg)
            return super().publish(sender, msg)

    sender, a = EchoAgent("s"), EchoAgent("a")
    sender._attach_hub("hub", CountingLink([sender, a]))
    reply = await sender(user())
    assert [m.id for m in published] == [reply.id]
    assert [m.id for m in a.observed] == [reply.id]  # type: ignore[union-attr]


async def test_every_member_observes_once_across_two_links() -> None:
    sender, a, b, c = (EchoAgent(n) for n in "sabc")
    first = FakeHubLink([sender, a, b])
    second = FakeHubLink([a, sender, c, b])
    sender._attach_hub("one", first)
    sender._attach_hub("two", second)
    sender.reset_subscribers("plain", [sender, a, c])
    plain_only = EchoAgent("d")
    sender.reset_subscribers("plain2", [plain_only, b])

    reply = await sender(user("x"))
    for agent in (a, b, c, plain_only):
        assert len(agent.observed) == 1, agent.name
        assert agent.observed[0].id == reply.id  # type: ignore[union-attr]
    assert sender.observed == []
    assert [[r.name for r in rec] for _, _, rec in first.deliveries] == [["a", "b"]]
    assert [[r.name for r in rec] for _, _, rec in second.deliveries] == [["c"]]


async def test_link_without_new_recipients_is_not_called() -> None:
    sender, a = EchoAgent("s"), EchoAgent("a")
    first, second = FakeHubLink([sender, a]), FakeHubLink([sender, a])
    sender._attach_hub("one", first)
    sender._attach_hub("two", second)
    await sender(user())
    assert len(first.deliveries) == 1 and second.deliveries == []
    assert len(a.observed) == 1


async def test_call_returns_after_every_subscriber_observed() -> None:
    sender = EchoAgent("s")
    members = [EchoAgent(f"m{i}") for i in range(5)]
    sender._attach_hub("hub", FakeHubLink([sender, *members], delay=0.05))
    await sender(user())
    assert all(len(m.observed) == 1 for m in members)


async def test_thinking_blocks_are_stripped_from_a_copy() -> None:
    class Thinker(EchoAgent):
        async def reply(self, msg: Msg | None = None, suffix: str = "") -> Msg:
            return Msg(
                self.name,
                [ThinkingBlock(thinking="secret"), TextBlock(text="public")],
                "assistant",
            )

    sender, listener, plain = Thinker("t"), EchoAgent("l"), EchoAgent("p")
    sender._attach_hub("hub", FakeHubLink([sender, listener]))
    sender.reset_subscribers("hub2", [plain])
    reply = await sender(user())
    assert reply.has_content_blocks("thinking")
    for agent in (listener, plain):
        heard = agent.observed[0]
        assert isinstance(heard, Msg)
        assert heard.id == reply.id and heard is not reply
        assert heard.get_content_blocks() == [TextBlock(text="public")]


async def test_message_without_thinking_is_shared_not_copied() -> None:
    sender, listener = EchoAgent("s"), EchoAgent("l")
    sender.reset_subscribers("hub", [listener])
    reply = await sender(user())
    assert listener.observed[0] is reply


async def test_detach_and_remove_stop_delivery(caplog: pytest.LogCaptureFixture) -> None:
    sender, a, b = EchoAgent("s"), EchoAgent("a"), EchoAgent("b")
    sender._attach_hub("hub", FakeHubLink([sender, a]))
    sender.reset_subscribers("plain", [b])
    sender._detach_hub("hub")
    sender._detach_hub("hub")
    sender.remove_subscribers("plain")
    await sender(user())
    assert a.observed == [] and b.observed == []
    with caplog.at_level(logging.WARNING, logger="agentscope_rt.agent"):
        sender.remove_subscribers("plain")
    assert "'plain' not found" in caplog.text


async def test_broadcast_none_does_nothing() -> None:
    sender, a = EchoAgent("s"), EchoAgent("a")
    link = FakeHubLink([sender, a])
    sender._attach_hub("hub", link)
    await sender._broadcast_to_subscribers(None)
    assert link.deliveries == [] and a.observed == []


async def test_observer_failure_propagates_from_call() -> None:
    class Failing(EchoAgent):
        async def observe(self, msg: Msg | list[Msg] | None) -> None:
            raise RuntimeError("observer broke")

    sender = EchoAgent("s")
    sender.reset_subscribers("hub", [Failing("f")])
    with pytest.raises(RuntimeError, match="observer broke"):
        await sender(user())
    assert not sender.is_replying


async def test_replies_broadcast_in_call_order() -> None:
    sender, listener = EchoAgent("s", delay=0.01), EchoAgent("l")
    sender.reset_subscribers("hub", [listener])

    async with anyio.create_task_group() as tg:
        for index in range(4):
            tg.start_soon(sender, user(str(index)))
            await anyio.sleep(0.001)
    assert [m.content for m in listener.observed] == ["0", "1", "2", "3"]  # type: ignore[union-attr]
