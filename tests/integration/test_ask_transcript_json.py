"""`ask --json` against a real agent process: the transcript's top-level status and usage say
how the reply ended, also when it was cut short by the asker's timeout."""

from __future__ import annotations

import json

import pytest
from agents_harness import Harness

pytestmark = pytest.mark.integration

QUESTION = "How should agents stream their output?"


def test_a_whole_reply_says_completed(harness: Harness) -> None:
    _, address, endpoint = harness.serve("--rate", "0", "--name", "json-whole")
    p = harness.cli("ask", address, "--endpoint", endpoint, "--json", QUESTION)
    code, out, err = p.finish(timeout=60)
    assert code == 0, err
    t = json.loads(out)
    assert t["status"] == "completed" and t["error"] is None
    assert isinstance(t["duration_ms"], int)
    assert all(b["status"] == "completed" for b in t["blocks"])


def test_a_reply_cut_by_the_timeout_says_timeout_not_streaming(harness: Harness) -> None:
    serve, address, endpoint = harness.serve("--rate", "5", "--name", "json-slow")  # slow: cut
    p = harness.cli("ask", address, "--endpoint", endpoint, "--json", "--timeout", "3", QUESTION)
    code, out, err = p.finish(timeout=60)
    # Killed, not stopped: a graceful stop would spend its drain timeout (5 s) sending the
    # cancelled reply's ends to the asker that has gone.
    serve.proc.kill()
    assert code == 1, err
    t = json.loads(out)
    assert t["status"] == "timeout"
