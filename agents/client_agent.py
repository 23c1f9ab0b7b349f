"""A client agent, written against agent_stream's public API only: asks one question and prints
the reply while it streams (text on stdout, everything else as short lines on stderr).

    python agents/client_agent.py llm "How do agents stream?"       # a local agent by name
    python agents/client_agent.py agent1q... "question" --endpoint http://127.0.0.1:8001/submit

The agent it asks finds this client through the local directory (or give this client a fixed
--seed and tell the other agent with --peer).
"""

from __future__ import annotations

import argparse
import secrets
import sys

from uagents import Context

from agent_stream import Message
from agent_stream.uagents import LocalDirectory, StreamingChat, free_port, local_agent, run_agent


def show(msg: Message) -> None:
    props = msg.props or {}
    if msg.type == "text" and isinstance(props.get("content"), str):
        sys.stdout.write(props["content"])
        sys.stdout.flush()
    elif msg.type == "tool_call":
        print(f"[tool] {props.get('name')}({props.get('arguments', '')})", file=sys.stderr)
    elif msg.type == "error":
        print(f"[error] {props.get('message')}", file=sys.stderr)


def main() -> int:
    p = argparse.ArgumentParser(description="Ask an agent one question.")
    p.add_argument("address", help="address, or the name of a running local agent")
    p.add_argument("question")
    p.add_argument("--endpoint", default=None)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--seed", default=None)
    args = p.parse_args()

    address, endpoint = args.address, args.endpoint
    if endpoint is None:
        found = LocalDirectory().find(args.address)
        if found is None:
            print(f"no running local agent {args.address!r}; give --endpoint", file=sys.stderr)
            return 2
        address, endpoint = found

    chat = StreamingChat()  # no responder: this agent only asks
    agent = local_agent(
        args.seed or secrets.token_hex(32),
        args.port or free_port(),
        name="client",
        peers={address: endpoint},
    )
    agent.include(chat, publish_manifest=True)

    async def ask(ctx: Context) -> bool:
        reply = await chat.ask(ctx, address, args.question)
        async for msg in reply:
            show(msg)
        transcript = await reply
        print(
            f"\n[{reply.status}: {len(transcript.messages)} messages, "
            f"{reply.chat_messages} ChatMessages]",
            file=sys.stderr,
        )
        return reply.completed

    return 0 if run_agent(agent, ask) else 1


if __name__ == "__main__":
    sys.exit(main())
