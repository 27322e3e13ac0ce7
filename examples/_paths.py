"""Where the examples keep files from one run to the next: a folder of the user's own.

``example_folder(name)`` is ``<cache>/agentscope_rt_examples/<name>``, where ``<cache>`` is
``$XDG_CACHE_HOME`` or ``~/.cache``. It is per user because a fixed folder in the shared
temporary directory belongs to whoever ran the example first: on a machine with several users
everyone else's run then failed writing in it (PermissionError).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def example_folder(name: str) -> Path:
    """The user's folder *name* for the examples' files, created if missing.

    When the user has no writable home (a service account, a container run with ``HOME=/``), a
    fresh private folder in the temporary directory stands in: the example still runs, it only
    keeps nothing for the next run.

    :param name: the folder's name under ``agentscope_rt_examples``.
    """
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    folder = Path(cache) / "agentscope_rt_examples" / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return Path(tempfile.mkdtemp(prefix=f"agentscope_rt_examples-{name}-"))
    return folder
