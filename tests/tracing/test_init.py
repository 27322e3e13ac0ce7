"""agentscope_rt.init and setup_logger: AgentScope's arguments, checks and reconfiguration."""

from __future__ import annotations

import contextvars
import logging
import pathlib
import re
import sys

import pytest

import agentscope_rt
from agentscope_rt import _logging
from agentscope_rt._urls import redact_url


def _ours() -> list[logging.Handler]:
    return list(agentscope_rt.logger.handlers)


def test_init_sets_only_the_values_given_in_the_current_context() -> None:
    config = agentscope_rt._config
    default_name = config.name
    assert re.fullmatch(r"UnnamedProject_At\d{8}", config.project)
    assert re.fullmatch(r"\d{6}_\w{4}", default_name)

    def run() -> tuple[str, str, str]:
        agentscope_rt.init(project="demo", run_id="r1", name="")
        return config.project, config.name, config.run_id

    assert contextvars.copy_context().run(run) == ("demo", default_name, "r1")
    assert config.project != "demo"


def test_a_bad_level_is_a_value_error_and_changes_nothing() -> None:
    agentscope_rt.init(logging_level="WARNING")
    handlers = _ours()
    for level in ("info", "TRACE", "Debug"):
        with pytest.raises(ValueError, match="Invalid logging level"):
            contextvars.copy_context().run(agentscope_rt.init, project="x", logging_level=level)
    assert _ours() == handlers
    assert agentscope_rt.logger.level == logging.WARNING


def test_init_twice_replaces_its_handlers_and_keeps_the_applications(
    tmp_path: pathlib.Path,
) -> None:
    mine = logging.NullHandler()
    agentscope_rt.logger.addHandler(mine)
    try:
        agentscope_rt.init(logging_path=tmp_path / "a.log")
        agentscope_rt.init(logging_level="DEBUG", logging_path=tmp_path / "b.log")
        handlers = _ours()
        assert mine in handlers
        assert len(handlers) == 3  # the application's, one stream handler, one file handler
        assert agentscope_rt.logger.propagate is False
        logging.getLogger("agentscope_rt.tracing._setup").debug("hello from a module")
        for handler in handlers:
            handler.flush()
        assert "hello from a module" in (tmp_path / "b.log").read_text()
        assert "hello from a module" not in (tmp_path / "a.log").read_text()
        assert " | DEBUG   | " in (tmp_path / "b.log").read_text()
    finally:
        agentscope_rt.logger.removeHandler(mine)
        _logging.reset_logger()
    assert _ours() == [] and agentscope_rt.logger.propagate


def test_studio_url_needs_the_studio_package(monkeypatch: pytest.MonkeyPatch) -> None:
    # As if the studio's extra were not installed.
    monkeypatch.setitem(sys.modules, "agentscope_rt.studio", None)
    with pytest.raises(ImportError, match=r"agentscope_rt\.studio"):
        contextvars.copy_context().run(agentscope_rt.init, studio_url="http://127.0.0.1:9")


def test_a_tracing_url_that_is_not_http_is_refused_first() -> None:
    with pytest.raises(ValueError, match="http"):
        agentscope_rt.init(logging_level="ERROR", tracing_url="ftp://127.0.0.1/v1/traces")
    assert _ours() == []  # logging untouched


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "https://u:p4ss@example.com:8443/v1/traces?key=t0k#frag",
            "https://example.com:8443/v1/traces",
        ),
        ("http://[::1]:4318/v1/traces?key=t0k", "http://[::1]:4318/v1/traces"),
        ("http://127.0.0.1:4318/v1/traces", "http://127.0.0.1:4318/v1/traces"),
        ("u:p4ss@example.com/v1?key=t0k", "example.com/v1"),
        ("/data/team@corp/kb", "/data/team@corp/kb"),
        ("./milvus.db", "./milvus.db"),
        ("http://[::1/v1", "<a malformed URL>"),
    ],
)
def test_urls_are_shown_without_user_info_or_query(url: str, shown: str) -> None:
    assert redact_url(url) == shown
