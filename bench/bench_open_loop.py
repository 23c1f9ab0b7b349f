"""Conversations arriving at a steady rate (issue 45's open loop): first text against alone.

bench_scale.py asks N conversations at once; here they arrive one by one, at Poisson times
(exponential gaps) of a mean rate, as users do. Same setup as bench_scale.py (its ``serve`` and
``gateway`` roles: the replay model at ``--rate`` tokens/s behind ``agent-stream gateway``'s
pieces, both on 127.0.0.1, caps lifted) and the same OpenAI SSE client (``POST
/v1/chat/completions``, ``stream: true``), one serve and one gateway for the whole run.

First, ``--alone`` conversations one after the other: the first text alone (their median) and
the reply's text. Then, for each rate of ``--rates`` (conversations per second), conversations
arrive for ``--duration`` seconds and every one is followed to its end before the next rate
begins. Per rate: arrivals, completed (the whole text, as alone), the most conversations open at
once, first-text p50/p99 and p99 over alone, the arrival lag p99 (how late this client started a
conversation against its schedule: a loaded client measures itself, not the agent), and each
process's CPU % (of one core). A rate is *held* when every conversation completed and first-text
p99 <= alone + 2 s; the highest rate held is printed. The sweep stops at the first rate not held
(``--keep-going`` runs them all).

A reply lasts 25-35 s at 20 tokens/s: conversations open at once reach the rate times that only
when ``--duration`` is longer than a reply (the default's 15 s stops short of it, to keep the run
to ~5 minutes; the table's ``open at most`` column says how many were open).

    python bench/bench_open_loop.py [--rates 5,10,20,40] [--duration 15] [--rate 20]
                                    [--alone 2] [--seed 1] [--keep-going]

Loopback only; every wait is bounded (``--timeout`` per conversation). The machine's load average
is printed: other work on it skews every number.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scale as scale

MARGIN = 2.0  # first-text p99 within alone + this: the rate is held


async def arrivals(
    base: str, model: str, rate: float, duration: float, timeout: float, rng: random.Random
) -> tuple[list[dict[str, Any]], list[float], int]:
    """Conversations arriving at Poisson times of mean ``rate`` per second for ``duration``
    seconds, each followed to its end: (their outcomes, each one's start lag, most open at once).
    """
    import aiohttp

    open_now, most = 0, 0
    lags: list[float] = []

    async def conversation(session: Any) -> dict[str, Any]:
        nonlocal open_now, most
        open_now += 1
        most = max(most, open_now)
        try:
            return await scale.one_client(session, base, model, time.monotonic(), timeout)
        finally:
            open_now -= 1

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        tasks: list[asyncio.Task[dict[str, Any]]] = []
        t0 = time.monotonic()
        at = rng.expovariate(rate)
        while at < duration:
            wait = t0 + at - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            lags.append(max(0.0, time.monotonic() - (t0 + at)))
            tasks.append(asyncio.create_task(conversation(session)))
            at += rng.expovariate(rate)
        rows = list(await asyncio.gather(*tasks))
    return rows, lags, most


def alone(base: str, model: str, count: int, timeout: float) -> tuple[float, float, str]:
    """(first text, whole reply, the reply's text) of one conversation at a time: medians."""
    rows = [asyncio.run(scale.crowd(base, model, 1, timeout))[0] for _ in range(count)]
    done = [r for r in rows if r["status"] == 200 and r["first"] is not None]
    if not done:
        raise RuntimeError(f"no conversation alone completed: {[r['status'] for r in rows]}")
    first = statistics.median(r["first"] for r in done)
    whole = statistics.median(r["end"] for r in done)
    return first, whole, str(done[0]["text"])


def one_rate(
    procs: list[scale.Proc],
    base: str,
    model: str,
    rate: float,
    args: argparse.Namespace,
    want: str,
    first_alone: float,
) -> dict[str, Any]:
    rng = random.Random(f"{args.seed} {rate}")
    cpu0 = [p.cpu() for p in procs]
    t0 = time.monotonic()
    rows, lags, most = asyncio.run(arrivals(base, model, rate, args.duration, args.timeout, rng))
    wall = time.monotonic() - t0
    cpu = [(p.cpu() - c) / wall * 100 for p, c in zip(procs, cpu0, strict=True)]
    ok = [r for r in rows if r["status"] == 200 and r["text"] == want]
    firsts = [r["first"] for r in rows if r["first"] is not None]
    failures: dict[str, int] = {}
    for r in rows:
        if r not in ok:
            failures[str(r["status"])] = failures.get(str(r["status"]), 0) + 1
    p99 = scale.pct(firsts, 99)
    held = bool(rows) and len(ok) == len(rows) and p99 is not None
    held = held and p99 is not None and p99 <= first_alone + MARGIN
    return {
        "rate": rate,
        "arrived": len(rows),
        "completed": len(ok),
        "failures": failures,
        "most": most,
        "p50": scale.pct(firsts, 50),
        "p99": p99,
        "lag99": scale.pct(lags, 99),
        "cpu": cpu,
        "held": held,
    }


def print_table(rows: list[dict[str, Any]], first_alone: float, whole: float, rate: float) -> None:
    print(
        f"\nalone: first text {first_alone:.2f} s, whole reply {whole:.1f} s "
        f"(replay model at {rate:g} tokens/s); held: every conversation complete and "
        f"first-text p99 <= alone + {MARGIN:g} s = {first_alone + MARGIN:.2f} s\n"
    )
    print(
        "| rate (/s) | arrived | completed | open at most | first text p50 / p99 (s) "
        "| p99 over alone (s) | arrival lag p99 (s) | CPU % agent / gateway | held |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        over = f"{r['p99'] - first_alone:+.2f}" if r["p99"] is not None else "-"
        failed = (
            " (" + ", ".join(f"{k}: {v}" for k, v in sorted(r["failures"].items())) + ")"
            if r["failures"]
            else ""
        )
        print(
            f"| {r['rate']:g} | {r['arrived']} | {r['completed']}{failed} | {r['most']} "
            f"| {scale.sec(r['p50'])} / {scale.sec(r['p99'])} | {over} "
            f"| {r['lag99']:.2f} | {r['cpu'][0]:.0f} / {r['cpu'][1]:.0f} "
            f"| {'yes' if r['held'] else 'NO'} |"
        )
    best = max((r["rate"] for r in rows if r["held"]), default=None)
    print(
        f"\nhighest rate held: {best:g} conversations/s"
        if best is not None
        else "\nhighest rate held: none of those tried"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="5,10,20,40", help="conversations per second, in turn")
    ap.add_argument("--duration", type=float, default=15.0, help="seconds of arrivals per rate")
    ap.add_argument("--rate", type=float, default=20.0, help="replay tokens/s (default: 20)")
    ap.add_argument("--alone", type=int, default=2, help="conversations alone (default: 2)")
    ap.add_argument(
        "--timeout", type=float, default=120.0, help="seconds one conversation may take"
    )
    ap.add_argument("--seed", default="1", help="the arrival times' random seed")
    ap.add_argument("--max-open", type=int, default=2000, help="both sides' replies-at-once cap")
    ap.add_argument("--keep-going", action="store_true", help="run every rate, held or not")
    args = ap.parse_args()
    rates = [float(x) for x in args.rates.split(",") if x.strip()]
    if not rates or any(r <= 0 for r in rates) or args.duration <= 0 or args.alone < 1:
        ap.error("--rates must be positive numbers, --duration > 0, --alone >= 1")
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"({os.cpu_count()} cores)",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        env = scale.environment(scale.ROOT, tmp)
        sport, gport = scale.free_port(), scale.free_port()
        cap = str(args.max_open)
        serve = scale.Proc(
            [
                *(scale.ME, "--role", "serve", "--port", str(sport), "--rate", str(args.rate)),
                *("--max", cap, "--stats", f"{tmp}/serve.json"),
            ],
            env,
        )
        procs = [serve]
        rows: list[dict[str, Any]] = []
        try:
            address = serve.line("address:")
            gateway = scale.Proc(
                [
                    *(scale.ME, "--role", "gateway", "--port", str(gport), "--max", cap),
                    *("--agent", f"{address}=http://127.0.0.1:{sport}/submit"),
                    *("--timeout", str(args.timeout)),
                ],
                env,
            )
            procs.append(gateway)
            base = gateway.line("gateway:")
            time.sleep(1.0)  # both agents' startup handlers done
            first_alone, whole, want = alone(base, address, args.alone, args.timeout)
            print(f"alone: first text {first_alone:.2f} s, whole {whole:.1f} s", flush=True)
            for rate in rates:
                row = one_rate(procs, base, address, rate, args, want, first_alone)
                rows.append(row)
                print(
                    f"  {rate:g}/s: {row['completed']}/{row['arrived']} complete, "
                    f"first text p99 {scale.sec(row['p99'])} s, "
                    f"{'held' if row['held'] else 'NOT held'}",
                    flush=True,
                )
                if not row["held"] and not args.keep_going:
                    break
        finally:
            for p in reversed(procs):
                p.stop()
    print_table(rows, first_alone, whole, args.rate)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
