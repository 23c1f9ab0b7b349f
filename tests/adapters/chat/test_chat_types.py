"""ChatEncoder: what each Message type becomes on the wire (withheld, text, metadata, resources)."""

from __future__ import annotations

from chat_fixtures import decode, delta, encode, items, msg_end, open_at_once, plain, run, view
from uagents_core.contrib.protocols.chat import ResourceContent, StartStreamContent, TextContent

from agent_stream.assemble import assemble
from agent_stream.message import EVENT, action, error, image, loading, text, tool_call
from agent_stream.message import Message as M
from agent_stream.writer import StreamWriter


def test_tool_call_loading_action_and_events_travel_as_metadata_only() -> None:
    msgs = [
        tool_call("c1", "search", '{"q":1}', message_id="M1"),
        loading("working", message_id="M2"),
        action("navigate", {"to": "/x"}, message_id="M3"),
        M(type=EVENT, props={"event": "progress", "data": {"pct": 50}}, chunk_id="C9"),
    ]
    chats = encode(msgs)
    assert plain(chats) == ""
    assert not any(isinstance(i, (TextContent, StartStreamContent)) for i in items(chats))
    decoded, warnings = decode(chats)
    assert warnings == []
    assert [m.to_dict() for m in decoded[:3]] == [m.to_dict() for m in msgs[:3]]
    assert [(m.type, m.props, m.status) for m in assemble(decoded).messages] == [
        (m.type, m.props, m.status) for m in assemble(msgs).messages
    ]


def test_image_goes_as_resource_with_mime_type() -> None:
    msgs = [image("https://x.test/cat.png", alt="a cat", message_id="M1")]
    chats = encode(msgs)
    res = [i for i in items(chats) if isinstance(i, ResourceContent)]
    assert len(res) == 1
    r = res[0].resource
    assert r.uri == "https://x.test/cat.png"  # type: ignore[union-attr]
    assert r.metadata["mime_type"] == "image/png"  # type: ignore[union-attr]
    assert res[0].resource_id.version == 4
    decoded, _ = decode(chats)
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_error_is_a_readable_line_plus_error_metadata() -> None:
    msgs = [
        text("Looking it up.", message_id="M1"),
        error("upstream timed out", code="timeout", message_id="M2"),
    ]
    chats = encode(msgs)
    assert plain(chats) == "Looking it up.\n\nError (timeout): upstream timed out"
    decoded, _ = decode(chats)
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_type_change_text_to_custom_after_text_was_sent() -> None:
    msgs = [
        delta("Some text that was sent already. ", "M1"),
        M(type="table", type_change=True, message_id="M1", props={"rows": []}),
        M(
            type="table",
            delta=True,
            delta_path="rows",
            delta_action="append",
            props={"rows": [{"a": 1}]},
            message_id="M1",
        ),
        msg_end("M1", 3, typ="table"),
    ]
    chats = encode(msgs)
    assert plain(chats) == "Some text that was sent already. "  # what a plain peer keeps
    assert open_at_once(chats) == 1  # the stream ended at the change
    decoded, warnings = decode(chats)
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_type_change_to_text_makes_the_content_visible() -> None:
    msgs = [
        M(type="draft", props={"content": "Draft answer. "}, message_id="M1"),
        M(type="text", type_change=True, message_id="M1", props={"content": "Draft answer. "}),
        delta("More.", "M1"),
        msg_end("M1", 3),
    ]
    chats = encode(msgs)
    assert plain(chats) == "Draft answer. More."
    decoded, _ = decode(chats)
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_type_change_text_to_thinking_ends_the_stream_and_withholds_the_rest() -> None:
    msgs = [
        delta("Let me think. ", "M1"),
        delta("Okay, so", "M1"),
        M(type="thinking", type_change=True, message_id="M1"),
        delta("secret reasoning", "M1", typ="thinking"),
        msg_end("M1", 4, typ="thinking"),
    ]
    chats = encode(msgs, chunker={"min_chars": 5})
    assert plain(chats) == "Let me think. "  # sent before the change: a plain peer keeps it
    wire = "".join(c.json() for c in chats)
    assert "secret" not in wire and "Okay" not in wire  # buffered text is reasoning now
    assert open_at_once(chats) == 1
    decoded, warnings = decode(chats)
    assert warnings == []
    st = assemble(decoded).get(None, "M1")
    assert st is not None and st.type == "thinking" and st.props == {"content": "Let me think. "}
    assert st.status == "completed"


def test_type_change_to_thinking_before_anything_was_sent_withholds_it_whole() -> None:
    msgs = [
        delta("Let me think", "M1"),
        M(type="thinking", type_change=True, message_id="M1"),
        msg_end("M1", 2, typ="thinking"),
    ]
    chats = encode(msgs)
    assert chats == [] or "M1" not in "".join(c.json() for c in chats)


def test_type_change_thinking_to_text_starts_fresh_without_revealing_reasoning() -> None:
    msgs = [
        delta("secret reasoning. ", "M1", typ="thinking"),
        M(type="text", type_change=True, message_id="M1", props={"content": "Answer: "}),
        delta("42.", "M1"),
        msg_end("M1", 3),
    ]
    chats = encode(msgs)
    assert "secret" not in "".join(c.json() for c in chats)
    assert plain(chats) == "Answer: 42."
    decoded, _ = decode(chats)
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_withheld_message_start_and_end_are_withheld_too() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.message("thinking") as m:
            await m.append("hmm")

    chats = encode(run(body))
    assert "M1" not in "".join(c.json() for c in chats)


def test_non_append_text_deltas_and_replacements_round_trip() -> None:
    msgs = [
        delta("Hello wrld. ", "M1"),
        M(
            type="text",
            props={"content": "Hello world. "},
            delta=True,
            delta_action="replace",
            delta_path="content",
            message_id="M1",
        ),
        delta("Bye.", "M1"),
        M(type="text", props={"content": "Whole", "lang": "en"}, message_id="M2"),
        msg_end("M1", 3),
    ]
    decoded, warnings = decode(encode(msgs))
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_empty_text_message_round_trips() -> None:
    msgs = [delta("", "M1"), msg_end("M1", 1)]
    decoded, _ = decode(encode(msgs))
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_whole_text_without_ids_is_one_text_content() -> None:
    chats = encode([text("Hi there.")], close=False)
    assert len(chats) == 1 and plain(chats) == "Hi there."
    assert not any(isinstance(i, StartStreamContent) for i in items(chats))
    decoded, _ = decode(chats)
    assert [(m.type, m.props) for m in assemble(decoded).messages] == [
        ("text", {"content": "Hi there."})
    ]


def test_duplicate_chunk_ids_are_dropped_like_the_assembler_does() -> None:
    a = delta("Once. ", "M1", chunk_id="C1")
    msgs = [a, a, msg_end("M1", 1)]
    decoded, _ = decode(encode(msgs))
    assert view(assemble(decoded)) == view(assemble(msgs))
