"""Agent processes for the delivery tests (public API only, but for the envelope session of a
plain question), run as scripts.

``asker``: an agent_stream client; each stdin JSON line ``{"text", "count", "timeout",
"idle_timeout", "cancel_after", "tagged", "settle", "resume"}`` asks ``count`` questions at once and prints one JSON line
``{"replies": [{status, completed, text, transcript, figures...}]}``. ``cancel_after``: call
``reply.cancel()`` once that many Messages arrived.

``responder``: answers every question with a "Thinking" block (reasoning) and an "Answer" block
of ``--tokens`` tokens at ``--rate`` tokens/s, pausing ``--pause`` s after ``--pause-at`` tokens,
sending a keepalive after ``--keepalive`` s of silence (default: the delivery policy's);
prints ``{"reply_end": ReplyStats..., "tokens": produced so far}`` when a reply ends and
``{"tokens": n}`` for each stdin line.

Both print ``READY <address>`` once they listen.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
import uuid
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage, StartSessionContent, TextContent

from agent_stream.uagents import (
    ChatSettings,
    DeliveryError,
    DeliveryPolicy,
    StreamingChat,
    local_agent,
    parse_peers,
    run_agent,
)
from agent_stream.uagents._compat import context_with_session

PRODUCED = [0]


async def ask_one(
    chat: StreamingChat, ctx: Any, to: str, req: dict[str, Any], agent: Any = None
) -> dict[str, Any]:
    started = time.monotonic()
    text = req.get("text", "hello")
    # untagged: a plain question (no agent_stream tags), read until EndSessionContent
    question: Any = (
        text
        if req.get("tagged", True)
        else ChatMessage(content=[StartSessionContent(), TextContent(text=text)])
    )
    if not req.get("tagged", True) and agent is not None:
        # a plain peer's conversation is its envelope session: each question a new one, so
        # the responder does not answer it as a follow-up of the questions asked before
        ctx = context_with_session(agent, uuid.uuid4())
    try:
        if "resume" in req:  # the reply of an earlier question, again from its start
            reply = await chat.resume(
                ctx,
                to,
                req["resume"],
                timeout=float(req.get("timeout", 60)),
                idle_timeout=req.get("idle_timeout"),
            )
        else:
            # every question stands alone (an empty history of its own): the many asked in
            # this one session are not one conversation the responder would remember
            reply = await chat.ask(
                ctx,
                to,
                question,
                settle=float(req.get("settle", 0.5)),
                timeout=float(req.get("timeout", 60)),
                idle_timeout=req.get("idle_timeout"),
                channels={"reasoning"},
                history=(),
            )
    except DeliveryError as exc:
        return {"status": "undelivered", "completed": False, "detail": str(exc)}
    cancel_after = req.get("cancel_after")
    cancelled_at = None
    n = 0
    async for _ in reply:
        n += 1
        if cancel_after is not None and n == cancel_after:
            cancelled_at = time.monotonic()
            reply.cancel()
    await reply
    confirm = None
    if cancelled_at is not None and reply.ended_at is not None:
        confirm = round(reply.ended_at - cancelled_at, 3)
    return {
        "status": reply.status,
        "completed": reply.completed,
        "text": reply.text(),
        "transcript": reply.transcript.to_dict(),
        "seconds": round(time.monotonic() - started, 4),
        "chat_messages": reply.chat_messages,
        "duplicates": reply.duplicates,
        "gaps_repaired": reply.gaps_repaired,
        "repair_requests": reply.repair_requests,
        "keepalives": reply.keepalives,
        "question_resends": reply.question_resends,
        "at_risk": round(reply.at_risk, 3),
        "cancel_confirmed_after": confirm,
        "conversation": reply.conversation,
        "warnings": [str(w) for w in reply.warnings],
    }


def asker(args: argparse.Namespace) -> None:
    chat = StreamingChat()
    agent = local_agent(
        args.seed, args.port, name="asker", peers=parse_peers(args.peer), directory=None
    )
    agent.include(chat, publish_manifest=True)
    to = args.peer[0].split("=", 1)[0]

    async def drive(ctx: Any) -> None:
        loop = asyncio.get_running_loop()
        print(f"READY {agent.address}", flush=True)
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            req = json.loads(line)
            replies = await asyncio.gather(
                *(ask_one(chat, ctx, to, req, agent) for _ in range(int(req.get("count", 1))))
            )
            print(json.dumps({"replies": replies}), flush=True)

    run_agent(agent, drive)


def responder(args: argparse.Namespace) -> None:
    async def respond(request: Any, out: Any) -> None:
        async with out.block("llm", label="Thinking") as b, b.message("thinking") as m:
            await m.append("Let me think about it. ")
        async with out.block("llm", label="Answer") as b, b.message("text") as m:
            for i in range(args.tokens):
                if i == args.pause_at:
                    await asyncio.sleep(args.pause)
                await m.append(f"w{i} " if i % 10 else f"Sentence {i}. ")
                PRODUCED[0] += 1
                await asyncio.sleep(1 / args.rate if args.rate else 0)

    def ended(stats: Any) -> None:
        print(
            json.dumps({"reply_end": dataclasses.asdict(stats), "tokens": PRODUCED[0]}), flush=True
        )

    settings = ChatSettings()
    if args.keepalive is not None:
        settings = ChatSettings(delivery=DeliveryPolicy(keepalive=args.keepalive))
    chat = StreamingChat(respond, channels={"reasoning"}, on_reply_end=ended, settings=settings)
    agent = local_agent(
        args.seed, args.port, name="responder", peers=parse_peers(args.peer), directory=None
    )
    agent.include(chat, publish_manifest=True)

    async def drive(ctx: Any) -> None:
        loop = asyncio.get_running_loop()
        print(f"READY {agent.address}", flush=True)
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                await asyncio.sleep(3600)
            print(json.dumps({"tokens": PRODUCED[0]}), flush=True)

    run_agent(agent, drive)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("role", choices=("asker", "responder"))
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", required=True)
    p.add_argument("--peer", action="append", default=[])
    p.add_argument("--tokens", type=int, default=200)
    p.add_argument("--rate", type=float, default=0.0)
    p.add_argument("--pause-at", type=int, default=-1)
    p.add_argument("--pause", type=float, default=0.0)
    p.add_argument("--keepalive", type=float, default=None)
    args = p.parse_args()
    asker(args) if args.role == "asker" else responder(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
