"""A progress bar for long ingestion runs, shown only where someone can see it.

It draws one line on standard error, redrawn in place, when standard error is a terminal, and
writes nothing otherwise (logs, CI, pipes stay clean). It needs no dependency: tqdm is not one
of the package's, and a bar that counts files needs a few lines, not a library.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

__all__ = ["ProgressBar"]

_WIDTH = 24
# The switch that silences the agents' console printing silences the bar too.
_QUIET_ENV = "AGENTSCOPE_RT_DISABLE_CONSOLE_OUTPUT"


class ProgressBar:
    """Count *total* steps on one redrawn line of *stream* (standard error by default).

    :param total: the number of steps.
    :param description: what is being counted, shown before the bar.
    :param enabled: draw or not; by default, exactly when *stream* is a terminal (and
        ``AGENTSCOPE_RT_DISABLE_CONSOLE_OUTPUT`` is not ``true``).
    :param stream: where to draw.
    """

    def __init__(
        self,
        total: int,
        description: str = "",
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.total = max(total, 0)
        self.description = description
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = (
                bool(isatty and isatty())
                and os.environ.get("TERM") != "dumb"
                and os.environ.get(_QUIET_ENV, "").lower() != "true"
            )
        self.enabled = enabled
        self._closed = False

    def update(self, steps: int = 1, label: str = "") -> None:
        """Count *steps* more and redraw; *label* (e.g. the file just read) is shown after."""
        self.done = min(self.done + steps, self.total) if self.total else self.done + steps
        self._draw(label)

    def _draw(self, label: str) -> None:
        if not self.enabled or self._closed:
            return
        if self.total:
            filled = _WIDTH * self.done // self.total
            bar = "#" * filled + "." * (_WIDTH - filled)
            line = f"{self.description} [{bar}] {self.done}/{self.total}"
        else:
            line = f"{self.description} {self.done}"
        if label:
            line += f" {label}"
        # \r returns to the line start; \x1b[K clears what a longer previous line left.
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        """End the line (once); nothing is written when disabled."""
        if self.enabled and not self._closed:
            self.stream.write("\n")
            self.stream.flush()
        self._closed = True

    def __enter__(self) -> ProgressBar:
        self._draw("")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
