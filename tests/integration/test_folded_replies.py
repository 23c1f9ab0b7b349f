"""Folded replies between two agent_stream agents, over real signed HTTP: ``serve --reasoning
--rate 0`` and ``ask --json`` as two processes on 127.0.0.1, the reply's envelopes recorded on
their way (a proxy). The asker's tag says ``fold=1``, so what is complete when a ChatMessage is
cut travels folded; the asker's transcript is whole."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from agents_harness import Harness, address_of, port_open_failed
from fault_proxy import FaultProxy, is_chat_message, payload_of, wait_until

from agent_stream.adapters.chat import TAG_KEY
from agent_stream.sources.replay import REPLIES, pick_reply
from agent_stream.uagents.local._agents import free_port

pytestmark = pytest.mark.integration

QUESTION = "How do agents stream?"


def test_a_reply_to_an_asker_that_reads_folds_travels_folded_and_assembles_whole(
    harness: Harness,
) -> None:
    r_port, a_port = free_port(), free_port()
    stamp = time.time_ns()
    r_seed, a_seed = f"folded serve {stamp}", f"folded ask {stamp}"
    lock = threading.Lock()
    groups: list[dict[str, str]] = []  # the tagged groups of the reply, as they reached the asker

    def record_reply(index: int, env: dict[str, Any]) -> str | None:
        if is_chat_message(env):
            with lock:
                for item in payload_of(env).get("content") or []:
                    md = item.get("metadata") or {}
                    if item.get("type") == "metadata" and TAG_KEY in md:
                        groups.append(md)
        return None

    with FaultProxy(f"http://127.0.0.1:{a_port}/submit", rule=record_reply) as to_ask:
        serve = harness.cli(
            "serve",
            "--port",
            str(r_port),
            "--seed",
            r_seed,
            "--rate",
            "0",
            "--reasoning",
            "--no-directory",
            "--peer",
            f"{address_of(a_seed)}={to_ask.url}",
        )
        assert wait_until(lambda: not port_open_failed(r_port), 20)
        ask = harness.cli(
            "ask",
            address_of(r_seed),
            "--endpoint",
            f"http://127.0.0.1:{r_port}/submit",
            "--no-directory",
            "--port",
            str(a_port),
            "--seed",
            a_seed,
            "--json",
            QUESTION,
        )
        code, out, err = ask.finish(timeout=60)
        serve.stop()
    assert code == 0, err
    transcript = json.loads(out)
    texts = [m["props"].get("content") for m in transcript["messages"] if m["type"] == "text"]
    assert texts == [pick_reply(QUESTION, REPLIES).answer]
    assert any(m["type"] == "thinking" for m in transcript["messages"])
    assert sum(1 for m in transcript["messages"] if m["type"] == "tool_call") == 3
    ops = [g.get("op") for g in groups]
    assert "fold" in ops  # complete messages and runs of metadata went folded
    assert ops.count("message") < ops.count("fold") + 3  # little went unfolded
