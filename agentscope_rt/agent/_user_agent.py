"""UserAgent: a human taking part in the conversation."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, ClassVar

import anyio.to_thread

from .._schema import StructuredModel, is_structured_model, validate_structured_output
from ..message import Msg, TextBlock
from ._agent_base import AgentBase
from ._checks import check_msg_input
from ._hooks import is_async_callable
from ._user_input import TerminalUserInput, UserInputBase, UserInputData

__all__ = ["UserAgent"]

InputMethod = UserInputBase | Callable[..., Any]


def _check_input_method(input_method: Any) -> None:
    if not callable(input_method):
        raise TypeError(
            "the input method must be a UserInputBase instance or a callable taking "
            "(agent_id=, agent_name=, structured_model=), not "
            f"{type(input_method).__name__}"
        )


class UserAgent(AgentBase):
    """An agent whose replies come from a user.

    ``reply()`` asks the input method (by default :class:`TerminalUserInput`, reading the
    terminal in a worker thread) for the user's text and, when a structured model is given,
    structured fields; it prints and returns a ``"user"`` Msg whose metadata holds the
    structured fields. Waiting for the user is cancellable by :meth:`interrupt`.

    :param name: the user's name, used as the messages' ``name``.
    :raises TypeError: when *name* is not a str.
    """

    _input_method: ClassVar[InputMethod] = TerminalUserInput()
    replay_from_record: ClassVar[bool] = True  # a resumed durable run does not ask again

    def __init__(self, name: str) -> None:
        super().__init__()
        if not isinstance(name, str):
            raise TypeError(f"UserAgent name must be a str, not {type(name).__name__}")
        self.name = name
        self.register_state("name")

    async def reply(
        self,
        msg: Msg | list[Msg] | None = None,
        structured_model: StructuredModel | None = None,
    ) -> Msg:
        """Ask the user and return their answer as a ``"user"`` Msg.

        :param msg: what the user is answering (shown by its speaker already; not used here).
        :param structured_model: fields to ask for too (pydantic model class, attrs class or
            JSON schema dict); the answer's ``metadata`` holds them.
        :raises TypeError: for a *msg* that is not Msg / list[Msg] / None, a bad structured
            model, or an input method returning something unusable.
        :raises StructuredOutputError: when an input method returns structured fields that do
            not match *structured_model*.
        """
        check_msg_input(msg, "UserAgent.reply")
        if structured_model is not None and not is_structured_model(structured_model):
            raise TypeError(
                "structured_model must be a pydantic model class, an attrs class or a JSON "
                f"schema dict, not {structured_model!r}"
            )
        data = await self._ask_input(structured_model)
        blocks = data.blocks_input or []
        content: Any = blocks
        if len(blocks) == 1 and isinstance(blocks[0], TextBlock):
            content = blocks[0].text
        structured = data.structured_input
        if structured_model is not None and structured is not None:
            structured = validate_structured_output(structured_model, structured)
        answer = Msg(self.name, content, "user", metadata=structured)
        await self.print(answer)
        return answer

    async def _ask_input(self, structured_model: StructuredModel | None) -> UserInputData:
        # Looked up without binding: a plain function stored on the class is not a method.
        method = self.__dict__.get("_input_method") or inspect.getattr_static(
            type(self), "_input_method"
        )
        kwargs: dict[str, Any] = {
            "agent_id": self.id,
            "agent_name": self.name,
            "structured_model": structured_model,
        }
        if is_async_callable(method):
            result = await method(**kwargs)
        else:
            result = await anyio.to_thread.run_sync(
                functools.partial(method, **kwargs), abandon_on_cancel=True
            )
            if inspect.isawaitable(result):
                result = await result
        if isinstance(result, UserInputData):
            return result
        if isinstance(result, str):
            return UserInputData(blocks_input=[TextBlock(text=result)])
        if isinstance(result, list):
            return UserInputData(blocks_input=Msg(self.name, result, "user").content)  # type: ignore[arg-type]
        raise TypeError(
            "the input method must return UserInputData, a str or a list of content blocks, "
            f"not {type(result).__name__}"
        )

    async def observe(self, msg: Msg | list[Msg] | None) -> None:
        """Hear other agents' messages. A user has no memory here: the speakers already
        printed their messages to the user, so nothing more is done."""
        return None

    def override_instance_input_method(self, input_method: InputMethod) -> None:
        """Use *input_method* (sync or async; see :mod:`._user_input`) for this agent.

        :raises TypeError: when it is not callable.
        """
        _check_input_method(input_method)
        self._input_method = input_method  # type: ignore[misc]

    @classmethod
    def override_class_input_method(cls, input_method: InputMethod) -> None:
        """Use *input_method* for every agent of this class without an instance override.

        :raises TypeError: when it is not callable.
        """
        _check_input_method(input_method)
        cls._input_method = input_method
