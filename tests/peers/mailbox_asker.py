"""An agent_stream asker that receives through uagents' own Agentverse mailbox client: a
``LocalAgent`` built with ``mailbox=True`` and ``agentverse=URL`` (a stand-in of Agentverse on
127.0.0.1), so it serves no HTTP and polls ``URL`` for what is sent to it, every second.

Driven line by line on stdin as tests/peers/asker_agent.py is (same JSON in and out). Prints
``READY <address>`` once its mailbox client runs. Its server on ``--port`` (127.0.0.1) serves the
agent inspector's REST endpoints, among them ``POST /connect``, which connects it to the
mailbox (uagents' identity challenge). Public API, and uagents' own Agent arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from asker_agent import ask_one
from uagents_core.registration import AgentRegistrationPolicy

from agent_stream.uagents import (
    LocalAgent,
    StreamingChat,
    free_port,
    local_resolver,
    protect,
    run_agent,
)


class NoRegistration(AgentRegistrationPolicy):  # type: ignore[misc]
    """Registers nowhere: the stand-in has no Almanac."""

    async def register(self, *args: Any, **kwargs: Any) -> None:
        return None


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", required=True)
    p.add_argument("--agentverse", required=True)
    p.add_argument("--to", required=True)
    p.add_argument("--to-endpoint", required=True)
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    chat = StreamingChat()
    agent = LocalAgent(
        name="mailbox-asker",
        seed=args.seed,
        mailbox=True,
        agentverse=args.agentverse,
        # uagents runs a mailbox agent's server only for its REST handlers (the inspector's):
        # without them run_async ends at once, and the agent with it
        port=args.port or free_port(),
        resolve=local_resolver({args.to: args.to_endpoint}),
        registration_policy=NoRegistration(),
        report_events=False,
        mark_inactive_on_shutdown=False,
        publish_agent_details=False,
    )
    protect(agent)
    agent.include(chat, publish_manifest=False)

    async def drive(ctx: Any) -> None:
        loop = asyncio.get_running_loop()
        print(f"READY {agent.address}", flush=True)
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            req = json.loads(line)
            replies = await asyncio.gather(
                *(
                    ask_one(
                        chat,
                        ctx,
                        args.to,
                        req["text"],
                        float(req.get("timeout", 20)),
                        bool(req.get("full_text")),
                    )
                    for _ in range(int(req.get("count", 1)))
                )
            )
            print(json.dumps({"replies": replies}), flush=True)

    run_agent(agent, drive)
    return 0


if __name__ == "__main__":
    sys.exit(main())
