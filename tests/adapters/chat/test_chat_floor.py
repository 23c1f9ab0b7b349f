"""Serialisation for plain peers (one stream at a time) and interleaving for tagged ones."""

from __future__ import annotations

from chat_fixtures import decode, delta, encode, msg_end, open_at_once, plain, view

from agent_stream.assemble import assemble
from agent_stream.message import Message as M


def _interleaved() -> list[M]:
    a = ["Alpha one. ", "Alpha two is longer than forty characters. ", "Alpha three."]
    b = ["Beta one. ", "Beta two is also longer than forty characters. ", "Beta three."]
    out: list[M] = []
    for x, y in zip(a, b, strict=True):
        out += [delta(x, "M1", "T1"), delta(y, "M1", "T2")]
    return [*out, msg_end("M1", 3, "T1"), msg_end("M1", 3, "T2")]


def test_plain_peer_never_sees_two_messages_interleaved() -> None:
    msgs = _interleaved()
    chats = encode(msgs)
    assert open_at_once(chats) == 1
    t = assemble(msgs)
    a, b = t.get("T1", "M1").content, t.get("T2", "M1").content  # type: ignore[union-attr]
    assert plain(chats) in (a + b, b + a)
    decoded, warnings = decode(chats)
    assert warnings == [] and view(assemble(decoded)) == view(t)


def test_tagged_recipient_gets_streams_interleaved_as_produced() -> None:
    msgs = _interleaved()
    chats = encode(msgs, tagged=True, chunker={"min_chars": 1})
    assert open_at_once(chats) == 2
    decoded, warnings = decode(chats)
    assert warnings == [] and view(assemble(decoded)) == view(assemble(msgs))
