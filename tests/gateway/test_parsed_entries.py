"""ParsedEntries hands a gateway's live reader the Message it just stored instead of parsing its
JSON back: only for the very string stored, once, within its bound; anything else is parsed."""

from __future__ import annotations

from agent_stream.gateway.parsed import ParsedEntries
from agent_stream.message import Message


def text(i: int) -> Message:
    return Message(type="text", props={"content": f"chunk {i}"}, message_id="m1", delta=True)


def test_the_stored_string_gives_the_kept_message_once() -> None:
    parsed = ParsedEntries()
    msg = text(1)
    entry = msg.to_json()
    parsed.keep(entry, msg)
    assert parsed.message(entry) is msg
    again = parsed.message(entry)  # a second reader (a resume): parsed, equal
    assert again is not msg and again == msg
    assert len(parsed) == 0


def test_an_equal_string_that_is_not_the_stored_one_is_parsed() -> None:
    parsed = ParsedEntries()
    msg = text(1)
    entry = msg.to_json()
    parsed.keep(entry, msg)
    copy = "".join(list(entry))  # what a Redis store returns: equal text, another object
    assert copy == entry and copy is not entry
    got = parsed.message(copy)
    assert got is not msg and got == msg
    assert parsed.message(entry) is msg  # still kept for the stored string


def test_the_oldest_go_past_the_bound_and_are_parsed() -> None:
    parsed = ParsedEntries(max_entries=3)
    pairs = [(m.to_json(), m) for m in map(text, range(5))]
    for entry, msg in pairs:
        parsed.keep(entry, msg)
    assert len(parsed) == 3
    assert parsed.message(pairs[0][0]) is not pairs[0][1]  # evicted: parsed
    assert parsed.message(pairs[0][0]) == pairs[0][1]
    assert parsed.message(pairs[4][0]) is pairs[4][1]
