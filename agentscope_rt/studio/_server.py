"""``serve()``: the studio page, served by hypercorn in the application's own event loop.

The page is one static HTML file shipped with the package; it reads a snapshot and then live
upserts from ``GET /events`` (server-sent events), pages through the agents it knows with
``GET /api/agents`` and a hub's members with ``GET /api/hubs/{name}/members``, and acts
through two POST routes (``/api/interrupt``, ``/api/input``). Given a run store, it also
serves the *Durable runs* view: ``GET /api/durable/runs`` and
``GET /api/durable/runs/{run_id}`` (JSON, paged with ``offset`` and ``limit``). Every route
but a bare ``GET /`` without the token answers 403 unless the request carries the studio's
random token (``?token=`` or the ``X-Studio-Token`` header): the URL printed to the person
holds it, so only they see data.

Bad input is answered with a 4xx and a JSON ``{"error": ...}`` saying what is wrong, never a
500: a POST body is read up to :data:`MAX_BODY_BYTES` (413 past it) within
:data:`BODY_READ_SECONDS` (408), must be JSON (400) nested at most
:data:`~agentscope_rt._json.MAX_JSON_DEPTH` levels (400); a second answer to one question is
refused with 409 (the agent keeps the first).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .._asgi import hypercorn_config, hypercorn_serve, listening_socket
from .._json import MAX_JSON_DEPTH, json_problem
from ..agent import AgentBase
from ..durable import DurableRunError, RunStore
from ._agents import MAX_AGENTS_PAGE, STATES, agent_name
from ._durable_view import DEFAULT_PAGE, MAX_PAGE, run_page, runs_page
from ._observe import AgentObserver
from ._page_input import AlreadyAnsweredError, PageUserInput
from ._spans import StudioSpanProcessor
from ._state import PAGE_BUFFER, EventBus, StudioState, encode

__all__ = ["Studio", "serve"]

logger = logging.getLogger("agentscope_rt.studio")

TICK_SECONDS = 0.25
"""The studio's clock: at most this often the pages get the totals (when they changed), and
the budget of detail events is refilled (``DETAIL_PER_TICK``, in ``_observe``)."""

DEFAULT_AGENTS_PAGE = 50
"""Agents (or hub members) in one answer when the request gives no ``limit``."""

MAX_QUERY = 200
"""The longest name search ``GET /api/agents?q=`` takes."""

GATHER_SECONDS = 0.1
"""The pause after each write to a page, while the next events gather: a busy studio writes
to each page up to ten times a second, not once per event (each write costs the server's HTTP
stack far more than the event itself)."""

KEEPALIVE_SECONDS = 15.0
"""A comment line is sent on an idle event stream this often, so proxies keep it open."""

MAX_BODY_BYTES = 1024 * 1024
"""The most a POST route reads of a request body (1 MiB); a larger one is answered 413. An
interrupt is a few dozen bytes, and an answer is what a person types: this leaves room for a
pasted document while bounding what one request can make the studio hold."""

BODY_READ_SECONDS = 30.0
"""How long a POST route waits for the whole body; a client still sending then gets 408."""


class _BadRequest(Exception):
    """A request the studio refuses: answered with *status* and ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Studio:
    """A running studio (made by :func:`serve`).

    :ivar url: the page's address, token included: open it in a browser.
    :ivar token: the random token every request must carry.
    :ivar user_input: the input method for :class:`UserAgent` s answered from the page.
    :ivar span_processor: an OpenTelemetry span processor feeding the page's span trees.
    :ivar run_store: the durable runs the page shows (``None``: no *Durable runs* view).
    :ivar run_user: whose runs those are.
    """

    def __init__(
        self,
        host: str,
        port: int,
        token: str,
        bus: EventBus,
        run_store: RunStore | None = None,
        run_user: str = "",
    ) -> None:
        self.host = host
        self.port = port
        self.token = token
        self.bus = bus
        self.run_store = run_store
        self.run_user = run_user
        self.observer = AgentObserver(bus)
        self.user_input = PageUserInput(self.observer)
        self.span_processor = StudioSpanProcessor(bus, admit=self.observer.admit)
        shown_host = f"[{host}]" if ":" in host else host
        self.base_url = f"http://{shown_host}:{port}"
        self.url = f"{self.base_url}/?token={token}"

    def __repr__(self) -> str:
        # The token is a secret: never in a repr.
        return f"Studio(host={self.host!r}, port={self.port}, pages={self.bus.pages})"

    def watch(self, *agents: AgentBase) -> None:
        """Show *agents* on the page now, before they first do anything.

        :raises TypeError: when an item is not an agent.
        """
        for agent in agents:
            if not isinstance(agent, AgentBase):
                raise TypeError(f"Studio.watch takes agents, not {type(agent).__name__}")
            self.observer.watch(agent)

    def interrupt(self, agent_id: str) -> bool:
        """Interrupt the agent *agent_id* (what the page's button does); ``False`` when the
        studio has not seen such an agent (or it is gone)."""
        agent = self.observer.agents.get(agent_id)
        if agent is None:
            return False
        replying = agent.is_replying
        agent.interrupt()
        if replying:
            self.observer.interrupted(agent)
        return True

    @property
    def dropped(self) -> int:
        """Events dropped so far (observers outran the page feed, or a page fell behind)."""
        return self.bus.dropped + self.bus.page_dropped


def _page_html() -> str:
    return importlib.resources.files(__package__).joinpath("_page.html").read_text("utf-8")


def _app(studio: Studio) -> Starlette:
    page = _page_html()

    def authorised(request: Request) -> bool:
        given = request.query_params.get("token") or request.headers.get("x-studio-token") or ""
        return secrets.compare_digest(given.encode(), studio.token.encode())

    def guarded(
        handler: Callable[[Request], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        """*handler* behind the token check, with a refused request answered as such."""

        @functools.wraps(handler)
        async def route(request: Request) -> Response:
            if not authorised(request):
                return _error(403, "a valid studio token is required")
            try:
                return await handler(request)
            except _BadRequest as bad:
                return _error(bad.status, bad.message)

        return route

    async def index(request: Request) -> Response:
        if not authorised(request):
            return HTMLResponse(
                "<p>Open the studio with the URL it printed (it carries the token).</p>",
                status_code=403,
            )
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    @guarded
    async def events(request: Request) -> Response:
        return StreamingResponse(
            _sse(studio.bus),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    @guarded
    async def interrupt(request: Request) -> Response:
        agent_id = _string_field(await _json_body(request), "agent_id")
        if not studio.interrupt(agent_id):
            return _error(404, f"no agent {agent_id!r}")
        return JSONResponse({"ok": True})

    @guarded
    async def answer(request: Request) -> Response:
        body = await _json_body(request)
        request_id = _string_field(body, "request_id")
        pending = studio.user_input.requests.get(request_id)
        if pending is None:
            if request_id in studio.user_input.answered:
                return _error(409, "this question was already answered")
            return _error(404, "no such question is waiting")
        try:
            pending.fulfil(body.get("text", ""), body.get("structured"))
        except AlreadyAnsweredError as exc:
            return _error(409, str(exc))
        except ValueError as exc:
            return _error(422, str(exc))
        return JSONResponse({"ok": True})

    @guarded
    async def state(request: Request) -> Response:
        # Encoded as the event feed encodes it: an object of no JSON type shows as its repr.
        snapshot = studio.bus.state.snapshot()
        snapshot["totals"] = studio.observer.totals()
        return Response(encode(snapshot), media_type="application/json")

    @guarded
    async def agents(request: Request) -> Response:
        offset, limit = _page_params(request, DEFAULT_AGENTS_PAGE, MAX_AGENTS_PAGE)
        query, state = _agent_filter(request)
        observer = studio.observer
        found, total = await observer.agents.page(offset, limit, query, state)
        items = [observer.agent_view(agent, shown) for agent, shown in found]
        return _page_answer(items, total, offset, limit, totals=observer.totals())

    @guarded
    async def hub_members(request: Request) -> Response:
        offset, limit = _page_params(request, DEFAULT_AGENTS_PAGE, MAX_AGENTS_PAGE)
        name = request.path_params["name"]
        ref = studio.observer.hubs.get(name)
        hub = None if ref is None else ref()
        if hub is None:
            return _error(404, f"no hub {name!r} is shown (the studio keeps the last 200)")
        members = hub.participants
        items = [
            {"id": agent.id, "name": agent_name(agent)}
            for agent in members[offset : offset + limit]
        ]
        return _page_answer(items, len(members), offset, limit)

    @guarded
    async def durable_runs(request: Request) -> Response:
        store = _run_store(studio)
        offset, limit = _page_params(request)
        return await _from_store(runs_page(store, studio.run_user, offset, limit))

    @guarded
    async def durable_run(request: Request) -> Response:
        store = _run_store(studio)
        offset, limit = _page_params(request)
        run_id = request.path_params["run_id"]
        if "\x00" in run_id:  # no store can hold it: no such run, without asking one
            return _error(404, f"no run {run_id!r}")
        return await _from_store(run_page(store, studio.run_user, run_id, offset, limit))

    return Starlette(
        routes=[
            Route("/", index),
            Route("/events", events),
            Route("/api/state", state),
            Route("/api/agents", agents),
            Route("/api/hubs/{name:path}/members", hub_members),
            Route("/api/interrupt", interrupt, methods=["POST"]),
            Route("/api/input", answer, methods=["POST"]),
            Route("/api/durable/runs", durable_runs),
            Route("/api/durable/runs/{run_id:path}", durable_run),
        ]
    )


def _run_store(studio: Studio) -> RunStore:
    """The studio's run store.

    :raises _BadRequest: (404) when the studio was served without one.
    """
    if studio.run_store is None:
        raise _BadRequest(404, "this studio shows no durable runs: serve(run_store=...) does")
    return studio.run_store


def _page_params(
    request: Request, default: int = DEFAULT_PAGE, most: int = MAX_PAGE
) -> tuple[int, int]:
    """``offset`` (0 by default) and ``limit`` (*default*) of the query.

    :raises _BadRequest: (400) for an offset that is not an int of 0 or more, or a limit not
        an int from 1 to *most*.
    """
    offset = _query_int(request, "offset", 0)
    limit = _query_int(request, "limit", default)
    if offset < 0:
        raise _BadRequest(400, f"offset must be 0 or more, not {offset}")
    if not 1 <= limit <= most:
        raise _BadRequest(400, f"limit must be from 1 to {most}, not {limit}")
    return offset, limit


def _page_answer(
    items: list[dict[str, Any]], total: int, offset: int, limit: int, **extra: Any
) -> Response:
    """One page of *items* out of *total* as JSON, never cached."""
    page = {"items": items, "total": total, "offset": offset, "limit": limit, **extra}
    return JSONResponse(page, headers={"Cache-Control": "no-store"})


def _agent_filter(request: Request) -> tuple[str, int | None]:
    """The name search ``q`` and the ``state`` (an index of :data:`STATES`, ``None`` for any)
    of an agents query.

    :raises _BadRequest: (400) for a search longer than :data:`MAX_QUERY` characters or a
        state that is not one of :data:`STATES`.
    """
    query = request.query_params.get("q", "")
    if len(query) > MAX_QUERY:
        raise _BadRequest(400, f"q must be at most {MAX_QUERY} characters, not {len(query)}")
    state = request.query_params.get("state") or None
    if state is None:
        return query, None
    if state not in STATES:
        raise _BadRequest(400, f"state must be one of {', '.join(STATES)}, not {state[:40]!r}")
    return query, STATES.index(state)


def _query_int(request: Request, name: str, default: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise _BadRequest(400, f"{name} must be an int, not {text[:40]!r}") from None


async def _from_store(read: Awaitable[dict[str, Any] | None]) -> Response:
    """*read*'s answer as JSON: 404 for ``None`` (no such run), 503 when the store fails."""
    try:
        answer = await read
    except (DurableRunError, OSError) as exc:  # a server store's network error is an OSError
        return _error(503, f"the run store failed: {exc}")
    if answer is None:
        return _error(404, "no such run")
    return JSONResponse(answer, headers={"Cache-Control": "no-store"})


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _string_field(body: Any, name: str) -> str:
    """The string *name* of a JSON object *body*.

    :raises _BadRequest: (400) when *body* is not an object or has no such string.
    """
    value = body.get(name) if isinstance(body, dict) else None
    if not isinstance(value, str):
        raise _BadRequest(400, f"{name} (a string) is required in a JSON object")
    return value


async def _json_body(request: Request) -> Any:
    """The request's body decoded as JSON, read up to :data:`MAX_BODY_BYTES`.

    :raises _BadRequest: 413 for a longer body (announced or sent), 408 when it is not all
        there within :data:`BODY_READ_SECONDS`, 400 for a body that is not JSON or nests
        deeper than :data:`~agentscope_rt._json.MAX_JSON_DEPTH` levels.
    """
    announced = request.headers.get("content-length", "")
    if announced.isdigit() and int(announced) > MAX_BODY_BYTES:
        raise _BadRequest(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
    data = bytearray()
    with anyio.move_on_after(BODY_READ_SECONDS) as reading:
        async for chunk in request.stream():
            data += chunk
            if len(data) > MAX_BODY_BYTES:
                raise _BadRequest(413, f"the body is larger than {MAX_BODY_BYTES} bytes")
    if reading.cancelled_caught:
        raise _BadRequest(408, f"the body did not arrive within {BODY_READ_SECONDS:g} s")
    try:
        value = json.loads(data)
    except RecursionError:
        raise _BadRequest(400, f"the JSON is nested deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as exc:  # also a body that is not UTF-8
        raise _BadRequest(400, f"the body must be JSON: {exc}") from None
    problem = json_problem(value, "")
    if problem is not None:
        where, reason = problem
        raise _BadRequest(400, f"the JSON body is refused at {where or 'the top'}: {reason}")
    return value


async def _sse(bus: EventBus) -> AsyncIterator[str]:
    feed = bus.feed()
    try:
        while True:
            batch: list[str] | None = None
            with anyio.move_on_after(KEEPALIVE_SECONDS):
                try:
                    batch = await feed.__anext__()
                except StopAsyncIteration:
                    return
            if batch is None:
                yield ": keepalive\n\n"
                continue
            yield "".join(f"data: {line}\n\n" for line in batch)  # one write for them all
            # Outside the wait above: a deadline never lands inside the feed while it holds a
            # batch. Meanwhile the next events gather in the page's stream.
            await anyio.sleep(GATHER_SECONDS)
    finally:
        # Shielded (a cancelled response still unregisters its page); it only closes memory
        # streams, so it ends at once.
        with anyio.CancelScope(shield=True):
            await feed.aclose()


def _enable_tracing(studio: Studio) -> Callable[[], None] | None:
    """Hand the studio's span processor to the runtime's tracing (turned on if it was off);
    the returned function undoes exactly that. ``None`` without OpenTelemetry's SDK."""
    from .. import tracing

    was_enabled = tracing.is_tracing_enabled()
    try:
        tracing.enable_tracing(studio.span_processor)
    except (ImportError, TypeError) as exc:
        # No SDK, or an application provider that takes no processors: the page shows no spans.
        logger.warning("the studio shows no span trees: %s", exc)
        return None

    def undo() -> None:
        tracing.remove_span_processor(studio.span_processor)
        if not was_enabled:
            tracing.disable_tracing()

    return undo


@contextlib.asynccontextmanager
async def serve(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str | None = None,
    page_buffer: int = PAGE_BUFFER,
    run_store: RunStore | None = None,
    run_user: str = "",
    spans: bool = True,
) -> AsyncIterator[Studio]:
    """Serve the studio page while the block runs: ``async with serve() as studio:``.

    The server runs in the current event loop (asyncio or trio) in a task group of its own;
    agents are observed through class hooks while any studio is open (and not otherwise).
    On exit the pages' event streams end, questions still waiting for the page raise
    :class:`AgentError` in their agents, and the hooks are removed.

    :param host: where to listen; loopback by default (anything else exposes the page to
        whoever has the token).
    :param port: the TCP port; 0 picks a free one (read it from ``studio.port``).
    :param token: the token the URL carries (a random one by default).
    :param page_buffer: events held for one page that is slow to read; beyond it the page's
        events are dropped (counted) and it is sent a fresh snapshot when it reads again.
    :param run_store: a durable run store (:class:`~agentscope_rt.durable.SQLiteRunStore`, ...)
        whose runs the page shows in its *Durable runs* view; it stays the caller's (the
        studio reads it, never writes or closes it). ``None``: no such view.
    :param run_user: whose runs the view shows (only that user's).
    :param spans: show span trees, turning the runtime's tracing on while the studio is open.
        Tracing costs tens of microseconds per span, several times what a reply of a fast
        agent costs: at scale, ``spans=False`` keeps it off.
    :raises OSError: when the address cannot be bound.
    :raises ValueError: for an empty token or a page buffer below 1.
    :raises TypeError: when *run_store* is not a run store or *run_user* not a string.
    """
    if token is not None and not token:
        raise ValueError("the studio token must not be empty")
    if isinstance(page_buffer, bool) or not isinstance(page_buffer, int) or page_buffer < 1:
        raise ValueError(f"page_buffer must be a positive int, not {page_buffer!r}")
    if run_store is not None and not isinstance(run_store, RunStore):
        raise TypeError(
            f"run_store must be a durable RunStore (SQLiteRunStore, ...), not "
            f"{type(run_store).__name__}"
        )
    if not isinstance(run_user, str):
        raise TypeError(f"run_user must be a str, not {type(run_user).__name__}")
    sock = listening_socket(host, port)
    bound_port = int(sock.getsockname()[1])
    bus = EventBus(StudioState(), page_buffer)
    studio = Studio(host, bound_port, token or secrets.token_urlsafe(16), bus, run_store, run_user)
    config = hypercorn_config(sock, "agentscope_rt.studio.server", 1.0)
    stopped = anyio.Event()
    serve_fn = hypercorn_serve()
    studio.observer.start()
    disable_tracing = _enable_tracing(studio) if spans else None
    body_error: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(bus.run)
            tg.start_soon(lambda: serve_fn(_app(studio), config, shutdown_trigger=stopped.wait))
            tg.start_soon(_tick_until, studio, stopped)
            try:
                yield studio
            except BaseException as exc:
                body_error = exc
                raise
            finally:
                studio.observer.stop()
                studio.user_input.close()
                bus.close()
                stopped.set()
    except BaseExceptionGroup as group:
        # The block's own error comes out as itself, not wrapped by the server's task group.
        if body_error is not None and list(group.exceptions) == [body_error]:
            raise body_error from None
        raise
    finally:
        if disable_tracing is not None:
            disable_tracing()
        studio.observer.stop()


async def _tick_until(studio: Studio, stopped: anyio.Event) -> None:
    """Every :data:`TICK_SECONDS` until *stopped*: refill the budget of detail events and,
    when they changed, publish the totals (one event, however many replies ended)."""
    observer = studio.observer
    shown: tuple[int, ...] | None = None
    while not stopped.is_set():
        observer.tick()
        if observer.version != shown:
            shown = observer.version
            studio.bus.publish("stats", "totals", observer.totals())
        with anyio.move_on_after(TICK_SECONDS):
            await stopped.wait()
