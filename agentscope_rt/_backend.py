"""The one place that looks at which event loop runs: what an agent call needs, cheaply.

Everything else in the library goes through anyio. Every ``await agent(...)`` needs a cancel
scope of its own (what ``interrupt()`` cancels) and a way to reach its event loop from another
thread, and on that path anyio's generic spelling costs more than the work itself: on trio,
``anyio.CancelScope()`` wraps a ``trio.CancelScope`` (and constructs it twice), and
``anyio.lowlevel.current_token()`` builds a new token object on every call. So:

* :func:`reply_scope` returns trio's own ``CancelScope`` on trio — anyio's trio scopes *are*
  trio scopes, so it nests with them exactly as anyio's would — and on other loops an instance
  of the class ``anyio.CancelScope()`` returns there, built directly (through
  ``anyio.CancelScope()`` it is initialised twice: once by the backend, once more by Python);
* it also returns a cheap identity of the running event loop, so a caller can keep the
  anyio token of that loop (``anyio.lowlevel.current_token()``) and fetch it again only when
  the loop changes;
* :func:`open_task_group` is for fanning out to many short tasks: since anyio 4.14 every
  ``start_soon`` builds a task handle with its own cancel scope and event, which on trio
  costs more than the task itself; on trio it opens trio's own nursery (what anyio's trio task
  group wraps: same cancellation and exception groups), elsewhere anyio's task group;
* :func:`start_detached` starts a task that no task group owns, which anyio cannot express:
  for a resource opened by one call and closed by a later one (``connect()`` ... ``close()``)
  whose task groups must not sit in the caller's cancel-scope stack.
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import anyio
import sniffio

__all__ = ["ReplyScope", "TaskSpawner", "open_task_group", "reply_scope", "start_detached"]


class ReplyScope(Protocol):
    """What an agent call uses of a cancel scope (anyio's and trio's both have it)."""

    def __enter__(self) -> Any: ...

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool | None: ...

    def cancel(self) -> None: ...

    @property
    def cancel_called(self) -> bool: ...

    @property
    def cancelled_caught(self) -> bool: ...


def reply_scope() -> tuple[ReplyScope, object | None]:
    """A new, unentered cancel scope for one call, and the identity of the running event loop.

    The identity is the asyncio loop or trio's ``TrioToken``: the same object for as long as
    that loop runs. It is ``None`` on a backend this module does not know, where callers must
    not cache anything per loop.

    :raises sniffio.AsyncLibraryNotFoundError: outside an event loop.
    """
    library = sniffio.current_async_library()
    if library == "trio":
        trio = sys.modules["trio"]  # running, so imported
        return trio.CancelScope(), trio.lowlevel.current_trio_token()
    scope_class = _scope_classes.get(library)
    if scope_class is None:
        scope_class = _scope_classes[library] = type(anyio.CancelScope())
    if library == "asyncio":
        return scope_class(), sys.modules["asyncio"].get_running_loop()  # running: imported
    return scope_class(), None


_scope_classes: dict[str, Callable[[], ReplyScope]] = {}


class TaskSpawner(Protocol):
    """What :func:`open_task_group` yields: ``start_soon`` (anyio's and trio's both have it)."""

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> Any: ...


def open_task_group() -> AbstractAsyncContextManager[TaskSpawner]:
    """A task group: trio's nursery on trio, ``anyio.create_task_group()`` elsewhere.

    Leaving it waits for every task; the first task to raise cancels the others, and the
    errors leave as an :class:`ExceptionGroup` (both backends alike).

    :raises sniffio.AsyncLibraryNotFoundError: outside an event loop.
    """
    if sniffio.current_async_library() == "trio":
        return sys.modules["trio"].open_nursery()
    return anyio.create_task_group()


# asyncio keeps only weak references to its tasks: a detached task is kept here until it ends.
_detached_tasks: set[Any] = set()


def start_detached(func: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
    """Start ``func()`` in a task of the event loop that no task group owns.

    The task runs until it returns, or until the event loop ends: trio cancels it once the
    main task has ended (it is a system task), ``asyncio.run()`` cancels it among the tasks
    left. It sees the caller's context variables (a copy, as a child task would).

    *func* must not raise anything but the cancellation: on trio an exception leaving a
    system task is a ``TrioInternalError`` that takes the whole run down, and on asyncio
    nobody would see it.

    :raises sniffio.AsyncLibraryNotFoundError: outside an event loop.
    """
    if sniffio.current_async_library() == "trio":
        trio = sys.modules["trio"]  # running, so imported
        # System tasks start from an empty context: give this one the caller's.
        trio.lowlevel.spawn_system_task(func, name=name, context=contextvars.copy_context())
        return
    # anyio's other backend: an asyncio task of the running loop (which copies the context).
    task = sys.modules["asyncio"].get_running_loop().create_task(func(), name=name)
    _detached_tasks.add(task)
    task.add_done_callback(_detached_tasks.discard)
