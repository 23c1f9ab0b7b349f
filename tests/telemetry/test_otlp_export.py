"""End to end: relaying agents in separate processes export their spans over real OTLP/HTTP to
a receiver on 127.0.0.1 (this test's own HTTP server decoding ExportTraceServiceRequest), and
one trace holds spans from every agent, parent and child across each hop. The batch delay is a
minute, so every span received was flushed when its process stopped (SIGTERM or the end of
``main``). ``serve --metrics-port`` serves what prometheus_client's parser reads."""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "integration"))

from agents_harness import PEERS, Harness, free_port, stop_together

pytestmark = pytest.mark.integration

SERVER, CLIENT = 2, 3  # Span.SpanKind values in the OTLP protobuf


class Receiver:
    """An OTLP/HTTP trace receiver: every span received, with its service.name."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.bad: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if (
                    self.path != "/v1/traces"
                    or self.headers.get("Content-Type") != "application/x-protobuf"
                ):
                    outer.bad.append(f"{self.path} {self.headers.get('Content-Type')}")
                    self.send_response(404)
                    self.end_headers()
                    return
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                outer.take(req)
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self, req: ExportTraceServiceRequest) -> None:
        for rs in req.resource_spans:
            attrs = {a.key: a.value.string_value for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    with self.lock:
                        self.spans.append(
                            {
                                "service": attrs.get("service.name"),
                                "name": s.name,
                                "trace": s.trace_id.hex(),
                                "id": s.span_id.hex(),
                                "parent": s.parent_span_id.hex() or None,
                                "kind": s.kind,
                                "attrs": {a.key: a.value for a in s.attributes},
                            }
                        )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


def test_one_trace_follows_a_question_through_every_relaying_agent(
    tmp_path: Path, receiver: Receiver
) -> None:
    h = Harness(tmp_path)
    h.env = {k: v for k, v in h.env.items() if not k.startswith("OTEL_")}
    h.env.update(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.port}",
            "OTEL_BSP_SCHEDULE_DELAY": "60000",
        }
    )  # only the flush at shutdown exports
    try:
        members = {
            "researcher": (),
            "planner": ("--relay", "researcher"),
            "director": ("--relay", "planner"),
        }
        procs = {}
        for name, extra in members.items():
            port = free_port()
            procs[name] = h.start(
                "-m",
                "agent_stream.commands.team",
                "--name",
                name,
                "--port",
                str(port),
                "--seed",
                f"otel e2e {name} {port} {time.time_ns()}",
                "--rate",
                "0",
                *extra,
            )
        for p in procs.values():
            p.wait_for("address:", 60)
        h.wait_answering(*members)
        port = free_port()
        asker = h.start(
            str(PEERS / "relay_asker.py"),
            "--port",
            str(port),
            "--seed",
            f"otel e2e asker {port} {time.time_ns()}",
            "--to",
            "director",
            "--question",
            "How should agents stream?",
        )
        code, out, err = asker.finish(timeout=60)
        assert code == 0, err
        assert json.loads(out.strip().splitlines()[-1])["status"] == "completed"
        stop_together(procs.values())  # SIGTERM: each agent flushes its spans as it stops
    finally:
        h.stop_all()
    assert not receiver.bad
    spans = receiver.spans
    by_service: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        by_service.setdefault(s["service"], []).append(s)
    assert set(by_service) >= {"relay-asker", "director", "planner", "researcher"}, sorted(
        by_service
    )
    traces = {s["trace"] for s in spans}
    assert len(traces) == 1, traces  # one question, one trace
    by_id = {s["id"]: s for s in spans}

    def server_span(service: str) -> dict[str, Any]:
        (span,) = [s for s in by_service[service] if s["kind"] == SERVER]
        return span

    # each hop: the callee's reply span is a child of the caller's relay block (the span of the
    # caller's question), inside the caller's reply span
    for caller, callee in (("director", "planner"), ("planner", "researcher")):
        reply = server_span(callee)
        block = by_id[reply["parent"]]
        assert block["service"] == caller and block["kind"] == CLIENT
        assert block["attrs"]["agent_stream.block.type"].string_value == "agent"
        assert block["attrs"]["gen_ai.agent.name"].string_value == callee
        up = block
        while up["kind"] != SERVER:
            up = by_id[up["parent"]]
        assert up["id"] == server_span(caller)["id"]
    origin = by_id[server_span("director")["parent"]]
    assert origin["service"] == "relay-asker" and origin["kind"] == CLIENT
    assert origin["parent"] is None  # the asker started the trace
    assert server_span("researcher")["attrs"]["gen_ai.agent.name"].string_value == "researcher"
    # no content by default
    for s in spans:
        assert not {
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
        } & set(s["attrs"])


def test_the_gateway_continues_an_http_traceparent_to_the_agent_it_asks(
    tmp_path: Path, receiver: Receiver
) -> None:
    import httpx

    h = Harness(tmp_path)
    h.env = {k: v for k, v in h.env.items() if not k.startswith("OTEL_")}
    h.env.update(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.port}",
            "OTEL_BSP_SCHEDULE_DELAY": "60000",
        }
    )
    trace_id, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    try:
        port = free_port()
        agent = h.start(
            "-m",
            "agent_stream.commands.team",
            "--name",
            "researcher",
            "--port",
            str(port),
            "--seed",
            f"otel gw {port} {time.time_ns()}",
            "--rate",
            "0",
        )
        agent.wait_for("address:", 60)
        h.wait_answering("researcher")
        gport = free_port()
        gateway = h.cli("gateway", "--port", str(gport), "--agent", "researcher")
        url = gateway.wait_for("gateway:", 60).split(" ", 1)[1].strip().rstrip("/")
        body = {
            "model": "researcher",
            "stream": False,
            "messages": [{"role": "user", "content": "How should agents stream?"}],
        }
        r = httpx.post(
            url + "/v1/chat/completions",
            json=body,
            timeout=60,
            headers={"traceparent": f"00-{trace_id}-{parent}-01"},
        )
        assert r.status_code == 200, r.text
        stop_together((gateway, agent))
    finally:
        h.stop_all()
    spans = receiver.spans
    assert {s["trace"] for s in spans} == {trace_id}
    by_id = {s["id"]: s for s in spans}
    (request,) = [s for s in spans if s["service"] == "gateway" and s["kind"] == SERVER]
    assert request["parent"] == parent and request["name"] == "POST /v1/chat/completions"
    (reply,) = [s for s in spans if s["service"] == "researcher" and s["kind"] == SERVER]
    question = by_id[reply["parent"]]
    assert question["service"] == "gateway" and question["kind"] == CLIENT
    assert question["parent"] == request["id"]


def test_serve_metrics_port_is_read_by_prometheus_clients_parser(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    try:
        mport = free_port()
        _p, address, endpoint = h.serve("--rate", "0", "--metrics-port", str(mport))
        ask = h.cli("ask", address, "--endpoint", endpoint, "Hello?")
        code, _out, err = ask.finish(timeout=60)
        assert code == 0, err
        text = ""
        for _ in range(100):
            with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=5) as r:
                assert r.headers["Content-Type"].startswith("text/plain")
                text = r.read().decode()
            if 'agent_stream_replies_total{side="responder",status="completed"} 1' in text:
                break
            time.sleep(0.05)
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        counts = [
            s.value
            for s in fams["agent_stream_time_to_first_text_seconds"].samples
            if s.name.endswith("_count") and s.labels.get("side") == "responder"
        ]
        assert counts == [1]
        bad = h.cli("serve", "--port", str(free_port()), "--metrics-port", "nope")
        code, _out, err = bad.finish(timeout=30)
        assert code == 2 and "--metrics-port" in err
    finally:
        h.stop_all()
