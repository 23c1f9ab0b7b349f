"""A streaming LLM agent, written against agent_stream's public API only.

It answers any chat-protocol peer it can reach, streaming its reasoning (to peers that ask for
it), its tool calls and a markdown answer: sentence-sized ChatMessages, every stream ended.

    # local, no internet (peers found through the local directory or --peer)
    AGENT_STREAM_SEED="my secret seed" python agents/llm_agent.py --port 8001

    # networked: Almanac registration and an Agentverse mailbox
    AGENT_STREAM_SEED="my secret seed" python agents/llm_agent.py --network testnet --mailbox

    # a real model behind any OpenAI-compatible server
    OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.2 \\
        AGENT_STREAM_SEED=... python agents/llm_agent.py --model openai

The seed comes from the environment, never from the repository.
"""

from __future__ import annotations

import argparse
import os
import sys

from agent_stream import StreamWriter
from agent_stream.sources import make_source
from agent_stream.uagents import (
    ChatRequest,
    StreamingChat,
    local_agent,
    network_agent,
    parse_peers,
    run_agent,
)


def main() -> int:
    p = argparse.ArgumentParser(description="A streaming LLM agent.")
    p.add_argument("--port", type=int, default=8001)
    p.add_argument("--name", default="llm")
    p.add_argument("--model", choices=("replay", "openai"), default="replay")
    p.add_argument("--rate", type=float, default=60.0, help="replay: tokens per second")
    p.add_argument("--peer", action="append", default=[], metavar="ADDRESS=URL")
    p.add_argument("--network", choices=("local", "testnet", "mainnet"), default="local")
    p.add_argument("--mailbox", action="store_true")
    args = p.parse_args()

    seed = os.environ.get("AGENT_STREAM_SEED")
    if not seed:
        print("set AGENT_STREAM_SEED to this agent's secret seed", file=sys.stderr)
        return 2

    model = (
        make_source("replay", rate=args.rate) if args.model == "replay" else make_source("openai")
    )

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        await model(request.text, out)

    chat = StreamingChat(respond, channels={"reasoning"})
    if args.network == "local":
        agent = local_agent(seed, args.port, name=args.name, peers=parse_peers(args.peer))
    else:
        agent = network_agent(
            seed, network=args.network, mailbox=args.mailbox, port=args.port, name=args.name
        )
    agent.include(chat, publish_manifest=True)
    print(f"{args.name}: {agent.address}", flush=True)
    run_agent(agent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
