"""Tracing into the OpenTelemetry SDK's in-memory exporter, for tests in this process."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from inprocess_agents import Pair
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_stream import telemetry


class Spans:
    """The spans finished so far."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.all() if s.name.startswith(prefix)]


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Spans]:
    monkeypatch.delenv(telemetry.CAPTURE_ENV, raising=False)
    s = Spans()
    telemetry._reset_for_tests()
    telemetry.configure(tracer_provider=s.provider)
    try:
        yield s
    finally:
        telemetry._reset_for_tests()


@pytest_asyncio.fixture
async def pair() -> AsyncIterator[Pair]:
    p = Pair()
    try:
        yield p
    finally:
        await p.close()
