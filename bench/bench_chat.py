"""Streaming a 2,000-token reply between two agent processes on 127.0.0.1: agent_stream against
one ChatMessage per token (the open uAgents streaming pull request's approach: a start-stream
message, one TextContent message per token, an end-stream message).

Each sender is an agent in a process of its own; the receiver is an agent in this process that
asks each sender in turn (same run, same machine) and decodes what arrives with agent_stream's
ChatDecoder. Every envelope is signed and posted over HTTP, and the receiver acknowledges every
ChatMessage, as the chat protocol asks. Reported per sender: ChatMessages received, time to the
first text at the receiver, time to the complete reply, and whether the text is identical.

    python bench/bench_chat.py [--tokens 2000] [--rate 0]

``--rate 0`` (default): the model produces tokens as fast as it can, so the transport is what is
measured. Targets: at least 10x fewer ChatMessages and at least 5x faster to the complete reply
(the speed target only with --rate 0: at a model's pace both replies end when the model does, as
long as one envelope per token keeps up). Exit status 1 when the text differs or a target is
missed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import queue
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uagents import Context, Protocol
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndStreamContent,
    StartStreamContent,
    TextContent,
    chat_protocol_spec,
)
from uagents_core.identity import Identity

from agent_stream.sources.replay import REPLIES, tokenize
from agent_stream.uagents import (
    ChatRequest,
    ChatSettings,
    StreamingChat,
    endpoint_for,
    local_agent,
    parse_peers,
    run_agent,
)
from agent_stream.uagents.local._agents import free_port
from agent_stream.writer import StreamWriter


def make_tokens(n: int) -> list[str]:
    """``n`` BPE-sized tokens of markdown prose (the replay answers, repeated)."""
    base = tokenize("\n\n".join(r.answer for r in REPLIES) + "\n\n")
    out: list[str] = []
    while len(out) < n:
        out.extend(base)
    return out[:n]


# -- senders (run as separate processes) -----------------------------------------------------------
async def _pace(i: int, start: float, rate: float) -> None:
    if rate > 0:
        delay = start + (i + 1) / rate - time.monotonic()
        await asyncio.sleep(max(delay, 0.0))
    elif i % 32 == 31:
        await asyncio.sleep(0)


def run_sender(args: argparse.Namespace) -> int:
    tokens: list[str] = json.loads(Path(args.tokens_file).read_text(encoding="utf-8"))
    agent = local_agent(
        args.seed, args.port, name=args.role, peers=parse_peers(args.peer), directory=None
    )
    if args.role == "per-token":
        # The baseline, with uagents alone: one ChatMessage per token.
        proto = Protocol(spec=chat_protocol_spec)
        tasks: set[asyncio.Task[None]] = set()

        async def stream(ctx: Context, sender: str) -> None:
            sid = uuid.uuid4()
            start = time.monotonic()
            await ctx.send(sender, ChatMessage(content=[StartStreamContent(stream_id=sid)]))
            for i, tok in enumerate(tokens):
                await ctx.send(sender, ChatMessage(content=[TextContent(text=tok)]))
                await _pace(i, start, args.rate)
            await ctx.send(sender, ChatMessage(content=[EndStreamContent(stream_id=sid)]))

        @proto.on_message(ChatMessage)  # type: ignore[untyped-decorator]
        async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
            await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))
            t = asyncio.create_task(stream(ctx, sender))
            tasks.add(t)
            t.add_done_callback(tasks.discard)

        @proto.on_message(ChatAcknowledgement)  # type: ignore[untyped-decorator]
        async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
            pass

        agent.include(proto)
    else:

        async def respond(request: ChatRequest, out: StreamWriter) -> None:
            start = time.monotonic()
            async with out.block("llm", label="Answer") as b, b.message("text") as m:
                for i, tok in enumerate(tokens):
                    await m.append(tok)
                    await _pace(i, start, args.rate)

        agent.include(
            StreamingChat(
                respond, settings=ChatSettings().with_pump(max_coalesce=args.max_coalesce)
            ),
            publish_manifest=True,
        )
    print(f"READY {agent.address}", flush=True)
    run_agent(agent)
    return 0


# -- the receiver (this process) -------------------------------------------------------------------
@dataclass
class Result:
    name: str
    chat_messages: int
    first_text: float | None
    complete: float | None
    identical: bool
    status: str | None


def spawn(
    cmd: list[str], env: dict[str, str], cwd: str, timeout: float = 30.0
) -> tuple[subprocess.Popen[str], str]:
    """Start ``cmd``; returns it and the address of its ``READY <address>`` line."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=cwd
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            proc.kill()
            raise RuntimeError(f"{' '.join(cmd[1:5])} did not start")
        if line.startswith("READY "):
            return proc, line.split()[1]


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM, then kill after 10 s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=2000, help="reply length in tokens")
    p.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="model tokens per second at the senders (0: as fast as possible)",
    )
    p.add_argument("--timeout", type=float, default=300.0)
    # sender processes
    p.add_argument(
        "--role",
        choices=("receiver", "stream", "per-token"),
        default="receiver",
        help=argparse.SUPPRESS,
    )
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--seed", help=argparse.SUPPRESS)
    p.add_argument("--peer", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument("--tokens-file", help=argparse.SUPPRESS)
    p.add_argument("--max-coalesce", type=int, default=32, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.role != "receiver":
        return run_sender(args)

    tokens = make_tokens(args.tokens)
    text = "".join(tokens)
    with tempfile.TemporaryDirectory(prefix="bench-chat-") as tmp:
        tokens_file = Path(tmp) / "tokens.json"
        tokens_file.write_text(json.dumps(tokens), encoding="utf-8")
        recv_seed, recv_port = secrets.token_hex(32), free_port()
        recv_address = str(Identity.from_seed(recv_seed, 0).address)
        peer = f"{recv_address}={endpoint_for(recv_port)}"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        senders: list[tuple[str, str, str, subprocess.Popen[str]]] = []
        plans = [
            ("agent_stream", "stream", "32"),
            ("agent_stream, no coalescing", "stream", "1"),
            ("one ChatMessage per token", "per-token", "1"),
        ]
        old_cwd = os.getcwd()
        os.chdir(tmp)  # uagents writes storage files into the working directory
        try:
            for name, role, coalesce in plans:
                port = free_port()
                cmd = [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--role",
                    role,
                    "--port",
                    str(port),
                    "--seed",
                    secrets.token_hex(32),
                    "--peer",
                    peer,
                    "--tokens-file",
                    str(tokens_file),
                    "--rate",
                    str(args.rate),
                    "--max-coalesce",
                    coalesce,
                ]
                proc, address = spawn(cmd, env, tmp)
                senders.append((name, address, endpoint_for(port), proc))
            results = receive(senders, recv_seed, recv_port, text, args.timeout)
        finally:
            for *_, proc in senders:
                stop(proc)
            os.chdir(old_cwd)
    return report(results, len(tokens), len(text), args.rate)


def receive(
    senders: list[tuple[str, str, str, Any]], seed: str, port: int, text: str, timeout: float
) -> list[Result]:
    chat = StreamingChat()
    agent = local_agent(
        seed,
        port,
        name="receiver",
        peers={address: endpoint for _, address, endpoint, _ in senders},
        directory=None,
    )
    agent.include(chat, publish_manifest=True)

    async def run(ctx: Context) -> list[Result]:
        results = []
        for name, address, _, _ in senders:
            reply = await chat.ask(
                ctx, address, "Please stream the long reply.", timeout=timeout, settle=1.0
            )
            await reply
            t0 = reply.asked_at
            results.append(
                Result(
                    name,
                    reply.chat_messages,
                    reply.first_text_at - t0 if reply.first_text_at is not None else None,
                    reply.ended_at - t0 if reply.completed and reply.ended_at else None,
                    reply.text() == text,
                    reply.status,
                )
            )
            await asyncio.sleep(0.2)
        return results

    out = run_agent(agent, run)
    assert out is not None
    return out


def report(results: list[Result], n_tokens: int, n_chars: int, rate: float) -> int:
    def secs(v: float | None) -> str:
        return f"{v:8.3f} s" if v is not None else "       -  "

    model = "as fast as possible" if rate <= 0 else f"{rate:g} tokens/s"
    print(
        f"chat benchmark: a {n_tokens:,}-token reply ({n_chars:,} characters), model {model}; "
        "sender and receiver agents in two processes, signed envelopes over HTTP on 127.0.0.1"
    )
    print(
        f"{'sender':<30}{'ChatMessages':>13}{'first text':>13}{'complete reply':>16}"
        f"{'text identical':>16}"
    )
    for r in results:
        print(
            f"{r.name:<30}{r.chat_messages:>13,}{secs(r.first_text):>13}"
            f"{secs(r.complete):>16}{'yes' if r.identical else 'NO':>16}"
        )
    ours, base = results[0], results[-1]
    ok = all(r.identical and r.status == "completed" for r in results)
    fewer = base.chat_messages / ours.chat_messages if ours.chat_messages else 0.0
    faster = (base.complete / ours.complete) if (base.complete and ours.complete) else 0.0
    print(
        f"per token / agent_stream: {fewer:,.1f}x the ChatMessages, {faster:,.1f}x the time "
        "to the complete reply"
    )
    if len(results) > 2:
        mid = results[1]
        if mid.chat_messages and mid.complete and base.complete:
            print(
                f"per token / agent_stream without coalescing: "
                f"{base.chat_messages / mid.chat_messages:,.1f}x the ChatMessages, "
                f"{base.complete / mid.complete:,.1f}x the time"
            )
    t1, t2 = fewer >= 10, faster >= 5
    if rate > 0:
        # Both replies are paced by the model; only a transport-bound run (--rate 0) can show
        # how much faster the complete reply arrives.
        speed = "not checked (the model sets the pace; run with --rate 0)"
        t2 = True
    else:
        speed = "met" if t2 else "MISSED"
    print(
        f"targets: >= 10x fewer ChatMessages: {'met' if t1 else 'MISSED'}; "
        f">= 5x faster to the complete reply: {speed}; "
        f"identical text: {'yes' if ok else 'NO'}"
    )
    return 0 if (ok and t1 and t2) else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
