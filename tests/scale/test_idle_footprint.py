"""What an idle agent holds: many agents of a simulation must stay small."""

from __future__ import annotations

import sys

from agentscope_rt.agent import ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.model import FunctionChatModel
from agentscope_rt.tool import Toolkit, ToolResponse

# CPython 3.11-3.13 share one key table among the instance dicts of a class while they hold
# at most this many keys; one more, and every agent carries a whole dict of its own (about
# 1.2 KB more per agent).
SHARED_KEYS_LIMIT = 29


def weather(city: str) -> ToolResponse:
    """The weather.

    Args:
        city: where
    """
    return ToolResponse(content=[])


def test_an_idle_react_agent_stays_within_the_shared_key_limit() -> None:
    model, formatter = FunctionChatModel(lambda messages, tools: "ok"), OpenAIChatFormatter()
    agents = []
    for index in range(3):
        toolkit = Toolkit()
        toolkit.register_tool_function(weather)
        agent = ReActAgent(
            name=f"agent{index}",
            sys_prompt="Hi.",
            model=model,
            formatter=formatter,
            toolkit=toolkit,
        )
        agent.set_console_output_enabled(False)
        agents.append(agent)
    names = sorted(vars(agents[-1]))
    assert len(names) <= SHARED_KEYS_LIMIT, (
        f"an idle ReActAgent has {len(names)} instance attributes ({names}); keep at most "
        f"{SHARED_KEYS_LIMIT}: hold rarely used state in a sub-object or create it on first use"
    )
    if sys.implementation.name == "cpython" and sys.version_info[:2] in ((3, 11), (3, 12)):
        # A dict sharing its keys is a fraction of one that owns them.
        assert sys.getsizeof(vars(agents[-1])) < 700
