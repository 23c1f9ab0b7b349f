"""The encoders' shared bookkeeping: tool-call tracking, the message table, the shown-text rule."""

from __future__ import annotations

from agent_stream.adapters._tracking import (
    MessageTable,
    Parts,
    ToolCall,
    Tracked,
    Warnings,
    id_fields,
    set_shown,
)
from agent_stream.message import Message, tool_call


def args(s: str, action: str = "append") -> Message:
    return Message(
        type="tool_call",
        message_id="M1",
        delta=True,
        delta_path="arguments",
        delta_action=action,
        props={"arguments": s},
    )  # type: ignore[arg-type]


def test_a_tool_call_sends_each_argument_fragment_once() -> None:
    tc = ToolCall()
    assert tc.take(tool_call("c1", "search", '{"q":')) is None
    assert tc.start() == '{"q":' and tc.started
    assert tc.unsent() == ""
    tc.take(args(' "x"}'))
    assert tc.unsent() == ' "x"}' and tc.unsent() == ""
    assert tc.args.value() == '{"q": "x"}'


def test_a_set_that_extends_the_sent_arguments_sends_only_the_extension() -> None:
    tc = ToolCall()
    tc.take(args("{"))
    tc.start()
    assert tc.take(args('{"a": 1}', "set")) is None
    assert tc.unsent() == '"a": 1}'


def test_a_rewrite_of_sent_arguments_is_refused_and_returned() -> None:
    tc = ToolCall()
    tc.take(args('{"a": 1}'))
    tc.start()
    assert tc.take(args('{"b": 2}', "replace")) == '{"b": 2}'
    assert tc.args.value() == '{"a": 1}' and tc.unsent() == ""
    tc.force('{"b": 2}')
    assert tc.args.value() == '{"b": 2}' and tc.unsent() == ""


def test_before_the_start_a_rewrite_is_just_taken() -> None:
    tc = ToolCall()
    tc.take(args('{"a": 1}'))
    assert tc.take(args('{"b": 2}', "replace")) is None
    assert tc.start() == '{"b": 2}'


def test_ids_and_names_follow_the_latest_chunk_until_the_start() -> None:
    tc = ToolCall()
    tc.take(
        Message(
            type="tool_call",
            message_id="M1",
            delta=True,
            delta_path="id",
            delta_action="set",
            props={"id": "c1"},
        )
    )
    tc.take(Message(type="tool_call", message_id="M1", props={"id": "c2", "name": "f"}))
    assert (tc.call_id, tc.name) == ("c2", "f")
    tc.start()
    tc.take(
        Message(
            type="tool_call",
            message_id="M1",
            delta=True,
            delta_path="name",
            delta_action="set",
            props={"name": "g"},
        )
    )
    assert tc.name == "f"


def test_id_fields_reads_only_the_paths_that_set_them() -> None:
    assert id_fields(tool_call("c", "f", "{}")) == {"id": "c", "name": "f"}
    assert id_fields(args("x")) == {}
    named = Message(
        type="tool_call",
        message_id="M1",
        delta=True,
        delta_path="name",
        props={"name": "f", "id": "ignored"},
    )
    assert id_fields(named) == {"name": "f"}


def test_the_table_ends_messages_by_block_and_thread_and_forgets_retyped_ones() -> None:
    table: MessageTable[Tracked] = MessageTable()
    a = table.add(Tracked(("T1", "M1"), "text", "B1"))
    b = table.add(Tracked(("T2", "M2"), "text", "B1"))
    c = table.add(Tracked(("T2", "M3"), "text", None), is_open=False)
    assert table.in_block("B1") == [a, b] and table.in_thread("T2") == [b]
    table.ended(a)
    assert table.in_block("B1") == [b] and table.get(("T1", "M1")) is a
    table.forget(b)
    assert table.get(("T2", "M2")) is None and table.in_thread("T2") == []
    assert table.get(("T2", "M3")) is c
    assert table.anon_key("T1") == ("T1", "#1") and table.anon_key(None) == (None, "#2")


def test_set_shown_extends_or_restates_after_a_line_break_with_a_warning() -> None:
    w = Warnings()
    text = Parts("Hello")
    assert set_shown(text, "Hello, world", (None, "M1"), "a client", w) == ", world"
    assert set_shown(text, "Hello, world", (None, "M1"), "a client", w) is None
    assert set_shown(text, "Bye", ("T1", "M1"), "a client", w) == "\nBye"
    [warning] = w.drain_warnings()
    assert warning.code == "rewrite" and warning.thread_id == "T1"
    assert "a client" in warning.detail and w.drain_warnings() == []


def test_parts_join_on_read() -> None:
    p = Parts()
    for s in ("a", "b", "c"):
        p.append(s)
    assert (p.size, p.value()) == (3, "abc")
    p.set("")
    assert (p.size, p.value()) == (0, "")
