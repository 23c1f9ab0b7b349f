"""The assembler against every scenario of spec 000 and every example of spec 002."""

from __future__ import annotations

import json

import pytest

from agent_stream.assemble import Assembler, assemble
from agent_stream.errors import DeltaError, InvalidMessage, StreamError, UnknownMessage
from agent_stream.message import Message


def msgs(*lines: str) -> list[Message]:
    return [Message.from_json(line) for line in lines]


def by_key(t, thread, mid):  # type: ignore[no-untyped-def]
    st = t.get(thread, mid)
    assert st is not None, (thread, mid)
    return st


# -- spec 000 scenarios -------------------------------------------------------------------------
def test_scenario_1_simple_text_message() -> None:
    t = assemble(msgs('{"chunk_id": "C1", "type": "text", "props": {"content": "Hello World"}}'))
    [m] = t.to_dict()["messages"]
    assert m == {
        "message_id": None,
        "thread_id": None,
        "block_id": None,
        "type": "text",
        "props": {"content": "Hello World"},
        "chunk_count": 1,
        "status": "completed",
    }


def test_scenario_2_llm_streaming_single_message() -> None:
    t = assemble(
        msgs(
            '{"chunk_id": "C1", "message_id": "M1", "type": "text", "props": {"content": "Hello"}, "delta": true}',
            '{"chunk_id": "C2", "message_id": "M1", "type": "text", "props": {"content": " World"}, "delta": true}',
            '{"chunk_id": "C3", "message_id": "M1", "type": "text", "props": {"content": "!"}, "delta": true}',
        )
    )
    m = by_key(t, None, "M1")
    assert m.props == {"content": "Hello World!"} and m.chunk_count == 3
    assert t.text() == "Hello World!"


def test_scenario_3_one_block_three_messages() -> None:
    t = assemble(
        msgs(
            '{"chunk_id": "C1", "message_id": "M1", "block_id": "B1", "type": "thinking", "props": {"content": "Let me"}, "delta": true}',
            '{"chunk_id": "C2", "message_id": "M1", "block_id": "B1", "type": "thinking", "props": {"content": " think"}, "delta": true}',
            '{"chunk_id": "C3", "message_id": "M2", "block_id": "B1", "type": "tool_call", "props": {"id": "call_1", "name": "search", "arguments": "{}"}}',
            '{"chunk_id": "C4", "message_id": "M3", "block_id": "B1", "type": "text", "props": {"content": "The answer"}, "delta": true}',
            '{"chunk_id": "C5", "message_id": "M3", "block_id": "B1", "type": "text", "props": {"content": " is 42."}, "delta": true}',
        )
    )
    [b] = t.blocks
    assert b.block_id == "B1" and b.message_count == 3
    assert [m.type for m in t.messages] == ["thinking", "tool_call", "text"]
    assert by_key(t, None, "M1").props["content"] == "Let me think"
    assert by_key(t, None, "M2").props["name"] == "search"
    assert by_key(t, None, "M3").content == "The answer is 42."


def test_scenario_4_sequential_blocks() -> None:
    t = assemble(
        msgs(
            '{"chunk_id": "C1", "message_id": "M1", "block_id": "B1", "type": "text", "props": {"content": "Plan"}, "delta": true}',
            '{"chunk_id": "C2", "message_id": "M1", "block_id": "B1", "type": "text", "props": {"content": "ning."}, "delta": true}',
            '{"chunk_id": "C3", "message_id": "M2", "block_id": "B2", "type": "loading", "props": {"message": "Calling MCP"}}',
            '{"chunk_id": "C4", "message_id": "M3", "block_id": "B2", "type": "text", "props": {"content": "MCP result"}}',
            '{"chunk_id": "C5", "message_id": "M4", "block_id": "B3", "type": "text", "props": {"content": "Final"}, "delta": true}',
            '{"chunk_id": "C6", "message_id": "M4", "block_id": "B3", "type": "text", "props": {"content": " answer"}, "delta": true}',
        )
    )
    assert [(b.block_id, b.message_count) for b in t.blocks] == [("B1", 1), ("B2", 2), ("B3", 1)]
    assert by_key(t, None, "M1").content == "Planning."
    assert by_key(t, None, "M4").content == "Final answer"


def test_scenario_5_concurrent_threads_in_one_block() -> None:
    t = assemble(
        msgs(
            '{"chunk_id": "C1", "message_id": "M1", "block_id": "B1", "thread_id": "T1", "type": "text", "props": {"content": "Weather: Sunny"}, "delta": true}',
            '{"chunk_id": "C2", "message_id": "M2", "block_id": "B1", "thread_id": "T2", "type": "text", "props": {"content": "News: ..."}, "delta": true}',
            '{"chunk_id": "C3", "message_id": "M1", "block_id": "B1", "thread_id": "T1", "type": "text", "props": {"content": ", 25°C"}, "delta": true}',
            '{"chunk_id": "C4", "message_id": "M3", "block_id": "B1", "thread_id": "T3", "type": "text", "props": {"content": "Summary..."}, "delta": true}',
        )
    )
    assert by_key(t, "T1", "M1").content == "Weather: Sunny, 25°C"
    assert by_key(t, "T2", "M2").content == "News: ..."
    assert by_key(t, "T3", "M3").content == "Summary..."
    [b] = t.blocks
    assert b.thread_ids == ["T1", "T2", "T3"] and b.message_count == 3


def test_same_message_id_in_two_threads_never_collides() -> None:
    t = assemble(
        msgs(
            '{"chunk_id": "C1", "message_id": "M1", "thread_id": "T1", "type": "text", "props": {"content": "a"}, "delta": true}',
            '{"chunk_id": "C2", "message_id": "M1", "thread_id": "T2", "type": "text", "props": {"content": "b"}, "delta": true}',
            '{"chunk_id": "C3", "message_id": "M1", "thread_id": "T1", "type": "text", "props": {"content": "c"}, "delta": true}',
        )
    )
    assert by_key(t, "T1", "M1").content == "ac"
    assert by_key(t, "T2", "M1").content == "b"


# -- spec 002 examples --------------------------------------------------------------------------
def test_002_streaming_text_with_message_end() -> None:
    t = assemble(
        msgs(
            '{"chunk_id": "C1", "message_id": "M1", "type": "text", "delta": true, "props": {"content": "Hello"}}',
            '{"chunk_id": "C2", "message_id": "M1", "type": "text", "delta": true, "props": {"content": ", world"}}',
            '{"chunk_id": "C3", "message_id": "M1", "type": "text", "delta": true, "props": {"content": "!"}}',
            '{"type": "event", "props": {"event": "message_end", "data": {"message_id": "M1", "type": "text", "chunk_count": 3, "status": "completed"}}}',
        )
    )
    m = by_key(t, None, "M1")
    assert (m.content, m.status, m.chunk_count) == ("Hello, world!", "completed", 3)
    assert len(t.messages) == 1  # the event is not a message


def test_002_table_rows_appended_at_a_path() -> None:
    t = assemble(
        msgs(
            '{"message_id": "M2", "type": "table", "props": {"columns": ["Name", "Age"], "rows": []}}',
            '{"chunk_id": "C4", "message_id": "M2", "type": "table", "delta": true, "delta_path": "rows", "delta_action": "append", "props": {"rows": [{"name": "Alice", "age": 30}]}}',
            '{"chunk_id": "C5", "message_id": "M2", "type": "table", "delta": true, "delta_path": "rows", "delta_action": "append", "props": {"rows": [{"name": "Bob", "age": 25}]}}',
        )
    )
    assert by_key(t, None, "M2").props == {
        "columns": ["Name", "Age"],
        "rows": [{"name": "Alice", "age": 30}, {"name": "Bob", "age": 25}],
    }


def test_002_type_correction() -> None:
    t = assemble(
        msgs(
            '{"chunk_id": "C6", "message_id": "M3", "type": "text", "delta": true, "props": {"content": "Let me think..."}}',
            '{"chunk_id": "C7", "message_id": "M3", "type": "thinking", "type_change": true, "props": {"content": "Let me think..."}}',
        )
    )
    m = by_key(t, None, "M3")
    assert (m.type, m.content, m.chunk_count) == ("thinking", "Let me think...", 2)


def test_002_block_grouping_events() -> None:
    t = assemble(
        msgs(
            '{"type": "event", "props": {"event": "block_start", "data": {"block_id": "B1", "type": "llm", "label": "Analyzing image"}}}',
            '{"message_id": "M4", "block_id": "B1", "type": "thinking", "props": {"content": "Let me analyze this image..."}}',
            '{"message_id": "M5", "block_id": "B1", "type": "text", "props": {"content": "This is a beautiful sunset at Golden Gate Bridge"}}',
            '{"type": "event", "props": {"event": "block_end", "data": {"block_id": "B1", "message_count": 2, "status": "completed"}}}',
        )
    )
    [b] = t.to_dict()["blocks"]
    assert b == {
        "block_id": "B1",
        "type": "llm",
        "label": "Analyzing image",
        "status": "completed",
        "message_count": 2,
        "thread_ids": [],
        "parent_block_id": None,
        "agent": None,
        "agent_name": None,
        "duration_ms": None,
        "relay_status": None,
        "usage": None,
    }
    assert [m.message_id for m in t.messages] == ["M4", "M5"]


# -- lifecycle, counting, duplicates -------------------------------------------------------------
def test_message_end_with_a_different_chunk_count_marks_incomplete_and_warns() -> None:
    t = assemble(
        msgs(
            '{"chunk_id": "C1", "message_id": "M1", "type": "text", "delta": true, "props": {"content": "a"}}',
            '{"type": "event", "props": {"event": "message_end", "data": {"message_id": "M1", "chunk_count": 2}}}',
        )
    )
    assert by_key(t, None, "M1").status == "incomplete"
    assert [w.code for w in t.warnings] == ["chunks_lost"]


def test_message_end_carries_its_status() -> None:
    t = assemble(
        msgs(
            '{"chunk_id": "C1", "message_id": "M1", "type": "text", "delta": true, "props": {"content": "a"}}',
            '{"type": "event", "props": {"event": "message_end", "data": {"message_id": "M1", "chunk_count": 1, "status": "error"}}}',
        )
    )
    assert by_key(t, None, "M1").status == "error"


def test_duplicate_chunk_ids_are_ignored_and_counted_apart() -> None:
    line = '{"chunk_id": "C1", "message_id": "M1", "type": "text", "delta": true, "props": {"content": "a"}}'
    t = assemble(msgs(line, line, line))
    m = by_key(t, None, "M1")
    assert (m.content, m.chunk_count, m.duplicates) == ("a", 1, 2)
    assert [w.code for w in t.warnings] == ["duplicate_chunk", "duplicate_chunk"]


def test_stream_end_closes_everything_still_open_with_its_status() -> None:
    t = assemble(
        msgs(
            '{"type": "event", "props": {"event": "stream_start", "data": {}}}',
            '{"type": "event", "props": {"event": "block_start", "data": {"block_id": "B1"}}}',
            '{"chunk_id": "C1", "message_id": "M1", "block_id": "B1", "type": "text", "delta": true, "props": {"content": "a"}}',
            '{"chunk_id": "C2", "message_id": "M2", "type": "text", "delta": true, "props": {"content": "b"}}',
            '{"type": "event", "props": {"event": "message_end", "data": {"message_id": "M2", "chunk_count": 1}}}',
            '{"type": "event", "props": {"event": "stream_end", "data": {"status": "cancelled"}}}',
        )
    )
    assert [m.status for m in t.messages] == ["cancelled", "completed"]
    assert t.blocks[0].status == "cancelled" and t.status == "cancelled" and t.finished


def test_message_start_declares_type_and_thread() -> None:
    t = assemble(
        msgs(
            '{"type": "event", "message_id": "M1", "props": {"event": "message_start", "data": {"message_id": "M1", "type": "thinking", "thread_id": "T2"}}}',
            '{"chunk_id": "C1", "message_id": "M1", "thread_id": "T2", "type": "thinking", "delta": true, "props": {"content": "x"}}',
        )
    )
    m = by_key(t, "T2", "M1")
    assert (m.type, m.content, m.chunk_count) == ("thinking", "x", 1)
    assert t.threads[0].thread_id == "T2"


def test_chunks_without_ids_are_messages_of_their_own() -> None:
    t = assemble(
        msgs(
            '{"type": "text", "props": {"content": "a"}}',
            '{"type": "text", "props": {"content": "b"}}',
        )
    )
    assert [m.content for m in t.messages] == ["a", "b"]


def test_non_delta_chunk_replaces_props() -> None:
    t = assemble(
        msgs(
            '{"message_id": "M1", "type": "loading", "props": {"message": "Searching"}}',
            '{"message_id": "M1", "type": "loading", "props": {"message": "Done", "done": true}}',
        )
    )
    assert by_key(t, None, "M1").props == {"message": "Done", "done": True}


# -- bad input: typed error, earlier messages survive --------------------------------------------
GOOD = [
    '{"chunk_id": "C1", "message_id": "M1", "type": "text", "delta": true, "props": {"content": "kept"}}',
    '{"chunk_id": "C2", "message_id": "M2", "type": "card", "props": {"title": "t", "rows": [1], "o": {"a": 1}}}',
]


@pytest.mark.parametrize(
    ("bad", "error", "needle"),
    [
        (
            '{"chunk_id": "C9", "type": "text", "delta": true, "props": {"content": "x"}}',
            DeltaError,
            "needs a message_id",
        ),
        (
            '{"chunk_id": "C9", "message_id": "M1", "type": "text", "delta": true, "delta_action": "explode", "props": {}}',
            InvalidMessage,
            "delta_action",
        ),
        (
            '{"chunk_id": "C9", "message_id": "M2", "type": "card", "delta": true, "delta_path": "title.x", "delta_action": "set", "props": {"title": {"x": 1}}}',
            DeltaError,
            "goes through a string",
        ),
        (
            '{"chunk_id": "C9", "message_id": "M2", "type": "card", "delta": true, "delta_path": "rows.3", "delta_action": "set", "props": {"rows": [0, 0, 0, 5]}}',
            DeltaError,
            "past the end",
        ),
        (
            '{"chunk_id": "C9", "message_id": "M1", "type": "text", "delta": true, "delta_path": "content", "delta_action": "append", "props": {"content": ["x"]}}',
            DeltaError,
            "onto a string",
        ),
        (
            '{"chunk_id": "C9", "message_id": "M2", "type": "card", "delta": true, "delta_path": "o", "delta_action": "merge", "props": {"o": 5}}',
            DeltaError,
            "merge a number",
        ),
        (
            '{"chunk_id": "C9", "message_id": "M7", "type": "thinking", "type_change": true}',
            UnknownMessage,
            "type_change",
        ),
        (
            '{"chunk_id": "C9", "type": "thinking", "type_change": true}',
            UnknownMessage,
            "type_change",
        ),
    ],
)
def test_bad_input_raises_typed_error_and_keeps_every_message(bad, error, needle) -> None:
    asm = Assembler()
    for line in GOOD:
        asm.feed(Message.from_json(line))
    before = json.dumps(asm.transcript.to_dict(), sort_keys=True)
    with pytest.raises(error, match=needle) as info:
        asm.feed(Message.from_json(bad))
    assert isinstance(info.value, StreamError)
    assert json.dumps(asm.transcript.to_dict(), sort_keys=True) == before
    # the stream goes on after the bad chunk
    asm.feed(
        Message.from_json(
            '{"chunk_id": "C10", "message_id": "M1", "type": "text", "delta": true, "props": {"content": "!"}}'
        )
    )
    assert asm.transcript.get(None, "M1").content == "kept!"  # type: ignore[union-attr]


def test_error_names_the_chunk() -> None:
    asm = Assembler()
    asm.feed(Message.from_json(GOOD[1]))
    with pytest.raises(DeltaError, match="chunk C9, message M2"):
        asm.feed(
            Message.from_json(
                '{"chunk_id": "C9", "message_id": "M2", "type": "card", "delta": true, "delta_path": "o", "delta_action": "merge", "props": {"o": 5}}'
            )
        )


def test_reading_props_between_appends_stays_correct() -> None:
    asm = Assembler()
    for i, piece in enumerate(["a", "b", "c"]):
        asm.feed(
            Message(
                type="text", message_id="M1", delta=True, chunk_id=f"C{i}", props={"content": piece}
            )
        )
        assert asm.transcript.get(None, "M1").content == "abc"[: i + 1]  # type: ignore[union-attr]
    asm.feed(
        Message(
            type="text",
            message_id="M1",
            delta=True,
            delta_action="replace",
            delta_path="content",
            props={"content": "new"},
        )
    )
    asm.feed(Message(type="text", message_id="M1", delta=True, props={"content": "er"}))
    assert asm.transcript.get(None, "M1").content == "newer"  # type: ignore[union-attr]
