"""ChatDecoder: untagged peers, protocol faults and limits."""

from __future__ import annotations

import uuid

import pytest
from chat_fixtures import decode, delta, encode, msg_end, tag_meta
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndStreamContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters.chat import ChatDecoder, stream_id_for
from agent_stream.assemble import assemble
from agent_stream.message import Message as M


def test_untagged_single_text_is_a_standalone_message_without_warning() -> None:
    dec = ChatDecoder()
    out = dec.feed("plain", ChatMessage(content=[TextContent(text="Hello!")]), 0.0)
    assert dec.drain_warnings() == []
    t = assemble(out)
    [m] = t.messages
    assert m.type == "text" and m.props == {"content": "Hello!"} and m.status == "completed"
    assert m.message_id


def test_untagged_one_chat_message_per_token_is_one_message() -> None:
    sid = uuid.uuid4()
    chats = [ChatMessage(content=[StartStreamContent(stream_id=sid)])]
    chats += [ChatMessage(content=[TextContent(text=t)]) for t in ["Hel", "lo", " world"]]
    chats += [ChatMessage(content=[EndStreamContent(stream_id=sid)])]
    decoded, warnings = decode(chats, sender="plain")
    assert warnings == []
    [m] = assemble(decoded).messages
    assert m.props == {"content": "Hello world"} and m.status == "completed"
    assert m.chunk_count == 3


def test_untagged_text_goes_to_the_most_recently_started_open_stream() -> None:
    s1, s2 = uuid.uuid4(), uuid.uuid4()
    chats = [
        ChatMessage(content=[StartStreamContent(stream_id=s1), TextContent(text="a")]),
        ChatMessage(content=[StartStreamContent(stream_id=s2), TextContent(text="b")]),
        ChatMessage(content=[TextContent(text="c")]),
        ChatMessage(content=[EndStreamContent(stream_id=s2)]),
        ChatMessage(content=[TextContent(text="d")]),
        ChatMessage(content=[EndStreamContent(stream_id=s1)]),
    ]
    decoded, warnings = decode(chats, sender="plain")
    assert warnings == []
    assert [m.props["content"] for m in assemble(decoded).messages] == ["ad", "bc"]


def test_one_sender_cannot_touch_another_senders_stream() -> None:
    sid = uuid.uuid4()
    dec = ChatDecoder()
    dec.feed("alice", ChatMessage(content=[StartStreamContent(stream_id=sid)]), 0.0)
    dec.feed("mallory", ChatMessage(content=[EndStreamContent(stream_id=sid)]), 0.0)
    assert [w.code for w in dec.drain_warnings()] == ["unknown_stream_end"]
    assert dec.open_streams("alice") == 1
    out = dec.feed("mallory", ChatMessage(content=[TextContent(text="injected")]), 0.0)
    assert not out[0].delta and out[0].message_id != "U1"  # mallory's own standalone message
    out = dec.feed("alice", ChatMessage(content=[TextContent(text="mine")]), 0.0)
    assert out[0].delta and out[0].message_id == "U1"  # alice's text joins alice's stream


def test_tagged_faults_warn_and_the_conversation_goes_on() -> None:
    sid = str(stream_id_for("c", None, "M1"))
    dec = ChatDecoder()
    feed = [
        [tag_meta(op="chunk", stream_id=sid), TextContent(text="orphan")],  # stream not open
        [tag_meta(op="end", stream_id=sid), EndStreamContent(stream_id=uuid.UUID(sid))],  # unknown
        [
            tag_meta(op="chunk", stream_id=sid, message_id="M1", type="text"),
            StartStreamContent(stream_id=uuid.UUID(sid)),
            TextContent(text="ok "),
        ],
        [
            tag_meta(op="chunk", stream_id=sid, message_id="M1", type="text"),
            StartStreamContent(stream_id=uuid.UUID(sid)),
            TextContent(text="still ok"),
        ],  # again
        [tag_meta(op="message", type="text", props="{not json")],
        [tag_meta(op="message", props="{}")],  # no type
        [tag_meta(op="bogus")],
    ]
    out: list[M] = []
    for content in feed:
        out += dec.feed("a", ChatMessage(content=content), 0.0)
    codes = [w.code for w in dec.drain_warnings()]
    assert codes == [
        "stream_not_open",
        "unknown_stream_end",
        "duplicate_stream_start",
        "bad_metadata",
        "bad_metadata",
        "bad_metadata",
    ]
    assert assemble(out).get(None, "M1").props == {"content": "ok still ok"}  # type: ignore[union-attr]


def test_max_open_streams_per_sender() -> None:
    dec = ChatDecoder(max_open_streams=2)
    for _ in range(3):
        dec.feed("a", ChatMessage(content=[StartStreamContent(stream_id=uuid.uuid4())]), 0.0)
    assert [w.code for w in dec.drain_warnings()] == ["too_many_streams"]
    assert dec.open_streams("a") == 2
    dec.feed("b", ChatMessage(content=[StartStreamContent(stream_id=uuid.uuid4())]), 0.0)
    assert dec.drain_warnings() == []  # the limit is per sender


def test_max_stream_bytes_drops_the_rest_and_marks_the_message_error() -> None:
    sid = uuid.uuid4()
    dec = ChatDecoder(max_stream_bytes=10)
    out = dec.feed(
        "a",
        ChatMessage(
            content=[
                StartStreamContent(stream_id=sid),
                TextContent(text="12345"),
                TextContent(text="67890"),
                TextContent(text="overflow"),
                TextContent(text="more"),
                EndStreamContent(stream_id=sid),
            ]
        ),
        0.0,
    )
    assert [w.code for w in dec.drain_warnings()] == ["stream_too_large"]
    [m] = assemble(out).messages
    assert m.props == {"content": "1234567890"} and m.status == "error"


def test_max_message_bytes_for_tagged_messages() -> None:
    msgs = [
        M(type="table", props={"rows": ["x" * 50]}, message_id="M1"),
        M(type="table", props={"rows": ["y"]}, delta=True, delta_path="rows", message_id="M1"),
    ]
    decoded, warnings = decode(encode(msgs), dec=ChatDecoder(max_message_bytes=40))
    assert [w.code for w in warnings] == ["message_too_large"]
    assert all(m.message_id != "M1" or m.type == "event" for m in decoded)


def test_idle_stream_is_closed_as_timed_out_by_poll() -> None:
    sid = uuid.uuid4()
    dec = ChatDecoder(idle_timeout=5.0)
    out = dec.feed(
        "a",
        ChatMessage(content=[StartStreamContent(stream_id=sid), TextContent(text="partial")]),
        0.0,
    )
    assert dec.next_deadline == 5.0
    assert dec.poll(4.9) == []
    out += dec.poll(5.0)
    assert [w.code for w in dec.drain_warnings()] == ["stream_timeout"]
    assert dec.open_streams("a") == 0 and dec.next_deadline is None
    [m] = assemble(out).messages
    assert m.status == "error" and m.props == {"content": "partial"}


def test_finished_per_sender() -> None:
    chats = encode([delta("Done.", "M1"), msg_end("M1", 1)], close=True)
    dec = ChatDecoder()
    for c in chats[:-1]:
        dec.feed("a", c, 0.0)
    assert not dec.finished("a")
    dec.feed("a", chats[-1], 0.0)
    assert dec.finished("a") and dec.finished("a", "conv") and not dec.finished("b")


def test_decoder_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_open_streams"):
        ChatDecoder(max_open_streams=0)
