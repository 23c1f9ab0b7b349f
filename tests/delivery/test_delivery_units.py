"""The pure delivery parts: redelivery budget and backoff, replay buffers, gap repair timing,
keepalive and idle timing, and the decoder's two former false successes."""

from __future__ import annotations

import random

import pytest
from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat import ChatDecoder, ChatEncoder, coalesce
from agent_stream.adapters.chat.ack_clock import AckClock
from agent_stream.adapters.chat.delivery import (
    DeliveryPolicy,
    Gap,
    GapRepair,
    IdleWatch,
    Keepalive,
    Redelivery,
    ReplayBuffer,
    ReplayStore,
)
from agent_stream.adapters.chat.wire import (
    OP_CANCEL,
    OP_KEEPALIVE,
    OP_RESEND,
    control,
    control_of,
)
from agent_stream.assemble import assemble
from agent_stream.message import (
    BLOCK_END,
    BLOCK_START,
    STREAM_END,
    BlockEndData,
    BlockStartData,
    Message,
    StreamEndData,
    lifecycle,
)

P = DeliveryPolicy(jitter=0.0)


def rd(peer_acks: bool = True, policy: DeliveryPolicy = P) -> Redelivery[str, str]:
    return Redelivery(policy, peer_acks=peer_acks, rng=random.Random(1))


def test_failed_delivery_is_retried_with_backoff_until_the_budget_runs_out() -> None:
    r = rd(peer_acks=False)  # failures are retried whatever the peer
    r.sent("a", "A", False, 0.0)
    times = []
    now = 0.0
    while True:
        d = r.next_deadline
        if d is None:
            break
        now = d
        for key, item in r.due(now):
            times.append(now)
            r.sent(key, item, False, now)
    assert times == [0.5, 1.5, 3.5, 7.5]  # 0.5, 1, 2, 4: five tries in all
    assert r.resends == 4 and r.given_up == 1 and len(r) == 0
    assert r.at_risk(now) == pytest.approx(now)


def test_silence_is_loss_only_from_a_peer_known_to_acknowledge() -> None:
    r = rd(peer_acks=False)
    r.sent("a", "A", True, 0.0)
    r.sent("b", "B", True, 0.0)
    assert r.next_deadline is None and not r.pending  # sent once, as today
    assert r.acknowledged("a", 0.2)  # the first ack: the peer acknowledges
    assert r.next_deadline == 1.0  # "b" is resent if its ack does not come in time
    assert [k for k, _ in r.due(1.0)] == ["b"]
    r.sent("b", "B", True, 1.0)
    assert r.acknowledged("b", 1.5) and not r.pending and r.resends == 1
    assert r.at_risk(2.0) == pytest.approx(0.5)


def test_acknowledged_messages_are_never_resent_and_budget_is_bounded_in_time() -> None:
    def resend_all(r: Redelivery[str, str]) -> tuple[list[str], float]:
        sent = []
        now = 0.0
        while r.next_deadline is not None:
            now = r.next_deadline
            for key, item in r.due(now):
                sent.append(key)
                r.sent(key, item, True, now)
        return sent, now

    r = rd(policy=DeliveryPolicy(jitter=0.0, within=3.0, tries=10))
    r.sent("a", "A", True, 0.0)
    r.sent("b", "B", True, 0.0)
    r.acknowledged("a", 0.0)  # before anything else came: no sign of life after b was sent
    sent, now = resend_all(r)
    assert set(sent) == {"b"} and now <= 3.0 and r.given_up == 1 and r.extended == 0
    # acknowledged after b was sent, a peer is alive: b gets a second budget, once
    r = rd(policy=DeliveryPolicy(jitter=0.0, within=3.0, tries=10))
    r.sent("a", "A", True, 0.0)
    r.sent("b", "B", True, 0.0)
    r.acknowledged("a", 0.1)
    sent, now = resend_all(r)
    assert set(sent) == {"b"} and 3.0 < now <= 6.1 and r.given_up == 1 and r.extended == 1
    assert len(sent) == 19  # ten tries less the first, then ten more


def test_policy_validates() -> None:
    with pytest.raises(ValueError):
        DeliveryPolicy(tries=0)
    with pytest.raises(ValueError):
        DeliveryPolicy(keepalive=0)


def test_replay_buffer_bounded_by_count_and_bytes_and_store_lingers() -> None:
    b: ReplayBuffer[str] = ReplayBuffer(3, 100)
    for i in range(1, 6):
        b.add(i, i, f"c{i}", 10)
    assert len(b) == 3 and b.covering(1) == ["c3", "c4", "c5"] and not b.holds(2)
    b.add(6, 9, "big", 95)  # over the bytes: older ones go, the newest stays
    assert b.covering(7, 7) == ["big"] and b.bytes <= 100
    s: ReplayStore[str, str] = ReplayStore(DeliveryPolicy(replay_linger=10.0))
    s.open("r1").add(1, 1, "x", 1)
    s.end("r1", 5.0)
    assert s.get("r1", 14.0) is not None and s.get("r1", 15.0) is None


def test_gap_repair_asks_after_a_while_then_again_and_counts_repairs() -> None:
    g = GapRepair(DeliveryPolicy(repair_after=0.3, repair_every=1.0))
    gap = Gap("S", "C", 2, 3, 10.0)
    assert g.due([gap], 10.2) == []
    assert g.next_deadline([gap]) == pytest.approx(10.3)
    assert g.due([gap], 10.3) == [gap]
    assert g.due([gap], 10.5) == []
    assert g.due([gap], 11.3) == [gap] and g.requested == 2
    assert g.due([], 11.4) == [] and g.repaired == 1


def test_keepalive_and_idle_watch() -> None:
    k = Keepalive(5.0, 0.0)
    k.note_sent(3.0)
    assert not k.due(7.9) and k.due(8.0) and k.sent == 1 and k.next_deadline == 13.0
    w = IdleWatch(15.0, 0.0)
    w.note(10.0)
    assert not w.lost(24.9) and w.lost(25.0)


def test_control_ops_round_trip() -> None:
    c = control(OP_RESEND, "conv", **{"from": "3"})
    assert control_of(c) == {
        "agent_stream": "1",
        "op": OP_RESEND,
        "conversation": "conv",
        "from": "3",
    }
    assert control_of(control(OP_CANCEL, "conv"))["op"] == OP_CANCEL  # type: ignore[index]
    assert control_of(control(OP_KEEPALIVE, "conv")) is None  # responder -> asker: decoded
    # a keepalive is decoded quietly and tells the decoder about a missing tail
    dec = ChatDecoder()
    assert dec.feed("S", control(OP_KEEPALIVE, "conv", high="2"), 1.0) == []
    assert dec.drain_warnings() == []
    assert [(g.lo, g.hi) for g in dec.gaps()] == [(1, 2)]
    assert dec.keepalives("S", "conv") == 1


def _reply() -> list[ChatMessage]:
    enc = ChatEncoder(
        "C", tagged=True, chunker={"min_chars": 1, "max_chars": 4, "first_chars": None}
    )
    chats: list[ChatMessage] = []
    msgs = [
        lifecycle(
            BLOCK_START, BlockStartData(block_id="B", type="llm", label="Thinking"), block_id="B"
        ),
        *[
            Message(
                type="text",
                props={"content": f"word{i} "},
                delta=True,
                message_id="M",
                block_id="B",
            )
            for i in range(100)
        ],
        lifecycle(BLOCK_END, BlockEndData(block_id="B"), block_id="B"),
        lifecycle(STREAM_END, StreamEndData(status="completed")),
    ]
    for m in msgs:
        chats += enc.feed(m, 0.0)
    return chats + enc.close(0.0)


def test_reversed_halves_wait_for_each_other_and_end_whole() -> None:
    """A --rate 0 reply coalesced into two, the first covering more seqs than the reorder
    window, arriving in the wrong order: held, not skipped; whole once both arrived."""
    chats = _reply()
    a, b = coalesce(chats[:-2]), coalesce(chats[-2:])
    dec = ChatDecoder()
    out = dec.feed("S", b, 0.0)
    assert not dec.finished("S", "C")
    out += dec.feed("S", a, 0.1)
    assert dec.whole("S", "C")
    assert "word99" in assemble(out).text()


def test_a_lost_first_chat_message_never_ends_whole() -> None:
    chats = _reply()
    dec = ChatDecoder(gap_timeout=1.0)
    out: list[Message] = []
    for c in chats[1:]:
        out += dec.feed("S", c, 0.0)
    out += dec.poll(2.0)
    assert dec.finished("S", "C") and not dec.whole("S", "C")
    assert dec.skipped("S", "C") == 1


def test_replay_store_drops_expired_and_oversized_buffers_and_keeps_its_total() -> None:
    s: ReplayStore[str, str] = ReplayStore(
        DeliveryPolicy(replay_linger=10.0, replay_total_bytes=100)
    )
    for i in range(5):
        s.open(f"r{i}").add(1, 1, "x", 10)
    assert s.bytes == 50
    s.end("r1", 1.0)
    s.end("r3", 0.5)  # an earlier time than the last end: kept in order, not lost
    s.prune(10.9)
    assert len(s) == 5
    s.prune(11.0)
    assert len(s) == 3 and s.get("r1", 11.0) is None and s.get("r3", 11.0) is None
    assert s.bytes == 30
    reopened = s.open("r0")  # a reply asked again: its old buffer's bytes leave the total
    assert s.bytes == 20
    reopened.add(1, 2, "big", 90)  # over the total: the oldest buffers go first
    s.prune(12.0)
    assert s.get("r0", 12.0) is reopened and s.bytes <= 100
    assert s.get("r2", 12.0) is None
    kept = s.get("r4", 12.0)
    assert kept is not None
    kept.add(2, 2, "y", 5)  # a kept buffer's growth counts
    assert s.bytes == 90 + 10 + 5


def test_a_message_out_of_tries_is_left_to_repair_only_when_a_repairing_peer_is_alive() -> None:
    def run(repairable: bool, ack_later: bool) -> Redelivery[str, str]:
        policy = DeliveryPolicy(tries=2, within=100.0, ack_timeout=1.0, jitter=0.0)
        rd: Redelivery[str, str] = Redelivery(policy, peer_acks=True, repairable=repairable)
        rd.sent("lost", "a", True, 0.0)
        rd.sent("later", "b", True, 0.5)
        if ack_later:
            rd.acknowledged("later", 0.6)  # the peer is alive: it acknowledged what came after
        assert rd.due(1.0) == [("lost", "a")]
        rd.sent("lost", "a", True, 1.0)
        for _ in range(50):  # until its budget (and a second one, if it gets one) is spent
            now = rd.next_deadline
            if now is None:
                break
            for key, item in rd.due(now):
                rd.sent(key, item, True, now)
        assert rd.next_deadline is None
        return rd

    alive = run(repairable=True, ack_later=True)
    assert (alive.left_to_repair, alive.given_up) == (1, 0)  # the asker's gap repair gets it
    silent = run(repairable=True, ack_later=False)  # neither message acknowledged: both go
    assert (silent.left_to_repair, silent.given_up, silent.extended) == (0, 2, 0)
    # alive, but it cannot ask for the gap: a second budget of sends, then given up
    plain = run(repairable=False, ack_later=True)
    assert (plain.left_to_repair, plain.given_up, plain.extended) == (0, 1, 1)
    assert plain.resends == 3  # 2 tries, then 2 more: the first send was not a resend


def test_a_slow_peers_message_gets_every_try_within_the_budget() -> None:
    """A peer that lately took 60 s to acknowledge makes each wait max_delay (8 s): three
    sends fitted in a 20 s budget. Cut to an even share of what is left, all five go."""
    clock = AckClock()
    clock.sample("peer", 60.0)
    r = Redelivery[str, str](
        DeliveryPolicy(jitter=0.0), peer_acks=True, timer=clock.of("peer"), rng=random.Random(1)
    )
    r.sent("m", "M", True, 0.0)
    times = [0.0]
    now = 0.0
    while r.next_deadline is not None:
        now = r.next_deadline
        for key, item in r.due(now):
            times.append(now)
            r.sent(key, item, True, now)  # delivered, never acknowledged
    assert len(times) == P.tries, times
    assert times == sorted(set(times))  # one send at a time, each later than the last
    assert now == pytest.approx(P.within) and r.given_up == 1


def test_a_message_sent_in_order_counts_the_sign_of_life_before_it_for_its_second_budget() -> None:
    """One message at a time (a plain peer): nothing but the message itself can be acknowledged
    after its first send, so the acknowledgement that let it go, or the question, counts."""

    def run(in_order: bool, sign: str | None) -> Redelivery[str, str]:
        policy = DeliveryPolicy(tries=2, within=100.0, ack_timeout=1.0, jitter=0.0)
        r: Redelivery[str, str] = Redelivery(policy, peer_acks=True, in_order=in_order)
        if sign == "question":
            r.heard()
        elif sign == "ack":
            r.sent("before", "b", True, 0.0)
            r.acknowledged("before", 0.5)  # what let the next one go
        r.sent("next", "a", True, 1.0)  # none of its acknowledgements ever comes
        while (now := r.next_deadline) is not None:
            for key, item in r.due(now):
                r.sent(key, item, True, now)
        return r

    for sign in ("question", "ack"):
        r = run(in_order=True, sign=sign)
        assert (r.extended, r.given_up, r.resends) == (1, 1, 3), sign  # 2 tries, then 2 more
    assert run(in_order=True, sign=None).extended == 0  # never heard from: no second budget
    assert run(in_order=False, sign="ack").extended == 0  # pipelined: a later ack is the sign
