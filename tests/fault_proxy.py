"""A fault-injecting HTTP proxy for tests, in front of an agent's endpoint (127.0.0.1 only).

Each POST is, at the configured rates: answered 503 without forwarding (``p503``), answered 200
without forwarding (``drop``: a silent loss), forwarded twice (``dup``), or answered 200 at once
and forwarded after up to ``max_delay`` seconds (``delay``: envelopes reorder); otherwise
forwarded and the target's answer returned. ``dead = True`` stops forwarding entirely (every post
is dropped silently). ``rule(index, envelope) -> outcome | None`` decides a post by its content
first (e.g. drop the question). Bounded: at most ``max_requests`` posts and ``lifetime`` seconds,
then it stops by itself; :meth:`stop` (or the context manager) stops it at once.
"""

from __future__ import annotations

import base64
import http.client
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

OK, E503, DROP, DUP, DELAY = "ok", "503", "drop", "dup", "delay"
Rule = Callable[[int, dict[str, Any]], str | None]


def payload_of(envelope: dict[str, Any]) -> dict[str, Any]:
    """The decoded payload of a uagents envelope (empty when unreadable)."""
    try:
        raw = base64.b64decode(envelope.get("payload") or "")
        out: dict[str, Any] = json.loads(raw)
        return out
    except (ValueError, TypeError):
        return {}


def is_chat_message(envelope: dict[str, Any]) -> bool:
    """Whether the envelope carries a ChatMessage (not an acknowledgement)."""
    return "content" in payload_of(envelope)


def has_text(envelope: dict[str, Any]) -> bool:
    """Whether a ChatMessage envelope carries non-empty text."""
    return any(
        c.get("type") == "text" and c.get("text") for c in payload_of(envelope).get("content") or []
    )


def ops_of(envelope: dict[str, Any]) -> list[str]:
    """The agent_stream ops a ChatMessage envelope carries."""
    return [
        c["metadata"]["op"]
        for c in payload_of(envelope).get("content") or []
        if c.get("type") == "metadata" and "op" in (c.get("metadata") or {})
    ]


class FaultProxy:
    """Listens on 127.0.0.1 (a free port) and forwards to ``target`` (an http://127.0.0.1 URL)."""

    def __init__(
        self,
        target: str,
        *,
        p503: float = 0.0,
        drop: float = 0.0,
        dup: float = 0.0,
        delay: float = 0.0,
        max_delay: float = 0.5,
        seed: int = 0,
        rule: Rule | None = None,
        lifetime: float = 300.0,
        max_requests: int = 100_000,
    ) -> None:
        parts = urlsplit(target)
        if parts.hostname != "127.0.0.1":
            raise ValueError("the fault proxy only forwards to 127.0.0.1")
        self.target_host, self.target_port = parts.hostname, parts.port or 80
        self.target_path = parts.path or "/submit"
        self.rates = [(E503, p503), (DROP, drop), (DUP, dup), (DELAY, delay)]
        self.max_delay = max_delay
        self.rule = rule
        self.dead = False
        self.lifetime = lifetime
        self.max_requests = max_requests
        self.counts: Counter[str] = Counter()
        self.requests = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._timers: list[threading.Timer] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, answer = proxy._handle(self.path, body, self.headers.get("Content-Type"))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                except OSError:  # the sender gave up waiting
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/submit"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._deadline = threading.Timer(lifetime, self.stop)
        self._deadline.daemon = True

    def __enter__(self) -> FaultProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()
        self._deadline.start()

    def stop(self) -> None:
        self._deadline.cancel()
        with self._lock:
            timers, self._timers = self._timers, []
        for t in timers:
            t.cancel()
        self._server.shutdown()
        self._server.server_close()

    def reset(self, seed: int = 0) -> None:
        """Back to forwarding everything: no rule, no fault, counts cleared, the random draws
        started again from ``seed``."""
        self.rule = None
        self.rates = [(E503, 0.0), (DROP, 0.0), (DUP, 0.0), (DELAY, 0.0)]
        self.counts.clear()
        with self._lock:
            self._rng.seed(seed)

    # -- deciding and forwarding ----------------------------------------------------------------
    def _outcome(self, index: int, body: bytes) -> str:
        if self.dead:
            return DROP
        if self.rule is not None:
            try:
                envelope = json.loads(body)
            except ValueError:
                envelope = {}
            chosen = self.rule(index, envelope)
            if chosen is not None:
                return chosen
        with self._lock:
            x = self._rng.random()
        for outcome, rate in self.rates:
            if x < rate:
                return outcome
            x -= rate
        return OK

    def _handle(self, path: str, body: bytes, ctype: str | None) -> tuple[int, bytes]:
        with self._lock:
            index = self.requests
            self.requests += 1
        if index >= self.max_requests:
            threading.Thread(target=self.stop, daemon=True).start()
            return 503, b'{"error": "fault proxy: request budget spent"}'
        outcome = self._outcome(index, body)
        self.counts[outcome] += 1
        if outcome == E503:
            return 503, b'{"error": "fault proxy: 503"}'
        if outcome == DROP:
            return 200, b"{}"
        if outcome == DELAY:
            with self._lock:
                wait = self._rng.uniform(0.0, self.max_delay)
            self._later(wait, path, body, ctype)
            return 200, b"{}"
        status, answer = self._forward(path, body, ctype)
        if outcome == DUP:
            with self._lock:
                wait = self._rng.uniform(0.0, 0.2)
            self._later(wait, path, body, ctype)
        return status, answer

    def _later(self, wait: float, path: str, body: bytes, ctype: str | None) -> None:
        t = threading.Timer(wait, self._forward, (path, body, ctype))
        t.daemon = True
        with self._lock:
            self._timers = [x for x in self._timers if x.is_alive()]
            self._timers.append(t)
        t.start()

    def _forward(self, path: str, body: bytes, ctype: str | None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.target_host, self.target_port, timeout=10)
        try:
            conn.request(
                "POST",
                self.target_path if path in ("", "/") else path,
                body,
                {"Content-Type": ctype or "application/json"},
            )
            resp = conn.getresponse()
            return resp.status, resp.read()
        except OSError as exc:
            return 502, json.dumps({"error": f"fault proxy: {exc}"}).encode()
        finally:
            conn.close()


def wait_until(cond: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    """Poll ``cond`` until it holds or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return cond()
