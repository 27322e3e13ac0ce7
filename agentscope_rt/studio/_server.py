"""``serve()``: the studio page, served by hypercorn in the application's own event loop.

The page is one static HTML file shipped with the package; it reads a snapshot and then live
upserts from ``GET /events`` (server-sent events) and acts through two POST routes
(``/api/interrupt``, ``/api/input``). Every route but a bare ``GET /`` without the token
answers 403 unless the request carries the studio's random token (``?token=`` or the
``X-Studio-Token`` header): the URL printed to the person holds it, so only they see data.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .._asgi import hypercorn_config, hypercorn_serve, listening_socket
from ..agent import AgentBase
from ._observe import AgentObserver
from ._page_input import PageUserInput
from ._spans import StudioSpanProcessor
from ._state import PAGE_BUFFER, EventBus, StudioState

__all__ = ["Studio", "serve"]

logger = logging.getLogger("agentscope_rt.studio")

RECONCILE_SECONDS = 0.5
"""How often agents shown as replying are checked against ``agent.is_replying``."""

KEEPALIVE_SECONDS = 15.0
"""A comment line is sent on an idle event stream this often, so proxies keep it open."""


class Studio:
    """A running studio (made by :func:`serve`).

    :ivar url: the page's address, token included: open it in a browser.
    :ivar token: the random token every request must carry.
    :ivar user_input: the input method for :class:`UserAgent` s answered from the page.
    :ivar span_processor: an OpenTelemetry span processor feeding the page's span trees.
    """

    def __init__(self, host: str, port: int, token: str, bus: EventBus) -> None:
        self.host = host
        self.port = port
        self.token = token
        self.bus = bus
        self.observer = AgentObserver(bus)
        self.user_input = PageUserInput(self.observer)
        self.span_processor = StudioSpanProcessor(bus, on_reply_end=self._reply_ended)
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
            self.observer.agent_entity(agent)

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

    def _reply_ended(self, agent_id: str, interrupted: bool) -> None:
        agent = self.observer.agents.get(agent_id)
        if agent is not None and not agent.is_replying:
            self.observer.agent_entity(agent, "interrupted" if interrupted else "idle")

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

    def forbidden() -> Response:
        return JSONResponse({"error": "a valid studio token is required"}, status_code=403)

    async def index(request: Request) -> Response:
        if not authorised(request):
            return HTMLResponse(
                "<p>Open the studio with the URL it printed (it carries the token).</p>",
                status_code=403,
            )
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    async def events(request: Request) -> Response:
        if not authorised(request):
            return forbidden()
        return StreamingResponse(
            _sse(studio.bus),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def interrupt(request: Request) -> Response:
        if not authorised(request):
            return forbidden()
        body = await _json_body(request)
        agent_id = body.get("agent_id") if isinstance(body, dict) else None
        if not isinstance(agent_id, str):
            return JSONResponse({"error": "agent_id (a string) is required"}, status_code=400)
        if not studio.interrupt(agent_id):
            return JSONResponse({"error": f"no agent {agent_id!r}"}, status_code=404)
        return JSONResponse({"ok": True})

    async def answer(request: Request) -> Response:
        if not authorised(request):
            return forbidden()
        body = await _json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("request_id"), str):
            return JSONResponse({"error": "request_id (a string) is required"}, status_code=400)
        pending = studio.user_input.requests.get(body["request_id"])
        if pending is None:
            return JSONResponse({"error": "no such question is waiting"}, status_code=404)
        try:
            pending.fulfil(body.get("text", ""), body.get("structured"))
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=422)
        return JSONResponse({"ok": True})

    async def state(request: Request) -> Response:
        if not authorised(request):
            return forbidden()
        return JSONResponse(studio.bus.state.snapshot())

    return Starlette(
        routes=[
            Route("/", index),
            Route("/events", events),
            Route("/api/state", state),
            Route("/api/interrupt", interrupt, methods=["POST"]),
            Route("/api/input", answer, methods=["POST"]),
        ]
    )


async def _json_body(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:
        return None


async def _sse(bus: EventBus) -> AsyncIterator[str]:
    feed = bus.feed()
    try:
        while True:
            line: str | None = None
            with anyio.move_on_after(KEEPALIVE_SECONDS):
                try:
                    line = await feed.__anext__()
                except StopAsyncIteration:
                    return
            yield ": keepalive\n\n" if line is None else f"data: {line}\n\n"
    finally:
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
    :raises OSError: when the address cannot be bound.
    :raises ValueError: for an empty token or a page buffer below 1.
    """
    if token is not None and not token:
        raise ValueError("the studio token must not be empty")
    if isinstance(page_buffer, bool) or not isinstance(page_buffer, int) or page_buffer < 1:
        raise ValueError(f"page_buffer must be a positive int, not {page_buffer!r}")
    sock = listening_socket(host, port)
    bound_port = int(sock.getsockname()[1])
    bus = EventBus(StudioState(), page_buffer)
    studio = Studio(host, bound_port, token or secrets.token_urlsafe(16), bus)
    config = hypercorn_config(sock, "agentscope_rt.studio.server", 1.0)
    stopped = anyio.Event()
    serve_fn = hypercorn_serve()
    studio.observer.start()
    disable_tracing = _enable_tracing(studio)
    body_error: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(bus.run)
            tg.start_soon(lambda: serve_fn(_app(studio), config, shutdown_trigger=stopped.wait))
            tg.start_soon(_reconcile_until, studio, stopped)
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


async def _reconcile_until(studio: Studio, stopped: anyio.Event) -> None:
    """Every :data:`RECONCILE_SECONDS` until *stopped*, show as ended the replies no hook saw
    end (a reply that raised, or an interrupted agent that printed nothing)."""
    while not stopped.is_set():
        with anyio.move_on_after(RECONCILE_SECONDS):
            await stopped.wait()
        studio.observer.reconcile()
