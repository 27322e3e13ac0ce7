"""Talking to a running AgentScope Studio (its Node server), as AgentScope 1.x does.

Wire (AgentScope 1.0.21, Studio 1.0.9): ``POST {url}/trpc/registerRun``, ``POST
{url}/trpc/pushMessage`` for every printed chunk, ``POST {url}/trpc/requestUserInput`` and the
answer as the event ``forwardUserInput(requestId, blocksInput, structuredInput)`` on the
Socket.IO namespace ``/python`` (client auth ``{"run_id"}``).

AgentScope posts with blocking ``requests`` from the agent's task and waits for the answer on a
``threading.Event``, freezing every agent of the process. Here one :class:`StudioLink` per
Studio and run owns a background event loop (an anyio blocking portal: a daemon thread running
its own loop, so the link works whichever loop the agents use, and from ``init()`` before any
loop runs). Agents only append to a bounded queue: a Studio that is down or slow costs them a
logged warning. Posts keep their order; queued chunks of one message are merged (the latest
chunk holds all of it). A :class:`StudioUserInput` waits for its answer on an
:class:`anyio.Event` of the agent's own loop, set from the background loop.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import inspect
import logging
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import httpx

from .._schema import StructuredModel, structured_model_schema
from .._urls import redact_url
from ..agent import AgentBase, TerminalUserInput, UserAgent, UserInputBase, UserInputData
from ..exception import AgentError
from ..message import Msg
from ._socketio import run_namespace

__all__ = [
    "MAX_PENDING",
    "StudioLink",
    "StudioUserInput",
    "as_studio_forward_message_pre_print_hook",
    "connect_studio",
    "disconnect_studio",
]

logger = logging.getLogger("agentscope_rt.studio")

MAX_PENDING: Final = 10_000
"""Posts waiting for a slow or absent Studio before new ones are dropped (and counted)."""

POST_TIMEOUT: Final = 10.0
"""Seconds one POST to Studio may take."""

RETRIES: Final = 3
"""Retries of a failed POST before it is given up with a warning (AgentScope's count)."""

FLUSH_TIMEOUT: Final = 3.0
"""Seconds :func:`disconnect_studio` waits for queued posts."""

CLOSE_SECONDS: Final = 5.0
"""Seconds closing the HTTP connections to Studio may take once the link stops."""

HOOK_NAME: Final = "as_studio_forward_message_pre_print_hook"


class _Waiter:
    """A :class:`StudioUserInput` call waiting in the agent's loop for its answer."""

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.token = anyio.lowlevel.current_token()
        self.answer: UserInputData | None = None
        self.error: str | None = None


class StudioLink:
    """The connection to one Studio for one run (see the module docstring).

    :param studio_url: the Studio's base URL (``http://localhost:3000``).
    :param run_id: the run the messages belong to.
    """

    def __init__(self, studio_url: str, run_id: str) -> None:
        self.studio_url = studio_url.rstrip("/")
        self.shown_url = redact_url(self.studio_url)
        """The URL as logs and errors show it (no user info or query)."""
        self.run_id = run_id
        self.dropped = 0
        """Posts dropped because too many were waiting."""
        self.failed = 0
        """Posts given up after their retries."""
        self.connected = False
        """Whether the Socket.IO namespace is joined right now."""
        self._pending: OrderedDict[object, tuple[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._idle = False
        self._waiters: dict[str, _Waiter] = {}
        self._warned = False
        self._closed = False
        self._portal_cm = anyio.from_thread.start_blocking_portal(name="agentscope-rt-studio")
        self._portal = self._portal_cm.__enter__()
        self._wake = self._portal.call(anyio.Event)
        self._main_scope = self._portal.call(anyio.CancelScope)
        self._drained = self._portal.call(anyio.Event)
        self._done = self._portal.start_task_soon(self._main)

    def __repr__(self) -> str:
        return f"StudioLink({self.shown_url!r}, run_id={self.run_id!r})"

    # -- called from the agents' side (any thread, any loop) ----------------------------

    def post(self, path: str, payload: Any, key: object | None = None) -> None:
        """Queue ``POST {studio_url}{path}``; never waits. A post with the *key* of one still
        queued replaces it in place (the later chunk of a streamed message holds it all).
        *payload* may hold a :class:`Msg` under ``"msg"`` (serialised when sent)."""
        if self._closed:
            return
        with self._lock:
            if key is None:
                key = object()
            if key not in self._pending and len(self._pending) >= MAX_PENDING:
                self.dropped += 1
                if self.dropped == 1:
                    logger.warning(
                        "AgentScope Studio at %s is not keeping up: messages are dropped "
                        "(the agents carry on)",
                        self.shown_url,
                    )
                return
            self._pending[key] = (path, payload)
            wake = self._idle
            self._idle = False
        if wake:
            with contextlib.suppress(RuntimeError):
                self._portal.start_task_soon(self._set_wake)

    async def ask(self, payload: dict[str, Any]) -> UserInputData:
        """Post a ``requestUserInput`` and wait (an awaited event of this loop) for the answer.

        :raises AgentError: when Studio cannot be reached after the retries.
        """
        if self._closed:
            raise AgentError(f"the link to AgentScope Studio at {self.shown_url} is closed")
        waiter = _Waiter()
        request_id = payload["requestId"]
        self._waiters[request_id] = waiter
        try:
            self.post("/trpc/requestUserInput", payload)
            await waiter.event.wait()
        finally:
            self._waiters.pop(request_id, None)
        if waiter.answer is None:
            raise AgentError(
                f"Failed to get user input from AgentScope Studio at {self.shown_url}: "
                f"{waiter.error or 'no answer'}"
            )
        return waiter.answer

    def close(self, timeout: float = FLUSH_TIMEOUT) -> None:
        """Send what is queued (waiting up to *timeout* seconds), then stop the background
        loop. Blocks the calling thread: call it outside an event loop (or through
        ``anyio.to_thread.run_sync``)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._portal.call(self._flush, timeout)
        with contextlib.suppress(Exception):
            self._portal.call(self._main_scope.cancel)
        with contextlib.suppress(Exception):
            self._portal_cm.__exit__(None, None, None)

    # -- the background loop ------------------------------------------------------------

    async def _set_wake(self) -> None:
        self._wake.set()

    async def _main(self) -> None:
        with self._main_scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._send_forever)
                tg.start_soon(self._listen_forever)

    async def _flush(self, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            while True:
                with self._lock:
                    if not self._pending and self._idle:
                        break
                    drained = self._drained = anyio.Event()
                self._wake.set()
                await drained.wait()
        if self._pending:
            logger.warning(
                "AgentScope Studio at %s: %d queued messages were not sent before disconnecting",
                self.shown_url,
                len(self._pending),
            )

    async def _send_forever(self) -> None:
        client = httpx.AsyncClient(timeout=POST_TIMEOUT)
        try:
            while True:
                while True:
                    with self._lock:
                        if not self._pending:
                            self._idle = True
                            self._drained.set()
                            break
                        _, (path, payload) = self._pending.popitem(last=False)
                    await self._send(client, path, payload)
                await self._wake.wait()
                self._wake = anyio.Event()
        finally:
            # The loop ends by cancellation: the connections are still closed, boundedly.
            with anyio.move_on_after(CLOSE_SECONDS, shield=True):
                await client.aclose()

    async def _send(self, client: httpx.AsyncClient, path: str, payload: dict[str, Any]) -> None:
        body = dict(payload)
        if isinstance(body.get("msg"), Msg):
            body["msg"] = body["msg"].to_dict()
        error: Exception | None = None
        for _ in range(RETRIES + 1):
            try:
                response = await client.post(self.studio_url + path, json=body)
                response.raise_for_status()
            except (httpx.HTTPError, OSError) as exc:
                error = exc
                continue
            if self._warned:
                self._warned = False
                logger.info("AgentScope Studio at %s answers again", self.shown_url)
            return
        self.failed += 1
        reason = self._describe(error)
        if not self._warned:
            self._warned = True
            logger.warning(
                "Failed to send %s to AgentScope Studio at %s after %d retries: %s. The agents "
                "carry on without Studio.",
                path,
                self.shown_url,
                RETRIES,
                reason,
            )
        if path == "/trpc/requestUserInput":
            await self._answer(body["requestId"], None, reason)

    def _describe(self, error: Exception | None) -> str:
        """*error* for a log or an exception, without the URL's credentials."""
        if isinstance(error, httpx.HTTPStatusError):
            return f"HTTP {error.response.status_code}"
        return f"{type(error).__name__}: {error}".replace(self.studio_url, self.shown_url)

    async def _listen_forever(self) -> None:
        delay = 1.0
        while True:
            try:
                await run_namespace(
                    self.studio_url,
                    "/python",
                    {"run_id": self.run_id},
                    self._on_event,
                    self._on_connect,
                )
            except Exception as exc:
                logger.info("AgentScope Studio's socket at %s: %s", self.shown_url, exc)
            self.connected = False
            await anyio.sleep(delay)
            delay = min(delay * 2, 5.0)

    def _on_connect(self) -> None:
        self.connected = True
        logger.info(
            'Connected to AgentScope Studio at "%s" with run "%s"', self.shown_url, self.run_id
        )

    async def _on_event(self, name: str, args: list[Any]) -> None:
        if name != "forwardUserInput" or not args or not isinstance(args[0], str):
            return
        if args[0] not in self._waiters:
            return
        blocks = args[1] if len(args) > 1 else None
        structured = args[2] if len(args) > 2 else None
        try:
            content = Msg("user", blocks if isinstance(blocks, list) else [], "user").content
            answer = UserInputData(
                blocks_input=list(content),  # type: ignore[arg-type]
                structured_input=structured if isinstance(structured, dict) else None,
            )
        except Exception as exc:
            await self._answer(args[0], None, f"Studio sent unusable input: {exc}")
            return
        await self._answer(args[0], answer, None)

    async def _answer(
        self, request_id: str, answer: UserInputData | None, error: str | None
    ) -> None:
        waiter = self._waiters.get(request_id)
        if waiter is None:
            return

        def deliver() -> None:
            waiter.answer = answer
            waiter.error = error
            waiter.event.set()

        # Handing over to the agent's loop waits for it: done from a worker thread so this
        # loop keeps serving the socket meanwhile.
        with contextlib.suppress(Exception):
            await anyio.to_thread.run_sync(
                functools.partial(anyio.from_thread.run_sync, deliver, token=waiter.token)
            )


# -- one link per (Studio, run), shared by the hook, StudioUserInput and connect_studio ----

_links: dict[tuple[str, str], StudioLink] = {}
_links_lock = threading.Lock()


def _link(studio_url: str, run_id: str) -> StudioLink:
    key = (studio_url.rstrip("/"), run_id)
    with _links_lock:
        link = _links.get(key)
        if link is None:
            link = _links[key] = StudioLink(studio_url, run_id)
        return link


def disconnect_studio(timeout: float = FLUSH_TIMEOUT) -> None:
    """Send what is queued to every connected Studio (up to *timeout* seconds), close the
    connections and remove the forwarding hook. Blocks the calling thread; called at exit.
    A :class:`StudioUserInput` left as every :class:`UserAgent`'s input goes back to
    :class:`TerminalUserInput`. Connecting again afterwards works."""
    with _links_lock:
        links = list(_links.values())
        _links.clear()
    with contextlib.suppress(ValueError):
        AgentBase.remove_class_hook("pre_print", HOOK_NAME)
    if isinstance(inspect.getattr_static(UserAgent, "_input_method"), StudioUserInput):
        UserAgent.override_class_input_method(TerminalUserInput())
    for link in links:
        link.close(timeout)


atexit.register(disconnect_studio)


def as_studio_forward_message_pre_print_hook(
    self: AgentBase, kwargs: dict[str, Any], studio_url: str, run_id: str
) -> None:
    """AgentScope's pre-print hook forwarding every printed chunk to Studio's
    ``/trpc/pushMessage`` (``runId, replyId, replyName, replyRole, msg``).

    Register it with ``functools.partial(..., studio_url=..., run_id=...)``. It only queues the
    post (see :class:`StudioLink`): it never waits and never raises because of Studio.
    """
    msg = kwargs.get("msg")
    if not isinstance(msg, Msg):
        return
    reply_id = getattr(self, "_reply_id", None) or uuid.uuid4().hex
    _link(studio_url, run_id).post(
        "/trpc/pushMessage",
        {
            "runId": run_id,
            "replyId": reply_id,
            "replyName": getattr(self, "name", msg.name),
            "replyRole": "user" if isinstance(self, UserAgent) else "assistant",
            "msg": msg,
        },
        key=("msg", msg.id),
    )


class StudioUserInput(UserInputBase):
    """A :class:`UserAgent`'s input answered in AgentScope Studio (AgentScope's class).

    Asking posts ``requestUserInput``; the answer arrives as ``forwardUserInput`` on the
    Socket.IO ``/python`` namespace. Waiting is an awaited event: other agents keep running,
    and an interrupt ends the wait at once. The reconnection arguments are accepted for
    AgentScope compatibility; the link reconnects by itself (1 s, doubling to 5 s).

    :param max_retries: retries of the ``requestUserInput`` post (AgentScope's default 3).
    """

    def __init__(
        self,
        studio_url: str,
        run_id: str,
        max_retries: int = 3,
        reconnect_attempts: int = 3,
        reconnection_delay: int = 1,
        reconnection_delay_max: int = 5,
    ) -> None:
        self.studio_url = studio_url
        self.run_id = run_id
        self.max_retries = max_retries

    async def __call__(
        self,
        agent_id: str,
        agent_name: str,
        *args: Any,
        structured_model: StructuredModel | None = None,
        **kwargs: Any,
    ) -> UserInputData:
        """Ask Studio for the user's input and wait for it.

        :raises AgentError: when Studio cannot be reached (after the retries).
        """
        schema = None if structured_model is None else structured_model_schema(structured_model)
        return await _link(self.studio_url, self.run_id).ask(
            {
                "requestId": uuid.uuid4().hex,
                "runId": self.run_id,
                "agentId": agent_id,
                "agentName": agent_name,
                "structuredInput": schema,
            }
        )


def connect_studio(studio_url: str, *, project: str, name: str, run_id: str) -> None:
    """Register the run with the AgentScope Studio at *studio_url* and show it everything, as
    AgentScope's ``init(studio_url=...)`` does: ``POST /trpc/registerRun``, forward every
    printed chunk (a class ``pre_print`` hook on :class:`AgentBase`), and make
    :class:`StudioUserInput` every :class:`UserAgent`'s input.

    Returns at once (the registration is the first post of the link's queue); a Studio that
    is down or slow is reported by a logged warning and never stops the agents. Calling it
    again replaces the previous connection (no second hook).

    :raises ValueError: when *studio_url* is not an ``http(s)://`` URL.
    """
    if not isinstance(studio_url, str) or not studio_url.startswith(("http://", "https://")):
        raise ValueError(
            f"studio_url must be an http:// or https:// URL, not {redact_url(str(studio_url))!r}"
        )
    disconnect_studio(timeout=0.5)
    link = _link(studio_url, run_id)
    link.post(
        "/trpc/registerRun",
        {
            "id": run_id,
            "project": project,
            "name": name,
            "timestamp": datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
            "pid": os.getpid(),
            "status": "running",
            "run_dir": "",
        },
    )
    hook: Callable[..., None] = functools.partial(
        as_studio_forward_message_pre_print_hook, studio_url=studio_url, run_id=run_id
    )
    AgentBase.register_class_hook("pre_print", HOOK_NAME, hook)
    UserAgent.override_class_input_method(StudioUserInput(studio_url, run_id, max_retries=3))
