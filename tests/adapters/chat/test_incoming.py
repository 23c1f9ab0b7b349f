"""An incoming ChatMessage read once (adapters/chat/incoming.py): the one pass says exactly what
each of the wire's readers says of the same message, for any mix of items."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    Resource,
    ResourceContent,
    StartSessionContent,
    StartStreamContent,
    TextContent,
)
from uagents_core.contrib.protocols.chat.cards import create_card_response_content

from agent_stream.adapters.chat.acks import asks_coalesced_acks
from agent_stream.adapters.chat.cards import card_response_of
from agent_stream.adapters.chat.incoming import read_chat
from agent_stream.adapters.chat.wire import (
    TAG_KEY,
    control,
    control_of,
    conversation_of,
    ends_session,
    is_tagged_request,
    opens_session,
    requested_channels,
)

_words = st.sampled_from(["", "hi", "Paris.", " "])
_tag = st.fixed_dictionaries(
    {TAG_KEY: st.just("1")},
    optional={
        "conversation": st.sampled_from(["c1", "c2"]),
        "op": st.sampled_from(["resend", "cancel", "keepalive", "other"]),
        "channels": st.sampled_from(["", "reasoning", "reasoning,tools"]),
        "acks": st.sampled_from(["many", "one"]),
    },
)


def _resource() -> ResourceContent:
    return ResourceContent(
        resource_id=uuid.uuid4(),
        resource=Resource(uri="https://example.test/a.png", metadata={"mime_type": "image/png"}),
    )


_item: st.SearchStrategy[Any] = st.one_of(
    _words.map(lambda t: TextContent(text=t)),
    _tag.map(lambda md: MetadataContent(metadata=md)),
    st.just(MetadataContent(metadata={"attachments": "true"})),
    st.just(create_card_response_content(card_id=uuid.uuid4(), selection={"action": "approve"})),
    st.just(StartSessionContent()),
    st.just(EndSessionContent()),
    st.just(StartStreamContent(stream_id=uuid.uuid4())),
    st.just(EndStreamContent(stream_id=uuid.uuid4())),
    st.builds(_resource),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_item, max_size=6))
def test_one_pass_says_what_every_reader_of_the_wire_says(items: list[Any]) -> None:
    chat = ChatMessage(content=items)
    view = read_chat(chat)
    assert view.chat is chat
    assert view.tagged == is_tagged_request(chat)
    assert view.conversation == conversation_of(chat)
    assert (dict(view.op) if view.op is not None else None) == control_of(chat)
    assert view.opens_session == opens_session(chat)
    assert view.ends_session == ends_session(chat)
    assert view.channels == requested_channels(chat)
    assert view.coalesced_acks == asks_coalesced_acks(chat)
    assert view.card_response == card_response_of(chat)
    texts = [i.text for i in items if isinstance(i, TextContent)]
    assert view.has_text == any(texts)
    assert view.answers == (any(texts) or any(isinstance(i, ResourceContent) for i in items))
    assert view.cancels_session == (ends_session(chat) and not any(texts))


def test_a_control_op_is_read_with_its_conversation() -> None:
    view = read_chat(control("cancel", "conv-1"))
    assert view.op is not None and view.op["op"] == "cancel"
    assert view.conversation == "conv-1" and view.tagged and not view.answers
