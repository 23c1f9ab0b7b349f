"""Acknowledgements to a busy agent_stream peer go together, over real signed HTTP: ``serve``
and ``ask`` as two processes on 127.0.0.1, the asker's acknowledgements held on their way (a
proxy that forwards each after 0.4 s), so the reply's ChatMessages arrive while one is in flight."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from agents_harness import Harness, address_of, port_open_failed
from fault_proxy import FaultProxy, is_chat_message, payload_of, wait_until

from agent_stream.adapters.chat.acks import ACKED_KEY
from agent_stream.uagents.local._agents import free_port

pytestmark = pytest.mark.integration


def test_an_askers_acknowledgements_of_a_reply_coalesce_and_cover_every_chatmessage(
    harness: Harness,
) -> None:
    r_port, a_port = free_port(), free_port()
    stamp = time.time_ns()
    r_seed, a_seed = f"coalesced acks serve {stamp}", f"coalesced acks ask {stamp}"
    lock = threading.Lock()
    sent: list[str] = []  # the reply's ChatMessages, as they reached the asker
    ack_envelopes: list[list[str]] = []  # the ids each acknowledgement to the responder named

    def record_reply(index: int, env: dict[str, Any]) -> str | None:
        if is_chat_message(env):
            with lock:
                sent.append(str(payload_of(env).get("msg_id")))
        return None

    def hold_acks(index: int, env: dict[str, Any]) -> str | None:
        body = payload_of(env)
        if "acknowledged_msg_id" in body:
            meta = body.get("metadata") or {}
            extra = [k for k in (meta.get(ACKED_KEY) or "").split(",") if k]
            with lock:
                ack_envelopes.append([str(body["acknowledged_msg_id"]), *extra])
            time.sleep(0.4)  # on its way a while: what is acknowledged meanwhile waits
        return None

    with (
        FaultProxy(f"http://127.0.0.1:{r_port}/submit", rule=hold_acks) as to_serve,
        FaultProxy(f"http://127.0.0.1:{a_port}/submit", rule=record_reply) as to_ask,
    ):
        serve = harness.cli(
            "serve",
            "--port",
            str(r_port),
            "--seed",
            r_seed,
            "--rate",
            "150",
            "--lean-gather",  # each chunk as released: several arrive while an ack is held
            "0",
            "--no-directory",
            "--peer",
            f"{address_of(a_seed)}={to_ask.url}",
        )
        assert wait_until(lambda: not port_open_failed(r_port), 20)
        ask = harness.cli(
            "ask",
            address_of(r_seed),
            "--endpoint",
            to_serve.url,
            "--no-directory",
            "--port",
            str(a_port),
            "--seed",
            a_seed,
            "--json",
            "How do agents stream?",
        )
        code, out, err = ask.finish(timeout=60)
        time.sleep(1.0)  # the last acknowledgements are still on their way
        serve.stop()
    assert code == 0, err
    assert json.loads(out)["messages"]  # exit 0: the reply completed whole
    acked = [k for ids in ack_envelopes for k in ids]
    assert len(set(sent)) >= 6  # a reply of several ChatMessages
    assert set(sent) <= set(acked)  # every ChatMessage acknowledged ...
    assert len(ack_envelopes) < len(set(sent))  # ... in fewer envelopes
    assert max(len(ids) for ids in ack_envelopes) > 1
