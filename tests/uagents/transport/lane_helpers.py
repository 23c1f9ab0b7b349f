"""Envelopes for a PeerDispenser's lanes, posted as an agent's context would: shared by the lane
tests."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from uagents_core.envelope import Envelope

from agent_stream.uagents.transport._lanes import CHAT_DIGESTS, PeerDispenser

__all__ = ["CHAT", "A", "B", "envelope", "post"]

CHAT = min(CHAT_DIGESTS)
A, B = "agent1" + "a" * 59, "agent1" + "b" * 59


def envelope(target: str, payload: str, digest: str = CHAT) -> Envelope:
    env = Envelope(
        version=1,
        sender="agent1" + "s" * 59,
        target=target,
        session=uuid.uuid4(),
        schema_digest=digest,
    )
    env.encode_payload(payload)
    return env


def post(
    d: PeerDispenser, target: str, url: str, payload: str, digest: str = CHAT
) -> asyncio.Future[Any]:
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    d.add_envelope(envelope(target, payload, digest), [url], fut)
    return fut
