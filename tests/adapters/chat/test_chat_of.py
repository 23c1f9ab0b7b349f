"""chat_of makes the ChatMessage ChatMessage(content=...) makes, without pydantic's walk of the
content union: the same wire JSON, read back the same by uagents' own model, and no TypeError
(traceback, frames) left for the garbage collector by each question or delivery op."""

from __future__ import annotations

import gc
import json
import uuid
from collections.abc import Iterator
from datetime import datetime

import pytest
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    MetadataContent,
    StartSessionContent,
    TextContent,
)

from agent_stream.adapters.chat.wire import chat_of, control
from agent_stream.uagents.asker._client import build_question


def items() -> list[object]:
    return [
        StartSessionContent(),
        MetadataContent(metadata={"agent_stream": "1", "op": "x"}),
        TextContent(text="How do agents stream?"),
    ]


def test_the_same_chat_message_as_the_validated_one() -> None:
    mid = uuid.uuid4()
    made = chat_of(items(), msg_id=mid)  # type: ignore[arg-type]
    validated = ChatMessage(content=items(), msg_id=mid, timestamp=made.timestamp)
    assert made.json() == validated.json()
    back = ChatMessage.parse_raw(made.json())
    assert back == validated and isinstance(made.timestamp, datetime)
    assert made.timestamp.tzinfo is not None
    assert chat_of([]).msg_id != chat_of([]).msg_id  # a fresh id each


@pytest.fixture
def garbage() -> Iterator[list[object]]:
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_a_question_and_a_delivery_op_leave_nothing_to_collect(garbage: list[object]) -> None:
    for i in range(20):
        q = build_question(f"question {i}", channels={"reasoning"})
        op = control("keepalive", "conv", high=str(i))
    gc.collect()
    assert garbage == []
    assert json.loads(q.json())["content"][-1] == {"type": "text", "text": "question 19"}
    assert op.content[0].metadata["op"] == "keepalive"  # type: ignore[union-attr]
