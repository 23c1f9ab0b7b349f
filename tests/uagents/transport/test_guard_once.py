"""The guard validates a ChatMessage once (each content item with its own model, the other
fields with ChatMessage's own rules) and accepts exactly what uagents' parse accepts, for
payloads whose items name a known type (others the guard refuses before uagents would)."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from inprocess_agents import Pair
from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.uagents import StreamingChat, _compat
from agent_stream.uagents._protection import guard_of
from agent_stream.uagents._request import ChatRequest
from agent_stream.uagents.transport._lanes import CHAT_DIGESTS
from agent_stream.writer import StreamWriter

MISSING = object()
U4 = str(uuid.uuid4())
TIMESTAMPS = [
    "2026-01-01T00:00:00+00:00",
    "2026-01-01",
    "",
    None,
    0,
    1.5e9,
    "soon",
    {"a": 1},
    [1],
    True,
]
MSG_IDS = [
    U4,
    str(uuid.uuid1()),
    str(uuid.uuid5(uuid.NAMESPACE_DNS, "x")),
    "",
    None,
    0,
    "not-a-uuid",
    7,
    U4.upper(),
    False,
]
ITEMS = [
    {"type": "text", "text": "hi"},
    {"type": "text", "text": 3},
    {"type": "text"},
    {"type": "metadata", "metadata": {"a": "b"}},
    {"type": "metadata", "metadata": {"a": None}},
    {"type": "metadata", "metadata": {"a": 1}},
    {"type": "start-session"},
    {"type": "end-session"},
    {"type": "start-stream", "stream_id": U4},
    {"type": "start-stream", "stream_id": str(uuid.uuid1())},
    {"type": "end-stream", "stream_id": "x"},
    {"type": "resource", "resource_id": U4, "resource": {"uri": "u", "metadata": {}}},
    {"type": "resource", "resource_id": U4, "resource": []},
    {"type": "text", "text": "x", "extra": 1},
]


async def respond(request: ChatRequest, out: StreamWriter) -> None:
    await out.text("x")


def uagents_accepts(payload: str) -> bool:
    try:
        ChatMessage.parse_raw(payload)
    except Exception:
        return False
    return True


@st.composite
def payloads(draw: Any) -> str:
    data: dict[str, Any] = {}
    ts = draw(st.sampled_from([MISSING, *TIMESTAMPS]))
    if ts is not MISSING:
        data["timestamp"] = ts
    mid = draw(st.sampled_from([MISSING, *MSG_IDS]))
    if mid is not MISSING:
        data["msg_id"] = mid
    data["content"] = draw(st.lists(st.sampled_from(ITEMS), max_size=4))
    return json.dumps(data)


def test_the_guard_accepts_exactly_what_uagents_parses() -> None:
    async def run() -> None:
        pair = Pair()
        try:
            agent = pair.add("guard once agent seed", StreamingChat(respond))
            guard = guard_of(agent)
            assert guard is not None
            digest = min(d for d in CHAT_DIGESTS if _compat.models_of(agent).get(d) is ChatMessage)

            @settings(max_examples=400, deadline=None)
            @given(payloads())
            def agree(payload: str) -> None:
                ours = guard.check(digest, payload) is None
                assert ours == uagents_accepts(payload), (payload, guard.check(digest, payload))

            agree()
        finally:
            await pair.close()

    asyncio.run(run())


# Timestamps of the isoformat shape, with any digits (so also impossible dates and times),
# and ids of every UUID version and case: where the guard's fast path takes one, it must give
# what pydantic v1 gives; where pydantic refuses one, the fast path must not take it.
_D = st.integers(0, 9).map(str)
_SHAPED = st.builds(
    lambda y, mo, d, h, mi, s, frac, off: f"{y}-{mo}-{d}T{h}:{mi}:{s}{frac}{off}",
    st.text("0123456789", min_size=4, max_size=4),
    st.sampled_from(["01", "02", "12", "13", "00", "09"]),
    st.sampled_from(["01", "28", "29", "30", "31", "32", "00"]),
    st.sampled_from(["00", "12", "23", "24"]),
    st.sampled_from(["00", "59", "60"]),
    st.sampled_from(["00", "59", "60", "61"]),
    st.sampled_from(["", ".000000", ".123456", ".999999", ".12345", ".1234567"]),
    st.sampled_from(["", "+00:00", "-00:00", "+05:30", "-12:00", "+24:00", "Z", "+0530"]),
)
_IDS = st.one_of(
    st.uuids().map(str),
    st.uuids(version=4).map(str),
    st.uuids(version=4).map(lambda u: str(u).upper()),
    st.uuids(version=1).map(str),
    st.sampled_from(["", "x", "0" * 32, "{" + U4 + "}"]),
)


def _v1(model: Any, data: dict[str, Any]) -> Any:
    try:
        return model.parse_obj(data)
    except Exception:
        return None


@settings(max_examples=600, deadline=None)
@given(
    ts=st.one_of(_SHAPED, st.sampled_from(TIMESTAMPS)),
    mid=_IDS,
    md=st.sampled_from([MISSING, None, {}, {"a": "b"}, {"a": 1}, ["x"]]),
    extra=st.booleans(),
)
def test_the_fast_parse_of_an_ack_and_a_chat_head_is_pydantics_own(
    ts: Any, mid: str, md: Any, extra: bool
) -> None:
    from uagents_core.contrib.protocols.chat import ChatAcknowledgement

    from agent_stream.uagents.transport._guard import _plain_ack, _stamp_and_id

    ack: dict[str, Any] = {"timestamp": ts, "acknowledged_msg_id": mid}
    if md is not MISSING:
        ack["metadata"] = md
    if extra:
        ack["more"] = "x"
    theirs = _v1(ChatAcknowledgement, ack)
    ours = _plain_ack(ack)
    if ours is not None:  # taken: exactly what pydantic makes of it
        assert theirs is not None, ack
        assert ours.__dict__ == theirs.__dict__ and ours.__fields_set__ == theirs.__fields_set__
        assert ours.timestamp.utcoffset() == theirs.timestamp.utcoffset()
    head = _stamp_and_id(ts, mid)
    chat = _v1(ChatMessage, {"timestamp": ts, "msg_id": mid, "content": []})
    if head is not None:
        assert chat is not None, (ts, mid)
        assert head == (chat.timestamp, chat.msg_id)
        assert head[0].utcoffset() == chat.timestamp.utcoffset()


def test_the_fast_parse_takes_what_uagents_and_agent_stream_send() -> None:
    from datetime import datetime, timezone

    from uagents_core.contrib.protocols.chat import ChatAcknowledgement

    from agent_stream.uagents._chat_json import chat_json
    from agent_stream.uagents.transport._guard import _plain_ack, _stamp_and_id

    for when in (datetime.now(timezone.utc), datetime(2026, 1, 2, 3, 4, 5)):
        ack = ChatAcknowledgement(timestamp=when, acknowledged_msg_id=uuid.uuid4())
        for text in (chat_json(ack), ack.json()):
            data = json.loads(text)
            assert _plain_ack(data) is not None, text
            assert _stamp_and_id(data["timestamp"], data["acknowledged_msg_id"]) is not None
