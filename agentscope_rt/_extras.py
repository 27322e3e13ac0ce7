"""How a missing optional dependency is reported: one wording for every extra.

The package is installed from a clone of its repository, so the command given is the one that
works there (``pip install -e ".[extra]"``, run in the clone); it stays right once the package
is published, where the registry's form would be wrong until then. Every feature that needs an
extra raises the :class:`ImportError` built here, naming the extra, the module that could not be
imported and that command.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from types import ModuleType

__all__ = ["check_extra", "install_command", "missing_extra", "require_extra"]


def install_command(extra: str) -> str:
    """The command that installs *extra*, as run in a clone of the agentscope-rt repository.

    :param extra: the name of an optional-dependency group of ``pyproject.toml``.
    """
    return f'pip install -e ".[{extra}]" in a clone of the agentscope-rt repository'


def missing_extra(user: str, extra: str, missing: str | None = None) -> ImportError:
    """The error for *user* used without its optional dependencies (raise it ``from`` the
    original ImportError, so the traceback keeps what failed).

    :param user: what needs the extra, as the message names it (``"QdrantStore"``).
    :param extra: the extra that installs what is missing.
    :param missing: the module that could not be imported, when known; it is also the error's
        ``name``.
    """
    absent = f" ({missing} is not installed)" if missing else ""
    return ImportError(
        f"{user} needs the '{extra}' extra{absent}: install it with {install_command(extra)}",
        name=missing,
    )


def require_extra(module: str, *, extra: str, user: str) -> ModuleType:
    """Import *module*, or fail saying which extra installs it.

    :param module: the module to import (``"qdrant_client"``).
    :param extra: the extra that installs it.
    :param user: what needs it, for the message.
    :raises ImportError: from :func:`missing_extra`, when *module* (or a module it imports)
        cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(user, extra, exc.name or module) from exc


def check_extra(modules: Iterable[str], *, extra: str, user: str) -> None:
    """Check that each of *modules* can be imported, without importing it (a dotted name
    imports its parent packages), so that a package needing an extra fails when it is imported,
    naming the extra, rather than later deep inside a call.

    :param modules: the modules the extra installs (``"wsproto"``, ``"opentelemetry.sdk"``).
    :param extra: the extra that installs them.
    :param user: what needs them, for the message.
    :raises ImportError: from :func:`missing_extra`, for the first module that is missing.
    """
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except ImportError:  # a parent package is missing
            found = False
        if not found:
            raise missing_extra(user, extra, module)
