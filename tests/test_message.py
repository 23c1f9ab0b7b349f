"""The Message DSL: JSON shape, validation, built-in types, event payloads."""

from __future__ import annotations

import json

import pytest

from agent_stream import message as m
from agent_stream.errors import InvalidMessage, StreamError


def test_simple_text_round_trips_to_the_same_json() -> None:
    src = '{"type":"text","props":{"content":"Hi"}}'
    msg = m.Message.from_json(src)
    assert msg.to_json() == src


def test_every_field_round_trips_and_empty_fields_are_omitted() -> None:
    full = {
        "type": "table",
        "props": {"rows": [{"a": 1}]},
        "chunk_id": "C4",
        "message_id": "M2",
        "block_id": "B1",
        "thread_id": "T1",
        "delta": True,
        "delta_path": "rows",
        "delta_action": "append",
        "type_change": True,
        "metadata": {"timestamp": 1700000000000000000, "sequence": 3, "trace_id": "t"},
    }
    msg = m.Message.from_dict(full)
    assert msg.to_dict() == full
    bare = m.Message(type="text", props={}, delta=False, type_change=False)
    assert bare.to_dict() == {"type": "text"}


def test_custom_types_are_plain_strings() -> None:
    msg = m.Message.from_json('{"type":"weather_card","props":{"city":"Paris"}}')
    assert msg.type == "weather_card"
    assert m.typed_props(msg) is None


def test_unknown_top_level_key_is_rejected_with_its_name() -> None:
    with pytest.raises(InvalidMessage, match="unknown field 'colour'"):
        m.Message.from_json('{"type":"text","colour":"red"}')


@pytest.mark.parametrize(
    ("src", "needle"),
    [
        ("not json", "not JSON"),
        ("[1,2]", "JSON object"),
        ('{"props":{}}', "missing field 'type'"),
        ('{"type":"text","delta_action":"explode"}', "delta_action"),
        ('{"type":"text","metadata":{"foo":1}}', "metadata.foo"),
    ],
)
def test_bad_json_gets_a_typed_error_saying_what_is_wrong(src: str, needle: str) -> None:
    with pytest.raises(InvalidMessage) as info:
        m.Message.from_json(src)
    assert needle in str(info.value)
    assert isinstance(info.value, StreamError)


def test_constructors_build_the_documented_props() -> None:
    assert m.text("Hi").props == {"content": "Hi"}
    assert m.thinking("hmm").type == "thinking"
    assert m.loading("Searching").props == {"message": "Searching"}
    assert m.loading("Done", done=True).props == {"message": "Done", "done": True}
    tc = m.tool_call(id="call_1", name="search", arguments='{"q":"x"}', message_id="M2")
    assert tc.props == {"id": "call_1", "name": "search", "arguments": '{"q":"x"}'}
    assert tc.message_id == "M2"
    assert m.error("Connection failed", code="TIMEOUT").props == {
        "message": "Connection failed",
        "code": "TIMEOUT",
    }
    assert m.image("https://x/y.png", alt="y", width=10).props == {
        "url": "https://x/y.png",
        "alt": "y",
        "width": 10,
    }
    assert m.audio("a.mp3", format="mp3").props == {"url": "a.mp3", "format": "mp3"}
    assert m.video("v.mp4", loop=True).props == {"url": "v.mp4", "loop": True}
    assert m.action("open_panel", {"id": 1}).props == {"name": "open_panel", "payload": {"id": 1}}
    ev = m.event("custom", {"k": 1}, message="hello")
    assert ev.props == {"event": "custom", "message": "hello", "data": {"k": 1}}
    assert m.user_input("hi", role="user").props == {"content": "hi", "role": "user"}


def test_typed_props_validates_builtin_types() -> None:
    good = m.typed_props(m.Message(type="image", props={"url": "u", "width": 3}))
    assert isinstance(good, m.ImageProps) and good.width == 3
    with pytest.raises(InvalidMessage, match="url"):
        m.typed_props(m.Message(type="image", props={"alt": "no url"}))


def test_event_payloads_are_models() -> None:
    end = m.lifecycle(
        m.MESSAGE_END,
        m.MessageEndData(
            message_id="M1",
            type="text",
            chunk_count=3,
            status="completed",
            extra={"content": "Hello, world!"},
        ),
    )
    assert end.event == "message_end"
    data = m.event_data(end)
    assert isinstance(data, m.MessageEndData)
    assert data.chunk_count == 3 and data.extra == {"content": "Hello, world!"}
    se = m.event_data(
        m.lifecycle(
            m.STREAM_END,
            m.StreamEndData(status="error", error="boom", usage=m.Usage(total_tokens=5)),
        )
    )
    assert isinstance(se, m.StreamEndData) and se.status == "error" and se.usage is not None
    with pytest.raises(InvalidMessage, match="status"):
        m.event_data(m.event(m.STREAM_END, {"status": "exploded"}))
    assert m.event_data(m.text("x")) is None


def test_json_keeps_unicode_as_is() -> None:
    msg = m.text("今天北京晴，25°C 🌞")
    assert "今天北京晴" in msg.to_json()
    assert json.loads(msg.to_json())["props"]["content"] == "今天北京晴，25°C 🌞"


@pytest.mark.parametrize(
    ("src", "needle"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deep"),
        ('{"type":"text","props":{"n":' + "9" * 5000 + "}}", "number out of range"),
        ('{"type":"text","props":{"v":NaN}}', "NaN is not JSON"),
        ('{"type":"text","props":{"v":-Infinity}}', "-Infinity is not JSON"),
        ('{"type":"text","props":{"content":"\\ud800"}}', "invalid unicode escape"),
        ('{"type":"text","props":{"content":"\ud800"}}', "not Unicode text"),
        (b'{"type":"text","props":{"content":"caf\xe9"}}', "invalid UTF-8 at byte 39"),
    ],
)
def test_from_json_guards_raise_invalid_message_never_recursion_value_or_unicode_errors(
    src: str | bytes, needle: str
) -> None:
    with pytest.raises(InvalidMessage, match=needle):
        m.Message.from_json(src)


@pytest.mark.parametrize(
    "field",
    [
        {"delta": 1},
        {"delta": "true"},
        {"type_change": "yes"},
        {"metadata": {"timestamp": "1"}},
        {"message_id": 7},
    ],
)
def test_from_dict_is_strict_about_json_types(field: dict) -> None:
    with pytest.raises(InvalidMessage):
        m.Message.from_dict({"type": "text", **field})


def test_type_errors_name_built_in_fields_of_the_wrong_type_and_only_present_ones() -> None:
    def errs(line: dict) -> list[str]:
        return m.type_errors(m.Message.from_dict(line))

    assert errs({"type": "text", "props": {"content": 12}}) == [
        "props.content: Input should be a valid string"
    ]
    end = {
        "type": "event",
        "props": {"event": "message_end", "data": {"message_id": "M1", "chunk_count": "lots"}},
    }
    assert errs(end) == ["props.data.chunk_count: Input should be a valid integer"]
    usage = {
        "type": "event",
        "props": {"event": "stream_end", "data": {"usage": {"prompt_tokens": "5"}}},
    }
    assert errs(usage) == ["props.data.usage.prompt_tokens: Input should be a valid integer"]
    # a delta carries part of the props; custom types and extra keys are not checked
    assert (
        errs(
            {
                "type": "tool_call",
                "delta": True,
                "delta_path": "arguments",
                "props": {"arguments": "{"},
            }
        )
        == []
    )
    assert errs({"type": "weather", "props": {"content": 12}}) == []
    assert errs({"type": "text", "props": {"content": "x", "extra": 12}}) == []
    assert errs({"type": "image", "props": {"url": "u", "width": 1.0}}) != []


def test_a_stream_may_end_lost_and_an_unknown_status_is_refused() -> None:
    from pydantic import ValidationError

    from agent_stream.message import StreamEndData

    assert StreamEndData.model_validate({"status": "lost"}).status == "lost"
    with pytest.raises(ValidationError):
        StreamEndData.model_validate({"status": "vanished"})


def test_card_texts_reads_a_custom_cards_texts_and_headings_in_order() -> None:
    from agent_stream.message import card_texts

    root = {
        "type": "section",
        "children": [
            {"type": "heading", "value": "Menu"},
            {"type": "group", "children": [{"type": "text", "value": "Soup"}]},
            {"type": "image", "src": "https://example.invalid/x.png"},
            {"type": "text", "value": "Bread"},
        ],
    }
    assert card_texts(root) == ["Menu", "Soup", "Bread"]
