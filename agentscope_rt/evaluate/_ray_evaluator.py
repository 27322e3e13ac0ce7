"""An evaluator that spreads the pairs over a Ray cluster (the ``ray`` extra)."""

from __future__ import annotations

import math
from collections.abc import Awaitable
from typing import Any, TextIO

import anyio

from .._file_names import shown_name
from .._ray import (
    driver_only_modules,
    ensure_ray,
    import_ray,
    kill_actors,
    send_by_value,
    wait_ref,
)
from ..exception import EvaluationError
from ._evaluator import EvaluatorBase, PendingPair, _positive_int
from ._progress import Progress
from ._run import PairOutcome, RetryPolicy, SolutionFunction, run_pair
from ._storage import EvaluatorStorageBase
from ._task import BenchmarkBase


class _PairWorker:
    """The body of one Ray actor: runs pairs with the solution it was built with, up to its
    ``max_concurrency`` at once on the actor's event loop, and returns their outcomes."""

    def __init__(
        self,
        solution: SolutionFunction,
        storage: EvaluatorStorageBase,
        timeout: float | None,
        retry: RetryPolicy,
    ) -> None:
        self._solution = solution
        self._storage = storage
        self._timeout = timeout
        self._retry = retry
        # The actor's process exists for this evaluation: its spans are counted for good.
        EvaluatorBase._start_statistics()

    def ready(self) -> bool:
        """Answers once the actor is built (its arguments unpickled)."""
        return True

    async def run(self, pair: PendingPair) -> PairOutcome:
        hook = self._storage.get_agent_pre_print_hook(pair.task.id, pair.repeat_id)
        return await run_pair(
            pair.task,
            pair.repeat_id,
            self._solution,
            hook,
            stored=pair.stored,
            missing_metrics=pair.missing_metrics,
            time_limit=self._timeout,
            retry=self._retry,
        )


class RayEvaluator(EvaluatorBase):
    """Runs the pairs on Ray actors spread over the cluster, up to ``n_workers`` at once.

    ``n_actors`` actors are created (by default as many as the cluster has CPUs, at most
    ``n_workers``), placed with Ray's ``SPREAD`` strategy; each runs up to
    ``ceil(n_workers / n_actors)`` pairs concurrently on its own event loop, and each pair goes
    to the actor with the fewest in flight. The actors return each pair's outcome as JSON
    data and this process writes the storage, so results are the same as
    :class:`GeneralEvaluator`'s; only what the agents print (``logging.txt``) is written by the
    actors, through the storage they were given (a shared folder on a multi-node cluster).
    The solution, the tasks and the storage must be picklable (Ray uses cloudpickle).

    The modules defining the solution, the benchmark, its tasks and metrics and the storage
    are sent to the actors by value (cloudpickle's ``register_pickle_by_value``, for the life
    of the process) when the workers could not import them: not installed, and not in the
    current folder, the script's folder or ``PYTHONPATH`` (e.g. a folder added to
    ``sys.path`` at run time). With an ``actor_options`` ``runtime_env`` holding
    ``py_modules`` or ``working_dir``, nothing is sent: the workers import as told. Actors
    that cannot be built fail the run at once with an :class:`EvaluationError` naming what
    they missed.

    The caller may run on asyncio or trio: Ray's object references are awaited with
    ``ray.get`` in worker threads. Cancelling the run cancels the Ray tasks in flight. Ray is
    started (``ray.init(**ray_init_options)``) when not already running, from a thread kept
    for the life of the process, so runs work in one event loop after another.

    :param n_workers: how many pairs run at once over the cluster.
    :param n_actors: how many actors to create (default: the cluster's CPUs, at most
        ``n_workers``).
    :param actor_options: more ``.options(...)`` for the actors (e.g. ``num_cpus``).
    :param ray_init_options: keyword arguments of ``ray.init`` when this evaluator starts Ray
        (``num_cpus``, ``address``...); ignored when Ray is already running.
    :raises ImportError: when Ray is not installed.
    :raises EvaluationError: for ``n_workers`` or ``n_actors`` below 1 (and see
        :class:`EvaluatorBase`).
    """

    def __init__(
        self,
        name: str,
        benchmark: BenchmarkBase,
        n_repeat: int,
        storage: EvaluatorStorageBase,
        n_workers: int,
        *,
        n_actors: int | None = None,
        actor_options: dict[str, Any] | None = None,
        ray_init_options: dict[str, Any] | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        progress: bool | TextIO = True,
    ) -> None:
        super().__init__(
            name, benchmark, n_repeat, storage, timeout=timeout, retry=retry, progress=progress
        )
        self._ray = import_ray("RayEvaluator")
        self.n_workers = _positive_int(n_workers, "n_workers")
        self.n_actors = None if n_actors is None else _positive_int(n_actors, "n_actors")
        self.actor_options = dict(actor_options or {})
        self.ray_init_options = dict(ray_init_options or {})

    async def run(self, solution: SolutionFunction) -> None:
        """Solve and evaluate every unfinished pair on the cluster, then aggregate.

        :raises EvaluationError: before any solution runs, when the benchmark has two tasks
            with one id or a name that cannot name a file (see :class:`EvaluatorBase`); when a
            stored file cannot be read.
        :raises EvaluationError: when the actors cannot be built (a module they need is
            missing on the workers: the message names it), or an actor dies (the outcomes
            that arrived before are stored), with what killed it.
        :raises ray.exceptions.RayError: when Ray itself fails.
        """
        pending, finished = await anyio.to_thread.run_sync(self._prepare)
        progress = self._progress_bar(finished + len(pending), finished)
        try:
            if pending:
                await self._run_on_cluster(pending, solution, progress)
        finally:
            progress.close()
        await self.aggregate()

    async def _run_on_cluster(
        self, pending: list[PendingPair], solution: SolutionFunction, progress: Progress
    ) -> None:
        await ensure_ray(self._ray, self.ray_init_options)
        actors = await anyio.to_thread.run_sync(self._start_actors, solution, len(pending))
        in_flight = [0] * len(actors)
        limiter = anyio.CapacityLimiter(self.n_workers)
        # One blocked thread per pair in flight (the default pool has 40 threads).
        threads = anyio.CapacityLimiter(self.n_workers)
        try:
            # An actor that cannot be built (a module its arguments need is missing there)
            # fails here once, before any pair is sent, rather than once per pair.
            await self._wait(wait_ref(self._ray, [a.ready.remote() for a in actors]), None)
            async with anyio.create_task_group() as tg:
                for pair in pending:
                    borrower = object()
                    await limiter.acquire_on_behalf_of(borrower)
                    index = in_flight.index(min(in_flight))
                    in_flight[index] += 1
                    tg.start_soon(
                        self._run_remote,
                        actors[index],
                        pair,
                        (in_flight, index),
                        (limiter, borrower, threads),
                        progress,
                    )
        finally:
            # Also when cancelled: actors left alive would hold their processes.
            await kill_actors(self._ray, actors)

    def _start_actors(self, solution: SolutionFunction, n_pairs: int) -> list[Any]:
        ray = self._ray
        cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
        n_actors = min(self.n_actors or cpus, self.n_workers, n_pairs)
        options = {
            "max_concurrency": math.ceil(self.n_workers / n_actors),
            "scheduling_strategy": "SPREAD",
            # The actors wait on models and tools; they hold no CPU a task scheduler could use.
            "num_cpus": 0,
            **self.actor_options,
        }
        self._ship_modules(options, solution)
        actor_class = ray.remote(_PairWorker)
        return [
            actor_class.options(**options).remote(solution, self.storage, self.timeout, self.retry)
            for _ in range(n_actors)
        ]

    def _ship_modules(self, options: dict[str, Any], solution: SolutionFunction) -> None:
        """Send the modules the actors need and could not import by value (see
        :func:`send_by_value`), unless *options* say how the workers get them."""
        env = options.get("runtime_env") or {}
        if "py_modules" in env or "working_dir" in env:
            return
        kinds: set[type] = {type(self.benchmark), type(self.storage)}
        for task in self.benchmark:
            kinds |= {type(task), *(type(metric) for metric in task.metrics)}
        send_by_value(self._ray, driver_only_modules([solution, *kinds]))

    async def _run_remote(
        self,
        actor: Any,
        pair: PendingPair,
        slot: tuple[list[int], int],
        capacity: tuple[anyio.CapacityLimiter, object, anyio.CapacityLimiter],
        progress: Progress,
    ) -> None:
        in_flight, index = slot
        limiter, borrower, threads = capacity
        try:
            ref = actor.run.remote(pair)
            try:
                outcome: PairOutcome = await self._wait(wait_ref(self._ray, ref, threads), pair)
            except BaseException:
                self._ray.cancel(ref)
                raise
            await anyio.to_thread.run_sync(self._store, outcome)
            progress.advance(failed=outcome.error is not None)
        finally:
            in_flight[index] -= 1
            limiter.release_on_behalf_of(borrower)

    async def _wait(self, waiting: Awaitable[Any], pair: PendingPair | None) -> Any:
        """What *waiting* (a wait on actors) gives, with an actor's death as an
        :class:`EvaluationError` saying what killed it (*pair*: what it was running)."""
        try:
            return await waiting
        except (
            self._ray.exceptions.RayActorError,
            self._ray.exceptions.RuntimeEnvSetupError,
        ) as exc:
            lines = str(exc).strip().splitlines()
            cause = lines[-1].strip() if lines else type(exc).__name__
            if pair is None:
                raise EvaluationError(
                    f"evaluation {self.name!r}: its Ray actors could not be built: {cause}. A "
                    "module missing there must be importable on the workers (installed, in "
                    "PYTHONPATH, or given as actor_options={'runtime_env': {'py_modules': "
                    "[...]}})"
                ) from None
            raise EvaluationError(
                f"evaluation {self.name!r}: the Ray actor running task "
                f"{shown_name(pair.task.id)} (repeat {pair.repeat_id}) died: {cause}. The "
                "outcomes that arrived before are stored; the next run resumes from them"
            ) from None
