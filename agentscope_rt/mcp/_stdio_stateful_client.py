"""MCP over stdio: :class:`StdIOStatefulClient` runs the server as a subprocess."""

from __future__ import annotations

import os
import shlex
import sys
from typing import Literal, TextIO

from mcp import StdioServerParameters, stdio_client

from ._client_base import DEFAULT_CONNECT_TIMEOUT, value_redactions
from ._session import TransportFactory
from ._stateful_client_base import StatefulClientBase

__all__ = ["StdIOStatefulClient"]


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
        self._errlog = errlog
        self._add_redactions(value_redactions((env or {}).values()))

    def __repr__(self) -> str:
        return f"StdIOStatefulClient(name={self.name!r}, command={self.command!r})"

    def _transport(self) -> TransportFactory:
        params, errlog = self._params, self._errlog
        return lambda: stdio_client(params, errlog=errlog if errlog is not None else sys.stderr)

    def _describe_target(self) -> str:
        return f"command {shlex.join([self.command, *self.args])}"
