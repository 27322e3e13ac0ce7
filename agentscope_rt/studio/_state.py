"""What the studio page shows, and how it gets there without ever slowing an agent.

The page's model is a set of *entities*, each ``(kind, key) -> data`` (a message, a tool
call, a hub, a span, the totals). Every change is an *upsert* of one entity, so the
page and the server keep the same model with one rule: replace the entity.

Flow: observers (hooks, the hub observer, the span processor) call :meth:`EventBus.publish`,
which only does ``send_nowait`` into one bounded memory stream (a full stream drops the event
and counts it). One fan-out task applies each upsert to the bounded :class:`StudioState` and
hands the encoded event to every open page with ``send_nowait`` on the page's own bounded
stream; a page that cannot keep up loses events (counted) and is sent a fresh snapshot when it
reads again. Nothing an observer or a page does waits on another page.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncGenerator, Iterator
from typing import Any, Final

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream

__all__ = ["HISTORY_LIMITS", "EventBus", "PageFeed", "StudioState"]

logger = logging.getLogger("agentscope_rt.studio")

HISTORY_LIMITS: Final = {
    "hub": 200,
    "msg": 2000,
    "tool": 2000,
    "span": 5000,
    "stats": 2,
}
"""How many entities of each kind the studio keeps (the oldest go first). Agents are not
entities: they are counted by state and read a page at a time (``GET /api/agents``); the
``stats`` entities are the totals (``"totals"``) and the drop counts (``"drops"``)."""

INTAKE_SIZE: Final = 10_000
"""Events waiting for the fan-out task before new ones are dropped."""

PAGE_BUFFER: Final = 2_000
"""Events waiting for one page before that page's are dropped (it then gets a snapshot)."""


def _json_default(value: Any) -> Any:
    # Message content and tool arguments are JSON data already; anything else is shown as
    # its repr rather than breaking the page.
    return repr(value)


def encode(payload: dict[str, Any]) -> str:
    """One SSE ``data:`` line's JSON (never fails: unknown objects become their repr)."""
    return json.dumps(payload, default=_json_default, ensure_ascii=False)


class StudioState:
    """The entities the page shows, each kind bounded by :data:`HISTORY_LIMITS`."""

    def __init__(self, limits: dict[str, int] | None = None) -> None:
        self.limits = dict(HISTORY_LIMITS if limits is None else limits)
        self.entities: dict[str, OrderedDict[str, dict[str, Any]]] = {
            kind: OrderedDict() for kind in self.limits
        }

    def apply(self, kind: str, key: str, data: dict[str, Any]) -> None:
        """Insert or replace entity *(kind, key)*; an update keeps the entity's place."""
        bucket = self.entities[kind]
        bucket[key] = data
        limit = self.limits[kind]
        while len(bucket) > limit:
            bucket.popitem(last=False)

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        """The current data of an entity, or ``None``."""
        return self.entities[kind].get(key)

    def snapshot(self) -> dict[str, Any]:
        """Every entity, as the page's ``snapshot`` event."""
        return {
            "type": "snapshot",
            "entities": {kind: list(bucket.values()) for kind, bucket in self.entities.items()},
        }


class PageFeed:
    """One open page: a bounded stream of encoded events and a flag saying it missed some."""

    def __init__(self, size: int) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[str](size)
        self.stale = False
        self.dropped = 0


class EventBus:
    """The bounded channel from observers to pages (see the module docstring).

    :meth:`publish` may be called from the event loop's thread (observers, hooks) or another
    thread (a span ended in a worker thread); it never waits for a page.
    """

    def __init__(
        self, state: StudioState, page_buffer: int = PAGE_BUFFER, intake_size: int = INTAKE_SIZE
    ) -> None:
        self.state = state
        self._send, self._receive = anyio.create_memory_object_stream[
            tuple[str, str, dict[str, Any]]
        ](intake_size)
        self._feeds: set[PageFeed] = set()
        self._page_buffer = page_buffer
        self._thread = threading.get_ident()
        self._token = anyio.lowlevel.current_token()
        self.dropped = 0
        """Events dropped because the intake was full (the observers outran the fan-out)."""
        self.page_dropped = 0
        """Events dropped because a page did not read them in time."""
        self._reported = (0, 0)

    def on_loop_thread(self) -> bool:
        """Whether the caller runs in the event loop's thread (not a worker thread)."""
        return threading.get_ident() == self._thread

    def publish(self, kind: str, key: str, data: dict[str, Any]) -> None:
        """Queue the upsert of entity *(kind, key)*; drops it (counted) when the queue is
        full or the studio has stopped. Never raises, never waits."""
        if threading.get_ident() != self._thread:
            try:
                anyio.from_thread.run_sync(self._put, kind, key, data, token=self._token)
            except Exception:  # the loop has ended: nobody is watching
                self.dropped += 1
            return
        self._put(kind, key, data)

    def _put(self, kind: str, key: str, data: dict[str, Any]) -> None:
        try:
            self._send.send_nowait((kind, key, data))
        except anyio.WouldBlock:
            self.dropped += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.dropped += 1

    def close(self) -> None:
        """Stop accepting events; the fan-out ends once it has applied the queued ones."""
        self._send.close()

    async def run(self) -> None:
        """The fan-out task: apply each upsert and hand it to every page. Returns after
        :meth:`close`, closing every page's stream."""
        try:
            async with self._receive:
                async for kind, key, data in self._receive:
                    self._fan_out(kind, key, data)
                    # Drain what is already queued without a checkpoint per event.
                    while True:
                        try:
                            kind, key, data = self._receive.receive_nowait()
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                        self._fan_out(kind, key, data)
                    self._report_drops()
        finally:
            for feed in list(self._feeds):
                feed.send.close()

    def _fan_out(self, kind: str, key: str, data: dict[str, Any]) -> None:
        self.state.apply(kind, key, data)
        if not self._feeds:
            return
        line = encode({"type": "upsert", "kind": kind, "key": key, "data": data})
        for feed in self._feeds:
            if feed.stale:
                continue
            try:
                feed.send.send_nowait(line)
            except anyio.WouldBlock:
                feed.stale = True
                feed.dropped += 1
                self.page_dropped += 1
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass

    def _report_drops(self) -> None:
        counts = (self.dropped, self.page_dropped)
        if counts != self._reported:
            self._reported = counts
            self._fan_out(
                "stats", "drops", {"key": "drops", "intake": counts[0], "pages": counts[1]}
            )

    async def feed(self) -> AsyncGenerator[list[str], None]:
        """Encoded events for one page, in batches (each batch is what was waiting for the
        page, at least one event): a snapshot first, then every change; a fresh snapshot
        again whenever the page fell behind. Ends when the studio stops."""
        page = PageFeed(self._page_buffer)
        self._feeds.add(page)
        try:
            yield [encode(self.state.snapshot())]
            async with page.receive:
                async for line in page.receive:
                    batch = [line, *_drain(page.receive)]
                    if page.stale:
                        page.stale = False
                        batch = [encode(self.state.snapshot())]
                    yield batch
        finally:
            self._feeds.discard(page)
            page.send.close()

    @property
    def pages(self) -> int:
        """How many pages are connected."""
        return len(self._feeds)


def _drain(receive: MemoryObjectReceiveStream[str]) -> Iterator[str]:
    while True:
        try:
            yield receive.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            return
