"""Tagged-wire bytes and envelopes per reply: the replay model's reply with reasoning (thinking, a
tool call, two tools in parallel threads, a 2,246-character answer) at its default pace (60
tokens/s), between two agent_stream agents, each a process of its own on 127.0.0.1, every
envelope signed and posted over HTTP.

The responder is ``agent-stream serve --reasoning`` itself. The asker, an agent in this process,
asks it as an asker before folding would (its tag without ``fold=1`` or ``lean=1``: the
responder sends the unfolded form, byte for byte what it sent before folding existed), as an
asker before the lean wire would (``fold=1`` alone: today's form, byte for byte) and as it asks
now (``lean=1``, with ``cuts=1``: a chunk group's chunks as one TextContent and their lengths). Another row asks an agent that is ``serve --reasoning`` with fuller envelopes
(the chat chunker's ``--max-delay``/``--min-chars``/``--max-chars`` and the lean wire's gather
window ``--lean-gather`` of this bench), asked as now,
and the last a stock uagents agent streaming the same answer one ChatMessage per token (the chat
protocol's StartStream, a TextContent message per token, EndStream), at the same pace.

Counted at the asker's HTTP edge: every envelope the responder posted to it (batches counted
envelope by envelope, each as uagents writes it alone), its bytes, and how many carry a
ChatMessage; the time from the question to the first text; whether the answer is the same.

    python bench/bench_wire_bytes.py [--runs 1] [--max-delay 1.2 --min-chars 400 --max-chars 800]
        [--lean-gather 1.5] [--dump envelopes.json] [--base PATH]

``--dump FILE`` writes every envelope's payload, decoded, to see where a reply's bytes go.
``--base PATH`` also asks another checkout's ``serve --reasoning`` (e.g. main's tree, from
``git archive main``), the same three ways, in the same run: rows "before: ...". Its lean row
needs this tree's asker to read that tree's lean wire.

Targets (issue 45): at most 25 KB and 15 envelopes for the reply, the same text, the first text
no later than today's, still several ChatMessages.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_chat import spawn, stop

QUESTION = "How do agents stream their output?"
RATE = 60.0  # the replay model's default pace (serve's --rate default); --rate changes it


# -- the senders (subprocesses) -------------------------------------------------------------------
def run_sender(args: argparse.Namespace) -> int:
    from agent_stream.sources.replay import REPLIES, pick_reply, tokenize
    from agent_stream.uagents import local_agent, parse_peers, run_agent

    agent = local_agent(
        args.seed, args.port, name=args.role, peers=parse_peers(args.peer), directory=None
    )
    if args.role == "per-token":
        tokens = tokenize(pick_reply(QUESTION, REPLIES).answer)
        proto = Protocol(spec=chat_protocol_spec)
        tasks: set[asyncio.Task[None]] = set()

        async def stream(ctx: Context, sender: str) -> None:
            sid = uuid.uuid4()
            start = time.monotonic()
            await ctx.send(sender, ChatMessage(content=[StartStreamContent(stream_id=sid)]))
            for i, tok in enumerate(tokens):
                await ctx.send(sender, ChatMessage(content=[TextContent(text=tok)]))
                delay = start + (i + 1) / args.rate - time.monotonic() if args.rate else 0.0
                if delay > 0:
                    await asyncio.sleep(delay)
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
    else:  # "fuller": serve --reasoning's agent, its chat chunker given by this bench
        from agent_stream.sources.replay import ReplayModel
        from agent_stream.uagents import StreamingChat

        model = ReplayModel(rate=args.rate)

        async def respond(request: Any, out: Any) -> None:
            await model(request.text, out)

        chunker = {
            "min_chars": args.min_chars,
            "max_chars": args.max_chars,
            "max_delay": args.max_delay,
        }
        agent.include(
            StreamingChat(
                respond, channels={"reasoning"}, chunker=chunker, lean_gather=args.lean_gather
            ),
            publish_manifest=True,
        )
    print(f"READY {agent.address}", flush=True)
    run_agent(agent)
    return 0


# -- the asker (this process) ---------------------------------------------------------------------
class Tally:
    """Envelopes posted to the asker, per sender: (bytes, carries a ChatMessage), and where
    each one's bytes go (:data:`PARTS`)."""

    def __init__(self) -> None:
        self.by_sender: dict[str, list[tuple[int, bool]]] = {}
        self.parts: dict[str, list[dict[str, int]]] = {}
        self.payloads: dict[str, list[Any]] = {}  # each envelope's decoded payload (--dump)

    def note(self, body: bytes) -> None:
        try:
            data = json.loads(body)
        except ValueError:
            return
        for env in data if isinstance(data, list) else [data]:
            if not isinstance(env, dict) or "sender" not in env:
                continue
            size = len(json.dumps(env, separators=(",", ":")))
            chat = False
            raw = env.get("payload") or ""
            payload: Any = None
            try:
                payload = json.loads(base64.b64decode(raw))
                chat = isinstance(payload, dict) and "content" in payload
            except ValueError:
                pass
            self.by_sender.setdefault(env["sender"], []).append((size, chat))
            self.payloads.setdefault(env["sender"], []).append(
                {"bytes": size, "envelope": size - len(raw), "payload": payload}
            )
            self.parts.setdefault(env["sender"], []).append(_parts(size, raw, payload))


# Where an envelope's bytes go: the signed envelope around the payload, base64's third, the
# ChatMessage's own fields, the text (TextContent items), the agent_stream metadata, the rest.
PARTS = ("envelope", "base64", "chat head", "text", "metadata", "other items")
# The same envelopes without a byte of agent_stream metadata (tagged MetadataContent items left
# out, base64 of what is left): what no encoding of ours can go below at that envelope count.
FLOOR = "no-metadata floor"


def _parts(size: int, raw: str, payload: Any) -> dict[str, int]:
    body = json.dumps(payload)  # as uagents writes a model: json.dumps' default separators
    out = dict.fromkeys((*PARTS, FLOOR), 0)
    out["envelope"] = size - len(raw)
    out["base64"] = len(raw) - len(body)
    out[FLOOR] = size
    if not isinstance(payload, dict) or not isinstance(payload.get("content"), list):
        out["other items"] = len(body)
        return out
    items = payload["content"]
    bare = [
        i for i in items if not (isinstance(i, dict) and "agent_stream" in i.get("metadata", {}))
    ]
    out[FLOOR] = out["envelope"] + 4 * -(-len(json.dumps({**payload, "content": bare})) // 3)
    sizes = [len(json.dumps(i)) + 2 for i in items]  # ", " between items
    out["chat head"] = len(body) - sum(sizes)
    for item, n in zip(items, sizes, strict=True):
        kind = item.get("type") if isinstance(item, dict) else None
        key = {"text": "text", "metadata": "metadata"}.get(str(kind), "other items")
        out[key] += n
    return out


def _count_posts(tally: Tally) -> None:
    """Count what the asker's HTTP edge reads (the body of every post)."""
    from agent_stream.uagents.transport import _http_edge

    read = _http_edge._read

    async def counting(receive: Any, limit: int) -> bytes | None:
        body = await read(receive, limit)
        if body is not None:
            tally.note(body)
        return body

    _http_edge._read = counting


def _ask_without(*names: str) -> Any:
    """Ask as an older tree asks: a tag without the capabilities ``names`` (``FOLD_KEY``,
    ``LEAN_KEY``: the responder does not know the keys sent instead); returns the undo."""
    from agent_stream.adapters.chat import wire

    keys = {name: getattr(wire, name) for name in names}
    for name, key in keys.items():
        setattr(wire, name, f"{key}-unknown-to-the-responder")

    def undo() -> None:
        for name, key in keys.items():
            setattr(wire, name, key)

    return undo


@dataclass
class Row:
    name: str
    parts: dict[str, int]
    envelopes: int
    chat_messages: int
    kb: float
    first_text: float | None
    same_text: bool
    status: str | None
    envelopes_seen: list[Any]  # each envelope: its bytes and decoded payload (--dump)


def ask_all(
    plans: list[tuple[str, str, str, tuple[str, ...]]],
    seed: str,
    port: int,
    runs: int,
    timeout: float,
) -> list[Row]:
    from agent_stream.sources.replay import REPLIES, pick_reply
    from agent_stream.uagents import StreamingChat, local_agent, run_agent

    answer = pick_reply(QUESTION, REPLIES).answer
    tally = Tally()
    _count_posts(tally)
    chat = StreamingChat()
    agent = local_agent(
        seed,
        port,
        name="asker",
        peers={address: endpoint for _, address, endpoint, _ in plans},
        directory=None,
    )
    agent.include(chat, publish_manifest=True)

    async def run(ctx: Context) -> list[Row]:
        rows: list[Row] = []
        for _ in range(runs):
            for name, address, _, without in plans:
                undo = _ask_without(*without) if without else None
                try:
                    before = len(tally.by_sender.get(address, []))
                    reply = await chat.ask(
                        ctx, address, QUESTION, channels={"reasoning"}, timeout=timeout, settle=2.0
                    )
                    await reply
                finally:
                    if undo is not None:
                        undo()
                await asyncio.sleep(1.0)  # the last acknowledgements and keepalives settle
                got = tally.by_sender.get(address, [])[before:]
                first = reply.first_text_at
                rows.append(
                    Row(
                        name,
                        {
                            p: sum(e[p] for e in tally.parts[address][before:])
                            for p in (*PARTS, FLOOR)
                        },
                        len(got),
                        sum(1 for _, c in got if c),
                        sum(s for s, _ in got) / 1000,
                        first - reply.asked_at if first is not None else None,
                        answer in reply.text(),
                        reply.status,
                        tally.payloads.get(address, [])[before:],
                    )
                )
        return rows

    out = run_agent(agent, run)
    assert out is not None
    return out


UNFOLDED = "serve --reasoning, asked unfolded"
FOLDED = "serve --reasoning, folded (fold=1, as today)"
LEAN = "serve --reasoning, lean (lean=1)"
FULLER = "serve --reasoning, lean + fuller envelopes"
PER_TOKEN = "stock uagents, one ChatMessage per token"
BEFORE = "before: "  # a row of the --base tree's serve


def report(rows: list[Row], args: argparse.Namespace) -> int:
    names = list(dict.fromkeys(r.name for r in rows))
    print(
        f"wire bytes per reply: the replay model's reply with reasoning at {args.rate:g} tokens/s, "
        f"asked {args.runs}x (medians); fuller = chunker max_delay {args.max_delay:g} s, "
        f"min_chars {args.min_chars}, max_chars {args.max_chars}, gather window "
        f"{args.lean_gather:g} s"
    )
    print(
        f"{'responder':<44}{'envelopes':>10}{'ChatMessages':>14}{'KB':>8}"
        f"{'first text':>12}{'same text':>11}  status"
    )
    med = statistics.median
    out: dict[str, tuple[float, float, float | None]] = {}
    for name in names:
        rs = [r for r in rows if r.name == name]
        firsts = [r.first_text for r in rs if r.first_text is not None]
        env, kb = med(r.envelopes for r in rs), med(r.kb for r in rs)
        first = med(firsts) if firsts else None
        out[name] = (env, kb, first)
        ft = f"{first:9.3f} s" if first is not None else "         -"
        print(
            f"{name:<44}{env:>10g}{med(r.chat_messages for r in rs):>14g}{kb:>8.1f}"
            f"{ft:>12}{all(r.same_text for r in rs)!s:>11}  "
            f"{','.join(sorted({str(r.status) for r in rs}))}"
        )
    print(
        "where the bytes of a reply go (KB, medians; floor: the same envelopes without our metadata):"
    )
    print(f"{'responder':<44}" + "".join(f"{p:>12}" for p in PARTS) + f"{'floor':>8}")
    for name in names:
        rs = [r for r in rows if r.name == name]
        print(
            f"{name:<44}"
            + "".join(f"{med(r.parts[p] for r in rs) / 1000:>12.1f}" for p in (*PARTS, FLOOR))
        )
    if args.rate > 0:
        from agent_stream.adapters.chat import LEAN_GATHER

        seconds, token = _answer_seconds(args.rate), 1 / args.rate
        print(
            "  the envelopes' floor: text waits at most the chat chunker's max_delay (0.5 s) "
            f"today, the lean wire's gather window ({LEAN_GATHER:g} s) lean, after its oldest "
            "character, so an answer streaming for T s needs at least T / (that + one token) "
            f"ChatMessages: {seconds:.1f} s of answer at {args.rate:g} tokens/s -> at least "
            f"{seconds / (0.5 + token):.0f} today, {seconds / (LEAN_GATHER + token):.0f} lean, "
            "before the reasoning, the tools and the end"
        )
        floor = statistics.median(r.parts[FLOOR] for r in rows if r.name == LEAN) / 1000
        print(
            f"  the bytes' floor: {LEAN}'s envelopes without a byte of our metadata (no "
            f"reasoning, no tool calls, no ids) would still be {floor:.1f} KB: the signed envelope "
            "and the ChatMessage's own fields cost ~720 bytes each"
        )
    today = out[FOLDED]  # fold=1: what the asker got before the lean wire
    ok = True
    for name in [n for n in (LEAN, FULLER, BEFORE + LEAN) if n in out]:
        env, kb, first = out[name]
        met = env <= 15 and kb <= 25.0
        later = first is not None and today[2] is not None and first > today[2] + 0.05
        print(
            f"  {name}: {kb / today[1]:.0%} of today's (fold=1) bytes, {env / today[0]:.0%} of "
            f"its envelopes; targets (<= 25 KB, <= 15 envelopes) {'met' if met else 'NOT met'}"
            f"{'; first text LATER than today' if later else ''}"
        )
        ok = ok and not later
    ok = ok and all(r.same_text and r.status == "completed" for r in rows if r.name != PER_TOKEN)
    return 0 if ok else 1


def _answer_seconds(rate: float) -> float:
    from agent_stream.sources.replay import REPLIES, pick_reply, tokenize

    return len(tokenize(pick_reply(QUESTION, REPLIES).answer)) / rate


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=1, help="asks per responder (medians reported)")
    p.add_argument(
        "--rate", type=float, default=RATE, help="model tokens per second (0: as fast as it can)"
    )
    p.add_argument("--max-delay", type=float, default=1.2, help="fuller: chunker max_delay")
    p.add_argument("--min-chars", type=int, default=400, help="fuller: chunker min_chars")
    p.add_argument("--max-chars", type=int, default=800, help="fuller: chunker max_chars")
    p.add_argument(
        "--lean-gather",
        type=float,
        default=None,
        help="fuller: the lean wire's gather window, seconds (default: the library's)",
    )
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument(
        "--dump",
        metavar="FILE",
        help="write every envelope of each reply (its bytes, its payload decoded) as JSON",
    )
    p.add_argument(
        "--base",
        type=Path,
        metavar="PATH",
        help="another checkout whose serve --reasoning is asked too (rows 'before: ...')",
    )
    p.add_argument("--role", default="asker", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--seed", help=argparse.SUPPRESS)
    p.add_argument("--peer", action="append", default=[], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.lean_gather is None:
        from agent_stream.adapters.chat import LEAN_GATHER

        args.lean_gather = LEAN_GATHER
    if args.role != "asker":
        return run_sender(args)

    from agent_stream.uagents import endpoint_for
    from agent_stream.uagents.local._agents import free_port

    seed, port = secrets.token_hex(32), free_port()
    peer = f"{Identity.from_seed(seed, 0).address}={endpoint_for(port)}"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    procs: list[subprocess.Popen[str]] = []
    plans: list[tuple[str, str, str, tuple[str, ...]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-wire-bytes-") as tmp:
        old_cwd = os.getcwd()
        os.chdir(tmp)  # uagents writes storage files into the working directory
        try:
            serve_ports: list[int] = []
            for prefix, tree in [("", None)] + ([(BEFORE, args.base)] if args.base else []):
                serve_port = free_port()
                serve_seed = secrets.token_hex(32)
                serve_env = dict(env, AGENT_STREAM_SEED=serve_seed)
                if tree is not None:  # that tree's agent_stream, without writing into it
                    serve_env.update(PYTHONPATH=str(tree.resolve()), PYTHONDONTWRITEBYTECODE="1")
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "agent_stream",
                        "serve",
                        "--reasoning",
                        "--rate",
                        str(args.rate),
                        "--port",
                        str(serve_port),
                        "--seed",
                        serve_seed,
                        "--peer",
                        peer,
                        "--no-directory",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=serve_env,
                    cwd=tmp,
                    text=True,
                )
                procs.append(proc)
                serve_ports.append(serve_port)
                serve_address = str(Identity.from_seed(serve_seed, 0).address)
                serve_endpoint = endpoint_for(serve_port)
                for name, without in (
                    (UNFOLDED, ("FOLD_KEY", "LEAN_KEY")),
                    (FOLDED, ("LEAN_KEY",)),
                    (LEAN, ()),
                ):
                    plans.append((prefix + name, serve_address, serve_endpoint, without))
            for name, role in ((FULLER, "fuller"), (PER_TOKEN, "per-token")):
                sport = free_port()
                cmd = [
                    sys.executable,
                    str(Path(__file__).resolve()),
                    "--role",
                    role,
                    "--port",
                    str(sport),
                    "--seed",
                    secrets.token_hex(32),
                    "--peer",
                    peer,
                    "--max-delay",
                    str(args.max_delay),
                    "--min-chars",
                    str(args.min_chars),
                    "--max-chars",
                    str(args.max_chars),
                    "--rate",
                    str(args.rate),
                    "--lean-gather",
                    str(args.lean_gather),
                ]
                sproc, address = spawn(cmd, env, tmp, timeout=120.0)
                procs.append(sproc)
                plans.append((name, address, endpoint_for(sport), ()))
            for serve_port in serve_ports:
                _wait_listening(serve_port)
            rows = ask_all(plans, seed, port, args.runs, args.timeout)
        finally:
            for proc in procs:
                stop(proc)
            os.chdir(old_cwd)
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as f:
            json.dump([{"responder": r.name, "envelopes": r.envelopes_seen} for r in rows], f)
    return report(rows, args)


def _wait_listening(port: int, timeout: float = 60.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"serve did not listen on {port}")


if __name__ == "__main__":
    sys.exit(main())
