"""The shared retry policy: backoff arithmetic, Retry-After, and retries against a real server."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncGenerator

import anyio
import anyio.lowlevel
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentscope_rt._provider import (
    StreamErrorEvent,
    call_with_retry,
    classify_error,
    parse_retry_after,
    stream_with_retry,
)
from agentscope_rt.exception import ModelAPIError
from agentscope_rt.model import RetryConfig

from .._timing import takes_at_least
from ._wire_servers import Reply, WireServer, free_port_url
from .conftest import FAST


@given(
    initial=st.floats(0.0, 5.0),
    multiplier=st.floats(1.0, 4.0),
    max_delay=st.floats(0.0, 60.0),
    jitter=st.floats(0.0, 1.0),
    index=st.integers(0, 20),
)
def test_backoff_is_bounded_and_jittered(
    initial: float, multiplier: float, max_delay: float, jitter: float, index: int
) -> None:
    config = RetryConfig(
        initial_delay=initial, multiplier=multiplier, max_delay=max_delay, jitter=jitter
    )
    base = min(max_delay, initial * multiplier**index)
    wait = config.backoff(index)
    assert 0.0 <= wait <= max_delay
    assert base * (1 - jitter) - 1e-9 <= wait <= base * (1 + jitter) + 1e-9


def test_backoff_grows_exponentially_without_jitter() -> None:
    config = RetryConfig(initial_delay=1.0, multiplier=2.0, max_delay=5.0, jitter=0.0)
    assert [config.backoff(i) for i in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_retry_after_replaces_backoff_but_is_capped() -> None:
    config = RetryConfig(initial_delay=1.0, max_delay=3.0, jitter=0.0)
    assert config.delay(0, 2.5) == 2.5
    assert config.delay(0, 100.0) == 3.0
    assert RetryConfig(respect_retry_after=False, jitter=0.0).delay(0, 2.5) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_retries": -1}, "max_retries"),
        ({"initial_delay": -0.5}, "initial_delay"),
        ({"jitter": 1.5}, "jitter"),
        ({"multiplier": 0.5}, "multiplier"),
    ],
)
def test_invalid_config_names_the_field(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        RetryConfig(**kwargs)  # type: ignore[arg-type]


def test_config_is_frozen() -> None:
    import attrs

    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        FAST.max_retries = 5  # type: ignore[misc]


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    now = time.time()
    future = email.utils.formatdate(now + 120, usegmt=True)
    assert 110 <= (parse_retry_after({"retry-after": future}, now=now) or 0) <= 121
    past = email.utils.formatdate(now - 120, usegmt=True)
    assert parse_retry_after({"retry-after": past}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None


async def _post(client: httpx.AsyncClient) -> httpx.Response:
    response = await client.post("/v1/thing", json={"q": 1})
    response.raise_for_status()
    return response


async def test_429_with_retry_after_then_success(server: WireServer) -> None:
    server.add(
        Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0.2"}),
        Reply(200, {"ok": True}),
    )
    config = RetryConfig(max_retries=3, initial_delay=0.001, max_delay=5.0, jitter=0.0)
    # The server asked for 0.2 s; the computed backoff would have been 1 ms.
    async with httpx.AsyncClient(base_url=server.url) as client, takes_at_least(0.2):
        response = await call_with_retry("demo", lambda: _post(client), config)
    assert response.json() == {"ok": True}
    assert len(server.requests) == 2


async def test_500_until_failure_raises_model_api_error(server: WireServer) -> None:
    server.add(*[Reply(500, {"error": {"message": "boom inside"}}) for _ in range(3)])
    async with httpx.AsyncClient(base_url=server.url) as client:
        with pytest.raises(ModelAPIError) as info:
            await call_with_retry("demo", lambda: _post(client), FAST)
    error = info.value
    assert error.provider == "demo"
    assert error.status_code == 500
    assert error.attempts == 3
    assert error.message == "boom inside"
    assert "demo" in str(error) and "500" in str(error) and "boom inside" in str(error)
    assert len(server.requests) == 3


async def test_client_errors_are_not_retried(server: WireServer) -> None:
    server.add(Reply(400, {"error": {"message": "bad field 'x'"}}), Reply(200, {"ok": True}))
    async with httpx.AsyncClient(base_url=server.url) as client:
        with pytest.raises(ModelAPIError) as info:
            await call_with_retry("demo", lambda: _post(client), FAST)
    assert info.value.status_code == 400
    assert info.value.attempts == 1
    assert len(server.requests) == 1


async def test_connection_errors_are_retried_then_reported() -> None:
    calls = 0
    url = free_port_url()

    async def request() -> httpx.Response:
        nonlocal calls
        calls += 1
        async with httpx.AsyncClient(base_url=url) as client:
            return await _post(client)

    with pytest.raises(ModelAPIError) as info:
        await call_with_retry("demo", request, FAST)
    assert calls == 3
    assert info.value.status_code is None
    assert "connection error" in info.value.message


async def test_foreign_exceptions_pass_through_unretried() -> None:
    calls = 0

    async def request() -> None:
        nonlocal calls
        calls += 1
        raise KeyError("not a provider failure")

    with pytest.raises(KeyError):
        await call_with_retry("demo", request, FAST)
    assert calls == 1


async def test_secrets_are_redacted_from_errors(server: WireServer) -> None:
    server.add(Reply(401, {"error": {"message": "invalid key sk-secret-123"}}))
    async with httpx.AsyncClient(base_url=server.url) as client:
        with pytest.raises(ModelAPIError) as info:
            await call_with_retry(
                "demo", lambda: _post(client), FAST, redact=("sk-secret-123", None)
            )
    assert "sk-secret-123" not in str(info.value)
    assert "***" in str(info.value)


def test_classify_leaves_unknown_errors_alone() -> None:
    assert classify_error(ValueError("x")) is None
    info = classify_error(TimeoutError("read"))
    assert info is not None and info.retryable and info.status_code is None


def test_classify_stream_error_event_keeps_its_verdict() -> None:
    info = classify_error(StreamErrorEvent("overloaded", 503, True))
    assert info is not None and (info.status_code, info.message, info.retryable) == (
        503,
        "overloaded",
        True,
    )
    info = classify_error(StreamErrorEvent("bad", None, False))
    assert info is not None and not info.retryable and info.status_code is None


class _Attempts:
    """Generators that fail at a chosen point and record that they were closed."""

    def __init__(self, fail_before: int, fail_after_first: int = 0) -> None:
        self.opened = 0
        self.closed = 0
        self.fail_before = fail_before
        self.fail_after_first = fail_after_first

    async def open(self) -> AsyncGenerator[int, None]:
        self.opened += 1
        attempt = self.opened
        try:
            if attempt <= self.fail_before:
                raise ConnectionError("reset before any output")
            yield 1
            if attempt <= self.fail_before + self.fail_after_first:
                raise ConnectionError("reset mid-stream")
            yield 2
            yield 3
        finally:
            self.closed += 1


async def test_stream_retries_only_before_first_item() -> None:
    attempts = _Attempts(fail_before=2)
    items = [i async for i in stream_with_retry("demo", attempts.open, FAST)]
    assert items == [1, 2, 3]
    assert attempts.opened == 3
    assert attempts.closed == 3


async def test_stream_failure_after_output_is_not_retried() -> None:
    attempts = _Attempts(fail_before=0, fail_after_first=1)
    seen: list[int] = []
    with pytest.raises(ModelAPIError) as info:
        async for item in stream_with_retry("demo", attempts.open, FAST):
            seen.append(item)
    assert seen == [1]
    assert attempts.opened == 1
    assert attempts.closed == 1
    assert info.value.attempts == 1


async def test_stream_gives_up_after_budget() -> None:
    attempts = _Attempts(fail_before=10)
    with pytest.raises(ModelAPIError) as info:
        async for _ in stream_with_retry("demo", attempts.open, FAST):
            pass
    assert attempts.opened == 3
    assert info.value.attempts == 3


async def test_stream_closed_early_closes_the_inner_generator() -> None:
    attempts = _Attempts(fail_before=0)
    stream = stream_with_retry("demo", attempts.open, FAST)
    assert await stream.__anext__() == 1
    await stream.aclose()
    assert attempts.closed == 1


async def test_cancelled_consumer_still_closes_the_inner_generator() -> None:
    closed = False

    async def source() -> AsyncGenerator[int, None]:
        nonlocal closed
        try:
            yield 1
            yield 2
        finally:
            # Awaiting here works only because the wrapper closes us inside a shield.
            await anyio.lowlevel.checkpoint()
            closed = True

    stream = stream_with_retry("demo", source, FAST)
    with anyio.move_on_after(0.05):
        try:
            async for _ in stream:
                await anyio.sleep(10)
        finally:
            await stream.aclose()
    assert closed
