"""What the replay model answers, assembled locally: what the integration tests compare an agent's
reply with (test_chat_agents.py, test_hostile_peers.py, test_relay_agents.py)."""

from __future__ import annotations

import asyncio

from agent_stream.assemble import Transcript, assemble
from agent_stream.sources.replay import ReplayModel
from agent_stream.writer import collect

QUESTION = "How should agents stream their output?"


def replay_transcript(question: str, reasoning: bool = True) -> Transcript:
    """What a replay leaf writes for ``question`` (without its thinking unless ``reasoning``)."""
    model = ReplayModel(rate=0)
    msgs = asyncio.run(collect(lambda out: model(question, out)))
    if not reasoning:
        thinking = {m.message_id for m in msgs if m.type == "thinking"}
        msgs = [
            m
            for m in msgs
            if m.message_id not in thinking and (m.event_data.get("message_id") not in thinking)
        ]
    return assemble(msgs)
