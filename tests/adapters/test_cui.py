"""CUIEncoder: the native Message JSON, as JSONL or SSE, exactly the spec's shape."""

from __future__ import annotations

import asyncio

from agent_stream.adapters.cui import (
    CUIEncoder,
    encode_messages,
    frame_jsonl,
    frame_sse,
)
from agent_stream.assemble import assemble
from agent_stream.commands.formats import encode_cui as cli_encode
from agent_stream.message import Message, event, text, tool_call
from agent_stream.writer import StreamWriter, collect


async def _reply(out: StreamWriter) -> None:
    async with out.block("llm") as b:
        async with b.message("text") as m:
            await m.append("Hello")
            await m.append(", world")
        await b.send(tool_call(id="c1", name="f", arguments="{}"))


def test_jsonl_lines_are_the_messages_themselves() -> None:
    msgs = asyncio.run(collect(_reply))
    out = [frame_jsonl(m) for m in encode_messages(msgs)]
    assert len(out) == len(msgs)
    assert out == [m.to_json() + "\n" for m in msgs]
    back = [Message.from_json(line) for line in out]
    assert back == msgs
    assert assemble(back).to_dict() == assemble(msgs).to_dict()


def test_the_spec_example_keeps_its_exact_shape() -> None:
    chunk = {
        "chunk_id": "C1",
        "message_id": "M1",
        "type": "text",
        "delta": True,
        "props": {"content": "Hello"},
    }
    [item] = CUIEncoder().feed(Message.from_dict(chunk))
    line = frame_jsonl(item)
    assert (
        line == '{"type":"text","props":{"content":"Hello"},"chunk_id":"C1",'
        '"message_id":"M1","delta":true}\n'
    )


def test_sse_events_carry_one_message_each() -> None:
    msgs = asyncio.run(collect(_reply))
    out = [frame_sse(m) for m in encode_messages(msgs)]
    assert all(s.startswith("data: ") and s.endswith("\n\n") for s in out)
    assert [Message.from_json(s[6:-2]) for s in out] == msgs


def test_close_adds_the_final_stream_end_only_when_missing() -> None:
    enc = CUIEncoder()
    enc.feed(text("hi", message_id="M1"))
    [end] = enc.close(status="error", error="cut")
    m = Message.from_json(frame_jsonl(end))
    assert m.event == "stream_end" and m.event_data == {"status": "error", "error": "cut"}
    assert enc.close() == [] and enc.feed(text("late")) == []
    ended = CUIEncoder()
    ended.feed(event("stream_end", {"status": "completed"}))
    assert ended.close() == []
    assert CUIEncoder().close() == []


def test_cli_encode_honours_sse() -> None:
    class Args:
        sse = True

    out = list(cli_encode([text("a", message_id="M1")], Args()))
    assert out[0].startswith("data: {") and out[-1].startswith('data: {"type":"event"')


def test_close_without_a_status_ends_the_stream_as_an_incomplete_error() -> None:
    enc = CUIEncoder()
    enc.feed(text("hi", message_id="M1"))
    [end] = enc.close()
    assert end.event == "stream_end" and end.event_data["status"] == "error"
    assert "incomplete" in end.event_data["error"]
    assert [w.code for w in enc.drain_warnings()] == ["incomplete"]
