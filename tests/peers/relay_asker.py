"""An end client for the relay tests and bench: asks one agent one question and prints one JSON
line: status, completed, seconds to the first text and to the end, ChatMessages received, and
every Message as it arrived (``--cancel-after S``: cancel the reply after S seconds). Public API.
A line ``ASKED`` comes first, once the question was delivered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage, StartSessionContent, TextContent

from agent_stream.adapters.chat import request_tags
from agent_stream.uagents import LocalDirectory, StreamingChat, local_agent, run_agent


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", required=True)
    p.add_argument("--to", required=True, help="a local agent's name")
    p.add_argument("--question", required=True)
    p.add_argument("--reasoning", action="store_true")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--cancel-after", type=float, default=None)
    p.add_argument("--max-hops", type=int, default=None, help="the hop limit to send")
    p.add_argument(
        "--linger",
        type=float,
        default=0.0,
        help="seconds to stay up after printing (late traffic is dropped)",
    )
    args = p.parse_args()
    found = LocalDirectory().find(args.to)
    if found is None:
        print(json.dumps({"status": "unknown_agent"}), flush=True)
        return 2
    address, endpoint = found
    chat = StreamingChat()
    agent = local_agent(args.seed, args.port, name="relay-asker", peers={address: endpoint})
    agent.include(chat, publish_manifest=True)

    async def ask(ctx: Any) -> dict[str, Any]:
        channels = {"reasoning"} if args.reasoning else set()
        question = ChatMessage(
            content=[
                StartSessionContent(),
                request_tags(channels, max_hops=args.max_hops),
                TextContent(text=args.question),
            ]
        )
        reply = await chat.ask(ctx, address, question, timeout=args.timeout)
        print("ASKED", flush=True)
        if args.cancel_after is not None:
            asyncio.get_running_loop().call_later(args.cancel_after, reply.cancel)
        await reply.wait()
        await asyncio.sleep(0.3 if args.cancel_after is not None else 0)
        t0 = reply.asked_at
        print(
            json.dumps(
                {
                    "status": reply.status,
                    "completed": reply.completed,
                    "first_text": None if reply.first_text_at is None else reply.first_text_at - t0,
                    "seconds": (reply.ended_at or t0) - t0,
                    "chat_messages": reply.chat_messages,
                    "messages": [m.to_dict() for m in reply.messages],
                    "warnings": [str(w) for w in reply.warnings],
                }
            ),
            flush=True,
        )
        await asyncio.sleep(args.linger)
        return {}

    run_agent(agent, ask)
    return 0


if __name__ == "__main__":
    sys.exit(main())
