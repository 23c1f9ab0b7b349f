"""Tracing into the OpenTelemetry SDK's in-memory exporter, for tests in this process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from span_capture import Spans

from agent_stream import telemetry


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
