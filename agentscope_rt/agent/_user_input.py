"""Where a :class:`UserAgent` gets the user's input from.

An *input method* is a :class:`UserInputBase` instance or any callable (sync or async)
called with the keyword arguments ``agent_id``, ``agent_name`` and ``structured_model``. It
returns a :class:`UserInputData`, or simply the text (a ``str``) or a list of content blocks.
Sync input methods run in a worker thread so that they never block the event loop; waiting
for input is cancellable (an interrupt or timeout returns at once; a thread blocked reading
the terminal is abandoned and finishes when its line arrives).
"""

from __future__ import annotations

import abc
import json
from typing import Any

import anyio
import anyio.to_thread
import attrs
import jsonschema

from .._schema import StructuredModel, structured_model_schema, validate_structured_output
from ..message import ContentBlock, TextBlock

__all__ = ["TerminalUserInput", "UserInputBase", "UserInputData"]


@attrs.define
class UserInputData:
    """What the user entered.

    :param blocks_input: the content (text, image, audio, video blocks).
    :param structured_input: the structured fields, when a structured model was asked for.
    """

    blocks_input: list[ContentBlock] | None = None
    structured_input: dict[str, Any] | None = None


class UserInputBase(abc.ABC):
    """Base class of input methods (see the module docstring)."""

    @abc.abstractmethod
    async def __call__(
        self,
        agent_id: str,
        agent_name: str,
        *args: Any,
        structured_model: StructuredModel | None = None,
        **kwargs: Any,
    ) -> UserInputData:
        """Ask the user for input on behalf of agent *agent_name* and return it.

        :param structured_model: when given, the fields to ask for as well (a pydantic model
            class, an attrs class or a JSON schema dict).
        """


def _read_line(prompt: str) -> str:
    return input(prompt).encode("utf-8", errors="ignore").decode("utf-8")


class TerminalUserInput(UserInputBase):
    """Read the user's input from the terminal (``input()`` in a worker thread).

    With a structured model, each field is asked for in turn: an empty answer takes the
    default (or asks again for a required field); answers are read as JSON when possible
    (``3``, ``true``, ``["a"]``), else as text, and checked against the field's schema.
    """

    def __init__(self, input_hint: str = "User Input: ") -> None:
        self.input_hint = input_hint

    async def _ask(self, prompt: str) -> str:
        return await anyio.to_thread.run_sync(_read_line, prompt, abandon_on_cancel=True)

    async def __call__(
        self,
        agent_id: str,
        agent_name: str,
        *args: Any,
        structured_model: StructuredModel | None = None,
        **kwargs: Any,
    ) -> UserInputData:
        """Read one line of text, then the structured fields if asked for.

        :raises EOFError: when standard input is closed.
        """
        text = await self._ask(self.input_hint)
        structured: dict[str, Any] | None = None
        if structured_model is not None:
            structured = await self._ask_fields(structured_model)
        return UserInputData(blocks_input=[TextBlock(text=text)], structured_input=structured)

    async def _ask_fields(self, structured_model: StructuredModel) -> dict[str, Any]:
        schema = structured_model_schema(structured_model)
        required = set(schema.get("required", []))
        values: dict[str, Any] = {}
        print("Structured input (press Enter to skip optional fields):")
        for key, field in schema.get("properties", {}).items():
            shown = {k: v for k, v in field.items() if k != "title"}
            while True:
                answer = await self._ask(f"\t{key} ({json.dumps(shown)}): ")
                if answer == "":
                    if key in required:
                        print(f"{key} is required.")
                        continue
                    if "default" in field:
                        values[key] = field["default"]
                    break
                try:
                    value = json.loads(answer)
                except ValueError:
                    value = answer
                if field.get("type") == "string" and not isinstance(value, str):
                    value = answer
                try:
                    jsonschema.validate(value, field)
                except jsonschema.ValidationError as exc:
                    print(f"Invalid value for {key}: {exc.message}")
                    continue
                values[key] = value
                break
        return validate_structured_output(structured_model, values)
