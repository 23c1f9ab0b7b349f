"""`agent-stream demo --team`: a planner that relays a researcher and two specialists, live.

Starts four :mod:`agent_stream.team` members, each in a process of its own on a free port of
127.0.0.1 (replay models: no key, no network): ``researcher``, the specialists ``coder`` and
``chef``, and ``planner``, which relays the researcher's reply and then both specialists' at
once. A client agent in this process asks the planner one question and renders the reply as it
streams, each sub-agent's section labelled with its name. Everything it started is stopped
before it returns.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["TEAM", "run_team"]

CODER_Q = "Python code to retry a flaky HTTP call between agents"
CHEF_Q = "A quick pasta recipe for the team dinner"

# name -> team arguments (the rate is added)
TEAM: dict[str, tuple[str, ...]] = {
    "researcher": (),
    "coder": (),
    "chef": (),
    "planner": ("--relay", "researcher", "--parallel", f"coder={CODER_Q}",
                "--parallel", f"chef={CHEF_Q}", "--sub-timeout", "120"),
}


def _start(name: str, extra: tuple[str, ...], rate: float, env: dict[str, str],
           verbose: bool) -> tuple[subprocess.Popen[str], queue.Queue[str | None]]:
    from agent_stream.commands.demo import _reader
    from agent_stream.uagents import free_port

    cmd = [sys.executable, "-m", "agent_stream.team", "--name", name, "--port",
           str(free_port()), "--seed", secrets.token_hex(32), "--rate", str(rate), *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env,
                            stderr=None if verbose else subprocess.DEVNULL)
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    return proc, lines


def _wait_listed(names: set[str], procs: list[subprocess.Popen[str]],
                 timeout: float = 60.0) -> dict[str, tuple[str, str]]:
    """(address, endpoint) of every member once all of them listed themselves."""
    from agent_stream.uagents import LocalDirectory

    book = LocalDirectory()
    deadline = time.monotonic() + timeout
    while True:
        found = {e.get("name"): (a, e.get("endpoint", "")) for a, e in book.entries().items()}
        if names <= set(found):
            return {n: found[n] for n in names}
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            raise RuntimeError("the team did not start (try --verbose)")
        time.sleep(0.05)


def run_team(args: argparse.Namespace) -> int:
    """Run the team demo (see the module doc); the exit status."""
    from agent_stream.commands.ask import ask_once, summary_line
    from agent_stream.commands.demo import stop
    from agent_stream.render import LiveRenderer, make_console
    from agent_stream.uagents import DIRECTORY_ENV, DeliveryError, free_port

    console = make_console()
    procs: list[subprocess.Popen[str]] = []
    with tempfile.TemporaryDirectory(prefix="agent-stream-team-") as tmp:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env[DIRECTORY_ENV] = str(Path(tmp) / "agents.json")
        saved = os.environ.get(DIRECTORY_ENV)
        os.environ[DIRECTORY_ENV] = env[DIRECTORY_ENV]
        old_cwd = os.getcwd()
        os.chdir(tmp)
        renderer = None if args.json else LiveRenderer(console)
        try:
            if renderer is not None:
                console.print(f"Starting a team of four agents (replay models, {args.rate:g} "
                              "tokens/s): planner, researcher, coder, chef ...", style="bold")
            for name, extra in TEAM.items():
                procs.append(_start(name, extra, args.rate, env, args.verbose)[0])
            team = _wait_listed(set(TEAM), procs)
            address, endpoint = team["planner"]
            if renderer is not None:
                for name, (addr, url) in team.items():
                    console.print(f"  {name:<11}{addr}  {url}", style="dim")
                console.print(f"The client asks the planner: {args.question}", style="bold")
            started = time.monotonic()
            reply = ask_once(target=address, endpoint=endpoint, question=args.question,
                             port=free_port(), seed=secrets.token_hex(32), reasoning=True,
                             timeout=180.0, use_directory=True,
                             on_message=renderer.feed if renderer is not None else None,
                             verbose=args.verbose)
        except (RuntimeError, DeliveryError) as exc:
            print(f"agent-stream demo: {exc}", file=sys.stderr)
            return 1
        finally:
            for proc in reversed(procs):
                stop(proc)
            os.chdir(old_cwd)
            if saved is None:
                os.environ.pop(DIRECTORY_ENV, None)
            else:
                os.environ[DIRECTORY_ENV] = saved
    if reply is None:
        return 130
    if args.json:
        print(json.dumps(reply.transcript.to_dict(), ensure_ascii=False, indent=2))
    elif renderer is not None:
        renderer.finish(summary_line(reply, started) + " · all four agents stopped",
                        ok=reply.completed)
    return 0 if reply.completed else 1
