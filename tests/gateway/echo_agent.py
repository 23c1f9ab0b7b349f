"""A test agent for the gateway: answers with the question itself, as markdown, at a set pace.

A question may start with ``[n=N rate=R]``: then N filler tokens (``w1 w2 ...``) follow the echo,
R tokens per second (0: as fast as possible). Every 10 tokens it prints ``produced K WORD`` to
stdout (WORD: the first word of the echo), so a test can see whether a reply is still produced. Public API only.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys

from agent_stream.uagents import ChatRequest, ChatSettings, StreamingChat, local_agent, run_agent
from agent_stream.writer import StreamWriter

HEAD = re.compile(r"^\[n=(\d+)(?: rate=([\d.]+))?\]\s*")


async def respond(request: ChatRequest, out: StreamWriter) -> None:
    text = request.text
    n, rate = 0, 0.0
    m = HEAD.match(text)
    if m:
        n, rate = int(m.group(1)), float(m.group(2) or 0)
        text = text[m.end() :]
    produced = 0
    mark = (text.split() or ["-"])[0]
    async with out.block("llm", label="Echo") as b, b.message("text") as msg:
        await msg.append(text)
        for i in range(n):
            await msg.append(f" w{i + 1}")
            produced += 1
            if produced % 10 == 0:
                print(f"produced {produced} {mark}", flush=True)
            await asyncio.sleep(1 / rate if rate > 0 else 0)
    print(f"finished {produced}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", required=True)
    p.add_argument("--name", default="echo")
    args = p.parse_args()
    agent = local_agent(args.seed, args.port, name=args.name)
    # the gateway is one asker for every test: let it have many replies at once
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
