"""`agent-stream serve` stopped by SIGTERM mid-reply (issue 45): it exits promptly, with a peer
that hangs as with healthy askers only, and a healthy asker still gets its reply's end.

Real processes on 127.0.0.1: `agent-stream serve` (the replay model at 60 tokens/s, so a reply
streams for several seconds), a healthy asker (tests/peers/asker_agent.py) and a peer whose
endpoint accepts connections and never answers (tests/hostile_peer.py). The 2 s figure is
bench/bench_shutdown.py's; the bounds here are generous (other work shares the machine) yet
below what the stop took before it had one deadline (5-6 s healthy, 8-10 s with a peer that
hangs).
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agents_harness import AgentProcess, Harness
from fault_proxy import wait_until
from hostile_peer import CHAT, Hanging, envelope, post, valid_question
from uagents_core.identity import Identity

pytestmark = pytest.mark.integration

QUESTION = "How do agents stream?"
ASKER_TIMEOUT = 60.0  # a reply whose end never came would be reported after this
MID_REPLY = 5.0  # seconds into a reply that takes ~12 s, its answer's text streaming


@pytest.fixture
def hanging() -> Iterator[Hanging]:
    h = Hanging()
    try:
        yield h
    finally:
        h.close()


def ask_in_background(asker: AgentProcess) -> None:
    """Ask one question; the asker prints its reply's outcome when the reply ends."""
    assert asker.proc.stdin is not None
    asker.proc.stdin.write(json.dumps({"text": QUESTION, "timeout": ASKER_TIMEOUT}) + "\n")
    asker.proc.stdin.flush()


def sigterm(serve: AgentProcess, bound: float) -> float:
    """SIGTERM ``serve``; the seconds it took to exit (failing beyond ``bound``)."""
    began = time.monotonic()
    serve.proc.send_signal(signal.SIGTERM)
    code = serve.end_stop(bound)
    took = time.monotonic() - began
    assert took < bound, f"serve took {took:.1f} s to exit after SIGTERM"
    assert code == 0, serve.stderr[-3000:]
    assert "Traceback" not in serve.stderr, serve.stderr[-3000:]
    return took


def reply_end(asker: AgentProcess) -> dict[str, Any]:
    """The outcome the asker printed for its reply."""
    (reply,) = json.loads(asker.next_line(ASKER_TIMEOUT + 30))["replies"]
    return dict(reply)


def test_a_healthy_asker_gets_its_reply_end_and_serve_exits_at_once(harness: Harness) -> None:
    serve, address, endpoint = harness.serve("--rate", "60")
    asker = harness.asker(address, endpoint)[0]
    ask_in_background(asker)
    time.sleep(MID_REPLY)
    assert serve.proc.poll() is None
    sigterm(serve, bound=4.0)  # before: 5-6 s, its ends waiting for acknowledgements
    reply = reply_end(asker)
    # The reply's last ChatMessage came (cancelled, with what was said so far), at the stop:
    # not the asker's timeout or a `lost` reply.
    assert reply["status"] == "cancelled", reply
    assert reply["text_chars"] > 0 and reply["seconds"] < ASKER_TIMEOUT / 2, reply


def test_a_peer_that_hangs_does_not_hold_up_the_stop(harness: Harness, hanging: Hanging) -> None:
    ident = Identity.from_seed(f"shutdown hanging peer {time.time_ns()}", 0)
    serve, address, endpoint = harness.serve(
        "--rate", "60", "--peer", f"{ident.address}={hanging.url}"
    )
    asker = harness.asker(address, endpoint)[0]
    ask_in_background(asker)
    question = envelope(address, CHAT, valid_question("hang on"), identity=ident)
    assert post(endpoint, question) == 200
    assert wait_until(lambda: bool(hanging.held), 10)  # the agent's posts to it hang
    time.sleep(MID_REPLY)  # both replies mid-way
    assert serve.proc.poll() is None
    sigterm(serve, bound=5.0)  # before: 8-10 s (the replies' ends, then the lanes, each 5 s)
    reply = reply_end(asker)
    assert reply["status"] == "cancelled", reply
    assert reply["text_chars"] > 0 and reply["seconds"] < ASKER_TIMEOUT / 2, reply
