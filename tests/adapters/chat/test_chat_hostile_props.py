"""Property: whatever many hostile senders send, the decoder never raises and its whole state
stays under :meth:`DecoderLimits.state_bound` (measured with tracemalloc)."""

from __future__ import annotations

import gc
import tracemalloc
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndStreamContent,
    MetadataContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters.chat import TAG_KEY, ChatDecoder, DecoderLimits

MiB = 2**20

# Small caps, so that a few hundred ChatMessages go past every one of them.
SMALL = DecoderLimits(
    reorder_window=4,
    max_seq_ahead=16,
    max_senders=6,
    max_open_streams=3,
    max_open_streams_total=8,
    max_conversations=3,
    max_conversations_total=8,
    max_held_total=12,
    max_held_bytes=48 * 2**10,
    max_seen_ids=16,
    max_seen_ids_total=48,
    max_refused_total=16,
    max_tracked_messages=8,
    max_tracked_total=24,
    max_chat_bytes=24 * 2**10,
    max_message_bytes=8 * 2**10,
    max_stream_bytes=8 * 2**10,
    max_reply_bytes=32 * 2**10,
    max_id_chars=48,
    max_warnings=32,
    max_kept_bytes_total=16 * 2**10,
)

KINDS = [
    "untagged",
    "start",
    "end",
    "chunk",
    "text",
    "message",
    "event",
    "stream_end",
    "bogus",
    "duplicate",
    "poll",
]

action = st.tuples(
    st.sampled_from(KINDS),
    st.integers(0, 19),  # sender
    st.integers(0, 9),  # conversation / stream index
    st.sampled_from(["next", "next", "next", "ahead", "far", "late", "none"]),  # seq
    st.integers(0, 6_000),  # size of its text / props
    st.integers(1, 80),  # id length
)


# A chunk group's ``cuts`` a hostile sender may write (the decoder reads the text whole, warned).
BAD_CUTS = ["", "x", "0,1", "-1,2", "1,", "1," * 3000, "9" * 40, "٣", ",".join(["1"] * 2000)]


def _text(n: int) -> str:
    return "é" * (n // 2) if n % 3 == 0 else "x" * n


class Traffic:
    """Builds hostile ChatMessages from drawn actions, keeping nothing but small counters."""

    def __init__(self) -> None:
        self.seqs: dict[tuple[int, int], int] = {}
        self.last_ids: dict[int, uuid.UUID] = {}

    def chat(self, act: tuple[str, int, int, str, int, int]) -> ChatMessage:
        kind, sender, index, seq_kind, size, id_len = act
        msg_id = uuid.uuid4()
        if kind == "duplicate" and sender in self.last_ids:
            msg_id = self.last_ids[sender]
        self.last_ids[sender] = msg_id
        stream_id = uuid.UUID(int=(sender * 16 + index) << 64 | 0x4000_8000_0000_0000_0000)
        if kind in ("untagged", "duplicate"):
            items: list[Any] = [TextContent.construct(type="text", text=_text(size))]
        elif kind == "start":
            items = [
                StartStreamContent.construct(type="start-stream", stream_id=stream_id),
                TextContent.construct(type="text", text=_text(size)),
            ]
        elif kind == "end":
            items = [EndStreamContent.construct(type="end-stream", stream_id=stream_id)]
        else:
            items = self._tagged(kind, sender, index, seq_kind, size, id_len, stream_id)
        return ChatMessage.construct(timestamp=None, msg_id=msg_id, content=items)

    def _tagged(
        self,
        kind: str,
        sender: int,
        index: int,
        seq_kind: str,
        size: int,
        id_len: int,
        stream_id: uuid.UUID,
    ) -> list[Any]:
        conv = f"conv{index}"
        key = (sender, index)
        seq = self.seqs.get(key, 0) + 1
        if seq_kind == "next":
            self.seqs[key] = seq
        elif seq_kind == "ahead":
            seq += 3
        elif seq_kind == "far":
            seq += 10**15
        elif seq_kind == "late":
            seq = max(seq - 5, 1)
        md = {TAG_KEY: "1", "conversation": conv}
        if seq_kind != "none":
            md["seq"] = str(seq)
        mid = "M" * id_len
        items: list[Any] = []
        if kind == "chunk":
            # keep=1: the decoder keeps the stream's text (capped by max_kept_bytes_total)
            md.update(op="chunk", stream_id=str(stream_id), message_id=mid, type="text", keep="1")
            text = _text(size)
            if id_len % 4 == 0 and len(text) > 1:  # its text cut in two
                md["cuts"] = f"1,{len(text) - 1}"
            elif id_len % 4 == 1:
                md["cuts"] = BAD_CUTS[size % len(BAD_CUTS)]
            items = [
                StartStreamContent.construct(type="start-stream", stream_id=stream_id),
                TextContent.construct(type="text", text=text),
            ]
        elif kind == "text":
            md.update(op="text", message_id=mid, type="text")
            items = [TextContent.construct(type="text", text=_text(size))]
        elif kind == "message":
            md.update(
                op="message",
                type="x" * min(id_len, 60),
                message_id=mid,
                props='{"content":"' + _text(size) + '"}',
            )
        elif kind == "event":
            md.update(op="message", type="event", props='{"event":"e","data":"' + "x" * size + '"}')
        elif kind == "stream_end":
            md.update(op="message", type="event", props='{"event":"stream_end","data":{}}')
        else:
            md.update(op="bogus", message_id=mid)
        return [MetadataContent.construct(type="metadata", metadata=md), *items]


@contextmanager
def held_bytes() -> Iterator[list[int]]:
    """Yields a one-item list that holds, on exit, the bytes allocated inside the block and
    still alive after a collection (tracemalloc counts only what is allocated while it runs).

    The objects that exist before the block are frozen out of the collector (``gc.freeze``):
    the collection then walks only what the block made, not the whole test session's heap,
    which a full ``gc.collect()`` per example would walk again and again.
    """
    held = [0]
    gc.freeze()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        yield held
        gc.collect()
        held[0] = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
        gc.unfreeze()


def _run(actions: list[tuple[str, int, int, str, int, int]], limits: DecoderLimits) -> int:
    """Feed ``actions``; the bytes the decoder holds afterwards (tracemalloc)."""
    traffic = Traffic()
    senders = [f"agent1{'q' * 20}{n:03d}" for n in range(20)]
    with held_bytes() as held:
        dec = ChatDecoder(limits=limits)
        now = 0.0
        for act in actions:
            if act[0] == "poll":
                now += act[4] / 1000
                dec.poll(now)
                continue
            dec.feed(senders[act[1]], traffic.chat(act), now)
        dec.next_deadline  # noqa: B018  # walks the state: must not raise
        del traffic
    assert dec is not None
    return held[0]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(actions=st.lists(action, min_size=50, max_size=400))
def test_hostile_traffic_from_many_senders_stays_under_the_state_bound(
    actions: list[tuple[str, int, int, str, int, int]],
) -> None:
    assert _run(actions, SMALL) <= SMALL.state_bound()


def test_the_small_limits_are_exceeded_by_uncapped_state() -> None:
    """The property can fail: the same kind of traffic, caps out of reach, holds more."""
    actions = [("ahead", s, c) for s in range(20) for c in range(10)]
    traffic_actions = [("text", s, c, "ahead", 6_000, 40) for _, s, c in actions]
    loose = DecoderLimits(
        reorder_window=100,
        max_held_total=10**6,
        max_held_bytes=10**9,
        max_chat_bytes=10**6,
        max_senders=100,
        max_conversations=100,
        max_conversations_total=10**4,
    )
    assert _run(traffic_actions, loose) > SMALL.state_bound()


def _flood(limits: DecoderLimits) -> Iterator[tuple[str, ChatMessage]]:
    """Traffic that fills every kind of state to its caps, with the longest (4-byte) ids."""
    long_id = "😀" * limits.max_id_chars
    held_text = "x" * (limits.max_held_bytes // limits.max_held_total)

    def chat(md: dict[str, str], *items: Any) -> ChatMessage:
        meta = MetadataContent.construct(type="metadata", metadata=md)
        return ChatMessage.construct(timestamp=None, msg_id=uuid.uuid4(), content=[meta, *items])

    for n in range(limits.max_senders + 16):
        sender = f"sender-{n:05d}-" + "s" * 40
        stream_id = uuid.uuid4()
        md = {
            TAG_KEY: "1",
            "conversation": f"{n}{long_id}"[: limits.max_id_chars],
            "op": "chunk",
            "stream_id": str(stream_id),
            "message_id": long_id,
            "thread_id": long_id,
            "block_id": long_id,
            "type": long_id,
        }
        yield (
            sender,
            chat(
                md,  # no seq: decoded at once (a stream, a conversation)
                StartStreamContent.construct(type="start-stream", stream_id=stream_id),
                TextContent.construct(type="text", text="hi"),
            ),
        )
        for k in range(2):  # byte counts of messages, remembered msg_ids
            yield (
                sender,
                chat(
                    dict(md, op="text", message_id=f"T{n}-{k}"),
                    TextContent.construct(type="text", text="t"),
                ),
            )
        for seq in (2, 3):  # held back for ever: 1 never comes
            yield (
                sender,
                chat(
                    dict(md, seq=str(seq), op="text", message_id=f"H{n}"),
                    TextContent.construct(type="text", text=held_text),
                ),
            )


def test_a_flood_at_the_default_limits_stays_under_the_documented_64_mib() -> None:
    limits = DecoderLimits()
    with held_bytes() as held:
        dec = ChatDecoder(limits=limits)
        for sender, chat in _flood(limits):
            dec.feed(sender, chat, 0.0)
        del chat
    assert dec.drain_warnings()
    assert held[0] <= limits.state_bound() <= 64 * MiB, held
