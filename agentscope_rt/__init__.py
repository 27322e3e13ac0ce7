"""agentscope-rt: AgentScope's multi-agent framework on structured concurrency.

The package is layered; each layer depends only on those below it:

* foundation — :mod:`.message` (attrs Msg and blocks), :mod:`.module` (StateModule),
  ``message.serde`` (the shared cattrs converter), ``_json`` (the JSON-data
  checks), :mod:`.exception`, :mod:`.types`;
* core — :mod:`.agent`, :mod:`.model`, :mod:`.formatter`, :mod:`.tool`, :mod:`.memory`,
  :mod:`.token`;
* framework — :mod:`.pipeline` (MsgHub and pipelines), :mod:`.mcp`, :mod:`.plan`, :mod:`.rag`,
  :mod:`.a2a` (needs the ``a2a`` extra), :mod:`.evaluate`, :mod:`.distributed` (needs the
  ``ray`` extra),
  :mod:`.tracing` (OpenTelemetry spans of the core's calls).

:func:`init` names the run, sets up logging (:data:`logger`, :func:`setup_logger`) and turns
on tracing or the studio connection, as ``agentscope.init`` does.

Public names live in each sub-package's ``__init__``; modules named ``_x.py`` are private.
Everything runs on anyio, so applications may use trio or asyncio.

As in AgentScope, ``import agentscope_rt`` makes every sub-package reachable as an attribute
(``agentscope_rt.agent.ReActAgent``). Here they are imported on first access rather than all at
once, so a program pays only for the sub-packages it uses.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from ._extras import missing_extra
from ._logging import logger, setup_logger
from ._run_config import config as _config
from ._urls import redact_url
from ._version import __version__

SUBPACKAGES = frozenset(
    {
        "a2a",
        "agent",
        "distributed",
        "durable",
        "embedding",
        "evaluate",
        "exception",
        "formatter",
        "hooks",
        "mcp",
        "memory",
        "message",
        "model",
        "module",
        "pipeline",
        "plan",
        "rag",
        "realtime",
        "session",
        "studio",
        "token",
        "tool",
        "tracing",
        "tts",
        "types",
    }
)
"""The public sub-packages, each imported when first read as an attribute of the package."""

__all__ = ["__version__", "init", "logger", "setup_logger", *sorted(SUBPACKAGES)]


def init(
    project: str | None = None,
    name: str | None = None,
    run_id: str | None = None,
    logging_path: str | os.PathLike[str] | None = None,
    logging_level: str = "INFO",
    studio_url: str | None = None,
    tracing_url: str | None = None,
) -> None:
    """Start a run, as ``agentscope.init`` does.

    * *project*, *name*, *run_id*: set (those given, non-empty) in the current context; the
      others keep their defaults, fixed when the package was imported (project
      ``UnnamedProject_At{YYYYMMDD}``, name ``{HHMMSS}_{4 random}``, a random run id). Tasks
      started afterwards from this context see them. The run id is every span's
      ``gen_ai.conversation.id``.
    * *logging_level*, *logging_path*: :func:`setup_logger` (the package's log records go
      to stderr, and to the file if given).
    * *studio_url*: connect to a studio (``agentscope_rt.studio.connect_studio``), and send
      traces to ``{studio_url}/v1/traces`` unless *tracing_url* is given.
    * *tracing_url*: export spans over OTLP/HTTP to this URL
      (:func:`agentscope_rt.tracing.setup_tracing`).

    Calling it again reconfigures: logging handlers and the trace exporter are replaced,
    never added a second time.

    :raises ValueError: for a logging level other than ``INFO``, ``DEBUG``, ``WARNING``,
        ``ERROR``, ``CRITICAL`` (checked first: nothing is changed), or a tracing URL that
        is not http(s).
    :raises ImportError: when *studio_url* or *tracing_url* is given and the package it
        needs (the ``studio`` or ``tracing`` extra) is not installed.
    """
    endpoint = tracing_url or (studio_url.rstrip("/") + "/v1/traces" if studio_url else None)
    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        raise ValueError(f"the tracing URL must be an http(s) URL, not {redact_url(endpoint)!r}")
    setup_logger(logging_level, logging_path)
    if project:
        _config.project = project
    if name:
        _config.name = name
    if run_id:
        _config.run_id = run_id
    if studio_url:
        _connect_studio(studio_url)
    if endpoint:
        from .tracing import setup_tracing

        setup_tracing(endpoint)


def _connect_studio(studio_url: str) -> None:
    try:
        studio = importlib.import_module(f"{__name__}.studio")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.studio":
            raise missing_extra("init(studio_url=...)", "studio", exc.name) from exc
        raise ImportError(
            "init(studio_url=...) needs agentscope_rt.studio, which this installation of "
            "agentscope-rt does not have"
        ) from exc
    studio.connect_studio(
        studio_url, project=_config.project, name=_config.name, run_id=_config.run_id
    )


def __getattr__(name: str) -> ModuleType:
    # Called only for names not already set: once imported, a sub-package is an ordinary
    # attribute of this module (the import system sets it), so later reads cost nothing.
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *SUBPACKAGES})
