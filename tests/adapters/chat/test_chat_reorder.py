"""ChatDecoder ordering: duplicates, out-of-order delivery, coalesced runs, gaps, the reorder window."""

from __future__ import annotations

from chat_fixtures import TOKENS, decode, delta, encode, msg_end, plain, tag_meta, view
from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent, TextContent

from agent_stream.adapters.chat import ChatDecoder, coalesce
from agent_stream.assemble import assemble
from agent_stream.message import text


def _reply() -> list[ChatMessage]:
    msgs = [delta(tok + " ", "M1") for tok in TOKENS] + [msg_end("M1", len(TOKENS))]
    return encode(msgs, chunker={"min_chars": 10, "max_chars": 60})


def test_duplicate_chat_messages_are_dropped() -> None:
    chats = _reply()
    decoded, warnings = decode(chats + chats[:2])
    assert {w.code for w in warnings} == {"duplicate_chat_message"}
    assert view(assemble(decoded)) == view(assemble(decode(chats)[0]))


def test_out_of_order_chat_messages_are_put_back_in_order() -> None:
    chats = _reply()
    assert len(chats) >= 4
    shuffled = [chats[1], chats[3], chats[0], chats[2], *chats[4:]]
    decoded, warnings = decode(shuffled)
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(decode(chats)[0]))


def test_coalesced_chat_messages_read_and_decode_the_same() -> None:
    chats = _reply()
    assert len(chats) >= 4
    one = coalesce(chats[1:3])
    md = next(i.metadata for i in one.content if isinstance(i, MetadataContent))
    assert (md["seq"], md["seq_last"]) == ("2", "3")
    ChatMessage.parse_raw(one.json())  # still valid for uagents
    wire = [chats[0], one, *chats[3:]]
    assert plain(wire) == plain(chats)
    decoded, warnings = decode(wire)
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(decode(chats)[0]))
    decoded, warnings = decode([chats[0], *chats[3:], one])  # late, still put back in order
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(decode(chats)[0]))


def test_a_gap_is_reported_after_gap_timeout_not_papered_over() -> None:
    chats = _reply()
    dec = ChatDecoder(gap_timeout=2.0)
    assert dec.feed("a", chats[0], 0.0)
    assert dec.feed("a", chats[2], 1.0) == []  # held back, waiting for 2
    assert dec.next_deadline is not None and dec.next_deadline <= 3.0
    assert dec.poll(2.5) == []
    out = dec.poll(3.0)
    assert out  # released without the missing one
    [w] = dec.drain_warnings()
    assert w.code == "gap" and "2" in w.detail
    dec.feed("a", chats[1], 3.5)  # too late now
    assert [w.code for w in dec.drain_warnings()] == ["late_chat_message"]


def test_a_new_reply_reusing_the_conversation_id_starts_over() -> None:
    dec = ChatDecoder()
    for word in ("First.", "Second."):
        chats = encode([text(word, message_id="M1")], close=True)  # seq 1, 2 each time
        out, warnings = decode(chats, dec=dec)
        assert warnings == [] and [m.props for m in out if m.type == "text"] == [{"content": word}]


def test_hostile_sequence_numbers_do_not_raise() -> None:
    dec = ChatDecoder()
    for seq in ("²", "-1", "9" * 40, ""):
        dec.feed(
            "a",
            ChatMessage(
                content=[
                    tag_meta(op="text", seq=seq, conversation="c", type="text"),
                    TextContent(text="x"),
                ]
            ),
            0.0,
        )
    assert dec.drain_warnings() == []


def test_reorder_window_overflow_reports_the_gap_at_once() -> None:
    chats = _reply()
    dec = ChatDecoder(reorder_window=1)
    dec.feed("a", chats[0], 0.0)
    assert dec.feed("a", chats[2], 0.0) == []
    assert dec.feed("a", chats[3], 0.0)
    assert [w.code for w in dec.drain_warnings()] == ["gap"]
