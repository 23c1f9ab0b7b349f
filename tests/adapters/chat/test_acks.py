"""Coalesced acknowledgements: one in flight per peer that reads them, the rest together after
it; one per ChatMessage to any other peer; what a peer sends us is read bounded."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st
from uagents_core.contrib.protocols.chat import ChatAcknowledgement, ChatMessage, TextContent

from agent_stream.adapters.chat.acks import (
    ACKED_KEY,
    AckBatcher,
    ack_for,
    acked_ids,
    asks_coalesced_acks,
    reads_coalesced,
)
from agent_stream.adapters.chat.wire import request_tags

PEER, OTHER = "agent1" + "p" * 59, "agent1" + "o" * 59


def ids(n: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(n)]


def test_a_plain_peer_gets_one_acknowledgement_per_chatmessage() -> None:
    b = AckBatcher()
    for k in ids(5):
        assert b.ack(PEER, k) == [k]
        assert b.sent(PEER) is None
    assert b.ack(PEER, "x") == ["x"]  # even while one is on its way
    assert b.ack(PEER, "y") == ["y"]


def test_a_reader_gets_what_came_meanwhile_in_one_acknowledgement_after_the_one_in_flight() -> None:
    b = AckBatcher(max_ids=3, max_in_flight=1)
    b.reads(PEER)
    first, *rest = ids(8)
    assert b.ack(PEER, first) == [first]  # idle: at once
    assert [b.ack(PEER, k) for k in rest] == [None] * 7  # one is on its way: they wait
    assert b.ack(OTHER, "o") == ["o"]  # another peer is not held up
    assert b.sent(PEER) == rest[:3]  # at most max_ids in one
    assert b.sent(PEER) == rest[3:6]
    assert b.sent(PEER) == rest[6:]
    assert b.sent(PEER) is None  # idle again: the next goes at once
    assert b.ack(PEER, "z") == ["z"]
    assert b.coalesced == 2 + 2 + 0


def test_what_waits_for_one_peer_is_bounded() -> None:
    b = AckBatcher(max_waiting=4, max_ids=100)
    b.reads(PEER)
    assert b.ack(PEER, "first") == ["first"]
    for k in ids(10):
        b.ack(PEER, k)
    assert b.dropped == 6
    batch = b.sent(PEER)
    assert batch is not None and len(batch) == 4


def test_readers_are_bounded_and_forgotten_oldest_first() -> None:
    b = AckBatcher(max_peers=2)
    for p in ("a", "b", "c"):
        b.reads(p)
    assert b.ack("a", "1") == ["1"] and b.ack("a", "2") == ["2"]  # forgotten: plain again
    assert b.ack("c", "1") == ["1"] and b.ack("c", "2") is None


@given(st.lists(st.uuids(version=4).map(str), min_size=1, max_size=40))
def test_an_acknowledgement_names_exactly_its_ids(keys: list[str]) -> None:
    ack = ack_for(keys)
    assert str(ack.acknowledged_msg_id) == keys[0]  # what any chat peer reads
    assert acked_ids(ChatAcknowledgement.parse_raw(ack.json())) == keys
    assert reads_coalesced(ack)


def test_what_a_peer_sends_is_read_bounded() -> None:
    first = str(uuid.uuid4())
    untagged = ChatAcknowledgement(acknowledged_msg_id=first, metadata={ACKED_KEY: "a,b"})
    assert acked_ids(untagged) == [first]  # not ours: the list is not read
    assert not reads_coalesced(untagged)
    assert not reads_coalesced(ChatAcknowledgement(acknowledged_msg_id=first))
    odd = ack_for([first])
    assert odd.metadata is not None
    odd.metadata[ACKED_KEY] = ",,x," + "y" * 65 + ",z"
    assert acked_ids(odd) == [first, "x", "z"]  # empty and overlong ids are skipped
    many = ack_for([first, *ids(2000)])
    assert len(acked_ids(many, limit=512)) == 512


def test_a_tagged_question_asks_for_coalesced_acknowledgements_a_plain_one_does_not() -> None:
    tagged = ChatMessage(content=[request_tags(), TextContent(text="hi")])
    plain = ChatMessage(content=[TextContent(text="hi")])
    assert asks_coalesced_acks(tagged)
    assert not asks_coalesced_acks(plain)


def test_a_stopped_acknowledgement_does_not_hold_the_next_ones_back() -> None:
    b = AckBatcher()
    b.reads(PEER)
    assert b.ack(PEER, "1") == ["1"]
    assert b.ack(PEER, "2") is None
    b.forget(PEER)  # the task sending "1" was cancelled
    assert b.dropped == 1
    assert b.ack(PEER, "3") == ["3"]
    assert b.sent(PEER) is None


def test_a_full_acknowledgement_goes_beside_the_one_in_flight_up_to_max_in_flight() -> None:
    """One envelope per round trip cannot keep up with a peer sending faster than max_ids per
    round trip: a full one goes at once, beside those on their way, up to max_in_flight."""
    b = AckBatcher(max_ids=3, max_in_flight=2)
    b.reads(PEER)
    first, *rest = ids(10)
    assert b.ack(PEER, first) == [first]  # idle: at once (1 on its way)
    assert [b.ack(PEER, k) for k in rest[:2]] == [None, None]  # not full: they wait
    assert b.ack(PEER, rest[2]) == rest[:3]  # full: goes beside it (2 on their way)
    assert [b.ack(PEER, k) for k in rest[3:9]] == [None] * 6  # at the cap: they wait
    assert b.sent(PEER) == rest[3:6]  # one came back: the next full one
    assert b.sent(PEER) == rest[6:9]
    assert b.sent(PEER) is None  # one fewer on its way
    assert b.ack(PEER, "x") is None  # still one on its way: waits
    assert b.sent(PEER) == ["x"]
    assert b.sent(PEER) is None  # idle again
    assert b.ack(PEER, "y") == ["y"]


def test_a_stopped_acknowledgement_among_several_keeps_what_waits_for_the_others() -> None:
    b = AckBatcher(max_ids=2, max_in_flight=2)
    b.reads(PEER)
    assert b.ack(PEER, "1") == ["1"]
    assert b.ack(PEER, "2") is None
    assert b.ack(PEER, "3") == ["2", "3"]  # two on their way
    assert b.ack(PEER, "4") is None
    b.forget(PEER)  # one of them was cancelled: the other still sends what waits
    assert b.dropped == 0
    assert b.sent(PEER) == ["4"]
    assert b.sent(PEER) is None
    assert b.ack(PEER, "5") == ["5"]
