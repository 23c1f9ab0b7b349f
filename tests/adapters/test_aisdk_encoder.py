"""AISDKEncoder: every chunk checked by the rules of the ``ai`` package's ``processUIMessageStream``
(ported below), and the UI message a client builds equal to what the Assembler says."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_message
from ui_reader import UIReader, read
from wire_corpus import corpus

from agent_stream.adapters.aisdk import DONE, HEADERS, AISDKEncoder, encode_messages, frame_sse
from agent_stream.assemble import assemble
from agent_stream.message import Message, text, tool_call


def texts(r: UIReader, kind: str) -> list[str]:
    return [p["text"] for p in r.parts if p["type"] == kind]


@pytest.mark.parametrize("name", list(corpus()))
def test_corpus_reads_back_as_the_transcript(name: str) -> None:
    msgs = corpus()[name]
    t = assemble(msgs)
    enc = AISDKEncoder()
    chunks = [c for m in msgs for c in enc.feed(m)] + enc.close()
    r = read(chunks)
    assert r.done and chunks[-1] == DONE
    want_text = [m.content for m in t.messages if m.type in ("text", "refusal")]
    got_text = texts(r, "text")
    if name == "rewrites_retypes":
        assert got_text[0].endswith("\n" + want_text[0])
        assert got_text[1:] == want_text[1:]
    else:
        assert got_text == want_text
    assert texts(r, "reasoning") == [m.content for m in t.messages if m.type == "thinking"]
    calls = {p["toolCallId"]: p for p in r.parts if p["type"] == "dynamic-tool"}
    for m in t.messages:
        if m.type == "tool_call":
            p = calls[m.props["id"]]
            assert p["toolName"] == m.props["name"] and p["providerExecuted"] is True
            if t.status == "completed":
                assert p["input"] == json.loads(m.props["arguments"])
            else:
                assert r.partial[m.props["id"]] == m.props["arguments"]
    if name == "recovered_subagent_error":  # the sub-agent's error is a part, not the reply's
        assert [p["data"] for p in r.parts if p["type"] == "data-error"] == [
            {"message": "weather service down", "code": "upstream"}
        ]
    if t.status == "completed":
        assert r.finish == "stop" and not r.errors
    elif t.status == "cancelled":
        assert r.aborted and r.finish is None
    elif t.status == "error":
        assert r.finish == "error" and r.errors == [t.stream_data["error"]]
    else:  # cut: not completed, and said so
        assert (
            r.finish is None
            and r.errors
            and [w.code for w in enc.drain_warnings()] == ["incomplete"]
        )


def test_usage_rides_on_finish_and_is_never_invented() -> None:
    msgs = corpus()["parallel_threads"]
    r = read(encode_messages(msgs))
    assert r.metadata == {
        "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}
    }
    assert read(encode_messages(corpus()["late_tool_names"])).metadata is None


def test_agent_tools_are_provider_executed_with_their_output() -> None:
    r = read(encode_messages(corpus()["tools_only"]))
    (call,) = [p for p in r.parts if p["type"] == "dynamic-tool"]
    assert call == {
        "type": "dynamic-tool",
        "toolCallId": "call_w",
        "toolName": "get_weather",
        "state": "output-available",
        "providerExecuted": True,
        "input": {"city": "Paris"},
        "output": "18°C, clear",
    }
    assert [p["data"] for p in r.parts if p["type"] == "data-loading"] == [
        {"message": "Calling get_weather", "done": True}
    ]


def test_no_tool_call_before_its_name() -> None:
    enc = AISDKEncoder()
    out = enc.feed(
        Message(type="tool_call", message_id="M1", props={"arguments": '{"a":'}, delta=True)
    )
    assert [c["type"] for c in out] == ["start"]
    out = enc.feed(
        Message(
            type="tool_call",
            message_id="M1",
            props={"name": "f", "id": "c1"},
            delta=True,
            delta_action="merge",
        )
    )
    assert out == [
        {
            "type": "tool-input-start",
            "toolCallId": "c1",
            "toolName": "f",
            "providerExecuted": True,
            "dynamic": True,
        },
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a":'},
    ]


def test_a_call_that_never_gets_a_name_is_named_tool_with_a_warning() -> None:
    enc = AISDKEncoder()
    enc.feed(Message(type="tool_call", message_id="M1", props={"arguments": "{}"}, delta=True))
    out = enc.close(status="completed")
    assert out[0]["toolName"] == "tool" and out[0]["toolCallId"] == "call_M1"
    assert "late_tool_name" in [w.code for w in enc.drain_warnings()]


def test_a_name_changed_after_sending_is_warned_about() -> None:
    enc = AISDKEncoder()
    enc.feed(tool_call("c1", "f", "{}", message_id="M1"))
    enc.feed(
        Message(
            type="tool_call",
            message_id="M1",
            props={"name": "g"},
            delta=True,
            delta_path="name",
            delta_action="replace",
        )
    )
    assert [w.code for w in enc.drain_warnings()] == ["rewrite"]


def test_sse_frame_and_header() -> None:
    assert HEADERS == {"x-vercel-ai-ui-message-stream": "v1"}
    out = [frame_sse(c) for c in encode_messages([text("héllo", message_id="M1")])]
    assert out[0] == 'data: {"type":"start","messageId":"msg-agent-stream"}\n\n'
    assert 'data: {"type":"text-delta","id":"M1","delta":"héllo"}\n\n' in out
    assert out[-1] == "data: [DONE]\n\n"


def test_close_with_a_status_ends_as_told() -> None:
    enc = AISDKEncoder()
    enc.feed(text("a", message_id="M1"))
    out = enc.close(status="error", error="boom")
    assert out[-3:] == [
        {"type": "error", "errorText": "boom"},
        {"type": "finish", "finishReason": "error"},
        DONE,
    ]
    assert enc.finished and enc.close() == [] and enc.feed(text("b")) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(any_message(), max_size=25), st.booleans())
def test_any_stream_is_one_the_sdk_accepts(msgs: list[Message], ended: bool) -> None:
    enc = AISDKEncoder()
    chunks = [c for m in msgs for c in enc.feed(m)]
    chunks += enc.close(status="completed" if ended else None)
    r = read(chunks)
    assert r.done
    ids = [
        c["toolCallId"] for c in chunks if isinstance(c, dict) and c["type"] == "tool-input-start"
    ]
    assert len(ids) == len(set(ids)), "a tool call id started twice"


def test_convert_on_the_command_line() -> None:
    from cli_harness import run

    msgs = corpus()["cut_stream"]
    r = run(["convert", "--to", "aisdk"], "".join(m.to_json() + "\n" for m in msgs).encode())
    assert r.code == 0
    chunks = [
        DONE if ln == "data: [DONE]" else json.loads(ln[6:])
        for ln in r.out.decode().split("\n\n")
        if ln
    ]
    assert read(chunks).errors == ["the stream ended before it was complete"]
    assert "warning: incomplete" in r.err


async def test_routing_by_accept_writes_the_ui_stream() -> None:
    from agent_stream.adapters.routing import content_type, format_for, sink_for, writer_for

    assert format_for("aisdk") == "aisdk" and content_type("aisdk") == "text/event-stream"
    sent: list[str] = []
    async with (
        writer_for("aisdk", sent.append, request_id="r1", message_id="m1") as out,
        out.message("text") as m,
    ):
        await m.append("héllo")
    chunks = [DONE if s == "data: [DONE]\n\n" else json.loads(s[6:]) for s in sent]
    r = read(chunks)
    assert chunks[0] == {"type": "start", "messageId": "m1"}
    assert texts(r, "text") == ["héllo"] and r.finish == "stop" and r.done
    cut: list[str] = []
    sink = sink_for("aisdk", cut.append)
    await sink(text("a", message_id="M1"))
    await sink.close()  # no stream_end: not completed
    assert cut[-2:] == [
        'data: {"type":"error","errorText":"the stream ended before it was complete"}\n\n',
        "data: [DONE]\n\n",
    ]


def test_a_failed_tool_result_is_the_parts_error_state() -> None:
    from agent_stream import tool_call, tool_result

    enc = AISDKEncoder()
    msgs = [
        tool_call("c1", "get_weather", '{"city": "Paris"}', message_id="M1"),
        tool_result(
            "c1", "get_weather", "the weather service is down", is_error=True, message_id="M2"
        ),
        tool_call("c2", "get_time", "{}", message_id="M3"),
        tool_result("c2", "get_time", "noon", message_id="M4"),
    ]
    chunks = [c for m in msgs for c in enc.feed(m)] + enc.close()
    parts = {(c.get("type"), c.get("toolCallId")): c for c in chunks if isinstance(c, dict)}
    failed = parts[("tool-output-error", "c1")]
    assert failed["errorText"] == "the weather service is down"
    assert ("tool-output-available", "c1") not in parts
    assert parts[("tool-output-available", "c2")]["output"] == "noon"


def _bstart(bid: str, type_: str, **data: Any) -> Message:
    from agent_stream.message import event

    return event("block_start", {"block_id": bid, "type": type_, **data}, block_id=bid)


def _bend(bid: str, status: str = "completed") -> Message:
    from agent_stream.message import event

    return event("block_end", {"block_id": bid, "status": status}, block_id=bid)


def test_a_recovered_sub_agent_error_is_a_data_part_and_the_reply_finishes() -> None:
    from agent_stream.message import error, event

    msgs = [
        _bstart("A1", "agent", agent_name="Weather"),
        _bstart("B2", "llm", parent_block_id="A1"),  # nested in the sub-agent
        text("Checking", message_id="M1", block_id="B2"),
        error("weather service down", code="upstream", block_id="B2"),
        _bend("B2", "error"),
        _bend("A1", "error"),
        text("Without it.", message_id="M2"),
        event("stream_end", {"status": "completed"}),
    ]
    chunks = encode_messages(msgs)
    r = read(chunks)
    assert not r.errors and r.finish == "stop"
    shown = [(p["type"], p.get("text") or p.get("data")) for p in r.parts]
    assert [s for s in shown if "step" not in s[0]] == [
        ("text", "Checking"),
        ("data-error", {"message": "weather service down", "code": "upstream"}),
        ("text", "Without it."),
    ]
    assert not any(c.get("type") == "error" for c in chunks if isinstance(c, dict))


@pytest.mark.parametrize(
    "before",
    [
        [],  # the reply's own error
        [_bstart("L1", "llm")],  # a block that is no sub-agent
        [_bstart("L1", "agent"), _bend("L1")],  # a sub-agent that has ended
        [_bstart("L1", "llm", parent_block_id="L1")],  # its own parent, no agent
    ],
)
def test_an_error_outside_an_open_sub_agent_is_still_the_replys_error(
    before: list[Message],
) -> None:
    from agent_stream.message import error, event

    failed = event("stream_end", {"status": "error", "error": "boom"})
    r = read(encode_messages([*before, error("boom", block_id="L1"), failed]))
    assert r.errors == ["boom"] and r.finish == "error"
    assert not [p for p in r.parts if p["type"] == "data-error"]
