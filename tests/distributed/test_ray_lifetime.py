"""Ray started by agent hosts lives as long as the process, not as the event loop that started
it; a start that does not return is given up by the caller's timeout. Each test runs a script
in a new process (its own Ray cluster), which itself runs asyncio then trio."""

from __future__ import annotations

from pathlib import Path

from ._two_loops import run_two_loops


def test_hosts_work_in_one_event_loop_after_another(tmp_path: Path) -> None:
    lines = run_two_loops("host", tmp_path)
    assert lines == ["asyncio: hi (heard 0)", "trio: hi (heard 0)"]


def test_a_ray_start_that_does_not_return_gives_way_to_the_callers_timeout(
    tmp_path: Path,
) -> None:
    # Both loops time out on their fail_after; the second waits for the first's start (which
    # goes on in the starter thread) instead of starting Ray again. The process then exits.
    lines = run_two_loops("hanging", tmp_path)
    assert [line.split(" after ")[0] for line in lines] == [
        "asyncio: TimeoutError",
        "trio: TimeoutError",
    ]
