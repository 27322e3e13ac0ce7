"""A one-line progress bar on a terminal: done / failed / remaining."""

from __future__ import annotations

import sys
import time
from typing import TextIO

_WIDTH = 24
_INTERVAL_S = 0.1


class Progress:
    """Redraws ``name [#####.....] done 40 failed 2 remaining 58`` in place.

    Draws only when *stream* is a terminal (``isatty()``): on a pipe or file it writes
    nothing at all. Redraws at most ten times a second, and once more on :meth:`close`.

    :param stream: where to draw; ``None`` for standard error.
    :param enabled: ``False`` draws nothing, even on a terminal.
    """

    def __init__(
        self,
        name: str,
        total: int,
        done: int = 0,
        stream: TextIO | None = None,
        enabled: bool = True,
    ) -> None:
        self.name = name
        self.total = total
        self.done = done
        self.failed = 0
        self._stream = sys.stderr if stream is None else stream
        self._enabled = enabled and _is_terminal(self._stream)
        self._last = 0.0

    def advance(self, failed: bool) -> None:
        """Count one finished pair (a failure when *failed*)."""
        if failed:
            self.failed += 1
        else:
            self.done += 1
        now = time.monotonic()
        if now - self._last >= _INTERVAL_S:
            self._last = now
            self._draw("\r")

    def close(self) -> None:
        """Draw the final state and end the line."""
        self._draw("\r")
        if self._enabled:
            self._stream.write("\n")
            self._stream.flush()

    def line(self) -> str:
        """The bar as text."""
        finished = self.done + self.failed
        remaining = max(self.total - finished, 0)
        filled = _WIDTH * finished // self.total if self.total else _WIDTH
        bar = "#" * filled + "." * (_WIDTH - filled)
        return f"{self.name} [{bar}] done {self.done} failed {self.failed} remaining {remaining}"

    def _draw(self, prefix: str) -> None:
        if self._enabled:
            self._stream.write(prefix + self.line())
            self._stream.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
