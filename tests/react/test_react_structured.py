"""Structured output through the finish function ``generate_response``."""

from __future__ import annotations

import attrs
from pydantic import BaseModel, Field

from agentscope_rt.agent import GenerateReason
from agentscope_rt.model import ScriptedChatModel

from ._support import (
    call,
    history,
    make_agent,
    prompt_text,
    response,
    text,
    texts_of,
    tool_pair_problems,
    user,
)


class Person(BaseModel):
    name: str = Field(description="The person's name")
    age: int = Field(description="Age in years", ge=0)


@attrs.define
class City:
    name: str
    population: int


async def test_valid_structured_output_lands_in_metadata() -> None:
    model = ScriptedChatModel(
        [response(text("Here is Ada."), call("generate_response", "f1", name="Ada", age=36))]
    )
    agent = make_agent(model)
    reply = await agent(user("Describe Ada"), structured_model=Person)

    assert reply.metadata["name"] == "Ada" and reply.metadata["age"] == 36
    assert reply.metadata == {"name": "Ada", "age": 36}  # the structured output, nothing else
    assert agent.generate_reason == GenerateReason.MODEL_STOP
    assert reply.get_text_content() == "Here is Ada."
    first = model.calls[0]
    assert first.tool_choice == "required"
    schema = next(t for t in first.tools or [] if t["function"]["name"] == "generate_response")
    assert set(schema["function"]["parameters"]["properties"]) == {"name", "age"}
    msgs = await history(agent.memory)
    assert texts_of(msgs[-1]) == "Successfully generated response."
    assert tool_pair_problems(msgs) == []


async def test_invalid_arguments_go_back_to_the_model_which_corrects_them() -> None:
    model = ScriptedChatModel(
        [
            response(call("generate_response", "f1", name="Ada", age=-3)),
            response(text("Fixed."), call("generate_response", "f2", name="Ada", age=36)),
        ]
    )
    agent = make_agent(model)
    reply = await agent(user("Describe Ada"), structured_model=Person)
    assert reply.metadata["age"] == 36
    msgs = await history(agent.memory)
    error = texts_of(msgs[2])
    assert error.startswith("Arguments Validation Error: ")
    assert "age" in error
    # The model saw the error before its second attempt, and was still required to call a tool.
    assert "Arguments Validation Error" in prompt_text(model.calls[1])
    assert model.calls[1].tool_choice == "required"


async def test_without_text_the_model_is_asked_for_a_text_answer() -> None:
    model = ScriptedChatModel(
        [
            response(call("generate_response", "f1", name="Paris", population=2100000)),
            response(text("Paris has about 2.1 million people.")),
        ]
    )
    agent = make_agent(model)
    reply = await agent(user("Tell me about Paris"), structured_model=City)
    assert reply.metadata["name"] == "Paris" and reply.metadata["population"] == 2100000
    assert reply.get_text_content() == "Paris has about 2.1 million people."
    second = model.calls[1]
    assert second.tool_choice == "none"
    assert "Now generate a text response based on your current situation" in prompt_text(second)
    # The hint was shown once and is gone from memory.
    assert all(
        "Now generate a text response" not in texts_of(m) for m in await history(agent.memory)
    )


async def test_a_plain_answer_is_reminded_that_structured_output_is_required() -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    model = ScriptedChatModel(
        [
            response(text("Just chatting.")),
            response(text("OK."), call("generate_response", "f1", answer="42")),
        ]
    )
    agent = make_agent(model)
    reply = await agent(user("answer?"), structured_model=schema)
    assert reply.metadata["answer"] == "42"
    assert (
        "Structured output is required, go on to finish your task or call 'generate_response'"
        in (prompt_text(model.calls[1]))
    )
    assert model.calls[1].tool_choice == "required"


async def test_finish_function_is_removed_for_plain_calls() -> None:
    model = ScriptedChatModel(
        [
            response(text("A."), call("generate_response", "f1", name="Ada", age=36)),
            response(text("plain")),
        ]
    )
    agent = make_agent(model)
    await agent(user("one"), structured_model=Person)
    assert "generate_response" in agent.toolkit.tools
    reply = await agent(user("two"))
    assert "generate_response" not in agent.toolkit.tools
    assert model.calls[1].tools is None
    assert reply.metadata == {}
