"""A process that opens a run and holds it until it is killed; run by test_stores.py.

Usage: ``python _hold.py KIND LOCATION USER_ID RUN_ID [LEASE_SECONDS]``. It acquires the run,
records one step (``held#1``), prints ``held`` and sleeps; when the run is refused, it prints
``refused`` and exits.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from agentscope_rt.durable import DurableRunError, StepRecord
from tests.durable._stores import build_store


async def main(kind: str, location: str, user_id: str, run_id: str, lease: str | None) -> None:
    store = build_store(kind, location, None if lease is None else float(lease))
    try:
        await store.acquire(user_id, run_id)
    except DurableRunError:
        print("refused", flush=True)
        return
    await store.put_step(user_id, run_id, StepRecord("held#1", "step", "done", "f", [1], 1))
    print("held", flush=True)
    await anyio.sleep_forever()


if __name__ == "__main__":
    kind, location, user_id, run_id = sys.argv[1:5]
    anyio.run(main, kind, location, user_id, run_id, sys.argv[5] if len(sys.argv) > 5 else None)
