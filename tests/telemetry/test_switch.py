"""Tracing is off by default and free when off; the SDK's own variables turn it on and name the
service (the agent's name when they name none); W3C trace context is parsed strictly. Each
process-wide decision is tested in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_stream.telemetry.context import (
    format_traceparent,
    parse_traceparent,
    parse_tracestate,
    trace_headers_of,
)

ROOT = Path(__file__).resolve().parents[2]

# a reply's hooks, run as the plugin runs them, then what the process loaded
REPLY = r"""
import json, sys
from agent_stream import telemetry
from agent_stream.message import text
import agent_stream.uagents, agent_stream.gateway.app
w = telemetry.reply_started("myagent", peer="p", conversation="c", question=None)
with w.active():
    w.tap(text("hello"))
w.end("completed", chat_messages=1, resends=0, keepalives=0, repairs=0)
telemetry.shutdown()
print(json.dumps({"tracing": telemetry.tracing(),
                  "otel": sorted(m for m in sys.modules if m.startswith("opentelemetry"))}))
"""


def run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=clean,
        cwd=ROOT,
        timeout=60,
    )


def last_json(out: str) -> dict[str, object]:
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def test_without_variables_nothing_of_opentelemetry_is_loaded() -> None:
    p = run(REPLY)
    assert p.returncode == 0, p.stderr
    assert last_json(p.stdout) == {"tracing": False, "otel": []}


def test_without_the_extra_a_configured_environment_says_how_to_install_it() -> None:
    code = "import sys; sys.modules['opentelemetry'] = None\n" + REPLY
    p = run(code, OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    assert p.returncode == 0, p.stderr
    assert last_json(p.stdout)["tracing"] is False
    assert "pip install 'agent-stream[otel]'" in p.stderr


@pytest.mark.parametrize(
    "env",
    [
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
    ],
)
def test_the_sdks_own_switches_turn_it_off(env: dict[str, str]) -> None:
    p = run(REPLY, **env)
    assert p.returncode == 0, p.stderr
    assert last_json(p.stdout) == {"tracing": False, "otel": []}


def console_spans(out: str) -> list[dict[str, object]]:
    """The spans ConsoleSpanExporter printed (one JSON object each)."""
    spans, buf = [], []
    for line in out.splitlines():
        buf.append(line)
        if line == "}":
            spans.append(json.loads("\n".join(buf)))
            buf = []
        elif line.startswith('{"tracing"'):
            buf = []
    return spans


def test_service_name_is_the_agents_unless_the_variables_name_one() -> None:
    p = run(REPLY, OTEL_TRACES_EXPORTER="console")
    assert p.returncode == 0, p.stderr
    assert last_json(p.stdout)["tracing"] is True
    (span,) = console_spans(p.stdout)
    assert span["name"] == "invoke_agent myagent"
    assert span["resource"]["attributes"]["service.name"] == "myagent"  # type: ignore[index]
    for env in ({"OTEL_SERVICE_NAME": "svc"}, {"OTEL_RESOURCE_ATTRIBUTES": "service.name=svc,a=b"}):
        p = run(REPLY, OTEL_TRACES_EXPORTER="console", **env)
        (span,) = console_spans(p.stdout)
        assert span["resource"]["attributes"]["service.name"] == "svc"  # type: ignore[index]


def test_traceparent_parsing() -> None:
    tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert parse_traceparent(tp) == (0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, 1)
    assert format_traceparent(*parse_traceparent(tp)) == tp  # type: ignore[misc]
    # a later version: its first four fields are read, more may follow
    assert parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-x") == (
        0x4BF92F3577B34DA6A3CE929D0E0E4736,
        0x00F067AA0BA902B7,
        0,
    )
    for bad in (
        None,
        5,
        "",
        "00",
        tp + "-",
        tp[:-1],
        tp.upper(),
        " " + tp,
        tp + "\n",
        "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        "a" * 10000,
    ):
        assert parse_traceparent(bad) is None, bad


def test_tracestate_parsing() -> None:
    assert parse_tracestate("a=1,b@v=2 , c=x y") == [("a", "1"), ("b@v", "2"), ("c", "x y")]
    for bad in (
        "a",
        "A=1",
        "a=1,a=2",
        "a=,b=1",
        "a=1=2",
        "a=" + "x" * 600,
        ",".join(f"k{i}=v" for i in range(33)),
        "a=b\x00",
    ):
        assert parse_tracestate(bad) is None, bad


def test_trace_headers_come_only_from_agent_stream_tags() -> None:
    class Item:
        def __init__(self, md: dict[str, str]) -> None:
            self.metadata = md

    assert trace_headers_of([Item({"traceparent": "x"})]) == (None, None)  # not our tag
    assert trace_headers_of(
        [Item({"agent_stream": "1", "traceparent": "x", "tracestate": "a=1"})]
    ) == ("x", "a=1")
    assert trace_headers_of([Item({"agent_stream": "1"})]) == (None, None)
