"""Encoders return wire objects; framing makes the text, the same text for every caller."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_stream.adapters import agui, channels, cui, openai
from agent_stream.adapters.framing import Encoder, Framed, frame_all, jsonl, run_encoder, sse
from agent_stream.adapters.routing import encoder_for, frame_for
from agent_stream.message import Message, event, text, tool_call

MSGS = [
    event("stream_start", {"request_id": "r1"}),
    text("Hi ", message_id="M1"),
    Message(type="text", message_id="M1", delta=True, props={"content": "there"}),
    tool_call("c1", "f", "{}", message_id="M2"),
    event(
        "stream_end", {"status": "completed", "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
    ),
]


def test_sse_and_jsonl_frames() -> None:
    assert sse('{"a":1}') == 'data: {"a":1}\n\n'
    assert jsonl({"é": [1, None]}) == '{"é":[1,null]}\n'


@pytest.mark.parametrize("accept", ["standard", "agui", "channels", "cui-native", "cui-web"])
def test_framed_encoder_writes_what_the_cli_writes(accept: str) -> None:
    framed = Framed(encoder_for(accept), frame_for(accept))
    text_out = [s for m in MSGS for s in framed.feed(m)] + framed.close()
    assert framed.finished and framed.close() == []
    again = frame_all(run_encoder(encoder_for(accept), MSGS), frame_for(accept))
    assert text_out == again
    assert all(isinstance(s, str) and s for s in text_out)


def test_every_encoder_returns_one_kind_of_wire_object() -> None:
    kinds: dict[str, tuple[type, ...]] = {
        "standard": (openai.Chunk, openai.UsageChunk, openai.ErrorObject, openai.Done),
        "agui": (agui.BaseEvent,),
        "channels": (dict,),
        "cui": (Message,),
    }
    for accept, allowed in kinds.items():
        enc: Encoder[Any] = encoder_for(accept)
        items = list(run_encoder(enc, MSGS))
        assert items and all(isinstance(i, allowed) for i in items), accept
        assert enc.drain_warnings() == []


def test_openai_items_serialise_to_their_data() -> None:
    items = openai.encode_messages(MSGS, include_usage=True)
    for i in items:
        if isinstance(i, openai.Done):
            assert i.json() == "[DONE]" == i.data()
        else:
            assert json.loads(i.json()) == i.data()
    assert isinstance(items[-1], openai.Done) and isinstance(items[-2], openai.UsageChunk)


def test_channel_events_frame_as_their_json_line() -> None:
    for e in channels.encode_messages(MSGS):
        assert json.loads(channels.frame_jsonl(e)) == e


def test_cui_frames_are_the_message_json() -> None:
    [m] = cui.CUIEncoder().feed(MSGS[1])
    assert cui.frame_jsonl(m) == m.to_json() + "\n" and cui.frame_sse(m) == sse(m.to_json())
