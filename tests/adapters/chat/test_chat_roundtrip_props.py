"""Property: for random hierarchical streams, decode(encode(x)) assembles to what x assembles to.

Streams have several threads (message ids reused across threads), blocks, interleavings, random
delta splits, whole messages, path deltas, type changes and reasoning; time advances randomly and
the encoder is polled on its deadlines, so chunks are released by size, boundary and time; runs
of ChatMessages may be coalesced and they may arrive with neighbours swapped; to a tagged asker,
in today's form, folded, lean, or lean with cut text (``cuts=1``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from chat_fixtures import group_times, groups
from chat_streams import CHUNKERS, SECRET, hierarchical_streams
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndStreamContent,
    MetadataContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters.chat import (
    TAG_KEY,
    ChatDecoder,
    ChatEncoder,
    coalesce,
    parse_chat,
    stream_id_for,
)
from agent_stream.assemble import assemble
from agent_stream.message import (
    Message,
)


def _compare(
    orig: list[Message], decoded: list[Message], skip: set[tuple[str | None, str]]
) -> None:
    a, b = assemble(orig), assemble(decoded)

    def keyed(t: Any) -> dict[Any, Any]:
        return {
            (m.thread_id, m.message_id): (m.type, m.props, m.block_id, m.status)
            for m in t.messages
            if m.message_id is not None and (m.thread_id, m.message_id) not in skip
        }

    def loose(t: Any) -> list[str]:
        return sorted(
            json.dumps([m.type, m.props, m.block_id, m.status], sort_keys=True)
            for m in t.messages
            if m.message_id is None
        )

    assert keyed(b) == keyed(a)
    assert loose(b) == loose(a)
    assert b.status == a.status


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=hierarchical_streams(),
    tagged=st.booleans(),
    reasoning=st.booleans(),
    steps=st.lists(st.floats(0, 0.3), min_size=1, max_size=8),
    json_wire=st.booleans(),
    swaps=st.lists(st.booleans(), max_size=30),
    runs=st.lists(st.integers(1, 4), max_size=20),
    chunker=CHUNKERS,
    meta_delay=st.sampled_from([0.0, 0.1, 1.0]),
    form=st.sampled_from(["", "fold", "lean", "cuts"]),
)
def test_decode_of_encode_assembles_like_the_original(
    data: tuple[list[Message], set[Any]],
    tagged: bool,
    reasoning: bool,
    steps: list[float],
    json_wire: bool,
    swaps: list[bool],
    runs: list[int],
    chunker: dict[str, Any] | None,
    meta_delay: float,
    form: str,
) -> None:
    msgs, secret_keys = data
    conv = "conversation-1"
    enc = ChatEncoder(
        conv,
        tagged=tagged,
        channels={"reasoning"} if reasoning else None,
        chunker=chunker,
        meta_delay=meta_delay,
        fold=form == "fold",
        lean=form in ("lean", "cuts"),
        cuts=form == "cuts",
    )
    chats: list[ChatMessage] = []
    now = 100.0
    for i, m in enumerate(msgs):
        now += steps[i % len(steps)]
        d = enc.next_deadline
        if d is not None and d <= now:
            chats += enc.poll(now)
        chats += enc.feed(m, now)
    chats += enc.end_streams(now + 1)

    # -- the wire: valid, every started stream ends, ids as promised --------------------------
    open_: set[uuid.UUID] = set()
    most_open = 0
    sid_of: dict[tuple[str | None, str], uuid.UUID] = {}
    meta: dict[str, str] = {}
    for c in chats:
        for item in c.content:
            if isinstance(item, MetadataContent):
                assert all(
                    isinstance(v, str) and v not in ("", "None") for v in item.metadata.values()
                )
                if TAG_KEY in item.metadata:
                    meta = item.metadata
            elif isinstance(item, StartStreamContent):
                sid = item.stream_id
                assert sid.version == 4 and sid.variant == uuid.RFC_4122
                assert sid not in open_
                key = (meta.get("thread_id"), meta["message_id"])
                assert sid == stream_id_for(conv, *key)
                assert sid_of.setdefault(key, sid) == sid
                open_.add(sid)
                most_open = max(most_open, len(open_))
            elif isinstance(item, EndStreamContent):
                open_.remove(item.stream_id)
            elif isinstance(item, TextContent):
                if not reasoning:
                    assert SECRET not in item.text
                if not tagged and open_:
                    # a plain peer reads only the open stream's text until it ends
                    [only] = open_
                    assert meta.get("op") == "chunk" and meta.get("stream_id") == str(only)
    assert not open_, "every started chat stream ends"
    if not tagged:
        assert most_open <= 1, "a plain peer never sees two streams open at once"
    wire = [parse_chat(c.json()) for c in chats] if json_wire else list(chats)
    merged: list[ChatMessage] = []  # runs of ChatMessages coalesced as a slow transport would
    for n in runs:
        if wire:
            merged.append(coalesce(wire[:n]))
            wire = wire[n:]
    wire = merged + wire
    i = 0
    while i + 1 < len(wire) and i < len(swaps):  # delivered out of order: put back by seq
        if swaps[i]:
            wire[i], wire[i + 1] = wire[i + 1], wire[i]
            i += 1
        i += 1
    if not reasoning:
        assert SECRET not in "".join(c.json() for c in chats).encode().decode("unicode_escape")

    # -- decoded: same transcript for everything let through ------------------------------------
    dec = ChatDecoder()
    decoded: list[Message] = []
    for c in wire:
        decoded += dec.feed("agent1", c, now)
    assert dec.drain_warnings() == []
    chunk_ids = [m.chunk_id for m in decoded if m.chunk_id is not None]
    assert len(chunk_ids) == len(set(chunk_ids))
    _compare(msgs, decoded, set() if reasoning else secret_keys)


def _groups(chats: list[ChatMessage], times: list[float]) -> list[tuple[str, bool, float]]:
    """Every group on the wire in order: (its metadata without seq/conversation as JSON, whether
    it carries content items, when its ChatMessage went)."""
    return [
        (json.dumps(md, sort_keys=True), bool(its), t)
        for (md, its), t in zip(groups(chats), group_times(chats, times), strict=True)
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=hierarchical_streams(),
    tagged=st.booleans(),
    reasoning=st.booleans(),
    steps=st.lists(st.floats(0, 0.3), min_size=1, max_size=8),
    chunker=CHUNKERS,
    meta_delay=st.sampled_from([0.05, 0.1, 1.0]),
)
def test_metadata_waiting_keeps_the_order_never_delays_content_and_lasts_meta_delay_at_most(
    data: tuple[list[Message], set[Any]],
    tagged: bool,
    reasoning: bool,
    steps: list[float],
    chunker: dict[str, Any] | None,
    meta_delay: float,
) -> None:
    """Against the same encoder with meta_delay=0 (every group out as soon as it is made),
    polled the same way: the same groups in the same order, groups with content at the same
    moment, metadata-only groups no later than the first poll meta_delay after they were made,
    and never more ChatMessages."""
    msgs, _ = data
    runs = []
    for delay in (0.0, meta_delay):
        enc = ChatEncoder(
            "c",
            tagged=tagged,
            channels={"reasoning"} if reasoning else None,
            chunker=chunker,
            meta_delay=delay,
        )
        chats: list[ChatMessage] = []
        times: list[float] = []
        polls: list[float] = []
        now = 0.0
        for i, m in enumerate(msgs):
            now += steps[i % len(steps)]
            for out in (enc.poll(now), enc.feed(m, now)):
                chats += out
                times += [now] * len(out)
            polls.append(now)
        chats += enc.end_streams(now)
        times += [now] * (len(chats) - len(times))
        d = enc.next_deadline
        assert d is None, "nothing waits after end_streams"
        runs.append((chats, _groups(chats, times), polls))
    (eager, ref, polls), (batched, got, _) = runs
    assert [g[:2] for g in got] == [g[:2] for g in ref]
    assert len(batched) <= len(eager)
    for (md, content, made), (_, _, sent) in zip(ref, got, strict=True):
        if content:
            assert sent == made, md
        else:
            due = next((p for p in polls if p >= made + meta_delay), polls[-1])
            assert made <= sent <= due, md
