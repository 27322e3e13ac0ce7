"""A :class:`UserAgent`'s input taken from the studio page.

Waiting for the person is an awaited :class:`anyio.Event` in the agent's own task: the page's
POST (served in the same event loop) sets it. An interrupt or a timeout cancels the wait at
once, and the request disappears from the page.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import anyio

from .._schema import StructuredModel, structured_model_schema, validate_structured_output
from ..agent import UserInputBase, UserInputData
from ..exception import AgentError
from ..message import TextBlock

if TYPE_CHECKING:
    from ._observe import AgentObserver

__all__ = ["ANSWERED_KEPT", "AlreadyAnsweredError", "InputRequest", "PageUserInput"]

ANSWERED_KEPT = 1024
"""How many answered questions are remembered, so that a late second answer to one is told
it came too late (409) rather than that the question never existed (404)."""


class AlreadyAnsweredError(Exception):
    """The question was answered (or closed) before this answer came: only the first counts."""


class InputRequest:
    """One question waiting for an answer on the page."""

    def __init__(self, agent_id: str, structured_model: StructuredModel | None) -> None:
        self.id = uuid.uuid4().hex
        self.agent_id = agent_id
        self.structured_model = structured_model
        self.schema = (
            None if structured_model is None else structured_model_schema(structured_model)
        )
        self.answered = anyio.Event()
        self.answer: UserInputData | None = None
        self.closed = False

    def describe(self) -> dict[str, Any]:
        """What the page needs to show the question."""
        return {"request_id": self.id, "schema": self.schema}

    def fulfil(self, text: str, structured: Any) -> None:
        """Answer the question.

        :raises AlreadyAnsweredError: when the question already has its answer (another page,
            or a second click, answered first) or the studio closed it; the answer the agent
            gets stays the first one.
        :raises ValueError: when *text* is not a str, or structured fields are missing or
            invalid for the requested schema (the message says which); nothing is answered
            then and the page may try again.
        """
        # Checked and set with no await between: of two answers posted at once, one is first.
        if self.answered.is_set():
            raise AlreadyAnsweredError("this question was already answered")
        if not isinstance(text, str):
            raise ValueError(f"the answer's text must be a string, not {type(text).__name__}")
        fields: dict[str, Any] | None = None
        if self.structured_model is not None:
            if not isinstance(structured, dict):
                raise ValueError("this question asks for structured fields (a JSON object)")
            fields = validate_structured_output(self.structured_model, structured)
        self.answer = UserInputData(blocks_input=[TextBlock(text=text)], structured_input=fields)
        self.answered.set()


class PageUserInput(UserInputBase):
    """The input method of :class:`UserAgent` s that the person at the studio page answers.

    Use it as ``agent.override_instance_input_method(studio.user_input)`` (or for every
    ``UserAgent`` with ``UserAgent.override_class_input_method``).
    """

    def __init__(self, observer: AgentObserver) -> None:
        self._observer = observer
        self.requests: dict[str, InputRequest] = {}
        self.answered: OrderedDict[str, None] = OrderedDict()
        """The ids of the latest :data:`ANSWERED_KEPT` questions answered, oldest first."""
        self._closed = False

    async def __call__(
        self,
        agent_id: str,
        agent_name: str,
        *args: Any,
        structured_model: StructuredModel | None = None,
        **kwargs: Any,
    ) -> UserInputData:
        """Show a question on the page and wait (an awaited event) for its answer.

        :raises AgentError: when the studio closes before the question is answered.
        """
        if self._closed:
            raise AgentError(f"the studio is closed: nobody can answer for {agent_name}")
        request = InputRequest(agent_id, structured_model)
        self.requests[request.id] = request
        agent = self._observer.agents.get(agent_id)
        if agent is not None:
            self._observer.set_input(agent, request.describe())
        try:
            await request.answered.wait()
        finally:
            self.requests.pop(request.id, None)
            if request.answer is not None:
                self._remember_answered(request.id)
            if agent is not None:
                self._observer.set_input(agent, None)
        if request.answer is None:
            raise AgentError(f"the studio closed before {agent_name}'s question was answered")
        return request.answer

    def _remember_answered(self, request_id: str) -> None:
        self.answered[request_id] = None
        if len(self.answered) > ANSWERED_KEPT:
            self.answered.popitem(last=False)

    def close(self) -> None:
        """Refuse new questions and end every waiting one with :class:`AgentError`."""
        self._closed = True
        for request in list(self.requests.values()):
            request.closed = True
            request.answered.set()
