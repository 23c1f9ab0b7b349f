"""The gateway continues an HTTP ``traceparent`` (or starts the trace) and its questions are
children of the request's span; ``GET /metrics`` (gateway, ``serve --metrics-port``) is read by
prometheus_client's own parser; the metrics count real replies between real agents."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from inprocess_agents import Pair
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from prometheus_client.parser import text_string_to_metric_families
from span_capture import Spans

from agent_stream import telemetry
from agent_stream.message import text
from agent_stream.telemetry.http import parse_metrics_address, serve_metrics
from agent_stream.uagents import ChatRequest, StreamingChat
from agent_stream.writer import StreamWriter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "gateway"))

from inprocess_gateway import GivenReplies, serve_gateway

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
BODY = {"model": "llm", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


class Watching(GivenReplies):
    """Notes the span current when the gateway asks (the question's parent)."""

    def __init__(self) -> None:
        super().__init__([text("Hello.")])
        self.parents: list[Any] = []

    async def ask(self, address: str, question: str, **kw: Any) -> Any:
        self.parents.append(trace.get_current_span().get_span_context())
        return await super().ask(address, question, **kw)


async def test_the_gateway_continues_an_incoming_traceparent(spans: Spans, tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, ["llm"], [text("Hello.")]) as (base, link):
        watching = Watching()
        link.ask = watching.ask
        async with httpx.AsyncClient(base_url=base, timeout=10) as c:
            r = await c.post(
                "/v1/chat/completions", json=BODY, headers={"traceparent": TP, "tracestate": "k=v"}
            )
    assert r.status_code == 200 and "Hello." in r.text
    (span,) = [s for s in spans.all() if s.kind == SpanKind.SERVER]
    assert span.name == "POST /v1/chat/completions"
    assert span.context.trace_id == 0x4BF92F3577B34DA6A3CE929D0E0E4736
    assert span.parent is not None and span.parent.span_id == 0x00F067AA0BA902B7
    assert dict(span.attributes or {})["http.response.status_code"] == 200
    # the question the request asked is a child of the request's span
    (parent,) = watching.parents
    assert parent.span_id == span.context.span_id


async def test_a_malformed_http_traceparent_starts_a_new_trace_and_is_answered(
    spans: Spans, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from agent_stream.telemetry import spans as spans_module

    spans_module._warned_at[0] = 0.0
    with caplog.at_level(logging.WARNING, logger="agent_stream.telemetry"):
        async with (
            serve_gateway(tmp_path, ["llm"], [text("Hello.")]) as (base, _),
            httpx.AsyncClient(base_url=base, timeout=10) as c,
        ):
            r = await c.post(
                "/v1/chat/completions", json=BODY, headers={"traceparent": "00-zz-bad-01"}
            )
            plain = await c.post("/v1/chat/completions", json=BODY)
    assert r.status_code == 200 and "Hello." in r.text and plain.status_code == 200
    first, second = [s for s in spans.all() if s.kind == SpanKind.SERVER]
    assert first.parent is None and second.parent is None
    assert first.context.trace_id != second.context.trace_id
    assert "malformed HTTP traceparent" in caplog.text


def parse(body: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(body)}


async def test_metrics_endpoints_are_read_by_prometheus_clients_parser(
    tmp_path: Path, pair: Pair
) -> None:
    telemetry._reset_for_tests()
    telemetry.configure(enabled=False)  # metrics need no tracing and no variable
    telemetry.METRICS.reset()

    async def answer(request: ChatRequest, out: StreamWriter) -> None:
        async with out.block("llm", label="Answer") as b:
            await b.text("Hello there.")

    server = pair.add("metrics server agent", StreamingChat(answer), name="answerer")
    client_chat = StreamingChat()
    client = pair.add("metrics client agent", client_chat)
    for _ in range(3):
        reply = await client_chat.ask(client._build_context(), server.address, "hi")
        await asyncio.wait_for(reply.wait(), 10)
    for _ in range(100):
        if (
            telemetry.METRICS.value(
                "agent_stream_replies_total", side="responder", status="completed"
            )
            >= 3
        ):
            break
        await asyncio.sleep(0.02)
    async with (
        serve_gateway(tmp_path, ["llm"], [text("Hello.")]) as (base, _),
        httpx.AsyncClient(base_url=base, timeout=10) as c,
    ):
        r = await c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    fams = parse(r.text)
    ttft = fams["agent_stream_time_to_first_text_seconds"]
    assert ttft.type == "histogram"
    counts = {s.labels["side"]: s.value for s in ttft.samples if s.name.endswith("_count")}
    assert counts == {"responder": 3, "asker": 3}
    replies = {
        (s.labels["side"], s.labels["status"]): s.value
        for s in fams["agent_stream_replies"].samples
    }
    assert replies == {("responder", "completed"): 3, ("asker", "completed"): 3}
    assert "agent_stream_replies_in_flight" in fams
    assert "agent_stream_reply_duration_seconds" in fams
    assert "agent_stream_reply_chat_messages" in fams
    # the same text from serve's own port
    srv = serve_metrics("127.0.0.1", 0)
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        async with httpx.AsyncClient(timeout=10) as c:
            m = await c.get(url + "/metrics")
            missing = await c.get(url + "/other")
        assert m.status_code == 200 and missing.status_code == 404
        assert parse(m.text).keys() == fams.keys()
    finally:
        srv.shutdown()
        srv.server_close()


def test_refusals_are_counted_by_code() -> None:
    telemetry.METRICS.reset()
    telemetry.refused("busy")
    telemetry.refused("busy")
    telemetry.refused("question_too_large")
    fams = parse(telemetry.prometheus_text())
    got = {s.labels["code"]: s.value for s in fams["agent_stream_refusals"].samples}
    assert got == {"busy": 2, "question_too_large": 1}


@pytest.mark.parametrize("bad", ["", "x", "0", "65536", "host:", "host:-1", "1.2.3.4:abc"])
def test_a_bad_metrics_address_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_metrics_address(bad)


def test_metrics_address_forms() -> None:
    assert parse_metrics_address("9464") == ("127.0.0.1", 9464)
    assert parse_metrics_address("0.0.0.0:9464") == ("0.0.0.0", 9464)
    assert parse_metrics_address("[::1]:9464") == ("::1", 9464)


def test_metrics_are_also_opentelemetry_instruments_when_a_meter_provider_is_set() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    telemetry._reset_for_tests()
    try:
        telemetry.configure(meter_provider=MeterProvider(metric_readers=[reader]))
        telemetry.refused("busy")
        w = telemetry.reply_started("answerer", peer="p", conversation="c", question=None)
        w.tap(text("Hello."))
        w.end("completed", chat_messages=2, resends=1, keepalives=0, repairs=0)
        data = reader.get_metrics_data()
        assert data is not None
        got = {
            m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
        }
        assert {
            "agent_stream.refusals",
            "agent_stream.time_to_first_text",
            "agent_stream.reply_duration",
            "agent_stream.replies_in_flight",
            "agent_stream.resends",
        } <= set(got)
        assert got["agent_stream.time_to_first_text"].unit == "s"
        (point,) = got["agent_stream.refusals"].data.data_points
        assert point.value == 1 and dict(point.attributes) == {"code": "busy"}
    finally:
        telemetry._reset_for_tests()
