"""Every formatter's output equals AgentScope 1.0.21's on the same conversations.

The expected payloads in ``golden/`` were produced by AgentScope's own formatters (see
``make_golden.py``); both sides read the inputs from ``golden/cases.json``. Where the two are
meant to differ the difference is tested in ``test_formatter_media.py`` instead (missing
local files, unknown extensions, URLs for providers that need bytes). One difference is
applied here: the Gemini formatters give the leading system prompt role ``system`` (sent as
``systemInstruction`` by the Gemini model) where AgentScope made it a ``user`` turn.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from typing import Any

import pytest

import agentscope_rt.formatter as formatter_module
from agentscope_rt.formatter import UnsupportedBlockWarning
from agentscope_rt.message import Msg

from .make_golden import DATA, FORMATTERS, GOLDEN, normalise, substitute

CASES: dict[str, list[dict[str, Any]]] = json.loads(
    (GOLDEN / "cases.json").read_text(encoding="utf-8")
)
GOLDEN_FILES = sorted(p for p in GOLDEN.glob("*.json") if p.name != "cases.json")


def _params() -> list[Any]:
    params = []
    for path in GOLDEN_FILES:
        payload = json.loads(path.read_text(encoding="utf-8"))
        for case in payload["cases"]:
            params.append(pytest.param(payload, case, id=f"{path.stem}-{case}"))
    return params


def test_golden_files_cover_every_formatter() -> None:
    names = {p.stem.split("__")[0] for p in GOLDEN_FILES}
    public = {n for n in formatter_module.__all__ if n.endswith("Formatter")}
    assert names == public
    assert len(GOLDEN_FILES) == len(FORMATTERS)


@pytest.mark.parametrize(("payload", "case"), _params())
async def test_formatter_matches_agentscope(payload: dict[str, Any], case: str) -> None:
    formatter = getattr(formatter_module, payload["formatter"])(**payload["kwargs"])
    msgs = [Msg.from_dict(substitute(m, str(DATA))) for m in CASES[case]]
    before = [m.to_dict() for m in msgs]
    with warnings.catch_warnings():
        # Which blocks are dropped, and the single warning, are tested separately.
        warnings.simplefilter("ignore", UnsupportedBlockWarning)
        output = await formatter.format(msgs)
    expected = payload["cases"][case]
    if payload["formatter"].startswith("Gemini") and msgs and msgs[0].role == "system":
        assert expected[0]["role"] == "user"
        expected = [{**expected[0], "role": "system"}, *expected[1:]]
    assert normalise(output, str(DATA), tempfile.gettempdir()) == expected
    # The caller's messages are left untouched.
    assert [m.to_dict() for m in msgs] == before
