"""A healthy peer that keeps asking: an agent_stream client agent driven line by line on stdin.

Each stdin line is JSON ``{"text": str, "repeat": int = 1, "count": int = 1, "timeout": float,
"full_text": bool}``: it asks ``text * repeat`` ``count`` times at once (``--to`` at
``--to-endpoint``) and prints one JSON line: ``{"replies": [{"status", "completed", "seconds",
"text_chars", "error_code", "text"}]}`` (``text``: the reply's whole text with ``full_text``).
Prints ``READY <address>`` once it listens. Public API only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from agent_stream.uagents import (
    DeliveryError,
    LocalDirectory,
    StreamingChat,
    local_agent,
    run_agent,
)


async def ask_one(
    chat: StreamingChat, ctx: Any, to: str, text: str, timeout: float, full_text: bool = False
) -> dict[str, Any]:
    started = time.monotonic()
    try:
        reply = await chat.ask(ctx, to, text, timeout=timeout)
    except DeliveryError as exc:
        return {
            "status": "undelivered",
            "completed": False,
            "detail": str(exc),
            "seconds": time.monotonic() - started,
        }
    await reply
    errors = [m for m in reply.transcript.messages if m.type == "error"]
    return {
        "status": reply.status,
        "completed": reply.completed,
        "seconds": round(time.monotonic() - started, 4),
        "text_chars": len(reply.text()),
        "text": reply.text() if full_text else None,
        "error_code": (errors[0].props or {}).get("code") if errors else None,
        "error": (errors[0].props or {}).get("message") if errors else None,
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", required=True)
    p.add_argument("--to", required=True)
    p.add_argument("--to-endpoint", required=True)
    args = p.parse_args()
    chat = StreamingChat()
    agent = local_agent(
        args.seed,
        args.port,
        name="asker",
        peers={args.to: args.to_endpoint},
        directory=LocalDirectory(),
    )
    agent.include(chat, publish_manifest=True)

    async def drive(ctx: Any) -> None:
        loop = asyncio.get_running_loop()
        print(f"READY {agent.address}", flush=True)
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            req = json.loads(line)
            text = req["text"] * int(req.get("repeat", 1))
            replies = await asyncio.gather(
                *(
                    ask_one(
                        chat,
                        ctx,
                        args.to,
                        text,
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
