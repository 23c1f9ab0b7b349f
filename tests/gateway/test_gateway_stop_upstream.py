"""A stop reaches the agent: after ``DELETE /v1/replies/{id}`` the agent itself stops producing.

Gateway-side, a stop ends the client's stream whether or not the agent heard it (the gateway
stops reading). These tests look at the agent instead, with a slow `agent-stream serve`
(``--rate 20``: a reply takes tens of seconds) that serves at most two replies at once to one
asker (``--max-replies-per-sender 2``) behind a gateway of its own:

- the stopped reply's stream ends, within ~1.5 s of the DELETE, with the *agent's* own
  ``stream_end`` saying ``cancelled`` (the responder confirms the cancel; a reply the gateway
  merely stopped reading would end only after the client's cancel grace, with a ``stream_end``
  the gateway writes for it, without the agent's ids);
- a second reply, left running, keeps growing for the next seconds (the agent is producing,
  the measurement is live), while a third question is answered at once: the agent's slot of
  the stopped reply is free, which it would not be if the agent kept producing it (the third
  would be refused ``busy``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from gateway_harness import AgentProcess, Gateway, Harness, start_gateway

pytestmark = pytest.mark.integration

QUESTION = "How do agents stream?"


@pytest.fixture(scope="module")
def slow(gw_harness: Harness) -> Iterator[tuple[AgentProcess, Gateway]]:
    """A slow `serve` (20 tokens/s, two replies at once per asker) and a gateway for it."""
    p, _, _ = gw_harness.serve("--rate", "20", "--name", "slow", "--max-replies-per-sender", "2")
    g = start_gateway(gw_harness, "--agent", "slow", "--resume-window", "30")
    yield p, g
    g.proc.stop()
    p.stop()


class Reader:
    """Reads one native stream (``GET /v1/stream``) in a thread: its Messages as they come."""

    def __init__(self, gw: Gateway, question: str) -> None:
        self.gw = gw
        self.question = question
        self.messages: list[dict[str, Any]] = []
        self.reply_id: str | None = None
        self.status_code: int | None = None
        self.ended_at: float | None = None
        self.started = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        buf = ""
        try:
            with (
                httpx.Client(base_url=self.gw.url, timeout=60) as c,
                c.stream("GET", "/v1/stream", params={"agent": "slow", "q": self.question}) as r,
            ):
                self.status_code = r.status_code
                self.reply_id = r.headers.get("x-reply-id")
                self.started.set()
                for piece in r.iter_text():
                    buf += piece
                    while "\n\n" in buf:
                        block, buf = buf.split("\n\n", 1)
                        for line in block.split("\n"):
                            if line.startswith("data:"):
                                self.messages.append(json.loads(line[5:]))
        finally:
            self.ended_at = time.monotonic()
            self.started.set()

    def text(self) -> str:
        return "".join(
            str((m.get("props") or {}).get("content") or "")
            for m in self.messages
            if m.get("type") == "text"
        )

    def wait_for_text(self, chars: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.text()) < chars:
            assert self.ended_at is None, f"the stream ended early: {self.messages[-3:]}"
            assert time.monotonic() < deadline, "no text in time"
            time.sleep(0.05)

    def answering(self) -> bool:
        """The agent began answering: a block of its reply opened (a question it refused
        gets an error and no block)."""
        return any((m.get("props") or {}).get("event") == "block_start" for m in self.messages)

    def end(self) -> dict[str, Any] | None:
        for m in reversed(self.messages):
            if (m.get("props") or {}).get("event") == "stream_end":
                return m
        return None


def test_delete_stops_the_agent_not_only_the_stream(slow: tuple[AgentProcess, Gateway]) -> None:
    _, gw = slow
    stopped, running = Reader(gw, QUESTION), Reader(gw, QUESTION)
    for r in (stopped, running):
        assert r.started.wait(30) and r.status_code == 200 and r.reply_id
    stopped.wait_for_text(20)
    running.wait_for_text(20)

    at = time.monotonic()
    with httpx.Client(base_url=gw.url, timeout=30) as c:
        d = c.delete(f"/v1/replies/{stopped.reply_id}")
    assert d.status_code == 200 and d.json()["status"] == "cancelled", d.text
    stopped.thread.join(5)
    assert stopped.ended_at is not None and stopped.ended_at - at < 1.5, (
        f"the stopped stream ended {stopped.ended_at and stopped.ended_at - at} s after DELETE"
    )
    end = stopped.end()
    assert end is not None and end["props"]["data"]["status"] == "cancelled", end
    # the agent's own stream_end (the gateway's stand-in has only status and error)
    assert {"request_id", "duration_ms"} <= set(end["props"]["data"]), (
        f"the agent did not confirm the cancel: {end}"
    )

    # the agent: the other reply goes on growing; the stopped one's slot is free at once
    text_then = len(running.text())
    third = Reader(gw, QUESTION)
    assert third.started.wait(30) and third.status_code == 200
    # its first block, not its first text: the replay model thinks and calls tools for ~5 s
    # at 20 tokens/s before any text, and a refusal would come instead of any block
    deadline = time.monotonic() + 5
    while not third.answering() and third.ended_at is None and time.monotonic() < deadline:
        time.sleep(0.05)
    refused = [m for m in third.messages if m.get("type") == "error"]
    assert not refused, f"the agent is still producing the stopped reply: {refused}"
    assert third.answering(), third.messages[-3:]
    deadline = time.monotonic() + 5
    while len(running.text()) <= text_then + 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(running.text()) > text_then + 20, "the running reply did not grow"
    assert running.ended_at is None and third.ended_at is None
    with httpx.Client(base_url=gw.url, timeout=30) as c:
        for r in (running, third):
            c.delete(f"/v1/replies/{r.reply_id}")
