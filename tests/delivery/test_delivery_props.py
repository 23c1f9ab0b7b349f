"""Property: random hierarchical replies over a link that loses, duplicates, delays and reorders
ChatMessages, with redelivery and gap repair, decode to the transcript of a clean run."""

from __future__ import annotations

import itertools
from typing import Any

from delivery_sim import OUTCOMES, Link, coalesced, run_link
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_stream.adapters.chat import ChatDecoder, ChatEncoder
from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.assemble import assemble
from agent_stream.message import (
    BLOCK_END,
    BLOCK_START,
    MESSAGE_END,
    MESSAGE_START,
    STREAM_END,
    BlockEndData,
    BlockStartData,
    Message,
    MessageEndData,
    MessageStartData,
    StreamEndData,
    lifecycle,
)

words = st.lists(
    st.sampled_from(["Hello", " world", ". ", "Dr. No", "\n\n", "中文", "😀", " x"]), max_size=12
).map("".join)


@st.composite
def replies(draw: st.DrawFn) -> list[Message]:
    """A reply: blocks (labelled) of thinking / text / tool_call messages, then stream_end."""
    out: list[Message] = []
    n = itertools.count(1)
    for b in range(draw(st.integers(1, 3))):
        bid = f"B{b}"
        out.append(
            lifecycle(
                BLOCK_START,
                BlockStartData(
                    block_id=bid,
                    type="llm",
                    label=draw(st.sampled_from([None, "Thinking", "Answer"])),
                ),
                block_id=bid,
            )
        )
        for _ in range(draw(st.integers(1, 3))):
            mid = f"M{next(n)}"
            typ = draw(st.sampled_from(["text", "text", "thinking", "tool_call"]))
            ids = {"message_id": mid, "block_id": bid}
            out.append(lifecycle(MESSAGE_START, MessageStartData(message_id=mid, type=typ), **ids))
            if typ == "tool_call":
                out.append(
                    Message(type=typ, props={"id": "c1", "name": "f", "arguments": "{}"}, **ids)
                )
                count = 1
            else:
                parts = draw(st.lists(words, min_size=1, max_size=6))
                out += [Message(type=typ, props={"content": p}, delta=True, **ids) for p in parts]
                count = len(parts)
            out.append(
                lifecycle(
                    MESSAGE_END, MessageEndData(message_id=mid, type=typ, chunk_count=count), **ids
                )
            )
        out.append(lifecycle(BLOCK_END, BlockEndData(block_id=bid), block_id=bid))
    out.append(lifecycle(STREAM_END, StreamEndData(status="completed")))
    return out


def encode(msgs: list[Message], chunker: dict[str, Any] | None) -> list[Any]:
    enc = ChatEncoder("C", tagged=True, channels={"reasoning"}, chunker=chunker, deterministic=True)
    chats: list[Any] = []
    now = 0.0
    for m in msgs:
        now += 0.05
        d = enc.next_deadline
        if d is not None and d <= now:
            chats += enc.poll(now)
        chats += enc.feed(m, now)
    return chats + enc.close(now + 1)


def clean(chats: list[Any]) -> dict[str, Any]:
    dec = ChatDecoder()
    out: list[Message] = []
    for c in chats:
        out += dec.feed("S", c, 0.0)
    assert dec.whole("S", "C")
    return assemble(out).to_dict()


def stripped(t: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in t.items() if k not in ("duration_ms",)}


POLICY = DeliveryPolicy(tries=6, within=60.0, max_delay=4.0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    msgs=replies(),
    faults=st.lists(st.sampled_from(OUTCOMES), max_size=40),
    delays=st.lists(st.floats(0, 0.6), min_size=1, max_size=12),
    runs=st.lists(st.integers(1, 5), max_size=6),
    chunker=st.sampled_from([None, {"min_chars": 1, "max_chars": 6, "first_chars": None}]),
)
def test_lossy_link_with_repair_decodes_like_a_clean_run(
    msgs: list[Message],
    faults: list[str],
    delays: list[float],
    runs: list[int],
    chunker: dict[str, Any] | None,
) -> None:
    chats = coalesced(encode(msgs, chunker), runs)
    want = clean(chats)
    out, dec, given_up = run_link(chats, Link(faults, delays), POLICY)
    if given_up:  # a ChatMessage failed on every try: never whole unless it is
        if dec.whole("S", "C"):
            assert stripped(assemble(out).to_dict()) == stripped(want)
        return
    assert dec.whole("S", "C"), dec.drain_warnings()
    got = assemble(out).to_dict()
    assert stripped(got) == stripped(want)
    codes = {w.code for w in dec.drain_warnings()}
    assert not codes & {"gap", "late_chat_message", "held_dropped"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(msgs=replies(), lost=st.data())
def test_repair_alone_fills_what_redelivery_gave_up(msgs: list[Message], lost: Any) -> None:
    """One try only (no redelivery): every lost ChatMessage is asked for and resent from the
    replay buffer (a lost tail is learnt from the keepalive's ``high``)."""
    chats = encode(msgs, {"min_chars": 1, "max_chars": 6, "first_chars": None})
    faults = lost.draw(st.lists(st.sampled_from(["ok", "drop"]), max_size=len(chats)))
    out, dec, _ = run_link(
        chats, Link(faults, [0.01]), DeliveryPolicy(tries=1, within=1.0, keepalive=0.5)
    )
    # with tries=1 the sender keeps nothing to resend, so keepalives stop: the tail may be
    # unknown; what matters is that nothing incomplete passes for whole
    if dec.whole("S", "C"):
        assert assemble(out).to_dict() == clean(chats)
