"""``python -m agentscope_rt.durable``: list a store's runs, or show one run's report.

Exit status: 0 when done; 1 when the store failed (:class:`DurableRunError` or
:class:`OSError`: it cannot be reached, a record is corrupted); 2 for a usage error, a
database file that does not exist, a store class this installation lacks, or a run the store
does not have.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from ..exception import DurableRunError
from ._inspect import format_report, format_runs, inspect_run
from ._sqlite_store import SQLiteRunStore
from ._store import RunStore

__all__ = ["main"]

PROG = "python -m agentscope_rt.durable"
DEFAULT_DB = "./agentscope_runs.db"


class _UsageError(Exception):
    """Answered with exit status 2 and the message."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="See the durable runs a run store holds, and where each stopped."
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--db", help=f"a SQLite run database (default: {DEFAULT_DB})")
    where.add_argument("--postgres", metavar="DSN", help="a PostgreSQL run store's DSN")
    where.add_argument("--redis", metavar="URL", help="a Redis run store's URL")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="the runs, most recently updated first")
    listing.add_argument("--user", help="only this user's runs (default: every user's)")
    show = commands.add_parser("show", help="one run: its steps, agents and where it stopped")
    show.add_argument("run_id")
    show.add_argument("--user", default="", help="whose run it is (default: '')")
    show.add_argument(
        "--steps", type=_count, metavar="N", help="show only the last N steps (default: all)"
    )
    return parser


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _named_store(class_name: str, address: str) -> RunStore:
    """A store of this package's class *class_name* (added by an optional module), built on
    *address*, which is never shown (a DSN or URL may hold a password)."""
    from agentscope_rt import durable

    store_class = getattr(durable, class_name, None)
    if store_class is None:
        raise _UsageError(
            f"this installation of agentscope_rt has no {class_name}: use --db with a "
            "SQLite run database, or install a version that has it"
        )
    store: RunStore = store_class(address)
    return store


def _store(args: argparse.Namespace) -> RunStore:
    if args.postgres is not None:
        return _named_store("PostgresRunStore", args.postgres)
    if args.redis is not None:
        return _named_store("RedisRunStore", args.redis)
    path = Path(args.db or DEFAULT_DB)
    # The store would create a missing file: a typo must not leave an empty database behind.
    if not path.is_file():
        raise _UsageError(f"no run database at {path}: give the file with --db PATH")
    return SQLiteRunStore(path)


async def _run(args: argparse.Namespace, store: RunStore) -> str:
    try:
        if args.command == "list":
            return format_runs(await store.list_runs(args.user))
        if await store.get_run(args.user, args.run_id) is None:
            raise _UsageError(
                f"no run {args.run_id!r} of user {args.user!r} in this store "
                f"(`{PROG} list` shows the runs it holds)"
            )
        report = await inspect_run(store, args.run_id, args.user)
        return format_report(report, last_steps=args.steps)
    finally:
        await store.aclose()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on *argv* (``sys.argv[1:]`` by default); the exit status."""
    args = _parser().parse_args(argv)
    try:
        store = _store(args)
        text = anyio.run(functools.partial(_run, args, store))
    except _UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except (DurableRunError, OSError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    print(text)
    return 0
