"""One agent, many live conversations: N OpenAI SSE clients through one gateway to one
streaming agent, and the CPU one ChatMessage costs, for this tree and for another one.

Sweep (default): for each N (10, 100, 300, 1000), a fresh streaming agent (the replay model at
``--rate`` tokens/s, like ``agent-stream serve``) and a fresh gateway (``agent-stream
gateway``'s pieces), both on 127.0.0.1, then N SSE clients at once (``POST
/v1/chat/completions``, ``stream: true``). Caps are lifted on both sides (replies at once, the
inbox and the per-sender envelope rate), so what is measured is the transport and the CPU.
Per N: completed (the whole text, as one client alone gets it), wall against the ideal (one
conversation alone), first-text p50/p99, ChatMessages/s sent by the agent, CPU % (of one core)
and peak RSS per process.

Per-token stock arm (after the sweep; ``--stock-phases ""`` leaves it out, ``--sizes ""`` runs
it alone): two plain uagents agents (uagents' own signing, dispenser and inbox, the chat protocol
from uagents_core, no agent_stream on the message path), M conversations at once each sending one
ChatMessage per token at ``--rate`` (start-stream, tokens, end-stream), the receiver
acknowledging each from its handler as Fetch.ai's examples do. M grows (``--stock-phases``) until
the conversations no longer keep pace (the last token more than 1 s late, or one undelivered);
printed per M: tokens/s, CPU % of both processes, and conversations per core (M over their CPU
%, times 100). The sweep's rows print the same figure for ours (N over the agent's and the
gateway's CPU %).

Timeline (``--timeline``): for the largest N, each process's CPU and the first texts the clients
saw per half second from their start: which side was busy while the first texts were awaited.

Micro (``--micro``): two agents in two processes, M ChatMessages (reply-sized, with tags) sent
one after another over signed HTTP; the CPU of each process divided by M (sign + post + HTTP +
encode on the sender, HTTP + verify + guard + parse on the receiver).

``--base PATH`` runs the same on another checkout of agent_stream (e.g. a ``git worktree`` of an
older commit; its compiled chunker copied in) in the same run: "before" beside "this tree".
Compile both trees' bytecode first (``python -m compileall -q agent_stream``) when
``PYTHONDONTWRITEBYTECODE`` is set: a tree without it compiles the modules it imports lazily
(a wire's encoder on the first request) inside the measured window: a copy of the very same
commit without it measured ~6 ms more agent CPU per conversation at N = 100 (one run of two).
``--repeat K`` runs each tree's sweep K times, the trees taking turns (and the first place: this
tree first in odd rounds, the other in even ones), then prints the median of each N's figures and
every run's first-text p99: at N = 1,000 on this machine a p99 moves by a second or more from
one run to the next, more than most changes move it. It also prints each process's CPU
milliseconds per conversation, which the machine's lending its cores elsewhere barely moves.

    python bench/bench_scale.py [--sizes 10,100,300,1000] [--rate 20] [--base PATH]
                                [--repeat K] [--max-replies M] [--stock-phases 1,2,4,8,16]
                                [--timeline]
    python bench/bench_scale.py --micro [--messages 2000] [--base PATH]

Samples: with ``BENCH_SPY=folder``, py-spy samples the agent and the gateway over a window of
the crowd (``BENCH_SPY_WINDOW=from,seconds`` from the clients' start): :func:`spy`.

Profiles: with ``BENCH_PROFILE=folder`` in the environment, the agent and the gateway processes
run under cProfile (timed by CPU time) once started and write ``folder/serve-PID.prof`` / ``gateway-PID.prof``
(``python -m pstats``); cProfile slows them, so their CPU figures are not comparable then.

Loopback only; every wait is bounded (``--timeout`` per sweep step). The machine's load average
is printed: other work on it skews every number.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ME = str(Path(__file__).resolve())
QUESTION = "How do agents stream?"
HIGH = 1_000_000.0  # a rate or size no bench reaches: the cap is lifted


# -- child processes ---------------------------------------------------------------------------------
def command_loop() -> None:
    """The event loop the ``agent-stream`` command runs on (uvloop's, in trees that have it)."""
    try:
        from agent_stream.eventloop import use_fast_loop
    except ImportError:  # an older tree (--base): asyncio's, as its command had
        return
    use_fast_loop()


def lifted(max_replies: int) -> dict[str, Any]:
    """Settings with every cap a crowd of conversations would hit lifted (public API only)."""
    from agent_stream.uagents import ChatSettings, Protection, ReplyLimits
    from agent_stream.uagents.transport._guard import GuardSettings

    guard = GuardSettings(
        new_senders_per_second=HIGH,
        sender_envelopes_per_second=HIGH,
        unsigned_per_second=HIGH,
        max_queued=1 << 20,
        max_queued_bytes=1 << 30,
    )
    protection = Protection(guard=guard)
    caps = ReplyLimits(
        max_replies=max_replies, max_replies_per_sender=max_replies, max_refusals=max_replies
    )
    return {"settings": ChatSettings(caps=caps, protection=protection), "protection": protection}


def role_serve(port: int, rate: float, max_replies: int, stats: str) -> int:
    command_loop()
    from agent_stream.sources import make_source
    from agent_stream.uagents import StreamingChat, local_agent, run_agent

    model = make_source("replay", rate=rate)

    async def respond(request: Any, out: Any) -> None:
        await model(request.text, out)

    lift = lifted(max_replies)
    chat = StreamingChat(respond, settings=lift["settings"])
    agent = local_agent(
        f"bench scale serve {port} {time.time_ns()}",
        port,
        name="bench-llm",
        protection=lift["protection"],
    )
    agent.include(chat, publish_manifest=True)

    trace = float(os.environ.get("BENCH_TRACE_MEMORY") or 0)
    if trace:
        import tracemalloc

        tracemalloc.start(1)

    async def main(ctx: Any) -> None:
        profiled("serve")
        print(f"address: {agent.address}", flush=True)
        busy_since: float | None = None
        while True:
            # whole or not at all: the parent may read it at any moment
            Path(f"{stats}.new").write_text(json.dumps({"chat_messages": chat.sent_chat_messages}))
            os.replace(f"{stats}.new", stats)
            await asyncio.sleep(0.5)
            if trace and chat.active and busy_since is None:
                busy_since = time.monotonic()
            if trace and busy_since is not None and time.monotonic() - busy_since >= trace:
                trace_memory(f"{stats}.memory", chat.active)
                busy_since = float("inf")

    run_agent(agent, main)
    return 0


def profiled(role: str) -> None:
    """With ``BENCH_PROFILE`` set (a folder), profile this process with cProfile from now on and
    write its stats to ``<folder>/<role>-<pid>.prof`` every second (the last write before the
    process is stopped is the profile: nothing depends on how it is stopped)."""
    folder = os.environ.get("BENCH_PROFILE")
    if not folder:
        return
    import cProfile

    prof = cProfile.Profile(time.process_time)  # CPU time: a loaded machine preempts us
    path = Path(folder) / f"{role}-{os.getpid()}.prof"

    async def dump() -> None:
        while True:
            await asyncio.sleep(1.0)
            prof.dump_stats(path)  # stops the profiler
            prof.enable()

    tasks.add(asyncio.get_running_loop().create_task(dump()))
    prof.enable()


tasks: set[asyncio.Task[None]] = set()


def trace_memory(path: str, replies: int) -> None:
    """Where the serving process's memory is (tracemalloc, by line), per open reply."""
    import gc
    import tracemalloc

    gc.collect()
    snap = tracemalloc.take_snapshot()
    stats = snap.statistics("lineno")
    total = sum(s.size for s in stats)
    lines = [f"traced {total / 1e6:.1f} MB, {replies} replies open"]
    for s in stats[:40]:
        where = str(s.traceback[0]).replace(str(ROOT) + "/", "")
        lines.append(
            f"{s.size / 1e6:8.2f} MB {s.size / max(1, replies) / 1e3:8.1f} KB/reply {where}"
        )
    Path(path).write_text("\n".join(lines) + "\n")


def role_gateway(port: int, agent_spec: str, max_replies: int, timeout: float) -> int:
    """``agent-stream gateway``'s run, with the caps lifted (its own code otherwise)."""
    command_loop()
    import secrets

    import uvicorn

    from agent_stream.gateway.app import Gateway, build_app
    from agent_stream.gateway.config import GatewayConfig
    from agent_stream.gateway.link import Agents, ChatLink, parse_agent_spec
    from agent_stream.gateway.server import make_store
    from agent_stream.uagents import LocalDirectory, StreamingChat, local_agent, run_agent
    from agent_stream.uagents.local._agents import free_port

    config = GatewayConfig(
        port=port,
        agents=[agent_spec],
        max_replies_per_key=max_replies,
        max_replies=max_replies,
        reply_timeout=timeout,
    )
    config.check()
    directory = LocalDirectory()
    agents = Agents([parse_agent_spec(agent_spec)], directory)
    lift = lifted(max_replies)
    chat = StreamingChat(settings=lift["settings"])
    agent = local_agent(
        secrets.token_hex(32),
        free_port(),
        name="bench-gateway",
        peers=agents.static_peers,
        directory=directory,
        protection=lift["protection"],
    )
    agents.exclude = agent.address
    agent.include(chat, publish_manifest=True)
    store = make_store(config)

    async def main(ctx: Any) -> None:
        profiled("gateway")
        # the link sends as the agent (newer trees) or through a context (older ones)
        sends_as = "agent" in inspect.signature(ChatLink).parameters
        gw = Gateway(config, agents, ChatLink(chat, agent if sends_as else ctx), store)
        server = uvicorn.Server(
            uvicorn.Config(
                build_app(gw),
                host="127.0.0.1",
                port=port,
                log_config=None,
                access_log=False,
                lifespan="off",
                backlog=4096,
            )
        )
        follow = asyncio.create_task(gw.runs.follow_cancels())

        async def announce() -> None:
            while not server.started:
                await asyncio.sleep(0.02)
            print(f"gateway: http://127.0.0.1:{port}", flush=True)

        shout = asyncio.create_task(announce())
        try:
            await server.serve()
        finally:
            shout.cancel()
            follow.cancel()

    run_agent(agent, main)
    return 0


def role_receiver(port: int, count: int) -> int:
    command_loop()
    from uagents import Context, Protocol
    from uagents_core.contrib.protocols.chat import (
        ChatAcknowledgement,
        ChatMessage,
        chat_protocol_spec,
    )

    from agent_stream.uagents import local_agent, run_agent

    proto = Protocol(spec=chat_protocol_spec)
    got = 0

    @proto.on_message(ChatMessage)  # type: ignore[untyped-decorator]
    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        nonlocal got
        got += 1
        if got == count:
            print(f"got: {got}", flush=True)

    @proto.on_message(ChatAcknowledgement)  # type: ignore[untyped-decorator]
    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        return None

    agent = local_agent(
        f"bench scale receiver {port}", port, directory=None, protection=lifted(16)["protection"]
    )
    agent.include(proto, publish_manifest=False)

    async def main(ctx: Any) -> None:
        print(f"address: {agent.address}", flush=True)
        await asyncio.sleep(3600)

    run_agent(agent, main)
    return 0


def role_sender(port: int, target: str, endpoint: str, count: int) -> int:
    command_loop()
    from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent, TextContent
    from uagents_core.types import DeliveryStatus

    from agent_stream.uagents import local_agent, run_agent

    agent = local_agent(
        f"bench scale sender {port}",
        port,
        directory=None,
        peers={target: endpoint},
        protection=lifted(16)["protection"],
    )

    def chat(i: int) -> ChatMessage:
        tags = {"as": "1", "conversation": "c", "seq": str(i), "thread": "t", "message": "m"}
        return ChatMessage(
            content=[
                MetadataContent(metadata=tags),
                TextContent(text=f"token {i} of a sentence that streams. "),
            ]
        )

    async def main(ctx: Any) -> None:
        for i in range(20):  # warm-up: connections, caches
            await ctx.send(target, chat(i))
        print("start: 1", flush=True)
        failed = 0
        for i in range(count):
            status = await ctx.send(target, chat(i))
            failed += getattr(status, "status", None) != DeliveryStatus.DELIVERED
        print(f"done: {failed}", flush=True)
        await asyncio.sleep(3600)

    run_agent(agent, main)
    return 0


# -- the per-token stock arm: plain uagents, one ChatMessage per token ------------------------------
def stock_agent(seed: str, port: int, peers: dict[str, str]) -> Any:
    """A plain uagents ``Agent`` on 127.0.0.1 with no internet: uagents' own signing (pure-Python
    ECDSA), its one serial dispenser (a new connection per envelope), its own inbox; only the
    ledger query, the status update and the 0.0.0.0 host are left out (no agent_stream code
    on the message path)."""
    from uagents import Agent
    from uagents.asgi import ASGIServer
    from uagents.resolver import RulesBasedResolver
    from uagents_core.registration import AgentRegistrationPolicy

    from agent_stream.uagents import _compat

    class Loopback(ASGIServer):  # type: ignore[misc]
        async def serve(self) -> None:
            await _compat.serve_on(self, "127.0.0.1")

    class NoRegistration(AgentRegistrationPolicy):  # type: ignore[misc]
        async def register(self, *args: Any, **kwargs: Any) -> None:
            return None

    class StockAgent(Agent):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            _compat.agent_init_without_ledger()(self, *args, **kwargs)
            _compat.server_of(self).__class__ = Loopback

        async def _update_agent_status(self, active: bool) -> None:
            return None

    return StockAgent(
        name=f"stock-{port}",
        seed=seed,
        port=port,
        endpoint=[f"http://127.0.0.1:{port}/submit"],
        resolve=RulesBasedResolver(peers),
        registration_policy=NoRegistration(),
        enable_agent_inspector=False,
        report_events=False,
        mark_inactive_on_shutdown=False,
        publish_agent_details=False,
        log_level="ERROR",
    )


def role_stock_receiver(port: int, peer_seed: str, peer_port: int) -> int:
    """A stock chat agent acknowledging each ChatMessage from its handler (as Fetch.ai's
    examples do) and counting the text it got."""
    from uagents import Context, Protocol
    from uagents_core.contrib.protocols.chat import (
        ChatAcknowledgement,
        ChatMessage,
        chat_protocol_spec,
    )
    from uagents_core.identity import Identity

    from agent_stream.uagents import run_agent

    peer = Identity.from_seed(peer_seed, 0).address
    agent = stock_agent(
        f"bench stock receiver {port}", port, {peer: f"http://127.0.0.1:{peer_port}/submit"}
    )
    proto = Protocol(spec=chat_protocol_spec)
    got = 0

    @proto.on_message(ChatMessage)  # type: ignore[untyped-decorator]
    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        nonlocal got
        got += 1
        await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))

    @proto.on_message(ChatAcknowledgement)  # type: ignore[untyped-decorator]
    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        return None

    agent.include(proto, publish_manifest=False)

    async def main(ctx: Any) -> None:
        print(f"address: {agent.address}", flush=True)
        await asyncio.sleep(3600)

    run_agent(agent, main)
    return 0


def role_stock_sender(
    port: int, seed: str, target: str, endpoint: str, phases: str, seconds: float, rate: float
) -> int:
    """M stock conversations at once, each one ChatMessage per token at ``rate`` tokens/s
    (start-stream, the tokens, end-stream: the uAgents ChatAgent branch's streaming), for M in
    ``phases``; per phase, whether every conversation kept its pace."""
    from uuid import uuid4

    from uagents import Context, Protocol
    from uagents_core.contrib.protocols.chat import (
        ChatAcknowledgement,
        ChatMessage,
        EndStreamContent,
        StartStreamContent,
        TextContent,
        chat_protocol_spec,
    )
    from uagents_core.types import DeliveryStatus

    from agent_stream.uagents import _compat, run_agent

    agent = stock_agent(seed, port, {target: endpoint})
    proto = Protocol(spec=chat_protocol_spec)
    acks = 0

    @proto.on_message(ChatMessage)  # type: ignore[untyped-decorator]
    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        return None

    @proto.on_message(ChatAcknowledgement)  # type: ignore[untyped-decorator]
    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        nonlocal acks
        acks += 1

    agent.include(proto, publish_manifest=False)
    tokens = max(1, round(seconds * rate))

    async def conversation(t0: float) -> dict[str, float]:
        ctx = _compat.build_context(agent)
        stream = uuid4()
        ok = 0
        lag = 0.0
        messages = (
            [ChatMessage(content=[StartStreamContent(stream_id=stream)])]
            + [ChatMessage(content=[TextContent(text=f"tok{i} ")]) for i in range(tokens)]
            + [ChatMessage(content=[EndStreamContent(stream_id=stream)])]
        )
        for i, msg in enumerate(messages):
            due = t0 + min(i, tokens) / rate
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            status = await ctx.send(target, msg)
            ok += getattr(status, "status", None) == DeliveryStatus.DELIVERED
            lag = time.monotonic() - due
        return {"ok": ok, "lag": lag, "sent": len(messages)}

    async def main(ctx: Any) -> None:
        for _ in range(10):  # warm-up
            await ctx.send(target, ChatMessage(content=[TextContent(text="warm ")]))
        print("ready: 1", flush=True)
        for m in [int(x) for x in phases.split(",")]:
            before = acks
            print(f"phase: {m}", flush=True)
            t0 = time.monotonic() + 0.05
            rows = await asyncio.gather(*(conversation(t0) for _ in range(m)))
            wall = time.monotonic() - t0
            sent = sum(int(r["sent"]) for r in rows)
            settle = time.monotonic() + 10.0
            while acks - before < sent and time.monotonic() < settle:
                await asyncio.sleep(0.05)
            result = {
                "m": m,
                "delivered": sum(int(r["ok"]) for r in rows),
                "sent": sent,
                "acks": acks - before,
                "wall": wall,
                "lag": max(r["lag"] for r in rows),
                "tok_per_s": m * tokens / wall,
            }
            print(f"result: {json.dumps(result)}", flush=True)
            if result["lag"] > 1.0 or result["delivered"] < sent:
                break  # it no longer keeps up: larger M would not either
        print("done: 1", flush=True)
        await asyncio.sleep(3600)

    run_agent(agent, main)
    return 0


# -- measuring side ---------------------------------------------------------------------------------
class Proc:
    """A child process of this file (or ``-m``) with its own PYTHONPATH."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        role = args[2] if len(args) > 2 else "child"
        log = Path(env["BENCH_DIR"]) / f"{role}-{time.time_ns()}.log"
        with open(log, "w") as err:  # a child's stderr, for when it fails
            self.p = subprocess.Popen(
                [sys.executable, *args],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
                cwd=env["BENCH_DIR"],
            )

    def line(self, prefix: str, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        assert self.p.stdout is not None
        while time.monotonic() < deadline:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"child exited before {prefix!r}")
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
        raise RuntimeError(f"no {prefix!r} within {timeout} s")

    def cpu(self) -> float:
        """CPU seconds (user + system) so far."""
        fields = Path(f"/proc/{self.p.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.p.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def one_client(
    session: Any, base: str, model: str, t0: float, timeout: float
) -> dict[str, Any]:
    import aiohttp

    body = {"model": model, "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
    first: float | None = None
    text: list[str] = []
    done = False
    last = ""  # the last event before [DONE]: how the reply ended
    try:
        async with session.post(
            f"{base}/v1/chat/completions", json=body, timeout=aiohttp.ClientTimeout(total=timeout)
        ) as r:
            if r.status != 200:
                return {"status": r.status, "text": "", "first": None, "end": None}
            async for raw in r.content:
                line = raw.decode().strip()
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    done = True
                    break
                d = json.loads(line[6:])
                last = line[6:]
                piece = (d.get("choices") or [{}])[0].get("delta", {}).get("content")
                if piece:
                    text.append(piece)
                    first = first if first is not None else time.monotonic() - t0
    except Exception as exc:  # timeouts, resets: counted as not completed
        return {"status": type(exc).__name__, "text": "".join(text), "first": first, "end": None}
    return {
        "status": 200 if done else "cut",
        "text": "".join(text),
        "first": first,
        "end": time.monotonic() - t0,
        "last": last,
    }


async def crowd(base: str, model: str, n: int, timeout: float) -> list[dict[str, Any]]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        t0 = time.monotonic()
        return list(
            await asyncio.gather(*(one_client(session, base, model, t0, timeout) for _ in range(n)))
        )


def pct(vals: list[float], p: float) -> float | None:
    if not vals:
        return None
    s = sorted(vals)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def sec(v: float | None) -> str:
    return f"{v:.1f}" if v is not None else "-"


def step(
    env: dict[str, str], n: int, args: argparse.Namespace, reference: str | None
) -> dict[str, Any]:
    """One serve + one gateway, ``n`` clients at once; the row of the table."""
    stats = f"{env['BENCH_DIR']}/serve-{n}.json"
    sport, gport = free_port(), free_port()
    agent_cap = min(n + 16, args.max_replies) if args.max_replies else n + 16
    serve = Proc(
        [
            ME,
            "--role",
            "serve",
            "--port",
            str(sport),
            "--rate",
            str(args.rate),
            "--max",
            str(agent_cap),
            "--stats",
            stats,
        ],
        env,
    )
    procs = [serve]
    try:
        address = serve.line("address:")
        gateway = Proc(
            [
                ME,
                "--role",
                "gateway",
                "--port",
                str(gport),
                "--agent",
                f"{address}=http://127.0.0.1:{sport}/submit",
                "--max",
                str(n + 16),
                "--timeout",
                str(args.timeout),
            ],
            env,
        )
        procs.append(gateway)
        base = gateway.line("gateway:")
        time.sleep(1.0)  # both agents' startup handlers done
        cpu0 = [p.cpu() for p in procs]
        me0 = os.times()
        sent0 = json.loads(Path(stats).read_text())["chat_messages"]
        t0 = time.monotonic()
        sampler = CpuTimeline(procs, t0) if args.timeline else None
        spies = spy(procs, n) if n > 1 else []
        try:
            rows = asyncio.run(crowd(base, address, n, args.timeout))
        finally:
            if sampler is not None:
                sampler.stop()
            for s in spies:
                s.wait(60)
        wall = time.monotonic() - t0
        cpu = [(p.cpu() - c) / wall * 100 for p, c in zip(procs, cpu0, strict=True)]
        me1 = os.times()
        mine = (me1.user + me1.system - me0.user - me0.system) / wall * 100
        time.sleep(0.6)
        sent = json.loads(Path(stats).read_text())["chat_messages"] - sent0
        rss = [p.peak_rss_mb() for p in procs]
    finally:
        for p in reversed(procs):
            p.stop()
    want = reference if reference is not None else (rows[0]["text"] if rows else "")
    ok = [r for r in rows if r["status"] == 200 and r["text"] == want and want]
    firsts = [r["first"] for r in rows if r["first"] is not None]
    statuses: dict[str, int] = {}
    for r in rows:
        if r not in ok:
            statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    wrong = [r for r in rows if r["status"] == 200 and r["text"] != want]
    if wrong:  # ended with [DONE] but another text than alone: say how it differs
        print(text_differences(want, wrong), file=sys.stderr, flush=True)
    return {
        "n": n,
        "completed": len(ok),
        "wall": wall,
        "ends": [r["end"] for r in ok],
        "p50": pct(firsts, 50),
        "p99": pct(firsts, 99),
        "msgs_per_s": sent / wall,
        "cpu": cpu,
        "clients_cpu": mine,
        "rss": rss,
        "text": want,
        "failures": statuses,
        "firsts": firsts,
        "timeline": sampler.samples if sampler is not None else None,
    }


def text_differences(want: str, wrong: list[dict[str, Any]]) -> str:
    """How the texts of replies that ended with [DONE] differ from the reply alone: how many
    are shorter or longer, how the first few ended, and where their text differs."""
    texts = [r["text"] for r in wrong]
    shorter = sum(len(t) < len(want) for t in texts)
    longer = sum(len(t) > len(want) for t in texts)
    ends: dict[str, int] = {}
    for r in wrong:
        end = str(r.get("last", ""))[-160:]
        ends[end] = ends.get(end, 0) + 1
    lines = [
        f"  {len(wrong)} replies ended with [DONE] and another text than alone ({len(want)} "
        f"chars): {shorter} shorter, {longer} longer; their last events:"
    ]
    lines += [f"    {n} x {end}" for end, n in sorted(ends.items(), key=lambda kv: -kv[1])[:3]]
    for t in texts[:3]:
        i = next(
            (k for k, (a, b) in enumerate(zip(want, t, strict=False)) if a != b),
            min(len(t), len(want)),
        )
        lines.append(
            f"    {len(t)} chars, first difference at {i}: "
            f"alone {want[max(0, i - 30) : i + 50]!r} / this {t[max(0, i - 30) : i + 50]!r}"
        )
    return "\n".join(lines)


def spy(procs: list[Proc], n: int) -> list[subprocess.Popen[bytes]]:
    """With ``BENCH_SPY=folder`` (and py-spy on the PATH, or at ``BENCH_PYSPY``), sample the
    agent and the gateway with py-spy over a window from the clients' start
    (``BENCH_SPY_WINDOW=from,seconds``, default ``0,10``; py-spy takes whole seconds), written as collapsed stacks to
    ``folder/{serve,gateway}-N.txt``: where each process's CPU went in that window (py-spy reads
    the processes from outside: their CPU figures stay comparable)."""
    folder = os.environ.get("BENCH_SPY")
    if not folder:
        return []
    start, seconds = (float(x) for x in os.environ.get("BENCH_SPY_WINDOW", "0,10").split(","))
    exe = os.environ.get("BENCH_PYSPY", "py-spy")
    out = []
    for role, proc in zip(("serve", "gateway"), procs, strict=True):
        cmd = [exe, "record", "--pid", str(proc.p.pid), "--rate", "250", "--format", "raw"]
        cmd += [
            "--duration",
            str(max(1, round(seconds))),
            "-o",
            f"{folder}/{role}-{n}.txt",
            "--nonblocking",
        ]
        shell = f"sleep {start}; exec {' '.join(cmd)}"
        out.append(subprocess.Popen(["sh", "-c", shell], stdout=subprocess.DEVNULL))
    return out


class CpuTimeline:
    """Each process's CPU seconds every ``every`` seconds from ``t0``, in a thread of its
    own (for ``--timeline``)."""

    def __init__(self, procs: list[Proc], t0: float, every: float = 0.1) -> None:
        self.procs, self.t0, self.every = procs, t0, every
        self.samples: list[tuple[float, list[float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                cpu = [p.cpu() for p in self.procs]
            except (OSError, IndexError):  # a process ended
                return
            self.samples.append((time.monotonic() - self.t0, cpu))
            if self._stop.wait(self.every):
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def print_timeline(row: dict[str, Any], until: float, bucket: float = 0.5) -> None:
    """Where the agent's and the gateway's CPU went while the first texts were awaited: per
    ``bucket`` seconds from the clients' start, each process's CPU % (of one core) and the
    first texts the clients saw in it."""
    samples = row.get("timeline") or []
    if len(samples) < 2:
        return
    firsts = sorted(row["firsts"])
    print(f"\nN={row['n']}: CPU and first texts over time (from the clients' start)")
    print("| from (s) | CPU % agent / gateway | first texts seen | of all |")
    print("| ---: | ---: | ---: | ---: |")
    seen = 0
    start = 0.0
    while start < until:
        end = start + bucket
        inside = [s for s in samples if start <= s[0] <= end]
        if len(inside) >= 2:
            dt = inside[-1][0] - inside[0][0]
            pct = [(b - a) / dt * 100 for a, b in zip(inside[0][1], inside[-1][1], strict=True)]
            cpu = f"{pct[0]:.0f} / {pct[1]:.0f}"
        else:
            cpu = "-"
        now = sum(1 for f in firsts if start <= f < end)
        seen += now
        print(f"| {start:.1f} | {cpu} | {now} | {seen / max(1, len(firsts)) * 100:.0f} % |")
        start = end


def sweep(env: dict[str, str], args: argparse.Namespace, label: str) -> list[dict[str, Any]]:
    alone = step(env, 1, args, None)
    ideal = alone["ends"][0] if alone["ends"] else None
    rows = [alone]
    for n in [int(x) for x in args.sizes.split(",")]:
        rows.append(step(env, n, args, alone["text"]))
        print(f"  [{label}] N={n}: {rows[-1]['completed']}/{n}", file=sys.stderr, flush=True)
    for r in rows:
        r["ideal"] = ideal
    return rows


def print_sweep(label: str, rows: list[dict[str, Any]], rate: float) -> None:
    ideal = rows[0].get("ideal")
    print(
        f"\n{label}: one agent (replay, {rate:g} tok/s) + one gateway; alone: complete "
        f"{sec(ideal)} s, first text {sec(rows[0]['p50'])} s"
    )
    print(
        "| N | completed | wall (x ideal) | first text p50 / p99 (s) | ChatMessages/s | "
        "CPU % agent / gateway / clients | peak RSS MB agent / gateway | "
        "conversations per core | not completed |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows[1:]:
        x = f" ({r['wall'] / ideal:.2f}x)" if ideal else ""
        print(
            f"| {r['n']} | {r['completed']}/{r['n']} | {r['wall']:.1f}{x} | "
            f"{sec(r['p50'])} / {sec(r['p99'])} | {r['msgs_per_s']:.0f} | "
            f"{r['cpu'][0]:.0f} / {r['cpu'][1]:.0f} / {r['clients_cpu']:.0f} | "
            f"{r['rss'][0]:.0f} / {r['rss'][1]:.0f} | "
            f"{per_core(r['n'], r['cpu']):.0f}{'' if r['completed'] == r['n'] else ' (not held)'} | "
            f"{', '.join(f'{k}: {v}' for k, v in r['failures'].items()) or '-'} |"
        )


def cpu_ms(row: dict[str, Any], proc: int) -> float:
    """CPU milliseconds one process spent per conversation of a step: unlike latency, it
    hardly moves when the machine lends the cores elsewhere for a while (which it does here)."""
    return float(row["cpu"][proc]) / 100 * float(row["wall"]) / int(row["n"]) * 1000


def print_medians(label: str, runs: list[list[dict[str, Any]]]) -> None:
    """Each N's median figures over ``runs`` (sweeps of one tree) and every run's p99."""
    print(f"\n{label}, median of {len(runs)} runs:")
    print(
        "| N | completed (worst) | wall (s) | first text p50 / p99 (s) | p99 of each run (s) | "
        "CPU % agent / gateway | CPU ms per conversation agent / gateway | "
        "peak RSS MB agent / gateway (highest) |"
    )
    print("| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |")

    def med(rows: list[dict[str, Any]], key: str) -> str:
        vals = [r[key] for r in rows if r[key] is not None]
        return sec(statistics.median(vals)) if vals else "-"

    for i in range(1, len(runs[0])):
        rows = [run[i] for run in runs]
        n = rows[0]["n"]
        print(
            f"| {n} | {min(r['completed'] for r in rows)}/{n} | {med(rows, 'wall')} | "
            f"{med(rows, 'p50')} / {med(rows, 'p99')} | "
            f"{', '.join(sec(r['p99']) for r in rows)} | "
            f"{statistics.median(r['cpu'][0] for r in rows):.0f} / "
            f"{statistics.median(r['cpu'][1] for r in rows):.0f} | "
            f"{statistics.median(cpu_ms(r, 0) for r in rows):.1f} / "
            f"{statistics.median(cpu_ms(r, 1) for r in rows):.1f} | "
            f"{max(r['rss'][0] for r in rows):.0f} / {max(r['rss'][1] for r in rows):.0f} |"
        )


def micro(env: dict[str, str], count: int) -> dict[str, float]:
    rport, sport = free_port(), free_port()
    receiver = Proc(
        [ME, "--role", "receiver", "--port", str(rport), "--count", str(count + 20)], env
    )
    procs = [receiver]
    try:
        address = receiver.line("address:")
        sender = Proc(
            [
                ME,
                "--role",
                "sender",
                "--port",
                str(sport),
                "--target",
                address,
                "--endpoint",
                f"http://127.0.0.1:{rport}/submit",
                "--count",
                str(count),
            ],
            env,
        )
        procs.append(sender)
        sender.line("start:")
        cpu0 = [p.cpu() for p in procs]
        t0 = time.monotonic()
        failed = int(sender.line("done:", 600))
        receiver.line("got:", 60)
        wall = time.monotonic() - t0
        cpu = [(p.cpu() - c) for p, c in zip(procs, cpu0, strict=True)]
    finally:
        for p in reversed(procs):
            p.stop()
    return {
        "sender_ms": cpu[1] / count * 1000,
        "receiver_ms": cpu[0] / count * 1000,
        "per_s": count / wall,
        "failed": failed,
    }


def stock(env: dict[str, str], args: argparse.Namespace) -> list[dict[str, Any]]:
    """The per-token stock arm: one row per M (see :func:`role_stock_sender`), with the CPU % of
    both processes over the phase."""
    rport, sport = free_port(), free_port()
    seed = f"bench stock sender {sport} {time.time_ns()}"
    receiver = Proc(
        [
            ME,
            "--role",
            "stock-receiver",
            "--port",
            str(rport),
            "--seed",
            seed,
            "--peer-port",
            str(sport),
        ],
        env,
    )
    procs = [receiver]
    rows: list[dict[str, Any]] = []
    try:
        address = receiver.line("address:")
        sender = Proc(
            [
                ME,
                "--role",
                "stock-sender",
                "--port",
                str(sport),
                "--seed",
                seed,
                "--target",
                address,
                "--endpoint",
                f"http://127.0.0.1:{rport}/submit",
                "--phases",
                args.stock_phases,
                "--seconds",
                str(args.stock_seconds),
                "--rate",
                str(args.rate),
            ],
            env,
        )
        procs.append(sender)
        sender.line("ready:")
        deadline = time.monotonic() + 150.0
        cpu0: list[float] = []
        t0 = 0.0
        assert sender.p.stdout is not None
        while time.monotonic() < deadline:
            line = sender.p.stdout.readline()
            if not line or line.startswith("done:"):
                break
            if line.startswith("phase:"):
                cpu0, t0 = [p.cpu() for p in procs], time.monotonic()
            elif line.startswith("result:"):
                wall = time.monotonic() - t0
                row = json.loads(line.split(":", 1)[1])
                row["cpu"] = [(p.cpu() - c) / wall * 100 for p, c in zip(procs, cpu0, strict=True)]
                row["held"] = row["lag"] <= 1.0 and row["delivered"] == row["sent"]
                rows.append(row)
    finally:
        for p in reversed(procs):
            p.stop()
    return rows


def per_core(conversations: float, cpu: list[float]) -> float:
    """Conversations per 100 % of one core, from the CPU % the two agents' processes used."""
    used = sum(cpu)
    return conversations / used * 100 if used > 0 else 0.0


def print_stock(rows: list[dict[str, Any]], rate: float, seconds: float) -> None:
    print(
        f"\nstock uagents, one ChatMessage per token ({rate:g} tok/s, {seconds:g} s per "
        "conversation), each acknowledged by a stock receiver:"
    )
    print(
        "| M at once | kept pace | tokens/s | last token late (s) | delivered / acks | "
        "CPU % sender / receiver | conversations per core |"
    )
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['m']} | {'yes' if r['held'] else 'no'} | {r['tok_per_s']:.0f} | "
            f"{r['lag']:.2f} | {r['delivered']}/{r['sent']} / {r['acks']} | "
            f"{r['cpu'][1]:.0f} / {r['cpu'][0]:.0f} | {per_core(r['m'], r['cpu']):.1f} |"
        )
    held = [r for r in rows if r["held"]]
    best = max(held, key=lambda r: r["m"]) if held else None
    if best is None:
        print("stock: not even one conversation kept pace")
    else:
        print(
            f"stock: at most {best['m']} conversations kept pace at once; at that load "
            f"{per_core(best['m'], best['cpu']):.1f} conversations per core"
        )


def environment(path: Path, tmp: str, trace: float = 0.0) -> dict[str, str]:
    return {
        **os.environ,
        "BENCH_TRACE_MEMORY": str(trace or ""),
        "BENCH_DIR": tmp,
        "AGENT_STREAM_DIRECTORY": f"{tmp}/agents.json",
        "PYTHONPATH": str(path),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100,300,1000")
    ap.add_argument("--rate", type=float, default=20.0)
    ap.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds one sweep step's clients may take (default: %(default)s)",
    )
    ap.add_argument("--base", type=Path, help="another checkout to measure beside this tree")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="sweeps per tree, the trees taking turns; medians printed (default: %(default)s)",
    )
    ap.add_argument("--keep", type=Path, help="keep the children's logs in this folder")
    ap.add_argument(
        "--max-replies",
        type=int,
        default=0,
        help="the agent's replies-at-once cap (0: N, every client admitted); "
        "the others are refused at once (busy: HTTP 503 with Retry-After)",
    )
    ap.add_argument(
        "--trace-memory",
        type=float,
        default=0.0,
        help="trace the agent's memory (tracemalloc; slows it) and write where it is, by line, "
        "this many seconds after its first reply started (into --keep's folder)",
    )
    ap.add_argument(
        "--timeline",
        action="store_true",
        help="also print, for the largest N, each process's CPU and the first texts seen per "
        "half second, up to the last first text",
    )
    ap.add_argument("--micro", action="store_true")
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument(
        "--stock-phases",
        default="1,2,4,8,16",
        help="per-token stock arm: conversations at once, tried in turn until one no longer "
        "keeps pace (empty: no stock arm; default: %(default)s)",
    )
    ap.add_argument(
        "--stock-seconds",
        type=float,
        default=5.0,
        help="seconds of tokens per stock conversation (default: %(default)s)",
    )
    ap.add_argument("--role", help=argparse.SUPPRESS)
    ap.add_argument("--seed", help=argparse.SUPPRESS)
    ap.add_argument("--peer-port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--phases", default="1", help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=5.0, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--max", type=int, default=64, help=argparse.SUPPRESS)
    ap.add_argument("--stats", help=argparse.SUPPRESS)
    ap.add_argument("--agent", help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--target", help=argparse.SUPPRESS)
    ap.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "serve":
        return role_serve(args.port, args.rate, args.max, args.stats)
    if args.role == "gateway":
        return role_gateway(args.port, args.agent, args.max, args.timeout)
    if args.role == "receiver":
        return role_receiver(args.port, args.count)
    if args.role == "sender":
        return role_sender(args.port, args.target, args.endpoint, args.count)
    if args.role == "stock-receiver":
        return role_stock_receiver(args.port, args.seed, args.peer_port)
    if args.role == "stock-sender":
        return role_stock_sender(
            args.port,
            args.seed,
            args.target,
            args.endpoint,
            args.phases,
            args.seconds,
            args.rate,
        )

    trees = [("this tree", ROOT)] + ([("before", args.base.resolve())] if args.base else [])
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"({os.cpu_count()} cores)"
    )
    repeat = max(1, args.repeat) if args.sizes and not args.micro else 1
    sweeps: dict[str, list[list[dict[str, Any]]]] = {label: [] for label, _ in trees}
    for r in range(repeat):
        for label, path in trees if r % 2 == 0 else trees[::-1]:
            with tempfile.TemporaryDirectory() as tmp:
                if args.keep is not None:
                    tmp = str(
                        args.keep / label.replace(" ", "-") / (str(r + 1) if repeat > 1 else "")
                    )
                    Path(tmp).mkdir(parents=True, exist_ok=True)
                env = environment(path, tmp, args.trace_memory)
                if args.micro:
                    micros = [micro(env, args.messages) for _ in range(3)]
                    med = {k: statistics.median(m[k] for m in micros) for k in micros[0]}
                    print(
                        f"{label}: CPU per ChatMessage: sender {med['sender_ms']:.2f} ms, "
                        f"receiver {med['receiver_ms']:.2f} ms, "
                        f"{med['per_s']:.0f} ChatMessages/s one at a time "
                        f"(median of 3 x {args.messages}; failed {med['failed']:.0f})"
                    )
                elif args.sizes:
                    rows = sweep(env, args, label)
                    sweeps[label].append(rows)
                    run = f", run {r + 1} of {repeat}" if repeat > 1 else ""
                    print_sweep(label + run, rows, args.rate)
                    if args.timeline and rows[-1]["firsts"]:
                        print_timeline(rows[-1], max(rows[-1]["firsts"]) + 0.5)
    if repeat > 1:
        for label, tree_runs in sweeps.items():
            print_medians(label, tree_runs)
    if args.stock_phases and not args.micro:
        with tempfile.TemporaryDirectory() as tmp:
            if args.keep is not None:
                tmp = str(args.keep / "stock")
                Path(tmp).mkdir(parents=True, exist_ok=True)
            print_stock(stock(environment(ROOT, tmp), args), args.rate, args.stock_seconds)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
