"""Delivery over real signed HTTP with faults injected (issue 11): two agent processes on
127.0.0.1, both directions through a fault proxy (tests/fault_proxy.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_harness import Harness, address_of, port_open_failed, stop_together
from fault_proxy import DROP, E503, FaultProxy, has_text, is_chat_message, payload_of, wait_until
from hostile_peer import CHAT, envelope, post
from uagents_core.identity import Identity

from agent_stream.adapters.chat.wire import OP_CANCEL, control
from agent_stream.uagents.local._agents import free_port

pytestmark = pytest.mark.integration

PEERS = Path(__file__).resolve().parents[1] / "delivery" / "delivery_peers.py"
QUESTION = "How do agents stream?"


class Pair:
    """A responder (``serve`` or delivery_peers.py responder) and a delivery_peers.py asker,
    each reaching the other through a FaultProxy: ``to_responder``, ``to_asker``."""

    def __init__(
        self,
        harness: Harness,
        serve: list[str] | None = None,
        responder: list[str] | None = None,
        stack: list[Any] | None = None,
    ) -> None:
        r_port, a_port = self.proxies()
        stamp = time.time_ns()
        r_seed, a_seed = f"delivery responder {stamp}", f"delivery asker {stamp}"
        self.harness, self.a_port, self.a_seed = harness, a_port, a_seed
        self.r_addr, self.a_addr = address_of(r_seed), address_of(a_seed)
        peer = f"{self.a_addr}={self.to_asker.url}"
        if serve is not None:
            self.responder = harness.cli(
                "serve",
                "--port",
                str(r_port),
                "--seed",
                r_seed,
                "--no-directory",
                "--peer",
                peer,
                *serve,
            )
        else:
            self.responder = harness.start(
                str(PEERS),
                "responder",
                "--port",
                str(r_port),
                "--seed",
                r_seed,
                "--peer",
                peer,
                *(responder or []),
                stdin=True,
            )
        assert wait_until(lambda: not port_open_failed(r_port), 20)
        self.start_asker()

    def proxies(self) -> tuple[int, int]:
        """The agents' ports, and a proxy in front of each (started) on a port of its own.

        A proxy binds a free port when it is made, after the agents' ports were chosen free but
        before anything listens there: it could be given one of them (seen on a loaded machine:
        the responder could not bind, and the port it waited for was the proxy's).
        """
        while True:
            r_port, a_port = free_port(), free_port()
            self.to_responder = FaultProxy(f"http://127.0.0.1:{r_port}/submit", seed=1)
            self.to_asker = FaultProxy(f"http://127.0.0.1:{a_port}/submit", seed=2)
            self.to_responder.start()
            self.to_asker.start()
            taken = {self.to_responder.port, self.to_asker.port}
            if r_port != a_port and not taken & {r_port, a_port}:
                return r_port, a_port
            for proxy in (self.to_responder, self.to_asker):
                proxy.stop()

    def start_asker(self) -> None:
        self.asker = self.harness.start(
            str(PEERS),
            "asker",
            "--port",
            str(self.a_port),
            "--seed",
            self.a_seed,
            "--peer",
            f"{self.r_addr}={self.to_responder.url}",
            stdin=True,
        )
        self.asker.wait_for("READY", 30)

    def ask(self, timeout: float = 90.0, **req: Any) -> list[dict[str, Any]]:
        replies: list[dict[str, Any]] = self.asker.request({"text": QUESTION, **req}, timeout)[
            "replies"
        ]
        return replies

    def faults(self, **rates: float) -> None:
        for proxy in (self.to_responder, self.to_asker):
            proxy.rates = [(k, rates.get(k, 0.0)) for k in ("503", "drop", "dup", "delay")]

    def reset(self) -> None:
        """Both proxies back to forwarding everything, once nothing has passed them for 0.5 s
        (a straggler of one test's reply must not meet the next test's rule)."""
        seen = -1
        deadline = time.monotonic() + 10
        while seen != (seen := self.to_responder.requests + self.to_asker.requests):
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        self.to_responder.reset(seed=1)
        self.to_asker.reset(seed=2)

    def close(self) -> None:
        stop_together((self.asker, self.responder))
        self.to_responder.stop()
        self.to_asker.stop()


@pytest.fixture
def pairs(harness: Harness) -> Iterator[list[Pair]]:
    made: list[Pair] = []
    try:
        yield made
    finally:
        for p in made:
            p.close()


@pytest.fixture(scope="module")
def module_pair(harness: Harness) -> Iterator[Pair]:
    pair = Pair(harness, serve=["--rate", "0", "--reasoning"])
    try:
        yield pair
    finally:
        pair.close()


@pytest.fixture
def clean_pair(module_pair: Pair) -> Iterator[Pair]:
    """One `serve --rate 0 --reasoning` pair for the module's tests that only set a proxy rule
    of their own (starting two agents per test cost seconds each): reset after each."""
    module_pair.reset()
    yield module_pair
    module_pair.reset()


@pytest.fixture(scope="module")
def clean_reply(module_pair: Pair) -> dict[str, Any]:
    """The shared pair's reply to QUESTION without any fault."""
    module_pair.reset()
    (clean,) = module_pair.ask()
    assert clean["completed"], clean
    return clean


# Not compared: times, and how many chunks a message's text came in. The responder's chunker
# cuts text that waited its max_delay, so on a loaded machine a reply written while the agent
# was busy elsewhere is cut once more, same text (seen: 13 chunks for a clean run's 12, with no
# fault involved). A chunk lost or doubled shows in the text and in ``completed``.
UNCOMPARED = ("duration_ms", "timestamp", "started_at", "ended_at", "chunk_count")


def shape(transcript: dict[str, Any]) -> Any:
    """Text and hierarchy of a transcript: what must not change under faults."""

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items() if k not in UNCOMPARED}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(transcript)


def test_fifty_replies_through_faults_in_both_directions_equal_a_clean_run(
    harness: Harness, pairs: list[Pair]
) -> None:
    pair = Pair(harness, serve=["--rate", "0", "--reasoning"])
    pairs.append(pair)
    (clean,) = pair.ask()
    (clean_plain,) = pair.ask(tagged=False, settle=5.0)
    assert clean["completed"] and clean_plain["completed"], (clean, clean_plain)
    # Replies now take few envelopes (coalesced, pipelined): dup 20% so that some of the
    # reply's own ChatMessages, not only acknowledgements, arrive twice in every run.
    pair.faults(**{"503": 0.10, "drop": 0.05, "dup": 0.20, "delay": 0.20})
    done: list[dict[str, Any]] = []
    for _ in range(10):  # 10 x (4 tagged + 1 untagged) = 50 replies
        done += pair.ask(count=4)
        done += pair.ask(tagged=False, settle=5.0)
    assert len(done) == 50
    for i, r in enumerate(done):
        want = clean_plain if i % 5 == 4 else clean
        assert r["completed"], (i, r["status"], r["warnings"])
        assert r["text"] == want["text"], i
        assert shape(r["transcript"]) == shape(want["transcript"]), i
    injected = pair.to_responder.counts + pair.to_asker.counts
    assert injected["503"] and injected["drop"] and injected["dup"] and injected["delay"]
    figures = {k: sum(r[k] for r in done) for k in ("duplicates", "gaps_repaired")}
    assert figures["duplicates"] > 0


def first_only(pred: Any) -> Any:
    """A proxy rule dropping the first envelope for which ``pred`` holds."""
    hit: list[int] = []

    def rule(index: int, envelope: dict[str, Any]) -> str | None:
        if not hit and pred(envelope):
            hit.append(index)
            return DROP
        return None

    rule.hit = hit  # type: ignore[attr-defined]
    return rule


def ends_reply(envelope: dict[str, Any]) -> bool:
    return is_chat_message(envelope) and "stream_end" in json.dumps(envelope_payload(envelope))


def envelope_payload(envelope: dict[str, Any]) -> Any:
    return payload_of(envelope)


@pytest.mark.parametrize("which", ["question", "first", "last"])
def test_a_silent_drop_of_the_question_or_first_or_last_chat_message_is_recovered(
    clean_pair: Pair, clean_reply: dict[str, Any], which: str
) -> None:
    pair, clean = clean_pair, clean_reply
    if which == "question":
        rule = first_only(lambda e: is_chat_message(e) and has_text(e))
        pair.to_responder.rule = rule
    else:
        rule = first_only(is_chat_message if which == "first" else ends_reply)
        pair.to_asker.rule = rule
    (r,) = pair.ask()
    assert rule.hit, "nothing was dropped"
    assert r["completed"], (r["status"], r["warnings"])
    assert r["text"] == clean["text"]
    assert shape(r["transcript"]) == shape(clean["transcript"])
    if which == "question":
        assert r["question_resends"] >= 1


def test_a_reply_whose_first_sends_are_refused_is_delivered_within_the_redelivery_budget(
    clean_pair: Pair, clean_reply: dict[str, Any]
) -> None:
    """The asker's endpoint answers 503 to the reply's first three ChatMessage sends (the
    question went through and was acknowledged: the asker is there, only busy). The responder
    keeps sending within its delivery budget instead of taking the asker for gone; before, it
    abandoned the reply after three quick failures and the asker waited out its timeout with
    nothing to show: one reply in a thousand under 10% 503s."""
    pair, clean = clean_pair, clean_reply
    refused: list[int] = []

    def busy(index: int, env: dict[str, Any]) -> str | None:
        if is_chat_message(env) and len(refused) < 3:
            refused.append(index)
            return E503
        return None

    pair.to_asker.rule = busy
    (r,) = pair.asker.request({"text": QUESTION, "timeout": 10}, 30)["replies"]
    assert len(refused) == 3
    assert r["completed"], (r["status"], r["warnings"])
    assert r["text"] == clean["text"]
    assert shape(r["transcript"]) == shape(clean["transcript"])


def test_a_killed_responder_is_lost_within_the_idle_timeout(harness: Harness) -> None:
    a_port, a_seed = free_port(), f"killed responder asker {time.time_ns()}"
    chats: list[int] = []
    to_ask = FaultProxy(
        f"http://127.0.0.1:{a_port}/submit",
        rule=lambda i, env: chats.append(i) if is_chat_message(env) else None,
    )
    with to_ask:
        serve, address, endpoint = harness.serve(
            "--rate",
            "20",
            "--reasoning",  # its thinking streams from the start
            "--no-directory",
            "--peer",
            f"{address_of(a_seed)}={to_ask.url}",
        )
        ask = harness.cli(
            "ask",
            address,
            "--endpoint",
            endpoint,
            "--no-directory",
            "--port",
            str(a_port),
            "--seed",
            a_seed,
            "--json",
            "--idle-timeout",
            "5",
            QUESTION,
        )
        # the reply is streaming (20 tokens/s: it takes a minute) and reaches ask
        assert wait_until(lambda: len(chats) >= 2, 30), ask.stderr
        serve.proc.kill()
        killed = time.monotonic()
        code, out, err = ask.finish(timeout=30)
        took = time.monotonic() - killed
    assert code == 1 and "status lost" in err, err
    # lost after the 5 s idle timeout, not the reply's 120 s timeout (the slack is for a loaded
    # machine: the asker's process still has to notice, print and exit)
    assert took < 5.0 + 10.0, took
    transcript = json.loads(out)
    assert transcript["messages"], out


def test_a_paused_model_is_slow_not_lost(harness: Harness, pairs: list[Pair]) -> None:
    """Paused 7 s mid-reply, well past the asker's 4 s idle timeout (the defaults, 15 s idle
    and a keepalive after 5 s of silence, scaled down to 4 s and 2 s): keepalives keep it
    alive."""
    pair = Pair(
        harness,
        responder=["--tokens", "60", "--pause-at", "20", "--pause", "7", "--keepalive", "2"],
    )
    pairs.append(pair)
    (r,) = pair.ask(idle_timeout=4)
    assert r["completed"], (r["status"], r["warnings"])
    assert r["keepalives"] >= 2
    assert r["seconds"] >= 7


def responder_end(pair: Pair) -> dict[str, Any]:
    line = pair.responder.wait_for('{"reply_end"', 10)
    out: dict[str, Any] = json.loads(line)
    return out


def test_cancel_from_the_api_stops_the_model(harness: Harness, pairs: list[Pair]) -> None:
    pair = Pair(harness, responder=["--tokens", "2000", "--rate", "50"])
    pairs.append(pair)
    texts: list[int] = []
    pair.to_asker.rule = lambda i, env: texts.append(i) if has_text(env) else None
    started = time.monotonic()
    (r,) = pair.ask(cancel_after=8)
    assert r["status"] == "cancelled" and not r["completed"]
    # the responder's stream_end (cancelled) came back within ~1 s of the cancel
    assert r["cancel_confirmed_after"] < 1.5, r["cancel_confirmed_after"]
    end = responder_end(pair)
    assert end["reply_end"]["status"] == "cancelled"
    assert time.monotonic() - started < 10
    produced = end["tokens"]
    assert produced < 2000
    arrived = len(texts)
    time.sleep(1.0)
    assert pair.responder.request({}, 5)["tokens"] == produced  # the model stopped
    assert len(texts) == arrived  # and no more text arrives
    streams = [m for m in r["transcript"]["messages"] if m.get("type") == "text"]
    assert streams and all(m["status"] in ("cancelled", "completed") for m in streams)
    assert streams[-1]["status"] == "cancelled"  # the one streaming when the cancel came


def test_sigint_in_ask_cancels_the_reply_and_exits_130(harness: Harness) -> None:
    port = free_port()
    stamp = time.time_ns()
    r_seed = f"sigint responder {stamp}"
    ask_port = free_port()
    ask_seed = f"sigint asker {stamp}"
    responder = harness.start(
        str(PEERS),
        "responder",
        "--port",
        str(port),
        "--seed",
        r_seed,
        "--peer",
        f"{address_of(ask_seed)}=http://127.0.0.1:{ask_port}/submit",
        "--tokens",
        "2000",
        "--rate",
        "50",
        stdin=True,
    )
    responder.wait_for("READY", 30)
    ask = harness.cli(
        "ask",
        address_of(r_seed),
        "--endpoint",
        f"http://127.0.0.1:{port}/submit",
        "--no-directory",
        "--port",
        str(ask_port),
        "--seed",
        ask_seed,
        "--json",
        "-v",
        QUESTION,
    )
    # a second of the reply produced (it takes 40 s): its first sentences reached ask
    assert wait_until(lambda: responder.request({}, 5)["tokens"] >= 50, 30), ask.stderr
    ask.proc.send_signal(2)
    sent = time.monotonic()
    code, out, err = ask.finish(timeout=15)
    assert code == 130, err
    assert "delivery: " in err and "keepalives" in err  # -v: the reply's delivery figures
    assert time.monotonic() - sent < 4.0
    end = json.loads(responder.wait_for('{"reply_end"', 10))
    assert end["reply_end"]["status"] == "cancelled"
    texts = [m for m in json.loads(out)["messages"] if m.get("type") == "text"]
    assert texts and texts[-1]["status"] == "cancelled"


def test_a_cancel_from_a_third_sender_does_nothing(harness: Harness, pairs: list[Pair]) -> None:
    pair = Pair(harness, responder=["--tokens", "200", "--rate", "50"])  # a 4 s reply
    pairs.append(pair)
    seen: list[str] = []

    def sniff(index: int, env: dict[str, Any]) -> None:
        if is_chat_message(env) and has_text(env) and not seen:
            seen.append(payload_of(env)["msg_id"])
        return None

    pair.to_responder.rule = sniff
    result: dict[str, Any] = {}
    asking = threading.Thread(target=lambda: result.update(r=pair.ask()[0]), daemon=True)
    asking.start()
    assert wait_until(lambda: bool(seen), 20)
    time.sleep(1.0)
    stranger = Identity.from_seed(f"stranger {time.time_ns()}", 0)
    cancel = control(OP_CANCEL, seen[0]).json()
    target = pair.to_responder.url.replace(
        str(pair.to_responder.port), str(pair.to_responder.target_port)
    )
    assert post(target, envelope(pair.r_addr, CHAT, cancel, identity=stranger)) == 200
    asking.join(60)
    r = result["r"]
    assert r["completed"], (r["status"], r["warnings"])
    assert responder_end(pair)["reply_end"]["status"] == "completed"


def test_ask_exits_1_when_one_chat_message_never_arrives(harness: Harness) -> None:
    """Every copy of the reply's first ChatMessage is dropped (sends, resends and repairs):
    the reply ends, but never as completed; `ask` exits 1."""
    r_port, a_port = free_port(), free_port()
    stamp = time.time_ns()
    r_seed, a_seed = f"lossy serve {stamp}", f"lossy ask {stamp}"
    doomed: list[str] = []

    def lose_first(index: int, env: dict[str, Any]) -> str | None:
        if not is_chat_message(env):
            return None
        msg_id = payload_of(env).get("msg_id")
        if not doomed:
            doomed.append(msg_id)
        return DROP if msg_id == doomed[0] else None

    with (
        FaultProxy(f"http://127.0.0.1:{r_port}/submit") as to_serve,
        FaultProxy(f"http://127.0.0.1:{a_port}/submit", rule=lose_first) as to_ask,
    ):
        serve = harness.cli(
            "serve",
            "--port",
            str(r_port),
            "--seed",
            r_seed,
            "--rate",
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
            "--gap-timeout",  # the gap is given up after 3 s instead of the default 20
            "3",
            QUESTION,
        )
        code, _, err = ask.finish(timeout=60)
        serve.stop()
    assert code == 1, err
    assert "did not complete" in err and "gap" in err
    assert to_ask.counts["drop"] >= 2  # the first send, then resends or repairs


def test_an_asker_that_lost_its_state_gets_the_reply_again_from_seq_1(clean_pair: Pair) -> None:
    pair = clean_pair
    (first,) = pair.ask()
    assert first["completed"]
    pair.asker.stop()  # its state is gone; a new process at the same address asks again
    pair.start_asker()
    (again,) = pair.ask(resume=first["conversation"], idle_timeout=5)
    assert again["completed"], (again["status"], again["warnings"])
    assert again["text"] == first["text"]
    assert shape(again["transcript"]) == shape(first["transcript"])
