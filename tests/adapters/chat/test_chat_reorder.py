"""ChatDecoder ordering: duplicates, out-of-order delivery, coalesced runs, gaps, the reorder window."""

from __future__ import annotations

from chat_fixtures import TOKENS, decode, delta, encode, msg_end, plain, tag_meta, view
from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent, TextContent

from agent_stream.adapters.chat import ChatDecoder, ChatEncoder, coalesce
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


def _end(seq: int) -> ChatMessage:
    """A reply's end (stream_end ``lost``) numbered ``seq``, as another sender of the reply
    numbers it: a fleet replica ending a dead replica's reply after the reply's mirror."""
    (end,) = ChatEncoder("conv", tagged=True, meta_delay=0).close(0.0, status="lost")
    head = next(i for i in end.content if isinstance(i, MetadataContent))
    head.metadata["seq"] = str(seq)
    return ChatMessage(content=end.content)


def test_an_end_numbered_over_a_decoded_chat_message_ends_the_reply_at_once() -> None:
    """The end's number was taken by a ChatMessage that reached the asker and not the mirror
    the end was numbered after: the reply ends now, not at the asker's idle timeout."""
    chats = _reply()
    n = len(chats)
    for behind in (1, 2, n):
        dec = ChatDecoder()
        out, _ = decode(chats, dec=dec)
        assert not dec.finished("agent1", "conv")
        ended, warnings = decode([_end(n + 1 - behind)], dec=dec)
        assert dec.finished("agent1", "conv") and warnings == []
        assert assemble([*out, *ended]).status == "lost"
        assert dec.gaps() == []


def test_an_end_numbered_over_the_replys_own_end_or_coalesced_is_still_dropped() -> None:
    ended = encode([delta(tok + " ", "M1") for tok in TOKENS[:20]], close=True)
    dec = ChatDecoder()
    out, _ = decode(ended, dec=dec)
    _, warnings = decode([_end(len(ended))], dec=dec)  # the reply ended: its own end stands
    assert [w.code for w in warnings] == ["late_chat_message"]
    assert assemble(out).status == "completed"
    chats = _reply()
    n = len(chats)
    dec = ChatDecoder()
    decode(chats, dec=dec)
    for late in (coalesce([chats[-1], _end(n + 1)]), coalesce([chats[-2], _end(n)])):
        # it covers ChatMessages decoded already: not an end alone, so not taken as one
        _, warnings = decode([ChatMessage(content=late.content)], dec=dec)
        assert [w.code for w in warnings] == ["late_chat_message"]
    assert not dec.finished("agent1", "conv")
