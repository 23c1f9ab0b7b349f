"""Per-peer quotas over real signed HTTP on 127.0.0.1: a responder with a ceiling of ChatMessages
per second and an envelope size limit (tests/peers/quota_responder.py) answers an agent_stream
asker (tests/peers/asker_agent.py) through a recording proxy; the reply's sends keep the
ceiling and the limit, and the text arrives byte-identical. And an asker on uagents' own
mailbox client (tests/peers/mailbox_asker.py), polling a local stand-in of Agentverse
(tests/mailbox_standin.py), gets every reply whole with no resend storm."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents_harness import PEERS, AgentProcess, Harness, address_of
from fault_proxy import FaultProxy, is_chat_message, payload_of
from mailbox_standin import MailboxStandIn

from agent_stream.uagents.local._agents import free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
import itertools

from quota_responder import answer_for

pytestmark = pytest.mark.integration


def ready(p: AgentProcess) -> str:
    line = p.next_line(30)
    while not line.startswith("READY "):
        line = p.next_line(30)
    return line.split()[1]


def request(asker: AgentProcess, obj: dict[str, Any]) -> Any:
    """Ask on the asker's stdin; its JSON answer (uagents' log lines on stdout skipped)."""
    assert asker.proc.stdin is not None
    asker.proc.stdin.write(json.dumps(obj) + "\n")
    asker.proc.stdin.flush()
    for _ in range(1000):
        line = asker.next_line(150)
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(f"no answer; stderr:\n{asker.stderr[-3000:]}")


def start_responder(harness: Harness, port: int, seed: str, *args: str) -> AgentProcess:
    return harness.start(
        str(PEERS / "quota_responder.py"), "--port", str(port), "--seed", seed, *args
    )


def start_asker(harness: Harness, port: int, seed: str, to: str, to_port: int) -> AgentProcess:
    return harness.start(
        str(PEERS / "asker_agent.py"),
        "--port",
        str(port),
        "--seed",
        seed,
        "--to",
        to,
        "--to-endpoint",
        f"http://127.0.0.1:{to_port}/submit",
        stdin=True,
    )


def test_a_reply_under_a_ceiling_keeps_it_and_the_envelope_limit_and_its_text(
    harness: Harness,
) -> None:
    rate, limit = 1.0, 8192
    r_port, a_port = free_port(), free_port()
    stamp = time.time_ns()
    r_seed, a_seed = f"quota responder {stamp}", f"quota asker {stamp}"
    lock = threading.Lock()
    posts: list[tuple[float, int, str]] = []  # the reply's ChatMessages as they reached the asker

    def record(index: int, env: dict[str, Any]) -> str | None:
        if is_chat_message(env):
            size = len(json.dumps(env, separators=(",", ":")).encode())
            with lock:
                posts.append((time.monotonic(), size, str(payload_of(env).get("msg_id"))))
        return None

    with FaultProxy(f"http://127.0.0.1:{a_port}/submit", rule=record) as to_asker:
        responder = start_responder(
            harness,
            r_port,
            r_seed,
            "--peer",
            f"{address_of(a_seed)}={to_asker.url}",
            "--rate",
            str(rate),
            "--max-envelope",
            str(limit),
        )
        r_address = ready(responder)
        asker = start_asker(harness, a_port, a_seed, r_address, r_port)
        ready(asker)
        got = request(asker, {"text": "quota", "timeout": 90, "full_text": True})
        asker.stop()
        responder.stop()
    (reply,) = got["replies"]
    assert reply["completed"], reply
    assert reply["text"] == answer_for("quota")  # byte-identical
    times = [t for t, _, _ in posts]
    sizes = [s for _, s, _ in posts]
    print(f"\n{len(posts)} ChatMessages over {times[-1] - times[0]:.2f} s, sizes {sizes}")
    # each send starts 1/rate after the previous one ended: arrivals are that far apart
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 1 / rate - 0.02, gaps
    assert max(sizes) <= limit
    assert len({m for _, _, m in posts}) == len(posts)  # nothing sent twice
    assert len(posts) < 20  # 553 pieces written: fewer, larger ChatMessages


def test_an_agent_on_uagents_own_mailbox_gets_every_reply_whole_without_a_resend_storm(
    harness: Harness,
) -> None:
    """The asker receives through uagents' mailbox client, polling a local stand-in of
    Agentverse every second, once connected to it as the agent inspector connects an agent
    (its ``POST /connect``: uagents' identity challenge); the responder (default settings)
    resolves it to the stand-in's mailbox submit path, so its replies follow the Agentverse
    preset."""
    r_port, a_port = free_port(), free_port()
    stamp = time.time_ns()
    r_seed, a_seed = f"mailbox responder {stamp}", f"mailbox asker {stamp}"
    with MailboxStandIn() as box:
        responder = start_responder(
            harness, r_port, r_seed, "--peer", f"{address_of(a_seed)}={box.submit_url}"
        )
        r_address = ready(responder)
        asker = harness.start(
            str(PEERS / "mailbox_asker.py"),
            "--seed",
            a_seed,
            "--agentverse",
            box.url,
            "--to",
            r_address,
            "--to-endpoint",
            f"http://127.0.0.1:{r_port}/submit",
            "--port",
            str(a_port),
            stdin=True,
        )
        assert ready(asker) == address_of(a_seed)
        connected = httpx.post(
            f"http://127.0.0.1:{a_port}/connect",
            json={"user_token": "stand-in user", "agent_type": "mailbox"},
            timeout=30,
        )
        assert connected.status_code == 200 and connected.json()["success"], connected.text
        assert box.registered == [address_of(a_seed)]
        got = request(asker, {"text": "mailbox", "count": 3, "timeout": 90, "full_text": True})
        time.sleep(1.5)  # the last acknowledgements and deletions
        asker.stop()
        responder.stop()
        posts, polls = list(box.posts), list(box.polls)
    replies = got["replies"]
    assert [r["completed"] for r in replies] == [True] * 3, replies
    assert all(r["text"] == answer_for("mailbox") for r in replies)  # every reply whole
    into_box = [p for p in posts if "content" in p.payload]  # the replies' ChatMessages
    ids = [str(p.payload.get("msg_id")) for p in into_box]
    held = [p.held for p in polls if p.held]
    times = [p.at for p in into_box]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    print(
        f"\n{len(into_box)} ChatMessages into the mailbox ({len(set(ids))} distinct), "
        f"{len(posts) - len(into_box)} acknowledgements; {len(polls)} polls, "
        f"served {held}; smallest gap {min(gaps):.2f} s"
    )
    assert len(ids) == len(set(ids))  # nothing sent twice while the mailbox held it
    assert max(held) > 1  # envelopes waited in the mailbox for a poll
    assert min(gaps) >= 1.0 - 0.02  # the Agentverse preset: one ChatMessage a second
    assert len(into_box) < 30  # three replies of 553 pieces: few, large ChatMessages
