"""question_bytes counts the UTF-8 bytes of every string a question's items carry (not their
types, not the asker's history tag): the same count as measuring each item's ``.dict()``."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    MetadataContent,
    Resource,
    ResourceContent,
    StartSessionContent,
    TextContent,
)

from agent_stream.adapters.chat.wire import request_tags
from agent_stream.uagents.responder._caps import question_bytes


def utf8(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, dict):
        return sum(utf8(k) + utf8(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(utf8(v) for v in value)
    return len(str(value)) if value is not None else 0


def reference(msg: ChatMessage) -> int:
    total = 0
    for item in msg.content:
        fields = item.dict()
        fields.pop("type")
        total += sum(utf8(v) for v in fields.values())
    return total


TEXT = st.text(max_size=20)
ITEM = st.one_of(
    TEXT.map(lambda t: TextContent(text=t)),
    st.dictionaries(TEXT, TEXT, max_size=4).map(lambda d: MetadataContent(metadata=d)),
    st.lists(st.tuples(TEXT, st.dictionaries(TEXT, TEXT, max_size=2)), min_size=1, max_size=3).map(
        lambda rs: ResourceContent(
            resource_id=uuid.uuid4(), resource=[Resource(uri="u:" + u, metadata=m) for u, m in rs]
        )
    ),
    st.just(StartSessionContent()),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(ITEM, max_size=6))
def test_the_bytes_of_every_string_the_items_carry(items: list[Any]) -> None:
    msg = ChatMessage(content=items)
    assert question_bytes(msg) == reference(msg)


def test_the_askers_history_is_not_counted() -> None:
    plain = ChatMessage(content=[request_tags(()), TextContent(text="héllo")])
    with_history = ChatMessage(
        content=[request_tags((), history='[{"role":"user"}]'), TextContent(text="héllo")]
    )
    assert question_bytes(with_history) == question_bytes(plain)
    assert question_bytes(plain) == reference(plain)
