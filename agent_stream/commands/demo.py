"""`agent-stream demo`: two local agents, one streaming conversation, rendered live.

Starts the LLM agent (``agent-stream serve``, replay model) in a process of its own and a client
agent in this one, on free ports of 127.0.0.1, asks one question and renders the reply as it
streams: signed envelopes over HTTP between two processes, no network, no keys. Everything it
started is stopped before it returns.

``--team``: four :mod:`agent_stream.commands.team` members instead, each in a process of its
own: ``researcher``, the specialists ``coder`` and ``chef``, and ``planner``, which relays the
researcher's reply and then both specialists' at once; the client asks the planner, and each
sub-agent's section is labelled with its name.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agent_stream.commands._args import rate

DEFAULT_QUESTION = "How should agents stream LLM output to each other?"

CODER_Q = "Python code to retry a flaky HTTP call between agents"
CHEF_Q = "A quick pasta recipe for the team dinner"

# team member name -> its arguments (the rate is added)
TEAM: dict[str, tuple[str, ...]] = {
    "researcher": (),
    "coder": (),
    "chef": (),
    "planner": (
        "--relay",
        "researcher",
        "--parallel",
        f"coder={CODER_Q}",
        "--parallel",
        f"chef={CHEF_Q}",
        "--sub-timeout",
        "120",
    ),
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` command.

    Args:
        sub: the ``agent-stream`` subcommands.
    """
    p = sub.add_parser(
        "demo",
        help="start two local agents and stream one conversation between them, live",
        description="Start the streaming LLM agent (replay model) and a client agent on "
        "127.0.0.1, ask one question and render the reply live. No network, no keys; "
        "stops everything it started.",
        epilog="examples:\n"
        "  agent-stream demo                          the default conversation, live (make demo)\n"
        "  agent-stream demo --rate 0                 as fast as the agents can stream\n"
        "  agent-stream demo --team                   a planner relaying three sub-agents\n"
        '  agent-stream demo --question "Why chunk?" --json > transcript.json\n',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--question", default=DEFAULT_QUESTION, help="what the client asks (default: %(default)r)"
    )
    p.add_argument(
        "--rate",
        type=rate,
        default=150.0,
        help="replay tokens per second, 0 = as fast as possible (default: %(default)s)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the assembled Transcript instead of rendering"
    )
    p.add_argument(
        "--team",
        action="store_true",
        help="a team instead: a planner relaying a researcher and two specialists "
        "(four agents, each sub-agent's section labelled)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="uagents logs at INFO")
    p.set_defaults(func=run)


def _reader(stream: Any, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def spawn(
    cmd: list[str], env: dict[str, str], verbose: bool
) -> tuple[subprocess.Popen[str], queue.Queue[str | None]]:
    """Start a command; its process and its stdout lines (None at their end), read by a thread.

    Args:
        cmd: the command line.
        env: its environment.
        verbose: show its stderr.
    """
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=None if verbose else subprocess.DEVNULL,
        text=True,
        env=env,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    return proc, lines


def start_server(
    args: argparse.Namespace, port: int, env: dict[str, str]
) -> tuple[subprocess.Popen[str], str, str]:
    """Start `agent-stream serve` and wait for its address.

    Args:
        args: the parsed command line.
        port: the agent's port.
        env: the agent's environment.

    Returns:
        (process, address, endpoint).
    """
    cmd = [
        sys.executable,
        "-m",
        "agent_stream",
        "serve",
        "--port",
        str(port),
        "--seed",
        secrets.token_hex(32),
        "--rate",
        str(args.rate),
        "--reasoning",
        "--name",
        "demo-llm",
    ]
    if args.verbose:
        cmd.append("--verbose")
    proc, lines = spawn(cmd, env, args.verbose)
    address = endpoint = ""
    deadline = time.monotonic() + 30.0
    while not (address and endpoint):
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            line = None
        if line is None:
            stop(proc)
            raise RuntimeError("the LLM agent did not start (try --verbose)")
        key, _, value = line.partition(":")
        if key == "address":
            address = value.strip()
        elif key == "endpoint":
            endpoint = value.strip()
    return proc, address, endpoint


@contextlib.contextmanager
def private_directory(prefix: str, **env: str) -> Iterator[dict[str, str]]:
    """A temporary directory that is the working directory of the agents (uagents writes its
    storage files there) and holds their own agent directory (``DIRECTORY_ENV``, set here and
    in the environment it yields for child processes, with ``env`` added); all restored after.

    Args:
        prefix: the temporary directory's name prefix.
        **env: variables added to the child processes' environment.

    Yields:
        The environment for child processes.
    """
    from agent_stream.uagents.local._directory import DIRECTORY_ENV

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        child = dict(os.environ, **env)
        child[DIRECTORY_ENV] = str(Path(tmp) / "agents.json")
        saved = os.environ.get(DIRECTORY_ENV)
        os.environ[DIRECTORY_ENV] = child[DIRECTORY_ENV]
        old_cwd = os.getcwd()
        os.chdir(tmp)
        try:
            yield child
        finally:
            os.chdir(old_cwd)
            if saved is None:
                os.environ.pop(DIRECTORY_ENV, None)
            else:
                os.environ[DIRECTORY_ENV] = saved


def ask_live(
    args: argparse.Namespace, address: str, endpoint: str, port: int, renderer: Any, timeout: float
) -> Any:
    """Ask ``args.question`` from a client agent; the Reply (None: stopped).

    Reasoning is asked for, peers are found in the local directory.

    Args:
        args: the parsed command line.
        address: the address of the agent asked.
        endpoint: its endpoint.
        port: the client agent's port.
        renderer: fed each Message as the reply streams (None: nothing is drawn).
        timeout: seconds the whole reply may take.
    """
    from agent_stream.commands.ask import ask_once

    try:
        return ask_once(
            target=address,
            endpoint=endpoint,
            question=args.question,
            port=port,
            seed=secrets.token_hex(32),
            reasoning=True,
            timeout=timeout,
            use_directory=True,
            on_message=renderer.feed if renderer is not None else None,
            verbose=args.verbose,
        )
    finally:
        if renderer is not None:
            renderer.stop()  # what is still drawn live is printed for good


def show_reply(
    args: argparse.Namespace, reply: Any, renderer: Any, started: float, stopped: str
) -> int:
    """The end of a demo: the Transcript as JSON (``--json``) or the summary line.

    Args:
        args: the parsed command line.
        reply: the Reply (None: interrupted).
        renderer: draws the summary line (None: none).
        started: when the question was asked, ``time.monotonic()``.
        stopped: what the summary line says after it (``both agents stopped``...).

    Returns:
        The exit status (130: interrupted, 1: the reply did not complete).
    """
    from agent_stream.commands.ask import summary_line
    from agent_stream.commands.assemble import reply_json

    if reply is None:
        return 130
    if args.json:
        print(reply_json(reply))
    elif renderer is not None:
        renderer.close(summary_line(reply, started) + " · " + stopped, ok=reply.completed)
    return 0 if reply.completed else 1


def stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM (a graceful agent shutdown), then SIGKILL after 5 s.

    Args:
        proc: the process.
    """
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _start_member(
    name: str, extra: tuple[str, ...], rate: float, env: dict[str, str], verbose: bool
) -> subprocess.Popen[str]:
    from agent_stream.uagents import free_port

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
        "--rate",
        str(rate),
        *extra,
    ]
    return spawn(cmd, env, verbose)[0]


def _wait_listed(
    members: dict[str, subprocess.Popen[str]], timeout: float = 60.0
) -> dict[str, tuple[str, str]]:
    """(address, endpoint) of every member once all of them listed themselves.

    Raises:
        RuntimeError: a member exited first, or one was not listed within ``timeout`` seconds;
            the message names it.
    """
    from agent_stream.uagents import LocalDirectory

    book = LocalDirectory()
    deadline = time.monotonic() + timeout
    while True:
        found = {e.get("name"): (a, e.get("endpoint", "")) for a, e in book.entries().items()}
        if set(members) <= set(found):
            return {n: found[n] for n in members}
        exited = [
            f"{name} exited with status {proc.returncode}"
            for name, proc in members.items()
            if name not in found and proc.poll() is not None
        ]
        if exited:
            raise RuntimeError(
                f"the team did not start: {', '.join(exited)} (--verbose shows its log)"
            )
        if time.monotonic() > deadline:
            missing = ", ".join(n for n in members if n not in found)
            raise RuntimeError(
                f"the team did not start: {missing} not listed after {timeout:g} s "
                "(--verbose shows their logs)"
            )
        time.sleep(0.05)


def run_team(args: argparse.Namespace) -> int:
    """``demo --team`` (see the module doc); the exit status.

    Args:
        args: the parsed command line.
    """
    from agent_stream.render import make_console
    from agent_stream.render_markdown import make_renderer
    from agent_stream.uagents import DeliveryError, free_port

    console = make_console()
    members: dict[str, subprocess.Popen[str]] = {}
    with private_directory("agent-stream-team-", PYTHONUNBUFFERED="1") as env:
        renderer = None if args.json else make_renderer(console)
        try:
            if renderer is not None:
                console.print(
                    f"Starting a team of four agents (replay models, {args.rate:g} "
                    "tokens/s): planner, researcher, coder, chef ...",
                    style="bold",
                )
            for name, extra in TEAM.items():
                members[name] = _start_member(name, extra, args.rate, env, args.verbose)
            team = _wait_listed(members)
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
            for proc in reversed(members.values()):
                stop(proc)
    return show_reply(args, reply, renderer, started, "all four agents stopped")


def run(args: argparse.Namespace) -> int:
    """Run ``agent-stream demo``.

    Args:
        args: the parsed command line.

    Returns:
        The exit status.
    """
    if getattr(args, "team", False):
        return run_team(args)

    from agent_stream.render import make_console
    from agent_stream.render_markdown import make_renderer
    from agent_stream.uagents import DeliveryError, free_port

    console = make_console()
    with private_directory("agent-stream-demo-") as env:
        server_port, client_port = free_port(), free_port()
        while client_port == server_port:
            client_port = free_port()
        proc = None
        try:
            if not args.json:
                console.print(
                    f"Starting the LLM agent (replay model, {args.rate:g} tokens/s) "
                    f"on 127.0.0.1:{server_port} ...",
                    style="bold",
                )
            proc, address, endpoint = start_server(args, server_port, env)
            renderer = None if args.json else make_renderer(console)
            if renderer is not None:
                console.print(f"  address  {address}\n  endpoint {endpoint}", style="dim")
                console.print(
                    f"Client agent on 127.0.0.1:{client_port} asks: {args.question}", style="bold"
                )
            started = time.monotonic()
            reply = ask_live(args, address, endpoint, client_port, renderer, 60.0)
        except (RuntimeError, DeliveryError) as exc:
            print(f"agent-stream demo: {exc}", file=sys.stderr)
            return 1
        finally:
            if proc is not None:
                stop(proc)
    return show_reply(args, reply, renderer, started, "both agents stopped")
