"""Delivery under loss (issue 11): time to the complete reply and ChatMessages sent, clean vs
5% / 10% / 20% loss (half 503s, half silent drops, both directions, through the fault proxy of
tests/fault_proxy.py), for a 2,000-token reply at full speed (``--rate 0``) and at 100 tokens/s;
then the time an asker takes to declare a killed responder ``lost`` (default idle_timeout 15 s).

Two agent processes on 127.0.0.1 (tests/delivery/delivery_peers.py: a responder streaming a
"Thinking" block and a 2,000-token answer, and an asker), signed HTTP both ways.

    python bench/bench_faults.py [--replies 3] [--quick]

Target: at 10% loss, 100% of replies complete and the time to the complete reply within 2x of
clean at 100 tokens/s. Exit status 1 when it is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "integration"), str(ROOT)]

from agents_harness import Harness, address_of, port_open_failed  # noqa: E402
from fault_proxy import FaultProxy, wait_until  # noqa: E402

from agent_stream.uagents.local._agents import free_port  # noqa: E402

PEERS = ROOT / "tests" / "delivery" / "delivery_peers.py"


class Pair:
    def __init__(self, h: Harness, loss: float, rate: float, tokens: int) -> None:
        r_port, a_port = free_port(), free_port()
        stamp = time.time_ns()
        r_seed, a_seed = f"bench responder {stamp}", f"bench asker {stamp}"
        rates = {"p503": loss / 2, "drop": loss / 2}
        self.to_r = FaultProxy(f"http://127.0.0.1:{r_port}/submit", seed=3, **rates)
        self.to_a = FaultProxy(f"http://127.0.0.1:{a_port}/submit", seed=4, **rates)
        self.to_r.start()
        self.to_a.start()
        self.responder = h.start(
            str(PEERS),
            "responder",
            "--port",
            str(r_port),
            "--seed",
            r_seed,
            "--peer",
            f"{address_of(a_seed)}={self.to_a.url}",
            "--tokens",
            str(tokens),
            "--rate",
            str(rate),
            stdin=True,
        )
        assert wait_until(lambda: not port_open_failed(r_port), 30)
        self.asker = h.start(
            str(PEERS),
            "asker",
            "--port",
            str(a_port),
            "--seed",
            a_seed,
            "--peer",
            f"{address_of(r_seed)}={self.to_r.url}",
            stdin=True,
        )
        self.asker.wait_for("READY", 30)

    def ask(self, **req: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        before = len(self._ends())
        (r,) = self.asker.request({"text": "bench", "timeout": 120, **req}, 150)["replies"]
        wait_until(lambda: len(self._ends()) > before, 25)
        ends = self._ends()
        return r, ends[before] if len(ends) > before else None

    def _ends(self) -> list[dict[str, Any]]:
        return [
            json.loads(line)["reply_end"]
            for line in list(self.responder.lines)
            if line.startswith('{"reply_end"')
        ]

    def close(self) -> None:
        self.asker.stop()
        self.responder.stop()
        self.to_r.stop()
        self.to_a.stop()


def run_case(h: Harness, loss: float, rate: float, n: int, tokens: int) -> dict[str, Any]:
    pair = Pair(h, loss, rate, tokens)
    try:
        times, sent, received, completed = [], [], [], 0
        for _ in range(n):
            r, end = pair.ask()
            completed += bool(r["completed"])
            times.append(r["seconds"])
            received.append(r["chat_messages"])
            if end is not None:
                sent.append(end["chat_messages"] + end["resends"])
        return {
            "loss": loss,
            "rate": rate,
            "replies": n,
            "completed": completed,
            "seconds": statistics.median(times),
            "sent": statistics.median(sent) if sent else float("nan"),
            "received": statistics.median(received),
        }
    finally:
        pair.close()


def dead_responder(h: Harness, tokens: int) -> float:
    """Seconds from kill -9 of the responder to the asker's ``lost``."""
    pair = Pair(h, 0.0, 50.0, tokens)
    try:
        out: dict[str, Any] = {}

        def ask() -> None:
            out["r"] = pair.asker.request({"text": "bench", "timeout": 120}, 150)["replies"][0]
            out["at"] = time.monotonic()

        t = threading.Thread(target=ask, daemon=True)
        t.start()
        time.sleep(3.0)
        pair.responder.proc.kill()
        killed = time.monotonic()
        t.join(60)
        assert out["r"]["status"] == "lost", out
        return float(out["at"] - killed)
    finally:
        pair.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--replies", type=int, default=3, help="replies per case at --rate 0")
    p.add_argument("--tokens", type=int, default=2000)
    p.add_argument("--quick", action="store_true", help="500 tokens, one reply per case")
    args = p.parse_args()
    tokens = 500 if args.quick else args.tokens
    n = 1 if args.quick else args.replies
    h = Harness(Path(tempfile.mkdtemp(prefix="bench_faults_")))
    rows = []
    try:
        for rate in (0.0, 100.0):
            for loss in (0.0, 0.05, 0.10, 0.20):
                rows.append(run_case(h, loss, rate, n if rate == 0 else 1, tokens))
                row = rows[-1]
                print(f"  rate {rate:g} loss {loss:.0%}: {row['seconds']:.2f} s", flush=True)
        dead = dead_responder(h, tokens)
    finally:
        h.stop_all()
    print(f"\n{tokens}-token reply, both directions lossy (half 503, half silent drop):\n")
    print(
        "| rate (tokens/s) | loss | replies complete | time to complete reply (median) "
        "| vs clean | ChatMessages sent (incl. resends) | received |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ok = True
    for row in rows:
        clean = next(r for r in rows if r["rate"] == row["rate"] and r["loss"] == 0.0)
        ratio = row["seconds"] / clean["seconds"]
        shown = "full speed (0)" if row["rate"] == 0 else f"{row['rate']:g}"
        print(
            f"| {shown} | {row['loss']:.0%} | {row['completed']}/{row['replies']} "
            f"| {row['seconds']:.2f} s | {ratio:.2f}x | {row['sent']:g} | {row['received']:g} |"
        )
        if row["loss"] == 0.10 and (
            row["completed"] < row["replies"] or (row["rate"] > 0 and ratio > 2.0)
        ):
            ok = False
    print(
        f"\nkill -9 of the responder mid-reply: declared lost after {dead:.2f} s "
        "(idle_timeout 15 s)"
    )
    print(
        "target (10% loss: all complete, within 2x of clean at 100 tokens/s):",
        "met" if ok else "MISSED",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
