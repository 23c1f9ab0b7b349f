"""Relaying across hops: a 2,000-token leaf reply streamed through 0, 1 and 2 relaying agents to
an end client (1, 2 and 3 hops), every agent a process of its own on 127.0.0.1, signed envelopes
over HTTP.

The leaf is ``python -m agent_stream.commands.team --tokens N`` (plain answer tokens at ``--rate``); each
relayer is a team member relaying the next agent down (its own plan and summary add a few
ChatMessages). The end client, in this process, asks the top of each chain in turn, ``--runs``
times, and reports the median time to the first text and to the complete reply, and the
ChatMessages each hop sent (from the members' ``STATS`` lines), at ``--rate 0`` and 100
tokens/s.

    python bench/bench_relay.py [--tokens 2000] [--rates 0,100] [--runs 3]

Targets: each hop adds under 50 ms to the first text and does not multiply ChatMessages
(a relayer sends about as many as it receives). Exit status 1 when a reply does not complete,
its text differs, or a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uagents import Context

from agent_stream.commands.team import FILLER
from agent_stream.sources.replay import tokenize
from agent_stream.uagents import LocalDirectory, StreamingChat, local_agent, run_agent
from agent_stream.uagents.local._agents import free_port
from agent_stream.uagents.local._directory import DIRECTORY_ENV


class Member:
    """One team member process; its stdout lines are collected in the background."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], cwd: str) -> None:
        self.name = name
        cmd = [
            sys.executable,
            "-m",
            "agent_stream.commands.team",
            "--name",
            name,
            "--port",
            str(free_port()),
            "--seed",
            secrets.token_hex(32),
            *args,
        ]
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=cwd
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stats: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("STATS "):
                self.stats.append(json.loads(line[6:]))
            self.lines.put(line)
        self.lines.put(None)

    def wait_started(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                raise RuntimeError(f"{self.name} did not start")
            if line.startswith("endpoint:"):
                return

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class Row:
    rate: float
    hops: int
    first: list[float] = field(default_factory=list)
    complete: list[float] = field(default_factory=list)
    per_hop: list[list[int]] = field(default_factory=list)  # ChatMessages, leaf first
    ok: bool = True


def chain_names(rate: float) -> list[str]:
    tag = f"{rate:g}".replace(".", "_")
    return [f"leaf-{tag}", f"relay1-{tag}", f"relay2-{tag}"]


def start_team(rates: list[float], tokens: int, env: dict[str, str], cwd: str) -> dict[str, Member]:
    members: dict[str, Member] = {}
    for rate in rates:
        leaf, r1, r2 = chain_names(rate)
        members[leaf] = Member(leaf, ["--tokens", str(tokens), "--rate", str(rate)], env, cwd)
        members[r1] = Member(r1, ["--rate", "0", "--relay", leaf, "--sub-timeout", "300"], env, cwd)
        members[r2] = Member(r2, ["--rate", "0", "--relay", r1, "--sub-timeout", "300"], env, cwd)
    for m in members.values():
        m.wait_started()
    deadline = time.monotonic() + 30
    while {e.get("name") for e in LocalDirectory().entries().values()} < set(members):
        if time.monotonic() > deadline:
            raise RuntimeError("the team did not list itself")
        time.sleep(0.05)
    return members


def measure(members: dict[str, Member], rates: list[float], runs: int, want: str) -> list[Row]:
    book = LocalDirectory()
    targets = {n: book.find(n) for n in members}
    chat = StreamingChat()
    agent = local_agent(
        secrets.token_hex(32),
        free_port(),
        name="bench-client",
        peers={a: e for a, e in (t for t in targets.values() if t)},
    )
    agent.include(chat, publish_manifest=True)

    async def run(ctx: Context) -> list[Row]:
        import asyncio

        rows = []
        for rate in rates:
            names = chain_names(rate)
            for hops in (1, 2, 3):
                row = Row(rate, hops)
                chain = names[:hops]
                for _ in range(runs):
                    before = [len(members[n].stats) for n in chain]
                    target = targets[chain[-1]]
                    assert target is not None
                    reply = await chat.ask(ctx, target[0], "Stream the long answer.", timeout=600)
                    await reply
                    t0 = reply.asked_at
                    t = reply.transcript
                    answer = {b.block_id for b in t.blocks if b.label == "Answer"}
                    leaf_text = "".join(
                        m.content for m in t.messages if m.type == "text" and m.block_id in answer
                    )
                    row.ok &= reply.status == "completed" and leaf_text == want
                    if reply.first_text_at is not None and reply.ended_at is not None:
                        row.first.append(reply.first_text_at - t0)
                        row.complete.append(reply.ended_at - t0)
                    deadline = time.monotonic() + 5
                    while any(
                        len(members[n].stats) <= b for n, b in zip(chain, before, strict=True)
                    ):
                        if time.monotonic() > deadline:
                            break
                        await asyncio.sleep(0.02)
                    row.per_hop.append(
                        [
                            members[n].stats[-1]["chat_messages"] if members[n].stats else -1
                            for n in chain
                        ]
                    )
                    await asyncio.sleep(0.2)
                rows.append(row)
        return rows

    out = run_agent(agent, run)
    assert out is not None
    return out


def report(rows: list[Row], tokens: int) -> int:
    print(
        f"relay benchmark: a {tokens:,}-token leaf reply through 1-3 hops, every agent a "
        "process, signed envelopes over HTTP on 127.0.0.1 (medians)"
    )
    print(
        f"{'model rate':>12}{'hops':>6}{'first text':>13}{'+/hop':>9}{'complete':>12}"
        f"{'ChatMessages per hop (leaf first)':>36}{'ok':>5}"
    )
    failed = False
    base: dict[float, float] = {}
    for r in rows:
        first = statistics.median(r.first) if r.first else float("nan")
        complete = statistics.median(r.complete) if r.complete else float("nan")
        if r.hops == 1:
            base[r.rate] = first
        per_hop = (first - base.get(r.rate, first)) / (r.hops - 1) if r.hops > 1 else 0.0
        counts = [int(statistics.median(c)) for c in zip(*r.per_hop, strict=True)]
        rate = "as fast" if r.rate <= 0 else f"{r.rate:g} tok/s"
        print(
            f"{rate:>12}{r.hops:>6}{first * 1000:>10.0f} ms{per_hop * 1000:>6.0f} ms"
            f"{complete:>10.2f} s{' / '.join(map(str, counts)):>36}"
            f"{'yes' if r.ok else 'NO':>5}"
        )
        leaf = counts[0] if counts else 0
        failed |= not r.ok or per_hop > 0.050 or any(c > 2 * leaf + 4 for c in counts)
    print(
        "targets: each hop adds < 50 ms to the first text; no hop sends more than about "
        "what it receives" + ("" if not failed else "  -- MISSED")
    )
    return 1 if failed else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=2000)
    p.add_argument("--rates", default="0,100", help="leaf tokens per second, comma-separated")
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    rates = [float(r) for r in args.rates.split(",") if r]
    want = "".join(tokenize(FILLER * (args.tokens // 10 + 1))[: args.tokens])
    with tempfile.TemporaryDirectory(prefix="bench-relay-") as tmp:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env[DIRECTORY_ENV] = str(Path(tmp) / "agents.json")
        saved = os.environ.get(DIRECTORY_ENV)
        os.environ[DIRECTORY_ENV] = env[DIRECTORY_ENV]
        old_cwd = os.getcwd()
        os.chdir(tmp)
        members: dict[str, Member] = {}
        try:
            members = start_team(rates, args.tokens, env, tmp)
            rows = measure(members, rates, args.runs, want)
        finally:
            for m in members.values():
                m.stop()
            os.chdir(old_cwd)
            if saved is None:
                os.environ.pop(DIRECTORY_ENV, None)
            else:
                os.environ[DIRECTORY_ENV] = saved
    return report(rows, args.tokens)


if __name__ == "__main__":
    sys.exit(main())
