"""AgentScope's decorators on user code, and what turning tracing on and off changes."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.trace import StatusCode

from agentscope_rt import _intercept
from agentscope_rt.embedding import EmbeddingModelBase, EmbeddingResponse, EmbeddingUsage
from agentscope_rt.formatter import OpenAIChatFormatter
from agentscope_rt.model import ChatModelBase, ChatResponse, ScriptedChatModel, reply
from agentscope_rt.tool import Toolkit
from agentscope_rt.tracing import (
    SpanAttributes,
    disable_tracing,
    enable_tracing,
    is_tracing_enabled,
    trace,
    trace_embedding,
    trace_llm,
)

from .conftest import Spans


@trace()
def double(x: int) -> int:
    return 2 * x


@trace("halve")
async def halve(x: int) -> float:
    return x / 2


@trace()
def count(n: int) -> Generator[int, None, None]:
    yield from range(n)


@trace()
async def acount(n: int) -> AsyncGenerator[int, None]:
    for i in range(n):
        yield i


async def test_the_generic_decorator_on_functions_and_generators(spans: Spans) -> None:
    assert double(2) == 4
    assert await halve(3) == 1.5
    outside = otel_trace.get_current_span()
    seen = []
    for item in count(3):
        # The generator's span is not current while the caller holds an item.
        assert otel_trace.get_current_span() is outside
        seen.append(item)
    async for item in acount(2):
        assert otel_trace.get_current_span() is outside
        seen.append(item)
    assert seen == [0, 1, 2, 0, 1]
    assert sorted(spans.names()) == sorted(
        f"invoke_generic_function {n}" for n in ("double", "halve", "count", "acount")
    )
    for span in spans.all:
        assert span.status.status_code is StatusCode.OK


async def test_decorated_functions_make_no_span_while_tracing_is_off() -> None:
    assert not is_tracing_enabled()
    assert double(1) == 2 and await halve(1) == 0.5 and list(count(2)) == [0, 1]


class Answering(ChatModelBase):
    """A model written against AgentScope: its __call__ carries @trace_llm."""

    def __init__(self) -> None:
        super().__init__("answering", stream=False)

    @trace_llm
    async def __call__(self, messages: list[dict[str, Any]], **kwargs: Any) -> ChatResponse:
        return reply("yes")


async def test_a_decorated_model_makes_one_span_not_two(spans: Spans) -> None:
    await Answering()([{"role": "user", "content": "?"}])
    assert spans.names() == ["chat answering"]


class Vectors(EmbeddingModelBase):
    def __init__(self) -> None:
        super().__init__("vectors-1", dimensions=2)

    @trace_embedding
    async def __call__(self, text: list[Any], **kwargs: Any) -> EmbeddingResponse:
        return EmbeddingResponse(
            embeddings=[[0.0, 1.0] for _ in text], usage=EmbeddingUsage(time=0.0, tokens=3)
        )


async def test_an_embedding_call_makes_an_embeddings_span(spans: Spans) -> None:
    await Vectors()(["a", "b"])
    span = spans.one("embeddings vectors-1")
    assert span.attributes[SpanAttributes.GEN_AI_EMBEDDINGS_DIMENSION_COUNT] == 2
    assert span.attributes[SpanAttributes.GEN_AI_USAGE_INPUT_TOKENS] == 3
    assert span.attributes[SpanAttributes.GEN_AI_OPERATION_NAME] == "embeddings"


def test_tracing_registers_its_interceptors_only_while_it_is_on() -> None:
    routes = (ScriptedChatModel.__call__, OpenAIChatFormatter.format, Toolkit.call_tool_function)
    kinds = ("call", "chat", "embed", "format", "tool")

    def tracing_interceptors() -> dict[str, int]:
        return {
            kind: sum("tracing" in repr(item) for item in items)
            for kind, items in _intercept.installed().items()
            if kind in kinds
        }

    assert not any(tracing_interceptors().values())
    enable_tracing()
    enable_tracing()  # twice: still one interceptor per kind
    try:
        assert is_tracing_enabled()
        assert tracing_interceptors() == dict.fromkeys(kinds, 1)

        class Later(ScriptedChatModel):
            async def __call__(self, *args: Any, **kwargs: Any) -> Any:
                return await super().__call__(*args, **kwargs)

        assert _intercept.route_of(Later.__dict__["__call__"]) is not None
    finally:
        disable_tracing()
    assert not any(tracing_interceptors().values())
    # Nothing on the classes changed either way: the routes were in place all along.
    assert (
        ScriptedChatModel.__call__,
        OpenAIChatFormatter.format,
        Toolkit.call_tool_function,
    ) == routes


async def test_an_override_calling_super_makes_one_span(spans: Spans) -> None:
    class Wrapped(ScriptedChatModel):
        async def __call__(self, *args: Any, **kwargs: Any) -> Any:
            return await super().__call__(*args, **kwargs)

    await Wrapped([reply("hi")])([{"role": "user", "content": "?"}])
    assert spans.names() == ["chat scripted"]
