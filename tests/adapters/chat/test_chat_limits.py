"""ChatDecoder's hard caps: per sender and in total, state shed oldest-first with a warning."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest
from chat_fixtures import decode, delta, encode, msg_end, tag_meta
from hypothesis import given
from hypothesis import strategies as st
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndStreamContent,
    MetadataContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters.chat import ChatDecoder, DecoderLimits, parse_chat
from agent_stream.adapters.chat.bounded import BoundedTable
from agent_stream.adapters.chat.limits import WarningQueue
from agent_stream.adapters.chat.sizes import estimated_size, size_bound
from agent_stream.errors import WireError
from agent_stream.message import Message as M

MiB = 2**20


def chat(*items: Any) -> ChatMessage:
    return ChatMessage(content=list(items))


def start(stream_id: uuid.UUID | None = None) -> ChatMessage:
    return chat(StartStreamContent(stream_id=stream_id or uuid.uuid4()))


def tagged(conv: str, seq: int, *items: Any, **meta: str) -> ChatMessage:
    """A tagged ChatMessage ``seq`` of ``conv``: a ``message`` group (or ``meta``) + items."""
    md = meta or {"op": "message", "type": "event", "props": '{"event":"progress"}'}
    return chat(tag_meta(seq=str(seq), conversation=conv, **md), *items)


def codes(dec: ChatDecoder) -> list[str]:
    return [w.code for w in dec.drain_warnings()]


def limited(**caps: Any) -> ChatDecoder:
    return ChatDecoder(limits=DecoderLimits(**caps))


# -- limits themselves ------------------------------------------------------------------------------


def test_default_state_bound_is_under_the_documented_64_mib() -> None:
    assert DecoderLimits().state_bound() <= 64 * MiB


def test_limits_are_validated_and_keyword_arguments_override_them() -> None:
    for bad in ({"max_senders": 0}, {"max_held_bytes": -1}, {"gap_timeout": float("nan")}):
        with pytest.raises(ValueError, match="must be positive"):
            DecoderLimits(**bad)
    dec = ChatDecoder(limits=DecoderLimits(max_senders=3, reorder_window=5), reorder_window=7)
    assert dec.limits.max_senders == 3 and dec.reorder_window == 7


def test_capped_table_keeps_per_owner_and_total_caps_oldest_first() -> None:
    table: BoundedTable[int] = BoundedTable(per_owner=2, total=3)
    for key in range(3):
        table.put("a", key, key)
    assert not table.has("a", 0) and table.has("a", 1) and table.has("a", 2)  # per owner
    table.put("b", 0, 10)
    table.put("b", 1, 11)
    assert len(table) == 3 and not table.has("a", 1) and table.shed == 1  # total: oldest went
    table.put("b", 1, 12)  # an update is not a new entry
    assert table.get("b", 1) == 12 and len(table) == 3
    table.forget("b")
    assert len(table) == 1 and table.get("b", 0) is None


# -- senders ----------------------------------------------------------------------------------------


def test_max_senders_forgets_the_least_recently_active_sender() -> None:
    dec = limited(max_senders=2)
    dec.feed("a", start(), 0.0)
    dec.feed("b", start(), 0.0)
    dec.feed("a", chat(TextContent(text="a again")), 0.0)  # a is now the most recent
    dec.feed("c", start(), 0.0)
    assert codes(dec) == ["sender_shed"]
    assert dec.open_streams("a") == 1 and dec.open_streams("b") == 0
    assert dec.open_streams("c") == 1


def test_a_sender_longer_than_max_id_chars_still_has_its_own_state() -> None:
    dec = limited(max_id_chars=8)
    long_a, long_b = "a" * 100, "a" * 99 + "b"
    dec.feed(long_a, start(), 0.0)
    assert dec.open_streams(long_a) == 1 and dec.open_streams(long_b) == 0
    dec.forget(long_a)
    assert dec.open_streams(long_a) == 0


# -- open streams -----------------------------------------------------------------------------------


def test_max_open_streams_total_sheds_the_oldest_stream_of_anyone() -> None:
    dec = limited(max_open_streams_total=2)
    first = uuid.uuid4()
    dec.feed("a", start(first), 0.0)
    dec.feed("b", start(), 0.0)
    dec.feed("c", start(), 0.0)
    assert codes(dec) == ["stream_shed"]
    assert [dec.open_streams(s) for s in "abc"] == [0, 1, 1]
    dec.feed("a", chat(EndStreamContent(stream_id=first)), 0.0)  # its end: quietly ignored
    assert codes(dec) == []


# -- conversations ----------------------------------------------------------------------------------


def test_max_conversations_per_sender_sheds_its_oldest_conversation() -> None:
    dec = limited(max_conversations=2)
    for conv in ("c1", "c2", "c3"):
        dec.feed("a", tagged(conv, 2), 0.0)  # held back: waiting for 1
    assert codes(dec) == ["conversation_shed"]
    assert len(dec.close()) == 2  # c2 and c3 still held their ChatMessage; c1 is gone
    assert codes(dec) == ["gap", "gap"]


def test_max_conversations_total_sheds_the_oldest_conversation_of_anyone() -> None:
    dec = limited(max_conversations_total=2)
    dec.feed("a", tagged("c1", 1, **_stream_end()), 0.0)
    assert dec.finished("a", "c1")
    dec.feed("b", tagged("c2", 1), 0.0)
    dec.feed("c", tagged("c3", 1), 0.0)
    assert codes(dec) == ["conversation_shed"]
    assert not dec.finished("a", "c1")  # forgotten


def _stream_end() -> dict[str, str]:
    return {"op": "message", "type": "event", "props": '{"event":"stream_end","data":{}}'}


# -- held-back ChatMessages -------------------------------------------------------------------------


def test_max_held_total_drops_the_oldest_held_back_chat_message() -> None:
    dec = limited(max_held_total=2)
    dec.feed("a", tagged("c1", 2), 0.0)
    dec.feed("b", tagged("c2", 2), 0.0)
    dec.feed("b", tagged("c2", 3), 0.0)
    assert codes(dec) == ["held_dropped"]
    assert dec.feed("a", tagged("c1", 1), 0.0) != []  # c1's 2 was dropped: only 1 decodes
    assert len(dec.feed("b", tagged("c2", 1), 0.0)) == 3  # c2 kept both


def test_max_held_bytes_drops_held_back_chat_messages_past_the_total_size() -> None:
    dec = limited(max_held_bytes=50_000)
    big = TextContent(text="x" * 30_000)
    dec.feed("a", tagged("c", 2, big, op="text", message_id="M2", type="text"), 0.0)
    assert codes(dec) == []
    dec.feed("a", tagged("c", 3, big, op="text", message_id="M3", type="text"), 0.0)
    assert codes(dec) == ["held_dropped"]
    out = dec.feed("a", tagged("c", 1), 0.0)
    assert [m.message_id for m in out] == [None]  # 2 was dropped, so 3 still waits
    assert [m.message_id for m in dec.close()] == ["M3"]


def test_reorder_window_bounds_what_one_conversation_holds() -> None:
    dec = limited(reorder_window=2)
    for seq in (3, 4, 5):
        dec.feed("a", tagged("c", seq), 0.0)
    assert codes(dec) == ["gap"]  # the third held one reported the gap at once


# -- sequence numbers -------------------------------------------------------------------------------


def test_a_seq_far_ahead_is_a_warning_not_the_new_base() -> None:
    chats = encode(
        [delta(f"word{i}. ", "M1") for i in range(8)] + [msg_end("M1", 8)],
        chunker={"min_chars": 1, "max_chars": 10, "first_chars": None},
    )
    dec = ChatDecoder()
    dec.feed("a", chats[0], 0.0)
    hostile = tagged(str(_conversation(chats[0])), 10**17)
    assert dec.feed("a", hostile, 0.0) == []
    assert codes(dec) == ["seq_out_of_window"]
    decoded, warnings = decode(chats[1:], sender="a", dec=dec)
    assert warnings == []
    text = "".join(
        m.props["content"]
        for m in decoded  # type: ignore[index]
        if m.type == "text" and m.props
    )
    assert text.endswith("word7. ")


def _conversation(c: ChatMessage) -> str:
    return next(i.metadata["conversation"] for i in c.content if isinstance(i, MetadataContent))


def test_max_seq_ahead_is_configurable() -> None:
    dec = limited(max_seq_ahead=3, reorder_window=10)
    dec.feed("a", tagged("c", 4), 0.0)  # 3 ahead of 1: held
    dec.feed("a", tagged("c", 5), 0.0)  # 4 ahead: dropped
    assert codes(dec) == ["seq_out_of_window"]
    assert len(dec.feed("a", tagged("c", 1), 0.0)) == 1
    assert codes(dec) == []


# -- remembered ids ---------------------------------------------------------------------------------


def test_max_seen_ids_total_forgets_the_oldest_msg_ids_with_one_warning() -> None:
    dec = limited(max_seen_ids_total=2)
    first = chat(TextContent(text="one"))
    dec.feed("a", first, 0.0)
    dec.feed("b", chat(TextContent(text="two")), 0.0)
    dec.feed("c", chat(TextContent(text="three")), 0.0)
    dec.feed("d", chat(TextContent(text="four")), 0.0)
    assert codes(dec) == ["seen_ids_shed"]  # once, not per id
    assert dec.feed("a", first, 0.0) != []  # forgotten: no longer caught as a duplicate


def test_max_seen_ids_per_sender_still_catches_recent_duplicates() -> None:
    dec = limited(max_seen_ids=2)
    chats = [chat(TextContent(text=str(i))) for i in range(3)]
    for c in chats:
        dec.feed("a", c, 0.0)
    dec.feed("a", chats[2], 0.0)
    assert codes(dec) == ["duplicate_chat_message"]
    assert dec.feed("a", chats[0], 0.0) != []  # the oldest was forgotten


def test_max_refused_total_bounds_the_remembered_refused_streams() -> None:
    dec = limited(max_open_streams=1, max_refused_total=3)
    for _ in range(10):
        dec.feed("a", start(), 0.0)
    assert codes(dec).count("too_many_streams") == 9
    assert len(dec._state.refused) == 3


def test_max_tracked_messages_bounds_the_per_message_byte_counts() -> None:
    dec = limited(max_tracked_messages=4, max_tracked_total=6)
    for seq in range(1, 11):
        dec.feed(
            "a",
            tagged("c1", seq, TextContent(text="x"), op="text", message_id=f"M{seq}", type="text"),
            0.0,
        )
        dec.feed(
            "b",
            tagged("c2", seq, TextContent(text="x"), op="text", message_id=f"M{seq}", type="text"),
            0.0,
        )
    assert len(dec._state.message_bytes) <= 6
    assert codes(dec) == []


# -- sizes ------------------------------------------------------------------------------------------


def test_max_chat_bytes_drops_a_chat_message_whole() -> None:
    dec = limited(max_chat_bytes=10_000)
    assert dec.feed("a", chat(TextContent(text="x" * 20_000)), 0.0) == []
    assert codes(dec) == ["chat_too_large"]
    assert dec.feed("a", chat(TextContent(text="fine")), 0.0) != []


TEXTS = st.text(max_size=300)  # any characters: ASCII, Latin-1, UCS-2 and UCS-4 strings


@given(
    st.lists(
        st.one_of(
            st.builds(TextContent, text=TEXTS),
            st.builds(MetadataContent, metadata=st.dictionaries(TEXTS, TEXTS, max_size=8)),
            st.just(StartStreamContent(stream_id=uuid.uuid4())),
        ),
        max_size=12,
    )
)
def test_the_quick_size_bound_is_never_below_the_estimate(items: list[Any]) -> None:
    c = ChatMessage(content=items)
    assert size_bound(c) >= estimated_size(c)


def test_a_chat_message_the_quick_bound_flags_is_measured_before_it_is_dropped() -> None:
    c = chat(TextContent(text="x" * 5_000))
    assert size_bound(c) > 10_000 > estimated_size(c)  # the bound alone would drop it
    dec = limited(max_chat_bytes=10_000)
    assert dec.feed("a", c, 0.0) != []
    assert codes(dec) == []


def test_parse_chat_checks_max_bytes_before_parsing() -> None:
    bad_json = '{"content": [' + " " * 2000  # would be "not JSON" if it were parsed
    with pytest.raises(WireError, match="exceeds max_bytes=1000"):
        parse_chat(bad_json, max_bytes=1000)
    with pytest.raises(WireError, match="exceeds max_bytes=1000"):
        parse_chat(bad_json.encode(), max_bytes=1000)
    with pytest.raises(WireError, match="not JSON"):
        parse_chat(bad_json, max_bytes=10_000)


@pytest.mark.parametrize(
    "meta",
    [
        {
            "op": "message",
            "type": "event",
            "props": '{"event":"progress","data":"' + "x" * 500 + '"}',
        },
        {"op": "message", "type": "tool_call", "props": '{"args":"' + "x" * 500 + '"}'},
        {
            "op": "message",
            "type": "tool_call",
            "message_id": "M1",
            "props": '{"x":"' + "x" * 500 + '"}',
        },
    ],
)
def test_max_message_bytes_applies_to_events_and_messages_without_id(meta: dict[str, str]) -> None:
    dec = ChatDecoder(max_message_bytes=400)
    assert dec.feed("a", tagged("c", 1, **meta), 0.0) == []
    assert codes(dec) == ["message_too_large"]


def test_max_message_bytes_applies_to_a_text_group_without_id() -> None:
    dec = ChatDecoder(max_message_bytes=10)
    out = dec.feed("a", tagged("c", 1, TextContent(text="x" * 11), op="text", type="text"), 0.0)
    assert out == [] and codes(dec) == ["message_too_large"]


def test_max_message_bytes_is_checked_before_the_props_are_parsed() -> None:
    dec = ChatDecoder(max_message_bytes=100)
    dec.feed("a", tagged("c", 1, op="message", type="x", props="{not json" + " " * 200), 0.0)
    assert codes(dec) == ["message_too_large"]  # not bad_metadata: it was never parsed


def test_max_reply_bytes_drops_the_rest_of_a_tagged_reply() -> None:
    msgs = [M(type="text", props={"content": "x" * 60}, message_id=f"M{i}") for i in range(5)]
    decoded, warnings = decode(
        encode(msgs, tagged=True), dec=ChatDecoder(limits=DecoderLimits(max_reply_bytes=150))
    )
    assert [w.code for w in warnings] == ["reply_too_large"]
    assert [m.message_id for m in decoded if m.type == "text"] == ["M0", "M1"]


def test_max_reply_bytes_counts_everything_untagged_from_a_sender() -> None:
    dec = limited(max_reply_bytes=10)
    sid = uuid.uuid4()
    dec.feed("a", chat(TextContent(text="x" * 6)), 0.0)
    dec.feed("a", chat(StartStreamContent(stream_id=sid), TextContent(text="y" * 6)), 0.0)
    assert codes(dec) == ["reply_too_large"]
    assert dec.feed("b", chat(TextContent(text="x" * 6)), 0.0) != []  # per sender


def test_max_id_chars_ignores_a_group_with_a_longer_id() -> None:
    dec = limited(max_id_chars=16)
    out = dec.feed(
        "a",
        tagged("c", 1, TextContent(text="hi"), op="text", type="text", message_id="M" * 17),
        0.0,
    )
    assert out == [] and codes(dec) == ["bad_metadata"]
    assert dec.feed("a", tagged("c" * 17, 1), 0.0) == []
    assert codes(dec) == ["bad_metadata"]


# -- warnings ---------------------------------------------------------------------------------------


def test_max_warnings_keeps_the_newest_and_counts_the_dropped() -> None:
    dec = limited(max_warnings=3)
    for _ in range(5):
        dec.feed("a", chat(EndStreamContent(stream_id=uuid.uuid4())), 0.0)  # unknown stream
    warnings = dec.drain_warnings()
    assert [w.code for w in warnings] == ["warnings_dropped"] + ["unknown_stream_end"] * 3
    assert "2 older warning(s) dropped" in warnings[0].detail
    assert dec.drain_warnings() == []


def test_warning_details_are_truncated() -> None:
    queue = WarningQueue(4)
    queue.add("x", "d" * 10_000)
    [w] = queue.drain_warnings()
    assert len(w.detail) < 700


def test_a_cap_of_the_defaults_can_be_changed_alone() -> None:
    limits = replace(DecoderLimits(), max_open_streams_total=1)
    assert limits.max_open_streams == 64 and limits.state_bound() < DecoderLimits().state_bound()
