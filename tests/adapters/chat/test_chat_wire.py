"""Wire helpers: stream ids, the asker's request tags and session helpers."""

from __future__ import annotations

import uuid

from chat_fixtures import encode
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    StartSessionContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters.chat import (
    TAG_KEY,
    conversation_of,
    is_tagged_request,
    opens_session,
    request_tags,
    requested_channels,
    stream_id_for,
)
from agent_stream.message import text


def test_stream_ids_are_valid_uuid4_stable_and_distinct_per_thread_and_message() -> None:
    a = stream_id_for("conv", "T1", "M1")
    assert a == stream_id_for("conv", "T1", "M1")
    assert a.version == 4 and a.variant == uuid.RFC_4122
    StartStreamContent(stream_id=a)  # uagents accepts it
    others = {
        stream_id_for("conv", "T2", "M1"),
        stream_id_for("conv", None, "M1"),
        stream_id_for("conv", "T1", "M2"),
        stream_id_for("conv2", "T1", "M1"),
    }
    assert a not in others and len(others) == 4


def test_request_tags_and_session_helpers() -> None:
    plain_req = ChatMessage(content=[StartSessionContent(), TextContent(text="hi")])
    assert not is_tagged_request(plain_req) and opens_session(plain_req)
    req = ChatMessage(content=[request_tags(channels=["reasoning"]), TextContent(text="hi")])
    assert is_tagged_request(req) and not opens_session(req)
    assert requested_channels(req) == {"reasoning"}
    assert request_tags().metadata[TAG_KEY]
    assert conversation_of(encode([text("x")])[0]) == "conv"
    assert conversation_of(plain_req) is None
