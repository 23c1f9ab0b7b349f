"""How long `agent-stream serve` takes to exit after SIGTERM (issue 45: container runtimes kill
at 10 s), and whether a healthy asker still gets its reply's end.

Each case starts a fresh `agent-stream serve` (the replay model at ``--rate`` tokens/s, so a
reply streams for several seconds) on 127.0.0.1, puts it mid-reply, sends SIGTERM and times the
exit (signal to process end):

  idle      nothing open;
  healthy   a healthy asker (tests/peers/asker_agent.py, its own process) mid-reply;
  hanging   a peer whose endpoint accepts connections and never answers asked a question: the
            agent's acknowledgement and reply to it hang in their posts;
  both      the healthy asker and the hanging peer at once.

For the cases with the healthy asker it also prints what the asker got: the reply's status, and
whether its end came (a reply whose end never came is ``timeout``/``lost`` after the asker's
timeout, not at the shutdown).

    python bench/bench_shutdown.py [--repeat 3] [--rate 60] [--cases idle,healthy,hanging,both]

Target: every exit within 2 s of SIGTERM, and the healthy asker gets each reply's end. Exit status
1 when it is missed. The machine's load average is printed: other work on it skews the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "integration"), str(ROOT)]

from agents_harness import AgentProcess, Harness  # noqa: E402
from fault_proxy import wait_until  # noqa: E402
from hostile_peer import CHAT, Hanging, envelope, post, valid_question  # noqa: E402
from uagents_core.identity import Identity  # noqa: E402

TARGET = 2.0
CASES = ("idle", "healthy", "hanging", "both")


def one(h: Harness, case: str, rate: float, settle: float) -> dict[str, Any]:
    """Run ``case`` once: {"seconds": exit time, "status": the healthy asker's reply status,
    "end": whether the end came at the shutdown}."""
    hanging = Hanging() if case in ("hanging", "both") else None
    ident = Identity.from_seed(f"bench shutdown hanging {time.time_ns()}", 0)
    extra = ["--peer", f"{ident.address}={hanging.url}"] if hanging is not None else []
    serve, address, endpoint = h.serve("--rate", str(rate), *extra)
    asker: AgentProcess | None = None
    try:
        if case in ("healthy", "both"):
            asker = h.asker(address, endpoint)[0]
            assert asker.proc.stdin is not None
            asker.proc.stdin.write(json.dumps({"text": "How do agents stream?", "timeout": 60}))
            asker.proc.stdin.write("\n")
            asker.proc.stdin.flush()
        if hanging is not None:
            question = envelope(address, CHAT, valid_question("hang"), identity=ident)
            assert post(endpoint, question) == 200
            assert wait_until(lambda: bool(hanging.held), 10), "the agent never posted to it"
        time.sleep(settle)  # mid-reply
        assert serve.proc.poll() is None
        began = time.monotonic()
        serve.proc.send_signal(signal.SIGTERM)
        try:
            serve.proc.wait(timeout=60)
        finally:
            seconds = time.monotonic() - began
        row: dict[str, Any] = {"seconds": seconds, "status": "-", "end": None}
        if asker is not None:
            line = json.loads(asker.next_line(90))
            (reply,) = line["replies"]
            row["status"] = reply["status"]
            row["chars"] = int(reply.get("text_chars") or 0)
            row["end"] = reply["status"] not in ("timeout", "lost") and reply["seconds"] < 55
        return row
    finally:
        if asker is not None:
            asker.stop()
        serve.stop()
        if hanging is not None:
            hanging.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per case (default: %(default)s)")
    ap.add_argument("--rate", type=float, default=60.0, help="replay tokens/s (default: 60)")
    ap.add_argument(
        "--settle", type=float, default=5.0, help="seconds into the reply (~12 s) before SIGTERM"
    )
    ap.add_argument("--cases", default=",".join(CASES), help="which cases (default: all)")
    args = ap.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        ap.error(f"unknown cases: {', '.join(sorted(unknown))}")
    h = Harness(Path(tempfile.mkdtemp(prefix="bench_shutdown_")))
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        for case in cases:
            for _ in range(args.repeat):
                row = one(h, case, args.rate, args.settle)
                rows.setdefault(case, []).append(row)
                print(
                    f"  {case}: {row['seconds']:.2f} s, asker: {row['status']}"
                    f" ({row.get('chars', 0)} chars of text)",
                    flush=True,
                )
    finally:
        h.stop_all()
    print(f"\nload average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} (2 cores)\n")
    print("| case | exit after SIGTERM (median) | max | healthy asker's reply | end received |")
    print("| --- | --- | --- | --- | --- |")
    ok = True
    for case, runs in rows.items():
        times = [r["seconds"] for r in runs]
        ends = [r["end"] for r in runs if r["end"] is not None]
        statuses = sorted({str(r["status"]) for r in runs})
        got = f"{sum(ends)}/{len(ends)}" if ends else "-"
        print(
            f"| {case} | {statistics.median(times):.2f} s | {max(times):.2f} s "
            f"| {', '.join(statuses)} | {got} |"
        )
        ok = ok and max(times) <= TARGET and all(ends)
    print(
        f"\ntarget (every exit within {TARGET:g} s of SIGTERM, the healthy asker gets its "
        "reply's end):",
        "met" if ok else "MISSED",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
