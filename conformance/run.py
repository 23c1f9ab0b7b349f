"""The conformance suite: every corpus stream, in every wire, read by that wire's real clients.

Starts the wire server on 127.0.0.1, runs the Python clients in this process and the Node
clients (conformance/clients.mjs) as a subprocess, compares what each client ends up with to
the transcript, the order of texts, reasoning, tool calls and results within each thread
included (random ``fuzz_NN`` streams: checked for protocol only; a round trip, a stream that
pauses for approval, is read by the AI SDK clients and answered by ai 6's own chat), prints
one line per (client, stream), a client x stream table and ``N passed, M failed`` (plus known
failures, reported as xfail). Human-in-the-loop streams (``corpus.HITL``: a reply that pauses,
and the reply to its resume) are read by AG-UI's client only: a run ending with interrupts,
then the same agent resuming them. Exit status 1 when anything unexpected failed.
Usage: python conformance/run.py [STREAM...]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import corpus, fuzz, hitl, round_trips  # noqa: E402
from expect import (  # noqa: E402
    CHECKERS,
    HITL_CHECKERS,
    KNOWN,
    WIRE_OF,
    check_protocol,
    expected,
    known,
)
from pyclients import a2a03_client, a2a_client, chat_client, mcp_client, openai_client  # noqa: E402
from server import McpGateway, WireServer  # noqa: E402

from agent_stream.assemble import assemble  # noqa: E402

NODE_TIMEOUT = 240.0
FUZZ = 30  # random streams, checked for protocol only (no exact transcript to compare)
PY_CLIENTS = {
    "python-openai": openai_client,
    "python-a2a-sdk": a2a_client,
    "python-a2a-sdk-0.3": a2a03_client,
    "python-chat": chat_client,
}
# clients of the gateway itself (its /mcp), whose agents replay the corpus streams
GATEWAY_CLIENTS = {"python-mcp": mcp_client}


async def node_results(base: str, names: list[str]) -> list[dict[str, Any]]:
    """The Node clients' results for ``names`` (``hitl:NAME``: a human-in-the-loop stream)."""
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(HERE / "clients.mjs"),
        base,
        *names,
        cwd=str(HERE),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), NODE_TIMEOUT)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    if proc.returncode != 0:
        sys.stderr.write(err.decode(errors="replace"))
        raise SystemExit(f"node clients exited with {proc.returncode}")
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


async def main(names: list[str]) -> int:
    streams = corpus()
    trips = round_trips()  # read by the AI SDK clients only, and answered by ai 6's chat
    exact = set(streams) | set(trips)
    streams.update(fuzz(FUZZ))
    pairs = hitl()
    loops = [n for n in (names or list(pairs)) if n in pairs]
    names = [n for n in names if n not in pairs] if names else [*streams, *trips]
    server = WireServer(
        {**streams, **{n: p[0] for n, p in pairs.items()}},
        trips,
        resumed={n: p[1] for n, p in pairs.items()},
    )
    base = await server.start()
    folder = tempfile.TemporaryDirectory()
    gateway = McpGateway(streams, Path(folder.name))
    t0 = time.monotonic()
    try:
        gateway_base = await gateway.start()
        results: list[dict[str, Any]] = []
        for name in names:
            if name in trips:
                continue
            clients = [(c, r, base) for c, r in PY_CLIENTS.items()]
            clients += [(c, r, gateway_base) for c, r in GATEWAY_CLIENTS.items()]
            for client, run, url in clients:
                try:
                    results.append({"client": client, "stream": name, "seen": await run(url, name)})
                except Exception as exc:
                    results.append(
                        {"client": client, "stream": name, "crash": f"{type(exc).__name__}: {exc}"}
                    )
        results += await node_results(base, names + [f"hitl:{n}" for n in loops])
    finally:
        await gateway.stop()
        await server.stop()
        folder.cleanup()
    served = {n: s for n, s in server.streams.items() if n not in pairs}
    return report(results, served, exact, server, time.monotonic() - t0, pairs)


def report(
    results: list[dict[str, Any]],
    streams: dict[str, Any],
    exact: set[str],
    server: WireServer,
    took: float,
    pairs: dict[str, tuple[list[Any], list[Any]]] | None = None,
) -> int:
    pairs = pairs or {}
    passed = failed = xfailed = 0
    table: dict[str, dict[str, str]] = {}
    still: set[tuple[str, str, str]] = set()  # KNOWN entries that did fail
    order = [*streams, *pairs]
    for r in sorted(results, key=lambda r: (r["client"], order.index(r["stream"]))):
        client, name = r["client"], r["stream"]
        if "crash" in r:
            bad = {"crash": (False, r["crash"])}
        elif client in HITL_CHECKERS:
            asked, answered = (assemble(x) for x in pairs[name])
            checks = HITL_CHECKERS[client](r["seen"], asked, answered)
            bad = {k: v for k, v in checks.items() if not v[0]}
        elif name in exact:
            exp = expected(assemble(streams[name]))
            bad = {k: v for k, v in CHECKERS[client](r["seen"], exp, name).items() if not v[0]}
        else:
            bad = {
                k: v
                for k, v in check_protocol(client, r["seen"], server.sent[name]).items()
                if not v[0]
            }
        real = {k: v for k, v in bad.items() if not known(client, name, k)}
        wire = WIRE_OF[client]
        still.update(key for k in bad for key in ((wire, name, k), (wire, "*", k)) if key in KNOWN)
        if not bad:
            passed += 1
            verdict, detail = "ok", ""
        elif not real:
            xfailed += 1
            verdict = "xfail"
            detail = "; ".join(f"{k}: {known(client, name, k)}" for k in bad)
        else:
            failed += 1
            verdict = "FAIL"
            detail = "; ".join(f"{k}: {v[1]}" for k, v in real.items())
        table.setdefault(client, {})[name] = verdict
        print(f"{verdict:5} {client:20} {name:18} {detail}".rstrip(), flush=True)
    print()
    print_table(table, [n for n in streams if n in exact] + list(pairs))
    fuzzed = {
        c: [v for n, v in row.items() if n not in exact and n not in pairs]
        for c, row in table.items()
    }
    for c, verdicts in fuzzed.items():
        if verdicts:
            print(f"  {c}: {verdicts.count('ok')}/{len(verdicts)} random streams accepted")
    for (wire, name), ws in sorted(server.warnings.items()):
        if name not in exact:
            continue
        for w in ws:
            print(f"  warning [{wire} {name}] {w}")
    ran = {r["stream"] for r in results}
    for key in sorted(k for k in set(KNOWN) - still if k[1] in ran or k[1] == "*"):
        print(f"  known failure no longer failing (remove it from KNOWN): {key}")
    print(f"\n{passed} passed, {failed} failed, {xfailed} known-failing (xfail) in {took:.1f}s")
    return 1 if failed else 0


def print_table(table: dict[str, dict[str, str]], names: list[str]) -> None:
    print("| client | " + " | ".join(names) + " |")
    print("| --- |" + " --- |" * len(names))
    for client, row in table.items():
        print(f"| {client} | " + " | ".join(row.get(n, "-") for n in names) + " |")


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
