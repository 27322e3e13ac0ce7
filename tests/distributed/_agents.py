"""Agents the tests build on agent hosts (module-level, so Ray can send their factories)."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import anyio

from agentscope_rt.agent import AgentBase, ReActAgent
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.message import Msg, TextBlock
from agentscope_rt.model import FunctionChatModel, reply, tool_call
from agentscope_rt.tool import Toolkit, ToolResponse


class Echo(AgentBase):
    """Replies with what it heard last and how many messages it observed; saves both."""

    def __init__(self, name: str, slow: bool = False) -> None:
        super().__init__()
        self.name = name
        self.slow = slow
        self.heard: list[str] = []
        self.register_state("name")
        self.register_state("heard")

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        if self.slow:
            await anyio.sleep(3600)
        if kwargs.get("fail") or kwargs.get("fail_if") == self.name:
            raise ValueError(f"{self.name} was asked to fail")
        text = msg.get_text_content() if isinstance(msg, Msg) else None
        return Msg(
            self.name,
            f"{self.name}: {text} (heard {len(self.heard)})",
            "assistant",
            metadata={"kwargs": kwargs} if kwargs else None,
        )

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        for one in [msg] if isinstance(msg, Msg) else msg or []:
            self.heard.append(one.get_text_content() or "")

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        return Msg(self.name, f"{self.name} was interrupted", "assistant")


def make_echo(name: str, slow: bool = False) -> Echo:
    return Echo(name, slow)


def make_nothing(name: str) -> Any:
    return {"name": name}


class UnpicklableFactory:
    """A factory holding a lock: it cannot be sent to a host."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __call__(self, name: str) -> Echo:
        return Echo(name)


# -- a ReAct agent whose model and tool say in a log file when they run --------------------


def _log(folder: str, **entry: Any) -> None:
    line = json.dumps({"t": time.time(), "pid": os.getpid(), **entry}) + "\n"
    with open(os.path.join(folder, "log.jsonl"), "a", encoding="utf-8") as file:
        file.write(line)


def read_log(folder: str) -> list[dict[str, Any]]:
    """What the models and tools of the noters logged, in order."""
    path = os.path.join(folder, "log.jsonl")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def gate(folder: str, name: str) -> str:
    """While this file exists, the tool of the noter *name* waits (after saying so)."""
    return os.path.join(folder, f"gate-{name}")


class Noter(ReActAgent):
    """Says who was interrupted (AgentBase's default answer does not)."""

    async def handle_interrupt(self, *args: Any, **kwargs: Any) -> Msg:
        answer = await super().handle_interrupt(*args, **kwargs)
        return Msg(self.name, f"{self.name} stopped: {answer.get_text_content()}", "assistant")


def make_noter(name: str, folder: str) -> ReActAgent:
    """A ReAct agent that calls its tool ``note`` once per call, then answers; its model's
    answers depend only on how many messages it is given."""

    def model(messages: list[dict[str, Any]], tools: Any) -> Any:
        count = len(messages)
        _log(folder, what="chat", agent=name, count=count)
        if os.path.exists(os.path.join(folder, f"crash-{name}")):
            os._exit(1)  # the model takes its process down with it (say, out of memory)
        if messages[-1].get("role") != "tool":
            text = f"{name}-{count}"
            return reply(tool_call("note", {"text": text}, id=text))
        return f"{name} says {count}"

    async def note(text: str) -> ToolResponse:
        """Note something down.

        Args:
            text: what to note
        """
        _log(folder, what="tool-start", agent=name, text=text)
        door = anyio.Path(gate(folder, name))
        if await door.exists():
            _log(folder, what="tool-waits", agent=name, text=text)
            # Another process opens the gate: a file is what both see.
            while await door.exists():  # noqa: ASYNC110
                await anyio.sleep(0.02)
        _log(folder, what="tool-end", agent=name, text=text)
        return ToolResponse(content=[TextBlock(text=f"noted {text}")])

    toolkit = Toolkit()
    toolkit.register_tool_function(note)
    agent = Noter(
        name=name,
        sys_prompt=f"You are {name}.",
        model=FunctionChatModel(model),
        formatter=OpenAIChatFormatter(),
        toolkit=toolkit,
    )
    agent.set_console_output_enabled(False)
    return agent


def make_echoes(names: list[str], slow: bool = False) -> list[Echo]:
    """A group's agents (``AgentHost.create_group``): one Echo per name."""
    return [Echo(name, slow) for name in names]


def make_not_agents(count: int) -> list[Any]:
    return [{"name": f"n{index}"} for index in range(count)]


class Keeper(AgentBase):
    """Keeps the very messages it observes (to see what a delivery hands each agent)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.kept: list[Msg] = []

    async def reply(self, msg: Msg | list[Msg] | None = None, **kwargs: Any) -> Msg:
        return Msg(self.name, "ok", "assistant")

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        self.kept += [msg] if isinstance(msg, Msg) else msg or []


def make_keepers(count: int) -> list[Keeper]:
    return [Keeper(f"k{index}") for index in range(count)]


def make_noters(names: list[str], folder: str) -> list[ReActAgent]:
    """A group's noters (``AgentHost.create_group``): one :func:`make_noter` per name."""
    return [make_noter(name, folder) for name in names]
