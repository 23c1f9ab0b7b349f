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
import secrets
import subprocess
import sys
import time

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
           verbose: bool) -> subprocess.Popen[str]:
    from agent_stream.commands.demo import spawn
    from agent_stream.uagents import free_port

    cmd = [sys.executable, "-m", "agent_stream.team", "--name", name, "--port",
           str(free_port()), "--seed", secrets.token_hex(32), "--rate", str(rate), *extra]
    return spawn(cmd, env, verbose)[0]


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
    from agent_stream.commands.demo import ask_live, private_directory, show_reply, stop
    from agent_stream.render import LiveRenderer, make_console
    from agent_stream.uagents import DeliveryError, free_port

    console = make_console()
    procs: list[subprocess.Popen[str]] = []
    with private_directory("agent-stream-team-", PYTHONUNBUFFERED="1") as env:
        renderer = None if args.json else LiveRenderer(console)
        try:
            if renderer is not None:
                console.print(f"Starting a team of four agents (replay models, {args.rate:g} "
                              "tokens/s): planner, researcher, coder, chef ...", style="bold")
            for name, extra in TEAM.items():
                procs.append(_start(name, extra, args.rate, env, args.verbose))
            team = _wait_listed(set(TEAM), procs)
            address, endpoint = team["planner"]
            if renderer is not None:
                for name, (addr, url) in team.items():
                    console.print(f"  {name:<11}{addr}  {url}", style="dim")
                console.print(f"The client asks the planner: {args.question}", style="bold")
            started = time.monotonic()
            reply = ask_live(args, address, endpoint, free_port(), renderer, 180.0)
        except (RuntimeError, DeliveryError) as exc:
            print(f"agent-stream demo: {exc}", file=sys.stderr)
            return 1
        finally:
            for proc in reversed(procs):
                stop(proc)
    return show_reply(args, reply, renderer, started, "all four agents stopped")
