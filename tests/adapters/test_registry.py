"""The wire registry: each wire described once, and every way in (routing by accept, the CLI)
writes the same bytes for it."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from agent_stream.adapters import registry
from agent_stream.adapters.registry import CONTENT_TYPES
from agent_stream.adapters.routing import ACCEPT, content_type, format_for, sink_for, writer_for
from agent_stream.cli import build_parser
from agent_stream.commands.formats import FORMATS
from agent_stream.errors import WireError
from agent_stream.message import Message, event, text, tool_call
from agent_stream.writer import StreamWriter

MSGS = [
    event("stream_start", {"request_id": "r1"}),
    text("Hi ", message_id="M1"),
    Message(type="text", message_id="M1", delta=True, props={"content": "there. "}),
    tool_call("c1", "lookup", '{"q": "x"}', message_id="M2"),
    Message(type="text", message_id="M3", props={"content": "Done."}),
    event(
        "stream_end", {"status": "completed", "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
    ),
]


def choices(command: str, dest: str) -> set[str]:
    """The choices the real command line offers for ``command``'s ``dest``."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if a.dest == dest)
    assert action.choices is not None
    return set(action.choices)


def test_the_command_line_and_routing_offer_exactly_the_registrys_wires() -> None:
    names = set(registry.names())
    assert names == {"chat", "openai", "cui", "channels", "agui", "aisdk", "a2a"}
    assert choices("convert", "to") == names == set(FORMATS)
    assert choices("decode", "source") == set(registry.decoders()) == {"chat", "openai", "a2a"}
    assert {format_for(n) for n in names} == names  # every name is an accept value
    assert set(ACCEPT.values()) <= names
    assert ACCEPT == {
        "standard": "openai",
        "cui-web": "cui",
        "cui-native": "cui",
        "cui-desktop": "cui",
        "agui": "agui",
        "channels": "channels",
    }


@pytest.mark.parametrize("wire", registry.wires(), ids=lambda w: w.name)
def test_each_wire_is_whole(wire: registry.Wire) -> None:
    enc = wire.make_encoder()
    assert callable(enc.feed) and callable(enc.close) and enc.drain_warnings() == []
    for framing in wire.frames:
        assert callable(wire.frame(framing))
        assert wire.content_type(framing) == CONTENT_TYPES[framing]
    for accept, framing in wire.accept.items():
        assert registry.resolve(accept) == (wire, framing or wire.framing)
    if wire.decoder is not None:
        assert callable(wire.make_decoder().feed_line)
    with pytest.raises(TypeError, match="unknown encoder option"):
        wire.make_encoder(no_such_option=1)


@pytest.mark.parametrize("name", registry.names())
async def test_routing_writes_what_convert_writes(name: str) -> None:
    written: list[str] = []
    sink = sink_for(name, written.append)
    for m in MSGS:
        await sink(m)
    await sink.close()
    encode = FORMATS[name].encoder
    assert encode is not None
    assert "".join(written) == "".join(encode(iter(MSGS), None))
    assert sink.content_type == content_type(name)


@pytest.mark.parametrize("name", registry.decoders())
async def test_writer_for_every_readable_wire_reads_back(name: str) -> None:
    """chat and a2a are routed by accept too (they were only the CLI's before)."""
    written: list[str] = []
    async with (
        writer_for(name, written.append, request_id="q1") as out,
        out.block("llm", label="A") as b,
        b.message("text") as m,
    ):
        await m.append("Hi ")
        await m.append("there.")
    decoder = registry.wire_named(name).make_decoder()
    lines = "".join(written).splitlines()
    got = [x for line in lines for x in decoder.feed_line(line)] + decoder.close()
    from agent_stream.assemble import assemble

    t = assemble(got)
    assert t.text() == "Hi there." and t.status == "completed"


async def test_a_native_stream_closed_with_a_status_says_so_even_when_empty() -> None:
    """A reply stopped before its first Message still ends its native stream with a status."""
    written: list[str] = []
    sink = sink_for("cui-native", written.append)
    await sink.close(status="cancelled", error="stopped")
    assert [Message.from_json(x).props for x in written] == [
        {"event": "stream_end", "data": {"status": "cancelled", "error": "stopped"}}
    ]
    quiet: list[str] = []
    await sink_for("cui-native", quiet.append).close()  # no status, nothing sent: nothing
    assert quiet == []


def test_bad_lookups_say_what_is_known() -> None:
    with pytest.raises(WireError, match=r"unknown accept 'xml'; known: .*chat.*a2a"):
        registry.resolve("xml")
    with pytest.raises(WireError, match="unknown wire 'native'"):
        registry.wire_named("native")
    with pytest.raises(WireError, match="openai is not written as jsonl"):
        registry.wire_named("openai").frame("jsonl")
    with pytest.raises(WireError, match="cui cannot be decoded"):
        registry.wire_named("cui").make_decoder()


async def test_a_stream_writer_through_each_wire_ends_it_on_error() -> None:
    for name in registry.names():
        written: list[Any] = []
        with pytest.raises(ValueError):
            async with StreamWriter(sink_for(name, written.append)) as out:
                await out.text("partial")
                raise ValueError("broken")
        assert written, name
