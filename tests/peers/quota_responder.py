"""A responder whose replies follow a per-peer quota: an agent_stream agent answering every
question with :func:`answer_for` (a long text with non-ASCII characters, written word by word).

Flags: ``--rate`` (``PeerQuota.messages_per_second`` for every peer), ``--max-envelope``
(``max_envelope_bytes``); without them the defaults (a peer reached through Agentverse gets the
Agentverse preset). ``--peer ADDRESS=URL`` names where a peer is reached. Prints ``READY
<address>`` once it listens. Public API only.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from typing import Any

from agent_stream.uagents import (
    ChatSettings,
    PeerQuota,
    StreamingChat,
    local_agent,
    parse_peers,
    run_agent,
)

WORDS = (
    "Streams go out in sentences — «fewer, larger» envelopes — and 日本語 text, "
    "emoji 🚀 and line\nbreaks arrive byte for byte. "
)


def answer_for(question: str, repeat: int = 24) -> str:
    """The whole answer to ``question``."""
    return f"[{question}] " + "".join(f"{i}: {WORDS}" for i in range(repeat))


async def respond(request: Any, out: Any) -> None:
    text = answer_for(request.text)
    async with out.block("llm", label="Answer") as b, b.message("text") as m:
        for piece in re.findall(r"\S+\s*", text):  # whole: the text starts with "["
            await m.append(piece)
            await asyncio.sleep(0.004)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", required=True)
    p.add_argument("--peer", action="append", default=[])
    p.add_argument("--rate", type=float)
    p.add_argument("--max-envelope", type=int)
    args = p.parse_args()
    settings = ChatSettings()
    if args.rate is not None or args.max_envelope is not None:
        quota = PeerQuota(messages_per_second=args.rate, max_envelope_bytes=args.max_envelope)
        settings = settings.with_quotas(default=quota)
    chat = StreamingChat(respond, settings=settings)
    agent = local_agent(
        args.seed, args.port, name="quota-responder", peers=parse_peers(args.peer), directory=None
    )
    agent.include(chat, publish_manifest=True)

    async def ready(ctx: Any) -> None:
        print(f"READY {agent.address}", flush=True)
        await asyncio.Event().wait()

    run_agent(agent, ready)
    return 0


if __name__ == "__main__":
    sys.exit(main())
