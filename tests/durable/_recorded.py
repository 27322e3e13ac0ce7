"""Runs recorded by real programs, for the tools that show runs (tests/durable, tests/studio).

:func:`record_runs` writes, through :func:`durable_run`, three runs into a store:

* ``debate`` of user ``ann``: finished. Ada calls the ``note`` tool and answers, Brook
  answers, and the program rolls a recorded die (``dice#1``).
* ``stuck`` of user ``ann``: its process "died" (:class:`Crash`) while Cyd's ``deliberate``
  tool ran, after Ada's call completed: Cyd's call is in flight, its tool started but not
  done, and the run ``failed``.
* ``solo`` of user ``bob``: finished, one program step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentscope_rt.agent import ReActAgent
from agentscope_rt.durable import RunStore, durable_run
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import TextBlock
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.model._testing import reply, tool_call
from agentscope_rt.tool import Toolkit, ToolResponse

DEBATE_KEYS = [
    "Ada#1/chat#1",
    "Ada#1/tool:n1#1",
    "Ada#1/chat#2",
    "Ada#1",
    "Brook#1/chat#1",
    "Brook#1",
    "dice#1",
]
STUCK_TOOL = "Cyd#1/tool:c1#1"


async def note(text: str) -> ToolResponse:
    """Note something down.

    Args:
        text: what to note.
    """
    return ToolResponse(content=[TextBlock(text=f"noted {text}")])


def agent(name: str, responses: list[Any], *tools: Callable[..., Any]) -> ReActAgent:
    toolkit = Toolkit()
    for tool in tools:
        toolkit.register_tool_function(tool)
    return ReActAgent(
        name=name,
        sys_prompt=f"You are {name}.",
        model=ScriptedChatModel(responses),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )


def ada() -> ReActAgent:
    return agent(
        "Ada",
        [reply(tool_call("note", {"text": "bikes"}, id="n1")), "Bicycles win on short trips."],
        note,
    )


async def record_debate(store: RunStore) -> None:
    brook = agent("Brook", ["Cars still matter."])
    async with durable_run("debate", store, user_id="ann") as run:
        await ada()()
        await brook()
        await run.step("dice", lambda: 4)


class Crash(BaseException):
    """What a process dying in the middle of a tool call looks like from inside it: nothing
    after this point runs (no record of the tool's end, of the call, of the run's end)."""


def cyd(responses: list[Any], when_called: Callable[[], Any]) -> ReActAgent:
    """Cyd, whose ``deliberate`` tool calls *when_called* (the same tool schema whatever it
    does, so a resumed program's model calls match the recorded ones)."""

    async def deliberate(topic: str) -> ToolResponse:
        """Think about a topic for as long as it takes.

        Args:
            topic: what to think about.
        """
        when_called()
        raise AssertionError("unreachable")

    return agent("Cyd", responses, deliberate)


def crash() -> None:
    raise Crash


async def record_stuck(store: RunStore) -> None:
    stuck = cyd([reply(tool_call("deliberate", {"topic": "bikes"}, id="c1"))], crash)
    try:
        async with durable_run("stuck", store, user_id="ann"):
            await ada()()
            await stuck()
    except* Crash:
        pass
    else:
        raise AssertionError("the crash did not reach the program")


async def record_solo(store: RunStore) -> None:
    async with durable_run("solo", store, user_id="bob") as run:
        await run.step("pick", lambda: {"door": 2})


async def record_runs(store: RunStore) -> None:
    """Record ``debate``, ``stuck`` and ``solo`` (see the module docstring) in *store*."""
    await record_debate(store)
    await record_stuck(store)
    await record_solo(store)
