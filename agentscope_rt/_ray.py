"""Ray for the packages that run on it (``distributed`` and ``evaluate``): importing it,
starting it so that it outlives every event loop of the process, and waiting for its object
references from any event loop.

Why Ray is started from a thread of its own: Ray starts its head processes (GCS, raylet, ...)
with a parent-death signal, and on Linux that signal follows the *thread* that started them.
Started from an anyio worker thread, they die when that thread ends, which happens when its
event loop ends (``asyncio.run`` shuts its executor down; trio's idle worker threads exit); the
next event loop of the process then waits on a dead cluster, about 60 s in a thread nothing can
cancel, until Ray ends the process. ``ray.init()`` blocks for seconds, so it cannot run on the
event loop's thread either. It runs in one daemon thread started on first use and kept for the
life of the process (it never exits, so what it starts lives as long as the process).
"""

from __future__ import annotations

import concurrent.futures
import os
import sys
import sysconfig
import threading
from collections.abc import Callable, Iterable
from queue import SimpleQueue
from types import ModuleType
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread

from ._extras import missing_extra

__all__ = [
    "driver_only_modules",
    "ensure_ray",
    "import_ray",
    "kill_actors",
    "send_by_value",
    "wait_ref",
]

# How long a worker thread blocks on Ray before it looks whether its task was cancelled.
_POLL_S = 0.25
# How long killing actors may take when a run or a host ends (Ray's kill does not wait for
# the process to go; this bounds a wait on a cluster that stopped answering).
_KILL_WAIT_S = 10.0

_Job = tuple[Callable[[], Any], "concurrent.futures.Future[Any]"]


def import_ray(user: str) -> Any:
    """The ``ray`` module.

    :param user: what needs it (in the error), e.g. ``"RayEvaluator"``.
    :raises ImportError: saying which extra to install when Ray is missing.
    """
    try:
        import ray
    except ImportError as exc:
        raise missing_extra(user, "ray", exc.name) from exc
    return ray


class _Starter:
    """The thread that starts Ray, and the start in progress (one at a time)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: SimpleQueue[_Job] = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._current: concurrent.futures.Future[Any] | None = None

    def start(self, ray: Any, options: dict[str, Any]) -> concurrent.futures.Future[Any]:
        """The start in progress, or a new one when there is none."""
        with self._lock:
            if self._current is not None and not self._current.done():
                return self._current
            future: concurrent.futures.Future[Any] = concurrent.futures.Future()
            self._current = future
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="agentscope-rt-ray-starter", daemon=True
                )
                self._thread.start()
            self._jobs.put((lambda: _init(ray, options), future))
            return future

    def _serve(self) -> None:
        while True:
            call, future = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = call()
            except BaseException as exc:  # handed to whoever waits for the start
                future.set_exception(exc)
            else:
                future.set_result(result)


def _init(ray: Any, options: dict[str, Any]) -> None:
    if not ray.is_initialized():
        ray.init(**options)


_STARTER = _Starter()


def _wait_future(future: concurrent.futures.Future[Any]) -> Any:
    while not concurrent.futures.wait([future], timeout=_POLL_S).done:
        anyio.from_thread.check_cancelled()
    return future.result()


async def ensure_ray(ray: Any, options: dict[str, Any] | None = None) -> None:
    """Start Ray (``ray.init(**options)``) unless it is running, from the thread kept for
    that (see the module's docs), so it lives until the process ends.

    Cancellable: the caller stops waiting within a quarter second. The start itself cannot be
    interrupted; it goes on in that thread, and the next call waits for it (and finds Ray
    running when it succeeded) rather than starting another.

    :param options: keyword arguments of ``ray.init`` (ignored when Ray is running).
    :raises Exception: what ``ray.init`` raised.
    """
    if ray.is_initialized():
        return
    future = _STARTER.start(ray, dict(options or {}))
    await anyio.to_thread.run_sync(_wait_future, future)


def _get(ray: Any, ref: Any) -> Any:
    while True:
        try:
            return ray.get(ref, timeout=_POLL_S)
        except ray.exceptions.GetTimeoutError:
            anyio.from_thread.check_cancelled()


async def wait_ref(ray: Any, ref: Any, limiter: anyio.CapacityLimiter | None = None) -> Any:
    """The value of *ref* (its task's exception is raised), waited for in a worker thread;
    cancellable (the thread stops waiting within a quarter second; the Ray task itself is
    not cancelled: that is the caller's decision).

    :param limiter: the worker threads to wait in (anyio's default pool when ``None``).
    """
    return await anyio.to_thread.run_sync(_get, ray, ref, limiter=limiter)


def _kill(ray: Any, actors: list[Any]) -> None:
    for actor in actors:
        ray.kill(actor)


async def kill_actors(ray: Any, actors: list[Any]) -> None:
    """Kill *actors*, also when the caller is cancelled (shielded), waiting at most ten
    seconds for Ray to take the order (then the killing goes on in its worker thread)."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(_KILL_WAIT_S):
        await anyio.to_thread.run_sync(_kill, ray, actors, abandon_on_cancel=True)


def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    keys = ("stdlib", "platstdlib", "purelib", "platlib")
    return tuple(os.path.realpath(paths[key]) + os.sep for key in keys if key in paths)


def _worker_path() -> set[str]:
    """The folders Ray puts on its workers' path besides installed packages: the current
    folder, the script's folder (when it is on this process's path) and ``PYTHONPATH``."""
    folders = {os.getcwd(), *os.environ.get("PYTHONPATH", "").split(os.pathsep)}
    script = os.path.dirname(os.path.realpath(sys.argv[0])) if sys.argv and sys.argv[0] else ""
    if script in sys.path:
        folders.add(script)
    return {os.path.realpath(folder) for folder in folders if folder}


def _module_root(name: str) -> tuple[ModuleType, str] | None:
    """The top-level module of *name* and its file or folder; ``None`` when it has none."""
    top = name.partition(".")[0]
    module = sys.modules.get(top)
    # This package is on the workers (they run its actors); a script sends itself by value.
    skipped = ("__main__", "builtins", __name__.partition(".")[0])
    if top in skipped or top in sys.stdlib_module_names or module is None:
        return None
    locations = list(getattr(module, "__path__", []) or [])
    if not locations and getattr(module, "__file__", None):
        locations = [module.__file__]
    return (module, os.path.realpath(locations[0])) if len(locations) == 1 else None


def driver_only_modules(objects: Iterable[Any]) -> list[ModuleType]:
    """The top-level modules defining *objects* (functions, classes, or instances of classes)
    that Ray's workers cannot import: not installed, and not in a folder the workers' path
    holds (see :func:`_worker_path`). Scripts (``__main__``) are left out: cloudpickle sends
    what they define by value already.
    """
    installed = _installed_roots()
    on_path = _worker_path()
    found: list[ModuleType] = []
    for obj in objects:
        name = getattr(obj, "__module__", None) or type(obj).__module__
        located = _module_root(name) if isinstance(name, str) else None
        if located is None or located[0] in found:
            continue
        module, root = located
        if not root.startswith(installed) and os.path.dirname(root) not in on_path:
            found.append(module)
    return found


def send_by_value(ray: Any, modules: Iterable[ModuleType]) -> None:
    """Have Ray pickle what *modules* define by value from now on (for the life of the
    process), so workers that cannot import them still get their functions and classes.

    Ray's own way, a ``runtime_env`` with ``py_modules``, takes local paths only for the whole
    job (``ray.init``), which may have been started without them; by value works on any
    running cluster.
    """
    pickler = ray.cloudpickle
    registered = pickler.list_registry_pickle_by_value()
    for module in modules:
        if module.__name__ not in registered:
            pickler.register_pickle_by_value(module)
