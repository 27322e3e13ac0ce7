"""AgentScope 1.0.21's own A2AAgent (a2a-sdk 0.3) calling a server, in an interpreter that has
AgentScope installed: ``python _agentscope_client.py URL TEXT``. Prints, as JSON, the reply's
text and the texts of every message the agent printed on the way."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx
from a2a.client import A2ACardResolver
from agentscope.agent import A2AAgent
from agentscope.message import Msg


async def main(url: str, text: str) -> None:
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
    agent = A2AAgent(card)
    printed: list[str | None] = []

    def count(_agent: Any, kwargs: dict[str, Any]) -> None:
        if kwargs.get("last", True):
            printed.append(kwargs["msg"].get_text_content())

    agent.register_instance_hook("pre_print", "count", count)
    agent.set_console_output_enabled(False)
    reply = await agent(Msg("user", text, "user"))
    print(json.dumps({"reply": reply.get_text_content(), "printed": printed}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
