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
from agent_stream.uagents.hardening import guard_of
from agent_stream.uagents.lanes import CHAT_DIGESTS
from agent_stream.uagents.request import ChatRequest
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
