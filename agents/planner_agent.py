"""A planner agent that delegates, written against agent_stream's public API only.

For every question it asks its team (any chat-protocol agents: agent_stream ones stream their
thinking, tool calls and text; plain ones their text), all at once, and relays each reply live
into its own, one labelled section per agent, then sums up. The delegation chain and hop limit
travel in the tags, so a team that asks each other never loops.

    # local, no internet: team members found by name in the local directory or by --peer
    AGENT_STREAM_SEED="my secret seed" python agents/planner_agent.py --port 8010 \\
        --ask researcher --ask coder=agent1q...

    # networked (Almanac registration, Agentverse mailbox)
    AGENT_STREAM_SEED=... python agents/planner_agent.py --network testnet --mailbox \\
        --ask weather=agent1q... --ask prices=agent1q...

The seed comes from the environment, never from the repository.
"""

from __future__ import annotations

import argparse
import os
import sys

from agent_stream import RelayError, StreamWriter, ThreadScope
from agent_stream.uagents import (
    ChatRequest,
    LocalDirectory,
    StreamingChat,
    delegate,
    local_agent,
    network_agent,
    parse_peers,
    run_agent,
)


def main() -> int:
    p = argparse.ArgumentParser(description="A planner agent that relays its team's replies.")
    p.add_argument("--port", type=int, default=8010)
    p.add_argument("--name", default="planner")
    p.add_argument(
        "--ask",
        action="append",
        default=[],
        metavar="NAME[=ADDRESS]",
        help="a team member (by name in the local directory, or its address)",
    )
    p.add_argument("--peer", action="append", default=[], metavar="ADDRESS=URL")
    p.add_argument("--max-hops", type=int, default=None)
    p.add_argument("--network", choices=("local", "testnet", "mainnet"), default="local")
    p.add_argument("--mailbox", action="store_true")
    args = p.parse_args()
    seed = os.environ.get("AGENT_STREAM_SEED")
    if not seed or not args.ask:
        print("set AGENT_STREAM_SEED and give at least one --ask", file=sys.stderr)
        return 2

    team: list[tuple[str, str]] = []
    for spec in args.ask:
        name, _, address = spec.partition("=")
        if not address:
            found = LocalDirectory().find(name) if args.network == "local" else None
            if found is None:
                print(f"no running local agent named {name!r}; give NAME=ADDRESS", file=sys.stderr)
                return 2
            address = found[0]
        team.append((name, address))

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        async def one(thread: ThreadScope, name: str, address: str) -> str:
            try:
                reply = delegate(chat, request, address, request.text, max_hops=args.max_hops)
                t = await thread.relay(reply, name=name, label=name.capitalize())
            except RelayError as exc:
                return f"{name}: no answer ({exc.status})"
            return f"{name}: {len(t.text().split())} words"

        notes = await out.parallel(
            *(lambda th, n=n, a=a: one(th, n, a) for n, a in team), labels=[n for n, _ in team]
        )
        async with out.block("llm", label="Summary") as b:
            await b.text("Asked " + ", ".join(notes) + ".")

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
