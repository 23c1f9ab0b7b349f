"""Real processes for gateway tests: `agent-stream serve`, the echo agent and `agent-stream
gateway`, each in a process of its own on 127.0.0.1, sharing a private local directory."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from agents_harness import STARTUP_WITHIN, AgentProcess, Harness

from agent_stream.uagents.local._agents import free_port

HERE = Path(__file__).resolve().parent

__all__ = [
    "WINDOW",
    "AgentProcess",
    "Gateway",
    "Harness",
    "agui_body",
    "assert_echo_stopped",
    "echo_agent",
    "echo_produced",
    "sse_events",
    "start_gateway",
]

WINDOW = 3.0  # the shared gateway's resume window (short: the disconnect tests wait it out)


def agui_body(question: str, run_id: str = "run-1", **extra: Any) -> dict[str, Any]:
    """A RunAgentInput asking ``question`` (``extra`` goes into forwardedProps)."""
    return {
        "threadId": "thread-1",
        "runId": run_id,
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": extra,
        "messages": [{"id": "u1", "role": "user", "content": question}],
    }


def echo_agent(h: Harness, name: str = "echo") -> tuple[AgentProcess, str]:
    """tests/gateway/echo_agent.py, listed in the directory: (process, address)."""
    port = free_port()
    p = h.start(
        str(HERE / "echo_agent.py"),
        "--port",
        str(port),
        "--seed",
        f"gateway echo {port} {time.time_ns()}",
        "--name",
        name,
    )
    address = p.wait_for("address:").split(":", 1)[1].strip()
    h.wait_up("echo agent", port, address)
    return p, address


def echo_produced(proc: AgentProcess, mark: str) -> int:
    """Filler tokens the echo agent has produced so far for the question marked ``mark``."""
    counts = [
        int(x.split()[1])
        for x in proc.lines
        if x.startswith("produced ") and x.split()[2:3] == [mark]
    ]
    return max(counts, default=0)


def assert_echo_stopped(
    proc: AgentProcess, mark: str, since: float, *, within: float = 1.0, watch: float = 1.5
) -> None:
    """The echo agent stopped producing ``mark``'s reply within ``within`` s of ``since`` (a
    stop): from then on, for ``watch`` s, its count does not grow (at 50 tokens/s it would
    print 7 more lines)."""
    time.sleep(max(0.0, since + within - time.monotonic()))
    then = echo_produced(proc, mark)
    time.sleep(watch)
    now = echo_produced(proc, mark)
    assert now == then, f"the agent kept producing after the stop: {then} -> {now} tokens"


@dataclass
class Gateway:
    proc: AgentProcess
    url: str

    def client(self, **kw: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **kw)


def start_gateway(h: Harness, *args: str) -> Gateway:
    """`agent-stream gateway --port P ARGS` once it answers /healthz."""
    port = free_port()
    p = h.cli("gateway", "--port", str(port), *args)
    url = p.wait_for("gateway:", timeout=30).split(" ", 1)[1].strip().rstrip("/")
    deadline = time.monotonic() + STARTUP_WITHIN
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return Gateway(p, url)
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"gateway on {port} did not answer: {p.stderr[-2000:]}")


def sse_events(text: str) -> list[dict[str, Any]]:
    """SSE text -> [{"id", "event", "data"}] (data joined; ``[DONE]`` kept as a string)."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        ev: dict[str, Any] = {}
        data = []
        for line in block.split("\n"):
            if line.startswith("id:"):
                ev["id"] = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
            elif line.startswith("event:"):
                ev["event"] = line[6:].strip()
        if data:
            raw = "\n".join(data)
            try:
                ev["data"] = json.loads(raw)
            except ValueError:
                ev["data"] = raw
            out.append(ev)
    return out
