"""What the ported AgentScope programs share: a scripted stand-in for the cloud model.

AgentScope's examples build ``DashScopeChatModel(model_name="qwen-max", api_key=...)``. The
ports build :func:`cloud_model` instead, a :class:`ScriptedChatModel` that replays what the
example's model would answer; everything else in a port is the example's own code, with the
import renamed from ``agentscope`` to ``agentscope_rt``.
"""

from __future__ import annotations

from typing import Any

from agentscope_rt.agent import UserInputBase, UserInputData
from agentscope_rt.message import TextBlock
from agentscope_rt.model import ScriptedChatModel
from agentscope_rt.model._testing import ScriptItem


def cloud_model(*script: ScriptItem, stream: bool = True) -> ScriptedChatModel:
    """The stand-in for the example's cloud model, answering *script* in order."""
    return ScriptedChatModel(script, stream=stream, model_name="qwen-max")


class ScriptedUserInput(UserInputBase):
    """A user who types *lines* one after another (AgentScope's input-method interface)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = list(lines)

    async def __call__(
        self,
        agent_id: str,
        agent_name: str,
        *args: Any,
        structured_model: Any = None,
        **kwargs: Any,
    ) -> UserInputData:
        return UserInputData(blocks_input=[TextBlock(type="text", text=self.lines.pop(0))])
