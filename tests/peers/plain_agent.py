"""A chat-protocol agent written with uagents alone (no agent_stream): the peer we must work with.

Two roles, chosen on the command line:

``ask``        sends one question (StartSessionContent + TextContent) to ``--to`` at
               ``--to-endpoint`` and records what comes back: it acknowledges every ChatMessage,
               concatenates the TextContent items (the way a stream-unaware client reads a reply)
               and notes every StartStreamContent / EndStreamContent. It stops at
               EndSessionContent, or when nothing has arrived for ``--quiet`` seconds, and prints
               one JSON summary line on stdout.
``per-token``  answers every ChatMessage the way the open uAgents streaming pull request does:
               one ChatMessage with StartStreamContent, one ChatMessage per token (a TextContent,
               no stream id), one with EndStreamContent. Tokens come from ``--tokens FILE`` (a
               JSON list of strings) or a built-in text.

Both print ``READY <address> <endpoint>`` on stdout once they listen. Runs offline: the two
uagents network calls are replaced the way agent_stream's notes describe, and the server binds
127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import re
import sys
import time
import uuid
from datetime import datetime, timezone
from typing import Any

import uagents.agent
import uagents.asgi
from uagents import Agent, Context, Protocol
from uagents.resolver import RulesBasedResolver
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    StartSessionContent,
    StartStreamContent,
    TextContent,
    chat_protocol_spec,
)
from uagents_core.registration import AgentRegistrationPolicy


def _none(*_a: Any, **_k: Any) -> None:
    return None


async def _anone(*_a: Any, **_k: Any) -> None:
    return None


def go_offline() -> None:
    """No ledger query, no Almanac status posts, listen on 127.0.0.1 only."""
    uagents.agent.get_almanac_contract = _none  # type: ignore[assignment]
    uagents.agent.update_agent_status = _anone  # type: ignore[assignment]
    uagents.asgi.HOST = "127.0.0.1"


class _NoRegistration(AgentRegistrationPolicy):
    async def register(self, *_a: Any, **_k: Any) -> None:
        return None


DEFAULT_TEXT = (
    "Streaming one token per message is simple. Each token becomes its own envelope, "
    "signed and posted over HTTP. It works for short answers, but long ones pay the cost "
    "of every envelope.\n\nThat is the baseline we compare against."
)


def tokens_of(text: str) -> list[str]:
    """Word-ish tokens whose concatenation is ``text``."""
    return re.findall(r"\s*\S+|\s+", text)


def build_agent(args: argparse.Namespace, peers: dict[str, str]) -> Agent:
    return Agent(
        name=f"plain-{args.role}",
        seed=args.seed,
        port=args.port,
        endpoint=[f"http://127.0.0.1:{args.port}/submit"],
        resolve=RulesBasedResolver(peers),
        registration_policy=_NoRegistration(),
        enable_agent_inspector=False,
        report_events=False,
        mark_inactive_on_shutdown=False,
        log_level=logging.WARNING,
    )


async def main(args: argparse.Namespace) -> dict[str, Any] | None:
    me = asyncio.current_task()
    assert me is not None
    peers = dict(spec.split("=", 1) for spec in args.peer)
    if args.to:
        peers[args.to] = args.to_endpoint
    agent = build_agent(args, peers)
    proto = Protocol(spec=chat_protocol_spec)
    tasks: set[asyncio.Task[None]] = set()
    summary: dict[str, Any] = {
        "text": "",
        "chat_messages": 0,
        "starts": [],
        "ends": [],
        "ends_before_start": [],
        "metadata_items": 0,
        "acks": 0,
        "session_ended": False,
        "first_text_s": None,
        "last_s": None,
    }
    state: dict[str, Any] = {"t0": None, "last": time.monotonic(), "done": asyncio.Event()}
    if args.tokens:
        with open(args.tokens, encoding="utf-8") as fh:
            tokens = json.load(fh)
    else:
        tokens = tokens_of(DEFAULT_TEXT)

    @proto.on_message(ChatMessage)
    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        await ctx.send(
            sender,
            ChatAcknowledgement(
                timestamp=datetime.now(timezone.utc), acknowledged_msg_id=msg.msg_id
            ),
        )
        if args.role == "per-token":
            t = asyncio.create_task(stream_per_token(ctx, sender))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
            return
        now = time.monotonic()
        state["last"] = now
        summary["chat_messages"] += 1
        for item in msg.content:
            if isinstance(item, TextContent):
                if summary["first_text_s"] is None and item.text:
                    summary["first_text_s"] = now - state["t0"]
                summary["text"] += item.text
            elif isinstance(item, StartStreamContent):
                summary["starts"].append(str(item.stream_id))
            elif isinstance(item, EndStreamContent):
                sid = str(item.stream_id)
                if sid not in summary["starts"]:
                    summary["ends_before_start"].append(sid)
                summary["ends"].append(sid)
            elif isinstance(item, MetadataContent):
                summary["metadata_items"] += 1
            elif isinstance(item, EndSessionContent):
                summary["session_ended"] = True
        summary["last_s"] = now - state["t0"]
        if summary["session_ended"]:
            state["done"].set()

    @proto.on_message(ChatAcknowledgement)
    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        summary["acks"] += 1

    async def stream_per_token(ctx: Context, sender: str) -> None:
        sid = uuid.uuid4()
        await ctx.send(sender, ChatMessage(content=[StartStreamContent(stream_id=sid)]))
        for tok in tokens:
            await ctx.send(sender, ChatMessage(content=[TextContent(text=tok)]))
        await ctx.send(sender, ChatMessage(content=[EndStreamContent(stream_id=sid)]))

    agent.include(proto)

    async def ask(ctx: Context) -> None:
        try:
            state["t0"] = time.monotonic()
            content: list[Any] = [StartSessionContent(), TextContent(text=args.question)]
            status = await ctx.send(args.to, ChatMessage(content=content))
            summary["delivery"] = str(getattr(status, "status", status))
            deadline = state["t0"] + args.timeout
            while not state["done"].is_set():
                now = time.monotonic()
                if now >= deadline or (
                    summary["chat_messages"] and now - state["last"] >= args.quiet
                ):
                    break
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(state["done"].wait(), 0.05)
        finally:
            me.cancel()

    @agent.on_event("startup")
    async def started(ctx: Context) -> None:
        print(f"READY {agent.address} http://127.0.0.1:{args.port}/submit", flush=True)
        if args.role == "ask":
            t = asyncio.create_task(ask(ctx))
            tasks.add(t)

    await agent.run_async()
    return summary if args.role == "ask" else None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("role", choices=("ask", "per-token"))
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seed", required=True)
    p.add_argument(
        "--peer",
        action="append",
        default=[],
        metavar="ADDRESS=URL",
        help="a peer's endpoint (repeatable)",
    )
    p.add_argument("--to", help="ask: the address to ask")
    p.add_argument("--to-endpoint", help="ask: its endpoint")
    p.add_argument("--question", default="Tell me about streaming.")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--quiet", type=float, default=5.0)
    p.add_argument("--tokens", help="per-token: JSON file with the list of tokens")
    return p.parse_args(argv)


if __name__ == "__main__":
    go_offline()
    ns = parse_args()
    result: dict[str, Any] | None = None
    with contextlib.suppress(KeyboardInterrupt):
        result = asyncio.run(main(ns))
    if result is not None:
        print(json.dumps(result), flush=True)
    sys.exit(0)
