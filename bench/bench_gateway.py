"""The gateway's cost: a 2,000-token reply through `agent-stream gateway` (OpenAI SSE, AG-UI)
against asking the agent directly, and 100 concurrent streaming clients.

Three processes on 127.0.0.1: a sender agent (this file, ``--sender``: a StreamingChat agent
answering every question with N tokens), ``agent-stream gateway --agent ADDRESS=ENDPOINT``, and
the measuring side. "Direct" is a client agent asking the sender with agent_stream's own client
(what ``agent-stream ask`` does), in a process of its own (``--direct``); the HTTP clients are
httpx in this process. Each is timed from sending the question: first byte of the response (the
gateway only), first text, and the complete reply; medians of ``--repeat`` runs. Then
``--clients`` concurrent OpenAI SSE streams: all must complete; p50/p99 time to first byte and
the gateway's resident memory (now and peak).

    python bench/bench_gateway.py [--tokens 2000] [--rate 0] [--repeat 5] [--clients 100]

Targets: the gateway adds under 20 ms to the first text and under 10% to the complete reply;
all concurrent clients complete. Exit status 1 when a client does not complete or a text
differs; the timing targets are reported, not enforced (a shared machine is noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "stream"


def expected_text(n: int) -> str:
    return "".join(f" t{i}" for i in range(n))


# -- the sender agent and the direct client (run as child processes of this file) ----------------
def run_sender(port: int, tokens: int, rate: float) -> int:
    from agent_stream.uagents import ChatSettings, StreamingChat, local_agent, run_agent

    async def respond(request: Any, out: Any) -> None:
        start = time.monotonic()
        async with out.block("llm", label="Answer") as b, b.message("text") as m:
            for i in range(tokens):
                await m.append(f" t{i}")
                if rate > 0:
                    await asyncio.sleep(max(0.0, start + (i + 1) / rate - time.monotonic()))
                elif i % 64 == 0:
                    await asyncio.sleep(0)

    agent = local_agent(f"bench gateway sender {port}", port, name="bench-sender")
    # the gateway is one asker for all its clients: let it have many replies at once
    agent.include(
        StreamingChat(
            respond, settings=ChatSettings().with_caps(max_replies_per_sender=512, max_replies=512)
        ),
        publish_manifest=True,
    )
    print(f"address: {agent.address}", flush=True)
    run_agent(agent)
    return 0


def run_direct(address: str, endpoint: str, repeat: int, tokens: int, clients: int = 0) -> int:
    from agent_stream.uagents import StreamingChat, local_agent, run_agent
    from agent_stream.uagents.local._agents import free_port

    chat = StreamingChat()
    agent = local_agent(
        f"bench gateway direct {time.time_ns()}",
        free_port(),
        name="direct",
        peers={address: endpoint},
    )
    agent.include(chat, publish_manifest=True)

    async def once(ctx: Any) -> dict[str, Any]:
        t0 = time.monotonic()
        reply = await chat.ask(ctx, address, QUESTION, timeout=300)
        first = None
        async for m in reply:
            if first is None and m.type == "text" and (m.props or {}).get("content"):
                first = time.monotonic() - t0
        await reply
        return {
            "first_text": first,
            "complete": time.monotonic() - t0,
            "ok": reply.text() == expected_text(tokens),
        }

    async def main(ctx: Any) -> list[dict[str, Any]]:
        if clients:  # all at once, after one warm-up
            await once(ctx)
            return list(await asyncio.gather(*(once(ctx) for _ in range(clients))))
        # one after the other; the first run warms up the connection: not counted
        return [await once(ctx) for _ in range(repeat + 1)][1:]

    print(json.dumps(run_agent(agent, main)), flush=True)
    return 0


# -- processes -----------------------------------------------------------------------------------
def spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=env["BENCH_DIR"],
    )


def wait_line(p: subprocess.Popen[str], prefix: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    assert p.stdout is not None
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            raise RuntimeError(f"process exited before printing {prefix!r}")
        if line.startswith(prefix):
            return line.split(":", 1)[1].strip()
    raise RuntimeError(f"no {prefix!r} within {timeout} s")


def stop(p: subprocess.Popen[str]) -> None:
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB."""
    vals = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            vals[k] = int(v.split()[0]) / 1024
    return vals.get("VmRSS", 0.0), vals.get("VmHWM", 0.0)


# -- HTTP clients ----------------------------------------------------------------------------------
async def one_stream(client: Any, kind: str, tokens: int, model: str) -> dict[str, Any]:
    """One streamed reply over HTTP: first byte, first text, complete, text as expected."""
    if kind == "openai":
        url, body = (
            "/v1/chat/completions",
            {"model": model, "stream": True, "messages": [{"role": "user", "content": QUESTION}]},
        )
    else:
        url, body = (
            "/agui",
            {
                "threadId": "t",
                "runId": f"r{time.time_ns()}",
                "state": {},
                "tools": [],
                "context": [],
                "forwardedProps": {"agent": model},
                "messages": [{"id": "u", "role": "user", "content": QUESTION}],
            },
        )
    t0 = time.monotonic()
    first_byte = first_text = None
    text: list[str] = []
    buf = ""
    async with client.stream("POST", url, json=body) as r:
        if r.status_code != 200:
            return {"ok": False, "status": r.status_code}
        async for piece in r.aiter_text():
            now = time.monotonic() - t0
            first_byte = now if first_byte is None else first_byte
            buf += piece
            while "\n\n" in buf:
                block, buf = buf.split("\n\n", 1)
                for line in block.split("\n"):
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    d = json.loads(line[6:])
                    piece_text = (
                        d["choices"][0]["delta"].get("content")
                        if kind == "openai" and d.get("choices")
                        else d.get("delta")
                        if d.get("type") == "TEXT_MESSAGE_CONTENT"
                        else None
                    )
                    if piece_text:
                        text.append(piece_text)
                        first_text = first_text if first_text is not None else now
    return {
        "ok": "".join(text) == expected_text(tokens),
        "first_byte": first_byte,
        "first_text": first_text,
        "complete": time.monotonic() - t0,
    }


async def http_runs(
    base: str, kind: str, repeat: int, tokens: int, model: str
) -> list[dict[str, Any]]:
    """``repeat`` replies one after the other (after one warm-up)."""
    import httpx

    async with httpx.AsyncClient(base_url=base, timeout=120) as c:
        await one_stream(c, kind, tokens, model)
        return [await one_stream(c, kind, tokens, model) for _ in range(repeat)]


async def concurrent(base: str, clients: int, tokens: int, model: str) -> list[dict[str, Any]]:
    """``clients`` OpenAI SSE streams at once."""
    import httpx

    limits = httpx.Limits(max_connections=clients + 10)
    async with httpx.AsyncClient(base_url=base, timeout=300, limits=limits) as c:
        return list(
            await asyncio.gather(*(one_stream(c, "openai", tokens, model) for _ in range(clients)))
        )


def med(rows: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def pct(vals: list[float], p: float) -> float:
    s = sorted(vals)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def ms(v: float | None) -> str:
    return f"{v * 1000:8.1f}" if v is not None else "       -"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=0.0, help="sender tokens/s (0: flat out)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument(
        "--client-tokens",
        type=int,
        default=500,
        help="tokens per reply for the concurrent clients (default: %(default)s)",
    )
    ap.add_argument("--sender", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--direct", nargs=2, metavar=("ADDRESS", "ENDPOINT"), help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--direct-clients", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.sender:
        return run_sender(args.port, args.tokens, args.rate)
    if args.direct:
        return run_direct(
            args.direct[0], args.direct[1], args.repeat, args.tokens, args.direct_clients
        )

    from agent_stream.uagents import endpoint_for
    from agent_stream.uagents.local._agents import free_port

    procs: list[subprocess.Popen[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "BENCH_DIR": tmp,
            "AGENT_STREAM_DIRECTORY": f"{tmp}/agents.json",
            "PYTHONPATH": str(ROOT),
        }
        try:
            rows = run_all(args, env, procs, free_port, endpoint_for)
        finally:
            for p in reversed(procs):
                stop(p)
    return rows


def run_all(
    args: argparse.Namespace,
    env: dict[str, str],
    procs: list[Any],
    free_port: Any,
    endpoint_for: Any,
) -> int:
    me = str(Path(__file__).resolve())

    def sender(tokens: int) -> tuple[str, str]:
        port = free_port()
        p = spawn(
            [
                me,
                "--sender",
                "--port",
                str(port),
                "--tokens",
                str(tokens),
                "--rate",
                str(args.rate),
            ],
            env,
        )
        procs.append(p)
        return wait_line(p, "address:"), endpoint_for(port)

    address, endpoint = sender(args.tokens)
    gport = free_port()
    g = spawn(
        [
            "-m",
            "agent_stream",
            "gateway",
            "--port",
            str(gport),
            "--agent",
            f"{address}={endpoint}",
            "--max-replies-per-key",
            str(args.clients + 10),
            "--max-replies",
            str(args.clients + 10),
        ],
        env,
    )
    procs.append(g)
    base = wait_line(g, "gateway:").rstrip("/")
    # an agent given by address is named by its address (the OpenAI model, the AG-UI agent)

    d_rows = direct_rows(me, env, procs, address, endpoint, args.repeat, args.tokens, 0)

    async def both() -> tuple[list[Any], list[Any]]:
        o = await http_runs(base, "openai", args.repeat, args.tokens, address)
        a = await http_runs(base, "agui", args.repeat, args.tokens, address)
        return o, a

    o_rows, a_rows = asyncio.run(both())
    ok = all(r["ok"] for r in d_rows + o_rows + a_rows)
    print(
        f"\n{args.tokens}-token reply, sender rate "
        f"{'flat out' if not args.rate else f'{args.rate:g} tokens/s'}, median of "
        f"{args.repeat} (ms)"
    )
    print("| path | first byte | first text | complete | text ok |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, rows in (
        ("ask directly (agent_stream client)", d_rows),
        ("gateway, OpenAI SSE", o_rows),
        ("gateway, AG-UI SSE", a_rows),
    ):
        print(
            f"| {name} | {ms(med(rows, 'first_byte'))} | {ms(med(rows, 'first_text'))} | "
            f"{ms(med(rows, 'complete'))} | {all(r['ok'] for r in rows)} |"
        )
    base_first, base_done = med(d_rows, "first_text"), med(d_rows, "complete")
    for name, rows in (("OpenAI", o_rows), ("AG-UI", a_rows)):
        f, c = med(rows, "first_text"), med(rows, "complete")
        if f is not None and c is not None and base_first is not None and base_done:
            print(
                f"  {name}: +{(f - base_first) * 1000:.1f} ms to first text (target < 20), "
                f"+{(c / base_done - 1) * 100:.1f}% to complete (target < 10%)"
            )

    stop(g)
    return (
        0 if ok and concurrency(args, env, procs, me, sender(args.client_tokens), free_port) else 1
    )


def concurrency(
    args: argparse.Namespace,
    env: dict[str, str],
    procs: list[Any],
    me: str,
    target: tuple[str, str],
    free_port: Any,
) -> bool:
    """``--clients`` concurrent OpenAI SSE clients through a fresh gateway, and as many direct
    asks from one client agent; prints the table; whether every gateway client completed."""
    c_address, c_endpoint = target
    g2 = spawn(
        [
            "-m",
            "agent_stream",
            "gateway",
            "--port",
            str(free_port()),
            "--agent",
            f"{c_address}={c_endpoint}",
            "--max-replies-per-key",
            str(args.clients + 10),
            "--max-replies",
            str(args.clients + 10),
        ],
        env,
    )
    procs.append(g2)
    base2 = wait_line(g2, "gateway:").rstrip("/")
    idle = rss_mb(g2.pid)[0]
    t0 = time.monotonic()
    c_rows = asyncio.run(concurrent(base2, args.clients, args.client_tokens, c_address))
    wall = time.monotonic() - t0
    rss, peak = rss_mb(g2.pid)
    d2 = direct_rows(me, env, procs, c_address, c_endpoint, 0, args.client_tokens, args.clients)
    done: int = sum(1 for r in c_rows if r["ok"])
    print(f"\n{args.clients} concurrent clients, {args.client_tokens}-token replies (ms)")
    print("| path | completed | p50 first text | p99 first text | p50 complete | p99 complete |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, rows in (
        ("ask directly, one client agent", d2),
        ("gateway, OpenAI SSE clients", c_rows),
    ):
        ft = [r["first_text"] for r in rows if r.get("first_text") is not None]
        co = [r["complete"] for r in rows if r.get("complete") is not None]
        print(
            f"| {name} | {sum(1 for r in rows if r['ok'])}/{len(rows)} | "
            f"{ms(pct(ft, 50) if ft else None)} | {ms(pct(ft, 99) if ft else None)} | "
            f"{ms(pct(co, 50) if co else None)} | {ms(pct(co, 99) if co else None)} |"
        )
    fb = [r["first_byte"] for r in c_rows if r.get("first_byte") is not None]
    print(
        f"gateway: p50/p99 first byte {ms(pct(fb, 50) if fb else None).strip()} / "
        f"{ms(pct(fb, 99) if fb else None).strip()} ms, all done in {wall:.2f} s, RSS idle "
        f"{idle:.0f} MB, after {rss:.0f} MB, peak {peak:.0f} MB"
    )
    return bool(done == args.clients)


def direct_rows(
    me: str,
    env: dict[str, str],
    procs: list[Any],
    address: str,
    endpoint: str,
    repeat: int,
    tokens: int,
    clients: int,
) -> list[dict[str, Any]]:
    """Rows of the direct client (a process of its own)."""
    p = spawn(
        [
            me,
            "--direct",
            address,
            endpoint,
            "--repeat",
            str(repeat),
            "--tokens",
            str(tokens),
            "--direct-clients",
            str(clients),
        ],
        env,
    )
    procs.append(p)
    assert p.stdout is not None
    rows: list[dict[str, Any]] = json.loads(p.stdout.readline() or "[]")
    return rows


if __name__ == "__main__":
    sys.exit(main())
