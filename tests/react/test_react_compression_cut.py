"""Where compression cuts the history: never between a tool call and its result."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentscope_rt.agent._compression import compression_cut
from agentscope_rt.message import Msg, ToolResultBlock

from ._support import call, user


def _use(*ids: str) -> Msg:
    return Msg("Friday", [call("f", i) for i in ids], "assistant")


def _result(i: str) -> Msg:
    return Msg("system", [ToolResultBlock(id=i, name="f", output="ok")], "system")


def test_plain_messages_keep_the_newest() -> None:
    msgs = [user(str(i)) for i in range(6)]
    assert compression_cut(msgs, 3) == 3
    assert compression_cut(msgs, 0) == 6
    assert compression_cut(msgs, 6) == 0
    assert compression_cut(msgs, 10) == 0


def test_cut_moves_back_to_keep_tool_pairs_together() -> None:
    msgs = [user("q"), _use("a"), _result("a"), _use("b", "c"), _result("b"), _result("c")]
    # Keeping 2 would split call b/c from its results: the cut moves back before the call.
    assert compression_cut(msgs, 2) == 3
    assert compression_cut(msgs, 1) == 3
    assert compression_cut(msgs, 4) == 1
    assert compression_cut(msgs, 5) == 1


def test_pending_call_at_the_end_is_fine() -> None:
    msgs = [user("q"), _use("a"), _result("a"), _use("b")]
    assert compression_cut(msgs, 1) == 3


@st.composite
def _histories(draw: st.DrawFn) -> list[Msg]:
    msgs: list[Msg] = []
    n = 0
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["user", "tools"]))
        if kind == "user":
            msgs.append(user("x"))
            continue
        ids = [f"c{n + k}" for k in range(draw(st.integers(1, 3)))]
        n += len(ids)
        msgs.append(_use(*ids))
        order = draw(st.permutations(ids))
        msgs.extend(_result(i) for i in order)
    return msgs


@given(_histories(), st.integers(0, 10))
def test_cut_never_separates_a_pair_and_keeps_enough(msgs: list[Msg], keep: int) -> None:
    cut = compression_cut(msgs, keep)
    assert 0 <= cut <= len(msgs)
    if cut:
        assert len(msgs) - cut >= keep
    before = {b.id for m in msgs[:cut] for b in m.get_content_blocks("tool_use")}
    after = {b.id for m in msgs[cut:] for b in m.get_content_blocks("tool_result")}
    assert not before & after
    # The cut is the latest allowed one.
    for later in range(cut + 1, len(msgs) - keep + 1):
        uses = {b.id for m in msgs[:later] for b in m.get_content_blocks("tool_use")}
        results = {b.id for m in msgs[later:] for b in m.get_content_blocks("tool_result")}
        assert uses & results
