"""An agent served by A2AServer in its own process: ``python _served_agent.py BACKEND``.

Prints the server's URL on its first line of output, then serves until killed. The agent:

* echoes ``echo: <text>``;
* for ``slow ...``, prints ``working on it`` and waits until interrupted;
* for ``ask ...``, prints a question and asks the client through a UserAgent whose input
  method is A2AUserInput, then answers ``you said: <answer>``.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from agentscope_rt.a2a import A2AServer, A2AUserInput
from agentscope_rt.agent import AgentBase, UserAgent
from agentscope_rt.message import Msg


class Served(AgentBase):
    def __init__(self) -> None:
        super().__init__()
        self.name = "Served"
        self.user = UserAgent("remote-user")
        self.user.override_instance_input_method(A2AUserInput())

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        return None

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        assert isinstance(msg, Msg)
        text = msg.get_text_content() or ""
        if text.startswith("slow"):
            await self.print(Msg(self.name, "working on it", "assistant"))
            await anyio.sleep_forever()
        if text.startswith("ask"):
            question = Msg(self.name, "Shall I go on?", "assistant")
            await self.print(question)
            answer = await self.user(question)
            return Msg(self.name, f"you said: {answer.get_text_content()}", "assistant")
        return Msg(self.name, f"echo: {text}", "assistant")


async def main() -> None:
    server = A2AServer(Served(), description="a test agent")
    async with anyio.create_task_group() as group:
        url = await group.start(server.serve)
        print(url, flush=True)


if __name__ == "__main__":
    anyio.run(main, backend=sys.argv[1])
