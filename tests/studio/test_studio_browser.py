"""The studio page in a real browser: a 3-agent hub conversation streams in, a person
interrupts a replying agent and answers a UserAgent (structured input) from the page."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from opentelemetry.sdk.trace import TracerProvider
from playwright.sync_api import expect

from agentscope_rt.agent import ReActAgent, UserAgent
from agentscope_rt.durable import SQLiteRunStore
from agentscope_rt.formatter import OpenAIMultiAgentFormatter
from agentscope_rt.message import Msg
from agentscope_rt.model import ChatUsage, ScriptedChatModel
from agentscope_rt.model._testing import reply, tool_call
from agentscope_rt.pipeline import MsgHub
from agentscope_rt.studio import serve
from agentscope_rt.tool import Toolkit, ToolResponse

from ..durable._recorded import STUCK_TOOL, record_runs
from ._browser import open_browser

TIMEOUT_MS = 30_000
VOTE = {
    "type": "object",
    "properties": {"vote": {"type": "string", "enum": ["for", "against"]}},
    "required": ["vote"],
}


async def count_votes(motion: str) -> ToolResponse:
    """Count the votes on a motion.

    Args:
        motion: the motion.
    """
    from agentscope_rt.message import TextBlock

    return ToolResponse(content=[TextBlock(text=f"3 votes on {motion!r}")])


async def deliberate(topic: str) -> ToolResponse:
    """Think about a topic for as long as it takes.

    Args:
        topic: what to think about.
    """
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def agent(name: str, responses: list[Any], tool: Any) -> ReActAgent:
    toolkit = Toolkit()
    toolkit.register_tool_function(tool)
    return ReActAgent(
        name=name,
        sys_prompt=f"You are {name}.",
        model=ScriptedChatModel(responses, stream=True, model_name=f"model-{name.lower()}"),
        formatter=OpenAIMultiAgentFormatter(),
        toolkit=toolkit,
    )


def drive_page(url: str, profile: Path, screenshot: Path) -> None:
    """What the person does, in the browser (runs in a worker thread)."""
    with open_browser(profile) as browser:
        page = browser.new_page()
        page.goto(url)
        expect(page.locator("#conn")).to_have_text("live", timeout=TIMEOUT_MS)
        # Served without a run store: no Durable runs view.
        durable = page.locator("#durable")
        expect(durable).to_have_attribute("data-store", "none", timeout=TIMEOUT_MS)
        expect(durable).to_be_hidden()
        # The conversation streams in: both debaters' final words, the tool call with its
        # result, the hub with its members, usage per agent and model.
        messages = page.locator("#messages")
        expect(messages).to_contain_text("Bicycles win on short trips.", timeout=TIMEOUT_MS)
        expect(messages).to_contain_text("Cars still matter for families.", timeout=TIMEOUT_MS)
        expect(page.locator("#tools")).to_contain_text("3 votes on 'bicycles'", timeout=TIMEOUT_MS)
        expect(page.locator("#hubs")).to_contain_text("Ada, Brook, Cyd, Dana", timeout=TIMEOUT_MS)
        expect(page.locator('#hubs [data-hub="debate"] .count')).to_have_text("4 members")
        expect(page.locator("#usage")).to_contain_text("model-ada", timeout=TIMEOUT_MS)
        # The agents come a page at a time, with counts by state over all of them.
        expect(page.locator("#agents-pager")).to_contain_text("1-50 of 124", timeout=TIMEOUT_MS)
        expect(page.locator("#agents .agent")).to_have_count(50)
        expect(page.locator("#totals")).to_contain_text("124 agents", timeout=TIMEOUT_MS)
        page.locator("#agents-pager").get_by_role("button", name="Next").click()
        expect(page.locator("#agents-pager")).to_contain_text("51-100 of 124", timeout=TIMEOUT_MS)
        expect(page.locator('.agent[data-agent="extra46"]')).to_be_visible(timeout=TIMEOUT_MS)
        page.locator("#agent-search").fill("EXTRA11")
        expect(page.locator("#agents-pager")).to_contain_text("1-11 of 11", timeout=TIMEOUT_MS)
        page.locator("#agent-search").fill("")
        expect(page.locator("#agents-pager")).to_contain_text("1-50 of 124", timeout=TIMEOUT_MS)
        expect(page.locator("#spans")).to_contain_text("invoke_agent Ada", timeout=TIMEOUT_MS)
        # Cyd is stuck deliberating: interrupt it from the page.
        cyd = page.locator('.agent[data-agent="Cyd"]')
        expect(cyd.locator(".badge")).to_have_text("replying", timeout=TIMEOUT_MS)
        cyd.get_by_role("button", name="Interrupt").click()
        expect(cyd.locator(".badge")).to_have_text("interrupted", timeout=TIMEOUT_MS)
        # Dana is the person: answer with text and a structured vote.
        dana = page.locator('.agent[data-agent="Dana"]')
        expect(dana.locator("form.input")).to_be_visible(timeout=TIMEOUT_MS)
        dana.locator('input[name="text"]').fill("I side with the bicycles.")
        dana.locator('select[name="vote"]').select_option(label="against")
        dana.get_by_role("button", name="Send").click()
        expect(messages).to_contain_text("I side with the bicycles.", timeout=TIMEOUT_MS)
        expect(dana.locator(".badge")).to_have_text("idle", timeout=TIMEOUT_MS)
        counts = page.locator("#agent-counts")
        expect(counts.locator('[data-count="interrupted"]')).to_have_text(
            "interrupted 1", timeout=TIMEOUT_MS
        )
        expect(counts.locator('[data-count="idle"]')).to_have_text("idle 123", timeout=TIMEOUT_MS)
        # A count is a filter: the interrupted agents only.
        counts.locator('[data-count="interrupted"]').click()
        expect(page.locator("#agents .agent")).to_have_count(1, timeout=TIMEOUT_MS)
        expect(page.locator('.agent[data-agent="Cyd"]')).to_be_visible()
        # A second page (or a reload) sees the same history.
        page.reload()
        expect(page.locator("#messages")).to_contain_text(
            "I side with the bicycles.", timeout=TIMEOUT_MS
        )
        page.screenshot(path=str(screenshot), full_page=True)


async def test_a_person_watches_interrupts_and_answers_from_the_page(tmp_path: Path) -> None:
    usage = ChatUsage(input_tokens=120, output_tokens=30)
    ada = agent(
        "Ada",
        [
            reply(tool_call("count_votes", {"motion": "bicycles"}), usage=usage),
            reply("Bicycles win on short trips.", usage=usage),
        ],
        count_votes,
    )
    brook = agent("Brook", [reply("Cars still matter for families.", usage=usage)], count_votes)
    cyd = agent("Cyd", [reply(tool_call("deliberate", {"topic": "bicycles"}))], deliberate)
    dana = UserAgent("Dana")
    provider = TracerProvider()
    tracer = provider.get_tracer("studio-test")
    answers: dict[str, Msg] = {}
    screenshot = tmp_path / "studio.png"

    extras = [UserAgent(f"extra{n}") for n in range(120)]

    async with serve() as studio:
        provider.add_span_processor(studio.span_processor)
        dana.override_instance_input_method(studio.user_input)
        # Listed in the order first seen: the debaters on the first page, the extras after.
        studio.watch(ada, brook, cyd, dana, *extras)

        async def conversation() -> None:
            async with MsgHub([ada, brook, cyd, dana], name="debate"):
                with tracer.start_as_current_span("invoke_agent Ada"):
                    await ada()
                await brook()
                answers["cyd"] = await cyd()
                answers["dana"] = await dana(structured_model=VOTE)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(conversation)
                await anyio.to_thread.run_sync(
                    functools.partial(drive_page, studio.url, tmp_path / "profile", screenshot)
                )
    provider.shutdown()

    assert answers["cyd"].metadata == {"_is_interrupted": True}
    assert cyd.generate_reason == "interrupted"
    assert answers["dana"].content == "I side with the bicycles."
    assert answers["dana"].metadata == {"vote": "against"}
    assert screenshot.stat().st_size > 10_000


def browse_runs(url: str, profile: Path) -> None:
    """A person looks at the durable runs, then at the one that crashed (a worker thread)."""
    with open_browser(profile) as browser:
        page = browser.new_page()
        page.goto(url)
        runs = page.locator("#runs")
        expect(page.locator("#durable")).to_be_visible(timeout=TIMEOUT_MS)
        expect(runs.locator("tr.run")).to_have_count(2, timeout=TIMEOUT_MS)
        expect(runs).not_to_contain_text("solo")  # Bob's run
        runs.locator('tr[data-run="stuck"]').click()
        expect(page.locator("#run-status")).to_have_text("failed", timeout=TIMEOUT_MS)
        stopped = page.locator("#where-stopped")
        expect(stopped).to_contain_text("Ada: Ada#1 (done)", timeout=TIMEOUT_MS)
        expect(stopped).to_contain_text("Cyd#1: 2 step(s) recorded", timeout=TIMEOUT_MS)
        expect(stopped).to_contain_text(f"{STUCK_TOOL} (seq", timeout=TIMEOUT_MS)
        expect(page.locator("#run-steps tbody tr")).to_have_count(6, timeout=TIMEOUT_MS)
        expect(page.locator(f'#run-steps tr[data-step="{STUCK_TOOL}"]')).to_contain_text(
            "started", timeout=TIMEOUT_MS
        )
        expect(page.locator('#run-agents tr[data-agent="Cyd"]')).to_contain_text("Cyd")
        # A finished run has no "where it stopped".
        runs.locator('tr[data-run="debate"]').click()
        expect(page.locator("#run-status")).to_have_text("finished", timeout=TIMEOUT_MS)
        expect(page.locator("#where-stopped")).to_have_count(0)
        expect(page.locator("#run-steps")).to_contain_text("Bicycles win on short trips.")


async def test_the_durable_runs_view_shows_where_a_run_stopped(tmp_path: Path) -> None:
    store = SQLiteRunStore(tmp_path / "runs.db")
    await record_runs(store)
    try:
        async with serve(run_store=store, run_user="ann") as studio:
            with anyio.fail_after(120):
                await anyio.to_thread.run_sync(browse_runs, studio.url, tmp_path / "profile")
    finally:
        await store.aclose()
