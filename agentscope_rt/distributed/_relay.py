"""The host's side of a call of a durable run: the records its steps make go to the caller,
which writes them with the run's store, and each step waits until its record is written; a
group call first asks the caller for the records of its agents' calls."""

from __future__ import annotations

from typing import Any, NoReturn

import anyio

from ..durable import RunInfo, StepRecord
from ..exception import DurableRunError
from ._wire import as_data

__all__ = ["Relay"]


class Relay:
    """A run store for :func:`~agentscope_rt.durable.join_run` on a host: ``put_step`` hands
    the record to the caller (who fetches them with :meth:`take`) and returns once the
    caller says it wrote it (:meth:`take`'s *written*), so a step's record is durable before
    its result is used, as in the caller's own process.

    Records are numbered, and handed again until the caller says it wrote them: a fetch
    whose answer the caller stopped waiting for (it was cancelled) loses nothing. A question
    (:meth:`ask`) is handed with every fetch until the caller answers it, for the same
    reason."""

    def __init__(self) -> None:
        self._count = 0
        self._unwritten: dict[int, StepRecord] = {}
        self._written: dict[int, anyio.Event] = {}
        self._wake = anyio.Event()
        self._done = False
        self._question: list[str] | None = None
        self._answer: list[StepRecord] = []
        self._answered = anyio.Event()

    def __repr__(self) -> str:
        return f"<relay of a durable run's records: {len(self._unwritten)} unwritten>"

    def _notify(self) -> None:
        # Every fetch waiting now wakes; later ones wait on a new event.
        wake, self._wake = self._wake, anyio.Event()
        wake.set()

    async def put_step(self, user_id: str, run_id: str, record: StepRecord) -> None:
        self._count += 1
        number = self._count
        self._unwritten[number] = record
        written = self._written[number] = anyio.Event()
        self._notify()
        await written.wait()

    async def ask(self, keys: list[str]) -> list[StepRecord]:
        """The records of the calls (or deliveries) *keys*, as the caller answers (see
        :attr:`question` and :meth:`answer`); one question at a time."""
        self._question, self._answered = keys, anyio.Event()
        self._notify()
        await self._answered.wait()
        answer, self._answer = self._answer, []
        return answer

    @property
    def question(self) -> list[str] | None:
        """The keys :meth:`ask` waits for the records of, until they come."""
        return self._question

    def answer(self, records: list[dict[str, Any]]) -> None:
        """The records (as JSON data) the caller found for :attr:`question`; nothing when
        no question waits (an answer that came twice)."""
        if self._question is None:
            return
        self._question = None
        self._answer = [StepRecord(**record) for record in records]
        self._answered.set()

    def finish(self) -> None:
        """The call ended: :meth:`take` says so once every record is written."""
        self._done = True
        self._notify()

    async def take(self, written: list[int]) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
        """Let the steps whose records the caller wrote (by number) go on; then the records
        not written yet (numbered, as JSON data), waiting for one when there are none, and
        whether the call ended."""
        for number in written:
            self._unwritten.pop(number, None)
            event = self._written.pop(number, None)
            if event is not None:
                event.set()
        while not self._unwritten and not self._done and self._question is None:
            await self._wake.wait()
        records = [(number, as_data(r)) for number, r in self._unwritten.items()]
        return records, self._done and not records

    # -- the rest of the store protocol: a relay only writes ---------------------------

    def _refuse(self, what: str) -> NoReturn:
        raise DurableRunError(f"a relay of a durable run's records cannot {what}")

    async def acquire(self, user_id: str, run_id: str) -> RunInfo:
        self._refuse("open a run")

    async def release(self, user_id: str, run_id: str, status: Any) -> None:
        self._refuse("close a run")

    async def load_steps(self, user_id: str, run_id: str) -> list[StepRecord]:
        self._refuse("read records (they come with the call)")

    async def get_run(self, user_id: str, run_id: str) -> RunInfo | None:
        self._refuse("read runs")

    async def list_runs(self, user_id: str | None = None) -> list[RunInfo]:
        self._refuse("list runs")

    async def delete_run(self, user_id: str, run_id: str) -> bool:
        self._refuse("delete runs")

    async def aclose(self) -> None:
        pass
