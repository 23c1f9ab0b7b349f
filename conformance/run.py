"""The conformance suite: every corpus stream, in every wire, read by that wire's real clients.

Starts the wire server on 127.0.0.1, runs the Python clients in this process and the Node
clients (conformance/clients.mjs) as a subprocess, compares what each client ends up with to
the transcript, the order of texts, reasoning, tool calls and results within each thread
included (random ``fuzz_NN`` streams: checked for protocol only), prints one line per
(client, stream), a client x stream table and ``N passed, M failed`` (plus known failures,
reported as xfail). Exit status 1 when anything unexpected failed.
Usage: python conformance/run.py [STREAM...]
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import corpus, fuzz  # noqa: E402
from expect import CHECKERS, KNOWN, WIRE_OF, check_protocol, expected, known  # noqa: E402
from pyclients import a2a03_client, a2a_client, chat_client, openai_client  # noqa: E402
from server import WireServer  # noqa: E402

from agent_stream.assemble import assemble  # noqa: E402

NODE_TIMEOUT = 240.0
FUZZ = 30  # random streams, checked for protocol only (no exact transcript to compare)
PY_CLIENTS = {
    "python-openai": openai_client,
    "python-a2a-sdk": a2a_client,
    "python-a2a-sdk-0.3": a2a03_client,
    "python-chat": chat_client,
}


async def node_results(base: str, names: list[str]) -> list[dict[str, Any]]:
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
    exact = set(streams)
    streams.update(fuzz(FUZZ))
    names = names or list(streams)
    server = WireServer(streams)
    base = await server.start()
    t0 = time.monotonic()
    try:
        results: list[dict[str, Any]] = []
        for name in names:
            for client, run in PY_CLIENTS.items():
                try:
                    results.append(
                        {"client": client, "stream": name, "seen": await run(base, name)}
                    )
                except Exception as exc:
                    results.append(
                        {"client": client, "stream": name, "crash": f"{type(exc).__name__}: {exc}"}
                    )
        results += await node_results(base, names)
    finally:
        await server.stop()
    return report(results, streams, exact, server, time.monotonic() - t0)


def report(
    results: list[dict[str, Any]],
    streams: dict[str, Any],
    exact: set[str],
    server: WireServer,
    took: float,
) -> int:
    passed = failed = xfailed = 0
    table: dict[str, dict[str, str]] = {}
    still: set[tuple[str, str, str]] = set()  # KNOWN entries that did fail
    for r in sorted(results, key=lambda r: (r["client"], list(streams).index(r["stream"]))):
        client, name = r["client"], r["stream"]
        if "crash" in r:
            bad = {"crash": (False, r["crash"])}
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
    print_table(table, [n for n in streams if n in exact])
    fuzzed = {c: [v for n, v in row.items() if n not in exact] for c, row in table.items()}
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
