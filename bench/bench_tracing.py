"""What tracing costs a reply: CPU per reply with tracing off and on, in the same run.

Two agents in this process (uagents' in-process dispatcher: no HTTP, no signing, so the reply's
own CPU is small and any overhead shows up as a larger share than it would over HTTP) stream
the replay model's reply (thinking, tool calls, ~150 words of answer, as ``serve`` does) with
agent_stream's plugin, one question after another. Modes, interleaved round by round:

- ``off-missing``: the no-op path forced (what a process without the ``[otel]`` extra runs:
  nothing of OpenTelemetry used; only agent_stream's own per-reply metrics);
- ``off-unconfigured``: the extra installed, no ``OTEL_*`` variable: the decision is made from the
  (empty) environment, as in a real process;
- ``on``: an SDK TracerProvider with a BatchSpanProcessor exporting over OTLP/HTTP to a receiver
  in another process on 127.0.0.1 (flushed inside the measured window, so the export's encoding
  and sending count).

CPU is ``time.process_time()`` (every thread of this process: both agents, the span processor's
exporter thread) over a round of replies. Reported: CPU per reply for each mode (the best
round: other processes sharing the machine only ever add), what the no-op hooks cost one
reply when run alone on its recorded Messages (the honest measure of "off adds"), and on versus
off. Targets: off adds < 2%, on adds < 10%; exit status 1 when missed.

    python bench/bench_tracing.py [--replies 40] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import subprocess
import sys
import time
from typing import Any

from uagents.dispatch import dispatcher

from agent_stream import telemetry
from agent_stream.sources.replay import ReplayModel
from agent_stream.telemetry.replies import ask_ended
from agent_stream.uagents import ChatRequest, StreamingChat, local_agent
from agent_stream.uagents.local._agents import free_port
from agent_stream.writer import StreamWriter, collect

RECEIVER = r"""
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"""

QUESTIONS = [
    "How should agents stream their output?",
    "A pasta recipe for dinner",
    "Python code to retry an HTTP call",
]


class Agents:
    """An asker and a responder in this loop (started with the Agent's public methods)."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()
        self.agents: list[Any] = []
        model = ReplayModel(rate=0)
        self.recorded: list[Any] = []

        async def respond(request: ChatRequest, out: StreamWriter) -> None:
            await model(request.text, out)

        self.server = self._add(
            "bench tracing responder " + os.urandom(8).hex(), StreamingChat(respond), "responder"
        )
        self.chat = StreamingChat()
        self.client = self._add("bench tracing asker " + os.urandom(8).hex(), self.chat, "asker")

    def _add(self, seed: str, chat: StreamingChat, name: str) -> Any:
        agent = local_agent(seed, free_port(), directory=None, name=name)
        agent.include(chat, publish_manifest=True)
        before = asyncio.all_tasks()
        agent.start_message_dispenser()
        agent.start_message_receivers()
        self.tasks |= asyncio.all_tasks() - before
        self.agents.append(agent)
        return agent

    async def ask(self, question: str) -> Any:
        reply = await self.chat.ask(
            self.client._build_context(), self.server.address, question, session=False
        )
        await asyncio.wait_for(reply.wait(), 30)
        if not reply.completed:
            raise SystemExit(f"a reply did not complete: {reply.status}")
        return reply

    async def close(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for a in self.agents:
            dispatcher.unregister(a.address, a)


def hooks_alone(messages: list[Any], reply: Any, provider: Any = None, n: int = 1000) -> float:
    """CPU seconds the hooks cost one reply, run alone on the Messages a responder wrote:
    reply_started, a tap per Message, end, and the asker's side (its figures; with tracing, its
    CLIENT span too). ``provider``: tracing on with it (spans exported and flushed, counted)."""
    telemetry._reset_for_tests()
    if provider is None:
        telemetry.configure(enabled=False)
    else:
        telemetry.configure(tracer_provider=provider)
    tracer = telemetry.tracer()
    start = time.process_time()
    for _ in range(n):
        w = telemetry.reply_started("responder", peer="p", conversation="c", question=None)
        with w.active():
            for m in messages:
                w.tap(m)
        w.end("completed", chat_messages=8, resends=0, keepalives=0, repairs=0)
        if tracer is not None:
            span = tracer.start_span("invoke_agent responder")
            for k in (
                "status",
                "chat_messages",
                "resends",
                "gaps_repaired",
                "repair_requests",
                "keepalives",
                "duplicates",
                "time_to_first_text",
                "tagged",
            ):
                span.set_attribute("agent_stream." + k, 1)
            span.end()
        ask_ended(reply)
    if provider is not None:
        provider.force_flush()
    return (time.process_time() - start) / n


async def measure(agents: Agents, replies: int, flush: Any = None) -> float:
    """CPU seconds per reply over ``replies`` questions asked one after another (with tracing,
    the spans' export is flushed before the clock stops: batching as configured, all of it
    counted)."""
    start = time.process_time()
    for i in range(replies):
        await agents.ask(QUESTIONS[i % len(QUESTIONS)])
    if flush is not None:
        flush()
    return (time.process_time() - start) / replies


async def run(args: argparse.Namespace) -> int:
    logging.getLogger("agent_stream").setLevel(logging.ERROR)
    for k in [k for k in os.environ if k.startswith("OTEL_")]:
        del os.environ[k]
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
    assert receiver.stdout is not None
    port = int(receiver.stdout.readline())
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"))
    )

    def mode(name: str) -> None:
        telemetry._reset_for_tests()
        if name == "off-missing":
            telemetry.configure(enabled=False)
        elif name == "off-unconfigured":
            telemetry.configure("responder")  # decided from the environment, as a process does
            assert not telemetry.tracing()
        else:
            telemetry.configure(tracer_provider=provider)

    agents = Agents()
    results: dict[str, list[float]] = {"off-missing": [], "off-unconfigured": [], "on": []}
    try:
        mode("off-missing")
        # warm up, and keep one reply's Messages for the hooks-alone measure
        await measure(agents, 6)
        reply = await agents.ask(QUESTIONS[0])
        recorded = await collect(lambda out: ReplayModel(rate=0)(QUESTIONS[0], out))
        for _ in range(args.rounds):
            for name in results:
                mode(name)
                flush = (lambda: provider.force_flush()) if name == "on" else None
                results[name].append(await measure(agents, args.replies, flush))
        hook = hooks_alone(recorded, reply)
        traced = hooks_alone(recorded, reply, provider)
    finally:
        await agents.close()
        provider.shutdown()
        receiver.terminate()
        receiver.wait()
    med = {k: min(v) for k, v in results.items()}  # noise only ever adds CPU: the best round
    off = med["off-unconfigured"]
    on_e2e = (med["on"] - off) / off
    off_adds = hook / med["off-missing"]
    on_adds = (traced - hook) / off
    unconf_vs_missing = (off - med["off-missing"]) / med["off-missing"]
    print(
        f"replies per mode per round: {args.replies}, rounds: {args.rounds}; "
        f"{len(recorded)} Messages per reply"
    )
    for k, v in med.items():
        print(
            f"  {k:18s} {v * 1e3:7.3f} ms CPU per reply (rounds: "
            + ", ".join(f"{x * 1e3:.3f}" for x in results[k])
            + ")"
        )
    print(
        f"  no-op hooks alone  {hook * 1e6:7.1f} us per reply = {off_adds:+.2%} of a reply "
        "(off adds; target < 2%)"
    )
    print(
        f"  installed, not configured vs not installed: {unconf_vs_missing:+.2%} (noise: the "
        "same code path)"
    )
    print(
        f"  traced hooks alone {traced * 1e6:7.1f} us per reply: on adds {on_adds:+.2%} of a "
        "reply (target < 10%)"
    )
    print(
        f"  on vs off, whole replies: {on_e2e:+.2%} (same target; noisier: other processes "
        "share the CPU)"
    )
    ok = off_adds < 0.02 and on_adds < 0.10
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--replies", type=int, default=40, help="replies per mode per round")
    p.add_argument("--rounds", type=int, default=5)
    return asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
