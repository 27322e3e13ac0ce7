"""A strict build of the documentation site (tests/docs/conftest.py builds it once a run)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ._snippets import ROOT


@dataclass(frozen=True)
class SiteBuild:
    """One ``mkdocs build --strict`` of the site: where it went and what it printed."""

    folder: Path
    returncode: int
    output: str

    def warnings(self) -> list[str]:
        """The build's WARNING and ERROR lines (strict mode fails on them; they must be none)."""
        return [line for line in self.output.splitlines() if line.startswith(("WARNING", "ERROR"))]


def build_site(out: Path, root: Path = ROOT) -> SiteBuild:
    """Build the site of *root* (its mkdocs.yml) into *out* as ``nox -s docs`` does (strict),
    keeping what it printed."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    # Not --quiet: it drops the warnings strict mode counts, and the build then exits 0.
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)]
    done = subprocess.run(build, cwd=root, env=env, capture_output=True, text=True, timeout=600)
    return SiteBuild(out, done.returncode, done.stdout + done.stderr)
