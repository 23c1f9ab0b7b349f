"""A real agent, listed in the local directory at ``--advertise`` (a proxy in front of it that
answers readiness probes late), that asks ``--to`` one question when a line arrives on stdin.

Prints ``READY <address>`` once started, then, per stdin line, one JSON line:
``{"status", "completed", "text"}`` (or ``{"status": "undelivered", "detail"}``). Public API only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from typing import Any

from agent_stream.uagents import (
    DeliveryError,
    LocalDirectory,
    StreamingChat,
    local_agent,
    run_agent,
)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", required=True)
    p.add_argument("--to", required=True)
    p.add_argument("--to-endpoint", required=True)
    p.add_argument("--advertise", required=True)
    p.add_argument("--timeout", type=float, default=10.0)
    args = p.parse_args()
    chat = StreamingChat()
    agent = local_agent(
        args.seed,
        args.port,
        name="slow-probe-asker",
        peers={args.to: args.to_endpoint},
        directory=LocalDirectory(),
        advertise=args.advertise,
    )
    agent.include(chat, publish_manifest=True)

    async def ask(ctx: Any) -> dict[str, Any]:
        try:
            reply = await chat.ask(ctx, args.to, "are you there?", timeout=args.timeout)
        except DeliveryError as exc:
            return {"status": "undelivered", "detail": str(exc)}
        with contextlib.suppress(asyncio.TimeoutError):  # report what arrived so far
            await reply.wait(args.timeout)
        return {"status": reply.status, "completed": reply.completed, "text": reply.text()}

    async def drive(ctx: Any) -> None:
        loop = asyncio.get_running_loop()
        print(f"READY {agent.address}", flush=True)
        while await loop.run_in_executor(None, sys.stdin.readline):
            print(json.dumps(await ask(ctx)), flush=True)

    run_agent(agent, drive)
    return 0


if __name__ == "__main__":
    sys.exit(main())
