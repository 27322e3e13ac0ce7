"""The package's logger and :func:`setup_logger`, AgentScope's names for them.

Every module logs through a standard :mod:`logging` logger of its own, below
``agentscope_rt`` (``agentscope_rt.agent``, ``agentscope_rt.tracing._setup``, ...), so an
application configures them all through :data:`logger` or through :mod:`logging` as it
usually would. Nothing is configured when the package is imported: until
:func:`setup_logger` (or :func:`agentscope_rt.init`) runs, records go wherever the
application's logging sends them.
"""

from __future__ import annotations

import logging
import os
import threading

__all__ = ["LEVELS", "logger", "setup_logger"]

LEVELS = ("INFO", "DEBUG", "WARNING", "ERROR", "CRITICAL")
"""The levels :func:`setup_logger` accepts, spelled exactly so (as AgentScope accepts them)."""

_FORMAT = "%(asctime)s | %(levelname)-7s | %(module)s:%(funcName)s:%(lineno)s - %(message)s"

logger = logging.getLogger("agentscope_rt")
"""The package's root logger: every module's logger is below it."""

# The handlers setup_logger installed: a second call replaces exactly these (handlers the
# application added itself stay).
_installed: list[logging.Handler] = []
_lock = threading.Lock()


def setup_logger(level: str, filepath: str | os.PathLike[str] | None = None) -> None:
    """Send the package's log records at *level* and above to stderr (and to *filepath*).

    As in AgentScope: records are formatted as ``time | LEVEL | module:function:line -
    message`` and no longer propagate to the root logger (so an application that also logs to
    stderr does not print them twice). Calling it again replaces the handlers it installed
    before (the previous file is closed); it never adds a second one.

    :param level: one of ``"INFO"``, ``"DEBUG"``, ``"WARNING"``, ``"ERROR"``, ``"CRITICAL"``.
    :param filepath: a file the records are appended to as well.
    :raises ValueError: for any other level (nothing is changed then).
    :raises OSError: when *filepath* cannot be opened (nothing is changed then).
    """
    if level not in LEVELS:
        raise ValueError(
            f"Invalid logging level: {level!r}. Must be one of "
            "'INFO', 'DEBUG', 'WARNING', 'ERROR', 'CRITICAL'."
        )
    formatter = logging.Formatter(_FORMAT)
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if filepath is not None:
        handlers.append(logging.FileHandler(filepath, encoding="utf-8"))
    for handler in handlers:
        handler.setFormatter(formatter)
    with _lock:
        for old in _installed:
            logger.removeHandler(old)
            old.close()
        _installed[:] = handlers
        for handler in handlers:
            logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False


def reset_logger() -> None:
    """Undo :func:`setup_logger`: remove (and close) the handlers it installed, reset the
    level and let records propagate again. For tests and applications that reconfigure
    logging themselves."""
    with _lock:
        for old in _installed:
            logger.removeHandler(old)
            old.close()
        _installed.clear()
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
