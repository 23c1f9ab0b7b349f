"""A healthy peer's reply time from `agent-stream serve` alone, then while hostile peers work on
the same server (issue 9), all in one run on 127.0.0.1, with the server's resident memory:

  (a) 1,000 malformed posts per second (unsigned envelopes from ``user...`` addresses, the nine
      forms that used to silence an agent, round robin);
  (b) a peer whose endpoint accepts connections and never answers, asking every 0.2 s;
  (c) 200 questions at once from one flooding sender (whose endpoint accepts everything);
  (d) 1,000 senders each opening a chat stream (StartStreamContent; no endpoint to answer).

The healthy peer is tests/peers/asker_agent.py (its own process, signed HTTP both ways) asking
the replay model at full speed; each figure is the median of its replies during the load.

    python bench/bench_hostile.py [--asks 10]

Targets: healthy reply time within 2x of alone in every case, server RSS under 200 MB.
Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage, StartStreamContent, TextContent
from uagents_core.envelope import Envelope
from uagents_core.identity import Identity, generate_user_address
from uagents_core.models import Model

ROOT = Path(__file__).resolve().parents[1]
CHAT = Model.build_schema_digest(ChatMessage)
U4 = str(uuid.uuid4())
MALFORMED = [
    json.dumps({"timestamp": "2026-01-01T00:00:00+00:00", "msg_id": U4, "content": [], "evil": 1}),
    '{"content": {"type": "text", "text": "hi"}}',
    '{"content": [{"type": "evil"}]}',
    '{"content": [{"type": "text", "text": "hi", "evil": 1}]}',
    '{"content": [{"type": "text"}]}',
    json.dumps({"msg_id": U4}),
    '{"msg_id": "nope", "content": []}',
    "{not json",
    "[1, 2, 3]",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def envelope(target: str, payload: str, identity: Identity | None = None) -> bytes:
    sender = identity.address if identity is not None else generate_user_address()
    env = Envelope(
        version=1, sender=sender, target=target, session=uuid.uuid4(), schema_digest=CHAT
    )
    env.encode_payload(payload)
    if identity is not None:
        env.sign(identity)
    data: str = env.model_dump_json()
    return data.encode()


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Proc:
    """A child process whose stdout lines are collected in the background."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: str) -> None:
        self.p = subprocess.Popen(
            [sys.executable, *args],
            env=env,
            cwd=cwd,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.lines: list[str] = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()

    def line(self, prefix: str, timeout: float = 30.0, start: int = 0) -> tuple[int, str]:
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for i in range(start, len(self.lines)):
                    if self.lines[i].startswith(prefix):
                        return i, self.lines[i]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"no {prefix!r} line from {self.p.args!r}")
                self.cv.wait(left)

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()


class Asker:
    """tests/peers/asker_agent.py: one question per request() call, its reply time."""

    def __init__(self, proc: Proc) -> None:
        self.proc = proc
        self.seen = proc.line("READY")[0] + 1

    def request(self, req: dict[str, Any]) -> list[dict[str, Any]]:
        assert self.proc.p.stdin is not None
        self.proc.p.stdin.write(json.dumps(req) + "\n")
        self.proc.p.stdin.flush()
        i, line = self.proc.line('{"replies"', timeout=60, start=self.seen)
        self.seen = i + 1
        replies: list[dict[str, Any]] = json.loads(line)["replies"]
        return replies

    def times(self, n: int) -> tuple[list[float], int]:
        out, failed = [], 0
        for _ in range(n):
            (r,) = self.request({"text": "How do agents stream?", "timeout": 30})
            out.append(float(r["seconds"]))
            failed += not r["completed"]
        return out, failed


class Load:
    """Background posts until stop(): ``make(i)`` builds the i-th body, ``rate`` per second
    (0: as fast as possible) over ``threads`` keep-alive connections, at most ``total``."""

    def __init__(
        self,
        endpoint: str,
        make: Callable[[int], bytes],
        *,
        rate: float = 0,
        threads: int = 4,
        total: int | None = None,
    ) -> None:
        self.host, port = endpoint.split("//")[1].split("/")[0].split(":")
        self.port = int(port)
        self.make, self.rate, self.total = make, rate, total
        self.sent = self.statuses_500 = 0
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.started = time.monotonic()
        self.workers = [
            threading.Thread(target=self._run, args=(k, threads), daemon=True)
            for k in range(threads)
        ]
        for w in self.workers:
            w.start()

    def _run(self, k: int, threads: int) -> None:
        conn = HTTPConnection(self.host, self.port, timeout=10)
        i = k
        while not self.stopped.is_set() and (self.total is None or i < self.total):
            if self.rate:
                due = self.started + i / self.rate
                if due > time.monotonic():
                    time.sleep(due - time.monotonic())
            try:
                conn.request(
                    "POST",
                    "/submit",
                    body=self.make(i),
                    headers={"content-type": "application/json"},
                )
                resp = conn.getresponse()
                resp.read()
                with self.lock:
                    self.sent += 1
                    self.statuses_500 += resp.status >= 500
            except OSError:
                conn.close()
                conn = HTTPConnection(self.host, self.port, timeout=10)
            i += threads
        conn.close()

    def stop(self) -> float:
        self.stopped.set()
        for w in self.workers:
            w.join(15)
        return self.sent / max(1e-9, time.monotonic() - self.started)


class Hanging:
    """An endpoint that accepts connections and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/submit"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


class Sink:
    """An endpoint that accepts every envelope (200) and counts them."""

    def __init__(self) -> None:
        self.count = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                owner.count += 1
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a sender that hangs up early (the timed-out lanes) is expected here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/submit"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def main() -> int:
    """The cases one after the other, in the order of the table (long, but one straight line)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--asks", type=int, default=10, help="healthy questions per case")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-hostile-")
    os.chmod(work, 0o700)
    env = dict(
        os.environ,
        AGENT_STREAM_DIRECTORY=str(Path(work) / "agents.json"),
        PYTHONUNBUFFERED="1",
        PYTHONPATH=str(ROOT),
    )
    hanging, sink = Hanging(), Sink()
    slow_id, flood_id = Identity.from_seed("bench hanging", 0), Identity.from_seed("bench flood", 0)
    port = free_port()
    serve = Proc(
        [
            "-m",
            "agent_stream",
            "serve",
            "--rate",
            "0",
            "--port",
            str(port),
            "--seed",
            f"bench hostile {port}",
            "--peer",
            f"{slow_id.address}={hanging.url}",
            "--peer",
            f"{flood_id.address}={sink.url}",
        ],
        env,
        work,
    )
    procs = [serve]
    rows: list[tuple[str, str, list[float], int, float]] = []
    ok = True
    try:
        address = serve.line("address:")[1].split()[1]
        endpoint = serve.line("endpoint:")[1].split()[1]
        asker_port = free_port()
        asker = Asker(
            Proc(
                [
                    str(ROOT / "tests" / "peers" / "asker_agent.py"),
                    "--port",
                    str(asker_port),
                    "--seed",
                    f"bench asker {asker_port}",
                    "--to",
                    address,
                    "--to-endpoint",
                    endpoint,
                ],
                env,
                work,
            )
        )
        procs.append(asker.proc)
        asker.times(3)  # warm up: connections, first replies
        alone, failed = asker.times(args.asks)
        base = statistics.median(alone)
        rows.append(("alone", "-", alone, failed, rss_mb(serve.p.pid)))

        def case(
            name: str, start: Callable[[], Load], detail: Callable[[Load, float], str]
        ) -> None:
            load = start()
            time.sleep(0.5)
            peak = rss_mb(serve.p.pid)
            times, failed = asker.times(args.asks)
            peak = max(peak, rss_mb(serve.p.pid))
            rate = load.stop()
            rows.append((name, detail(load, rate), times, failed, peak))

        case(
            "(a) 1,000 malformed posts/s",
            lambda: Load(
                endpoint,
                lambda i: envelope(address, MALFORMED[i % len(MALFORMED)]),
                rate=1000,
                threads=6,
            ),
            lambda load, rate: f"{rate:,.0f} posts/s, {load.statuses_500} HTTP 5xx",
        )
        case(
            "(b) a hanging peer",
            lambda: Load(
                endpoint,
                lambda i: envelope(
                    address, ChatMessage(content=[TextContent(text=f"q{i}")]).json(), slow_id
                ),
                rate=5,
                threads=1,
            ),
            lambda load, rate: f"{load.sent} questions, {len(hanging.held)} hung connections",
        )
        flood_bodies = [
            envelope(address, ChatMessage(content=[TextContent(text=f"q{i}")]).json(), flood_id)
            for i in range(200)
        ]
        case(
            "(c) 200 questions, one sender",
            lambda: Load(endpoint, lambda i: flood_bodies[i], threads=4, total=200),
            lambda load, rate: f"{load.sent} questions, {sink.count} envelopes back",
        )
        senders = [Identity.generate() for _ in range(1000)]
        stream_bodies = [
            envelope(
                address, ChatMessage(content=[StartStreamContent(stream_id=uuid.uuid4())]).json(), s
            )
            for s in senders
        ]
        case(
            "(d) 1,000 senders open streams",
            lambda: Load(endpoint, lambda i: stream_bodies[i], threads=4, total=1000),
            lambda load, rate: f"{load.sent} streams opened",
        )
        after, failed = asker.times(args.asks)
        rows.append(("alone, after", "-", after, failed, rss_mb(serve.p.pid)))
    finally:
        for p in reversed(procs):
            p.stop()
        hanging.close()
        sink.close()

    print(
        f"{'case':32} {'load achieved':38} {'healthy reply (median/max)':>27} {'x alone':>8} "
        f"{'fails':>5} {'server RSS':>10}"
    )
    for name, detail, times, failed, rss in rows:
        med = statistics.median(times)
        ratio = med / base
        ok &= ratio <= 2.0 and failed == 0 and rss < 200
        print(
            f"{name:32} {detail:38} {med * 1000:12.0f} / {max(times) * 1000:6.0f} ms "
            f"{ratio:8.2f} {failed:5d} {rss:7.0f} MB"
        )
    print(
        "targets: healthy reply within 2x of alone in every case, RSS under 200 MB:",
        "met" if ok else "MISSED",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
