"""Routing by accept: the writer/sink picks the wire (spec 002's routing table)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui.core import Event, EventType
from openai.types.chat import ChatCompletionChunk
from pydantic import TypeAdapter

from agent_stream.adapters.agui import AGUIEncoder
from agent_stream.adapters.channels import ChannelsEncoder
from agent_stream.adapters.cui import CUIEncoder
from agent_stream.adapters.openai import OpenAIEncoder
from agent_stream.adapters.routing import (
    ACCEPT,
    content_type,
    encoder_for,
    format_for,
    frame_for,
    sink_for,
    writer_for,
)
from agent_stream.errors import WireError
from agent_stream.message import Message


def test_the_routing_table() -> None:
    assert ACCEPT == {
        "standard": "openai",
        "cui-web": "cui",
        "cui-native": "cui",
        "cui-desktop": "cui",
        "agui": "agui",
        "channels": "channels",
    }
    assert format_for(None) == format_for("") == format_for("Standard") == "openai"
    assert format_for("agui") == "agui" and format_for("cui") == "cui"
    with pytest.raises(WireError, match="unknown accept"):
        format_for("xml")
    assert isinstance(encoder_for("standard"), OpenAIEncoder)
    assert isinstance(encoder_for("cui-desktop"), CUIEncoder)
    assert isinstance(encoder_for("agui"), AGUIEncoder)
    assert isinstance(encoder_for("channels"), ChannelsEncoder)
    assert content_type("standard") == content_type("agui") == "text/event-stream"
    assert content_type("cui-web") == "text/event-stream"
    assert content_type("cui-native") == content_type("channels") == "application/x-ndjson"


def test_options_go_to_the_format_that_knows_them() -> None:
    enc = encoder_for("standard", model="m1", include_usage=True, channels="text", sse=True)
    assert isinstance(enc, OpenAIEncoder) and enc.model == "m1" and enc.include_usage
    ch = encoder_for("channels", channels="text", model="ignored")
    assert isinstance(ch, ChannelsEncoder) and ch.channels == {"text", "error"}
    one = Message(type="text", message_id="M1", props={"content": "x"})
    assert frame_for("cui-web")(one).startswith("data: {")
    assert frame_for("cui-native")(one).startswith("{")
    assert frame_for("cui-native", sse=True)(one).startswith("data: {")
    with pytest.raises(TypeError, match="unknown encoder option"):
        encoder_for("standard", modle="typo")


async def body(out: Any) -> None:
    async with out.block("llm", label="A") as b, b.message("text") as m:
        await m.append("Hi ")
        await m.append("there")


def parse(accept: str, written: list[str]) -> str:
    """Parse what was written with the format's own reader; return the text it carries."""
    fmt = format_for(accept)
    blob = "".join(written)
    if fmt == "openai":
        text = ""
        datas = [ln[6:] for ln in blob.split("\n") if ln.startswith("data: ")]
        assert datas[-1] == "[DONE]"
        for d in datas[:-1]:
            c = ChatCompletionChunk.model_validate_json(d)
            text += "".join(ch.delta.content or "" for ch in c.choices)
        return text
    if fmt == "agui":
        ta = TypeAdapter(Event)
        events = [ta.validate_json(ln[6:]) for ln in blob.split("\n") if ln.startswith("data:")]
        assert events[0].type == EventType.RUN_STARTED
        assert events[-1].type == EventType.RUN_FINISHED
        return "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)
    if fmt == "channels":
        evs = [json.loads(ln) for ln in blob.splitlines()]
        assert evs[-1]["type"] == "stream.end"
        return "".join(e["data"]["content"] for e in evs if e["type"] == "message.delta")
    lines = [ln[6:] if ln.startswith("data: ") else ln for ln in blob.split("\n") if ln]
    msgs = [Message.from_json(ln) for ln in lines]
    assert msgs[-1].event == "stream_end"
    return "".join((m.props or {}).get("content", "") for m in msgs if m.type == "text")


@pytest.mark.parametrize(
    "accept", ["standard", "cui-web", "cui-native", "cui-desktop", "agui", "channels"]
)
async def test_writer_for_streams_each_accept_in_its_own_wire(accept: str) -> None:
    written: list[str] = []

    async def write(s: str) -> None:
        written.append(s)

    async with writer_for(accept, write, request_id="r1") as out:
        await body(out)
    assert parse(accept, written) == "Hi there"
    if accept == "cui-web":
        assert all(s.startswith("data: ") for s in written)
    if accept == "cui-native":
        assert all(s.startswith("{") for s in written)


async def test_a_failing_writer_still_ends_the_wire() -> None:
    written: list[str] = []

    async def write(s: str) -> None:
        written.append(s)

    with pytest.raises(ValueError):
        async with writer_for("standard", write) as out, out.message("text") as m:
            await m.append("partial")
            raise ValueError("broken")
    assert written[-1] == "data: [DONE]\n\n"
    assert json.loads(written[-2][6:])["error"]["message"] == "ValueError: broken"


async def test_a_sink_closed_by_hand_ends_the_wire_once() -> None:
    written: list[str] = []

    async def write(s: str) -> None:
        written.append(s)

    sink = sink_for("agui", write)
    await sink(Message(type="text", message_id="M1", props={"content": "x"}))
    await sink.close(status="completed")
    await sink.close()
    assert sink.finished and sink.content_type == "text/event-stream"
    assert '"RUN_FINISHED"' in written[-1] and sum('"RUN_FINISHED"' in w for w in written) == 1


async def test_a_sink_closed_without_a_status_ends_the_wire_as_incomplete() -> None:
    written: list[str] = []
    sink = sink_for("agui", written.append)
    await sink(Message(type="text", message_id="M1", props={"content": "x"}))
    await sink.close()
    assert '"RUN_ERROR"' in written[-1] and '"code":"incomplete"' in written[-1]
    assert [w.code for w in sink.encoder.drain_warnings()] == ["incomplete"]


async def test_writer_for_takes_a_plain_write_function_too() -> None:
    import io

    buf = io.StringIO()
    async with writer_for("standard", buf.write) as out:
        await out.text("Hello!")
    lines = [ln for ln in buf.getvalue().split("\n\n") if ln]
    assert '"content":"Hello!"' in lines[0]
    assert '"finish_reason":"stop"' in lines[-2] and lines[-1] == "data: [DONE]"
