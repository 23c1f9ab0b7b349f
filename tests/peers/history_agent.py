"""A test agent that answers with the history it was given: ``history: <JSON>`` then
``question: <text>``. A question starting with ``slow`` streams 1,000 more words at 50 per
second; when that reply is cancelled it prints ``cancelled <question>`` to stdout. Public API
only."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from agent_stream.uagents import ChatRequest, ChatSettings, StreamingChat, local_agent, run_agent
from agent_stream.writer import StreamWriter


async def respond(request: ChatRequest, out: StreamWriter) -> None:
    turns = [{"role": t.role, "text": t.text} for t in request.history]
    async with out.block("llm", label="History") as b, b.message("text") as msg:
        await msg.append(
            f"history: {json.dumps(turns, ensure_ascii=False)}\n\nquestion: {request.text}"
        )
        if request.text.startswith("slow"):
            try:
                for i in range(1000):
                    await msg.append(f" w{i + 1}")
                    await asyncio.sleep(0.02)
            except asyncio.CancelledError:
                print(f"cancelled {request.text}", flush=True)
                raise


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", required=True)
    p.add_argument("--name", default="history")
    args = p.parse_args()
    agent = local_agent(args.seed, args.port, name=args.name)
    agent.include(
        StreamingChat(
            respond, settings=ChatSettings().with_caps(max_replies_per_sender=64, max_replies=64)
        ),
        publish_manifest=True,
    )
    print(f"address: {agent.address}", flush=True)
    print(f"endpoint: http://127.0.0.1:{args.port}/submit", flush=True)
    run_agent(agent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
