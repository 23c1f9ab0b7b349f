"""A send function for one reply's pump, recording what it delivers: shared by the pump tests."""

from __future__ import annotations

import asyncio

from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat import ChatDecoder
from agent_stream.assemble import Transcript, assemble

__all__ = ["PEER", "Wire"]

PEER = "agent1peer"


class Wire:
    """A send function: records every ChatMessage; fails or stalls when told to."""

    def __init__(self, *, fail: bool = False, delay: float = 0.0) -> None:
        self.sent: list[ChatMessage] = []
        self.attempts = 0
        self.fail = fail
        self.delay = delay
        self.gate: asyncio.Event | None = None

    async def __call__(self, chat: ChatMessage) -> tuple[bool, str]:
        self.attempts += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail:
            return False, "refused"
        self.sent.append(chat)
        return True, "delivered"

    def transcript(self) -> Transcript:
        dec = ChatDecoder()
        msgs = [m for c in self.sent for m in dec.feed(PEER, c, 0.0)]
        return assemble(msgs + dec.close())
