"""The test harness itself: every async test must run once per anyio backend."""

from __future__ import annotations

import inspect

import anyio
import pytest
import sniffio

from agentscope_rt.message import Msg


async def test_runs_on_the_requested_backend(anyio_backend: str) -> None:
    assert sniffio.current_async_library() == anyio_backend


async def test_messages_cross_a_memory_stream_unchanged() -> None:
    send, receive = anyio.create_memory_object_stream[Msg](1)
    msg = Msg("a", [{"type": "text", "text": "hi"}], "user")
    async with send, receive:
        await send.send(msg)
        assert await receive.receive() is msg


def test_every_async_test_is_parametrised_over_both_backends(
    request: pytest.FixtureRequest,
) -> None:
    async_items = [
        item
        for item in request.session.items
        if inspect.iscoroutinefunction(getattr(item, "function", None))
    ]
    assert async_items, "the async tests of this module should have been collected"
    for item in async_items:
        assert "anyio_backend" in item.fixturenames, item.nodeid  # type: ignore[attr-defined]
        assert item.callspec.params["anyio_backend"] in ("asyncio", "trio"), item.nodeid  # type: ignore[attr-defined]
        fixturedef = item._fixtureinfo.name2fixturedefs["anyio_backend"][-1]  # type: ignore[attr-defined]
        assert list(fixturedef.params) == ["asyncio", "trio"], item.nodeid
