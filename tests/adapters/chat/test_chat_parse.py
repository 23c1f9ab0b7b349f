"""parse_chat: ChatMessage JSON validated as uagents validates it."""

from __future__ import annotations

import json

import pytest
from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent, TextContent

from agent_stream.adapters.chat import parse_chat
from agent_stream.errors import WireError


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "not JSON"),
        ("[]", "must be a JSON object"),
        ('{"content": [], "extra": 1}', "unknown field(s) 'extra'"),
        ('{"msg_id": "0b0e6f5c-8d0a-4a55-9a1d-3f2b2c1d4e5f"}', "missing field 'content'"),
        (
            '{"content": [{"type": "text", "text": "x", "stream_id": "y"}]}',
            "content.0 (text): unknown field(s) 'stream_id'",
        ),
        (
            '{"content": [{"type": "start-stream", "stream_id": "c232ab00-9414-11ec-b3c8-9e6bdeced846"}]}',
            "uuid version 4 expected",
        ),
        ('{"content": [{"type": "video-frame"}]}', "unknown content type 'video-frame'"),
        (
            '{"content": [{"type": "metadata", "metadata": {"a": null}}]}',
            "content.0.metadata.a: none is not an allowed value",
        ),
        ('{"content": [], "msg_id": "nope"}', "msg_id: value is not a valid uuid"),
    ],
)
def test_parse_chat_reports_what_uagents_would_reject(line: str, reason: str) -> None:
    with pytest.raises(WireError) as info:
        parse_chat(line)
    assert reason in str(info.value)
    assert "\n" not in str(info.value)


def test_parse_chat_round_trips_valid_messages() -> None:
    c = ChatMessage(content=[TextContent(text="hi"), MetadataContent(metadata={"k": "v"})])
    assert parse_chat(c.json()).json() == c.json()
    assert parse_chat(json.loads(c.json())) == c
