"""MCP over stdio: :class:`StdIOStatefulClient` runs the server as a subprocess."""

from __future__ import annotations

import codecs
import os
import shlex
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, Literal, TextIO

from mcp import StdioServerParameters, stdio_client

from ._client_base import DEFAULT_CONNECT_TIMEOUT, value_redactions
from ._session import TransportFactory
from ._stateful_client_base import StatefulClientBase

__all__ = ["StdIOStatefulClient"]

# Strict decoding of the server's stdout, without the SDK's failure mode: its reader task dies
# on the first undecodable byte and then only drains stdout until the process exits, so the
# session never learns of it and every pending and later call waits forever. Under this error
# handler the reader goes on (the bad bytes become a NUL, which no JSON-RPC line may hold, so
# the line is dropped, never half-read), and the client whose reader met them ends the
# session with an error naming the cause. The client is found through a context variable the
# transport sets in the runner task, which the SDK's reader task inherits.
_STRICT_DECODING = "agentscope_rt.mcp.strict"
_on_undecodable: ContextVar[Callable[[UnicodeDecodeError], None] | None] = ContextVar(
    "agentscope_rt_mcp_on_undecodable", default=None
)


def _strict_decoding(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    report = _on_undecodable.get()
    if report is not None:
        report(error)
    return "\x00", error.end


codecs.register_error(_STRICT_DECODING, _strict_decoding)


class StdIOStatefulClient(StatefulClientBase):
    """An MCP server started as a subprocess and spoken to over its stdin/stdout.

    The process is started by :meth:`connect` (or ``async with``) and is gone when
    :meth:`close` returns, including when the caller is cancelled: the SDK closes its stdin,
    waits up to 2 s, then terminates and kills its whole process group.

    ``env`` is merged over a small safe default environment (``HOME``, ``PATH``, ...), as
    the ``mcp`` SDK 2.x does; the values are never shown in reprs or errors.
    """

    def __init__(
        self,
        name: str,
        command: str,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        encoding: str = "utf-8",
        encoding_error_handler: Literal["strict", "ignore", "replace"] = "strict",
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        errlog: TextIO | None = None,
    ) -> None:
        """
        :param name: the name identifying the MCP server.
        :param command: the executable that starts the server.
        :param args: its command-line arguments.
        :param env: extra environment variables for the server process.
        :param cwd: the server's working directory.
        :param encoding: the text encoding of the JSON-RPC lines.
        :param encoding_error_handler: how undecodable bytes are handled.
        :param connect_timeout: seconds allowed for the handshake and each tool listing.
        :param errlog: where the server's stderr goes (a file with a ``fileno()``);
            defaults to this process's stderr.
        :raises ValueError: if *command* is empty, *args* or *env* are malformed, or *cwd*
            is not a directory.
        """
        super().__init__(name, connect_timeout=connect_timeout)
        if not isinstance(command, str) or not command.strip():
            raise ValueError(f"StdIOStatefulClient {name!r} needs a non-empty command")
        if args is not None and not (
            isinstance(args, list | tuple) and all(isinstance(a, str) for a in args)
        ):
            raise ValueError(f"args of MCP client {name!r} must be a list of strings")
        if env is not None and not (
            isinstance(env, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise ValueError(f"env of MCP client {name!r} must map strings to strings")
        if cwd is not None and not os.path.isdir(cwd):
            raise ValueError(f"cwd of MCP client {name!r} is not a directory: {cwd!r}")
        if encoding_error_handler not in ("strict", "ignore", "replace"):
            raise ValueError(
                "encoding_error_handler must be 'strict', 'ignore' or 'replace', "
                f"got {encoding_error_handler!r}"
            )
        self.command = command
        self.args = list(args or [])
        self._params = StdioServerParameters(
            command=command,
            args=self.args,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            encoding=encoding,
            encoding_error_handler=encoding_error_handler,
        )
        if encoding_error_handler == "strict":
            # Not validated on copy: the SDK's field lists only the standard handler names.
            self._params = self._params.model_copy(
                update={"encoding_error_handler": _STRICT_DECODING}
            )
        self._errlog = errlog
        self._add_redactions(value_redactions((env or {}).values()))

    def __repr__(self) -> str:
        return f"StdIOStatefulClient(name={self.name!r}, command={self.command!r})"

    def _transport(self) -> TransportFactory:
        params = self._params
        errlog = self._errlog if self._errlog is not None else sys.stderr

        @asynccontextmanager
        async def transport() -> AsyncIterator[Any]:
            token = _on_undecodable.set(self._undecodable_output)
            try:
                async with stdio_client(params, errlog=errlog) as streams:
                    yield streams
            finally:
                _on_undecodable.reset(token)

        return transport

    def _undecodable_output(self, error: UnicodeDecodeError) -> None:
        self._end_session(
            f"the server wrote bytes that are not valid {self._params.encoding} to its stdout "
            f"({error.reason} at byte {error.start} of a chunk); pass "
            "encoding_error_handler='replace' to tolerate that"
        )

    def _describe_target(self) -> str:
        return f"command {shlex.join([self.command, *self.args])}"
