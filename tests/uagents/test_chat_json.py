"""chat_json writes a chat model's body byte for byte as pydantic v1's ``.json()`` (what uagents
sends and signs), for every content item the chat protocol has; other models go the usual way."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
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
from uagents_core.models import Model

from agent_stream.uagents._chat_json import chat_from_json, chat_json

texts = st.text(max_size=40)
string_dicts = st.dictionaries(texts, texts, max_size=4)
uuid4s = st.uuids(version=4)
items = st.one_of(
    texts.map(lambda t: TextContent(text=t)),
    string_dicts.map(lambda m: MetadataContent(metadata=m)),
    st.just(StartSessionContent()),
    st.just(EndSessionContent()),
    uuid4s.map(lambda u: StartStreamContent(stream_id=u)),
    uuid4s.map(lambda u: EndStreamContent(stream_id=u)),
    st.builds(
        lambda u, uri, m: ResourceContent(resource_id=u, resource=Resource(uri=uri, metadata=m)),
        uuid4s,
        texts,
        string_dicts,
    ),
)
timestamps = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(timezone.utc)
) | st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1))


@given(st.lists(items, max_size=6), uuid4s, timestamps)
def test_a_chatmessage_is_written_as_pydantic_writes_it(
    content: list[Any], msg_id: uuid.UUID, ts: datetime
) -> None:
    chat = ChatMessage(content=content, msg_id=msg_id, timestamp=ts)
    assert chat_json(chat) == chat.json()


@given(st.lists(items, max_size=6), uuid4s, timestamps)
def test_a_chatmessage_kept_as_json_comes_back_the_same(
    content: list[Any], msg_id: uuid.UUID, ts: datetime
) -> None:
    """A reply's replay buffer keeps JSON: what a repair sends again is what went first."""
    chat = ChatMessage(content=content, msg_id=msg_id, timestamp=ts)
    again = chat_from_json(chat_json(chat))
    assert again == chat and chat_json(again) == chat_json(chat)


@given(uuid4s, st.none() | string_dicts, timestamps)
def test_an_acknowledgement_is_written_as_pydantic_writes_it(
    msg_id: uuid.UUID, metadata: dict[str, str] | None, ts: datetime
) -> None:
    ack = ChatAcknowledgement(acknowledged_msg_id=msg_id, metadata=metadata, timestamp=ts)
    assert chat_json(ack) == ack.json()


def test_models_built_without_validation_and_other_models_are_written_the_usual_way() -> None:
    odd = ChatMessage.construct(
        timestamp=datetime.now(timezone.utc),
        msg_id=str(uuid.uuid4()),  # a string where a UUID belongs
        content=(TextContent(text="a"),),  # a tuple
    )
    assert chat_json(odd) == odd.json()
    loose = ChatMessage.construct(content=[TextContent(text="a")])  # fields missing
    assert chat_json(loose) == loose.json()

    class Other(Model):  # type: ignore[misc]
        n: int

    assert chat_json(Other(n=3)) == Other(n=3).json()


def test_json_kept_for_a_send_is_reused_for_that_very_chatmessage_only() -> None:
    """The pump writes a ChatMessage's JSON for its replay buffer, then sends it: the send
    reuses that JSON; an equal ChatMessage of its own (or one not kept) is written afresh."""
    mid = uuid.uuid4()
    ts = datetime(2026, 1, 1, tzinfo=timezone.utc)
    first = ChatMessage(content=[TextContent(text="kept")], msg_id=mid, timestamp=ts)
    twin = ChatMessage(content=[TextContent(text="kept")], msg_id=mid, timestamp=ts)
    kept = chat_json(first, keep=True)
    assert kept == first.json()
    assert chat_json(first) is kept  # the send: no second write
    again = chat_json(twin)
    assert again == kept and again is not kept
    other = ChatMessage(content=[TextContent(text="another")])
    assert chat_json(other) == other.json()
    assert chat_json(first) is kept  # still the last one kept
    chat_json(other, keep=True)
    assert chat_json(first) is not kept and chat_json(first) == kept
