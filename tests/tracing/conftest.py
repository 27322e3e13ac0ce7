"""Spans collected by the SDK's in-memory exporter, with tracing turned off after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentscope_rt._logging import reset_logger
from agentscope_rt.tracing import disable_tracing, enable_tracing


class Spans:
    """The spans finished so far, and helpers to read the tree."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter

    @property
    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.all if span.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {self.names()}"
        return found[0]

    def names(self) -> list[str]:
        return [span.name for span in self.all]

    def parent_of(self, span: ReadableSpan) -> ReadableSpan | None:
        if span.parent is None:
            return None
        by_id = {s.context.span_id: s for s in self.all}
        return by_id.get(span.parent.span_id)

    def children(self, span: ReadableSpan) -> list[ReadableSpan]:
        return [
            s for s in self.all if s.parent is not None and s.parent.span_id == span.context.span_id
        ]


def _enable(capture: bool) -> tuple[Spans, TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    enable_tracing(SimpleSpanProcessor(exporter), tracer_provider=provider, capture_content=capture)
    return Spans(exporter), provider


@pytest.fixture
def spans() -> Iterator[Spans]:
    """Tracing on (content not captured) into a provider of the test's own."""
    collected, provider = _enable(False)
    yield collected
    disable_tracing()
    provider.shutdown()


@pytest.fixture
def content_spans() -> Iterator[Spans]:
    """Tracing on with content capture."""
    collected, provider = _enable(True)
    yield collected
    disable_tracing()
    provider.shutdown()


@pytest.fixture(autouse=True)
def _clean_logging() -> Iterator[None]:
    yield
    reset_logger()
