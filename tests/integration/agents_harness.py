"""Process harness for integration tests: real agents in OS processes on 127.0.0.1.

Every agent runs in a process of its own, in a temporary working directory (uagents writes its
storage files into the current directory), on a port chosen at run time, with a private local
agent directory (``AGENT_STREAM_DIRECTORY``) so tests never see the user's agents. Every process
a test starts is stopped in teardown (SIGTERM, then SIGKILL).

``python -m agent_stream ...`` and peer scripts are forked from the test worker's zygote
(``tests/zygote.py``): separate processes with their own pipes, directory, environment, signals
and exit status, which skip the second of imports a fresh interpreter pays. ``fresh=True`` (or
``AGENT_STREAM_TEST_FRESH=1`` for a whole run) starts a new interpreter instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from uagents_core.identity import Identity
from zygote import ForkedProcess, Zygote, can_fork

from agent_stream.uagents.local._agents import free_port

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "tests" / "peers"
ZYGOTE = Zygote()
# Seconds a process the harness starts may take to come up (listen, list itself, join a fleet).
# A wait for readiness, not a bound under test: on two loaded cores a start takes seconds.
STARTUP_WITHIN = 60.0


def address_of(seed: str) -> str:
    """The agent address uagents derives from ``seed``."""
    return str(Identity.from_seed(seed, 0).address)


class AgentProcess:
    """A running process whose stdout is read line by line in the background."""

    def __init__(
        self,
        cmd: list[str],
        cwd: Path,
        env: dict[str, str],
        stdin: bool = False,
        fresh: bool = False,
    ) -> None:
        self.cmd = cmd
        self.proc: subprocess.Popen[str] | ForkedProcess
        forked = cmd[0] == sys.executable and can_fork(cmd[1:])
        if forked and not fresh and not os.environ.get("AGENT_STREAM_TEST_FRESH"):
            self.proc = ZYGOTE.popen(cmd[1:], cwd, env, stdin)
        else:
            self.proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            )
        self.lines: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()  # the lines in order, each read once
        self._taken = 0  # lines taken from _q (read by wait_for/next_line)
        self._err: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self._q.put(line)
        self._q.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._err.append(line)

    @property
    def stderr(self) -> str:
        return "".join(self._err)

    def wait_for(self, prefix: str, timeout: float = 20.0) -> str:
        """The first stdout line starting with ``prefix`` (waiting for it). The lines before it
        count as read: next_line goes on after it."""
        for i, line in enumerate(list(self.lines)):
            if line.startswith(prefix):
                while self._taken <= i:  # a line seen but not yet read is read now
                    self._take(5.0)
                return line.rstrip("\n")
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            line = self._take(max(left, 0.0))
            if line is None:
                raise AssertionError(
                    f"{self.cmd[:4]}: no line starting with {prefix!r} "
                    f"(exit {self.proc.poll()}); stderr:\n{self.stderr}"
                )
            if line.startswith(prefix):
                return line.rstrip("\n")

    def next_line(self, timeout: float = 30.0) -> str:
        """The next stdout line not read by wait_for/next_line yet (waiting for it)."""
        line = self._take(timeout)
        if line is None:
            raise AssertionError(
                f"{self.cmd[:4]}: no line within {timeout} s "
                f"(exit {self.proc.poll()}); stderr:\n{self.stderr[-3000:]}"
            )
        return line.rstrip("\n")

    def _take(self, timeout: float) -> str | None:
        """The next line from the reader (None: none within ``timeout``, or stdout closed)."""
        try:
            line = self._q.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is not None:
            self._taken += 1
        return line

    def request(self, obj: Any, timeout: float = 60.0) -> Any:
        """Write ``obj`` as a JSON line to stdin; the next stdout line, parsed."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.next_line(timeout))

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM (a graceful agent shutdown), SIGKILL if it does not exit in time."""
        self.begin_stop()
        return self.end_stop(timeout)

    def begin_stop(self) -> None:
        """Close its stdin and send SIGTERM (a graceful agent shutdown), without waiting."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def end_stop(self, timeout: float = 10.0) -> int:
        """Wait for the exit :meth:`begin_stop` asked for; SIGKILL if it does not come in time."""
        try:
            self.proc.wait(timeout=max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode

    def finish(self, timeout: float = 60.0) -> tuple[int, str, str]:
        """Wait for the process to exit by itself: (exit status, stdout, stderr)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        deadline = time.monotonic() + 5.0
        while self._q.queue and self._q.queue[-1] is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05)
        return self.proc.returncode, "".join(self.lines), self.stderr


def scrape(port: int, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples with ``labels`` on ``http://127.0.0.1:PORT/metrics``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    total = 0.0
    for found in re.finditer(r"^" + name + r"(?:\{([^}]*)\})? (\S+)$", text, re.M):
        have = dict(re.findall(r'(\w+)="([^"]*)"', found.group(1) or ""))
        if all(have.get(k) == v for k, v in labels.items()):
            total += float(found.group(2))
    return total


def port_open_failed(port: int) -> bool:
    """True while nothing accepts connections on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return False
    except OSError:
        return True


class Harness:
    """Starts agent processes that share one temporary working directory and agent directory."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.directory = workdir / "agents.json"
        self.env = dict(os.environ)
        self.env["AGENT_STREAM_DIRECTORY"] = str(self.directory)
        self.env["PYTHONUNBUFFERED"] = "1"
        self.env.pop("AGENT_STREAM_SEED", None)
        pp = self.env.get("PYTHONPATH")
        self.env["PYTHONPATH"] = str(ROOT) + (os.pathsep + pp if pp else "")
        self.procs: list[AgentProcess] = []

    def start(self, *args: str, stdin: bool = False, fresh: bool = False) -> AgentProcess:
        """``python ARGS`` (forked from the zygote unless ``fresh``)."""
        p = AgentProcess([sys.executable, *args], self.workdir, self.env, stdin=stdin, fresh=fresh)
        self.procs.append(p)
        return p

    def asker(
        self, to: str, endpoint: str, seed: str | None = None
    ) -> tuple[AgentProcess, str, str]:
        """tests/peers/asker_agent.py asking ``to``: (process, its address, its endpoint)."""
        port = free_port()
        seed = seed or f"integration asker {port} {time.time_ns()}"
        p = self.start(
            str(PEERS / "asker_agent.py"),
            "--port",
            str(port),
            "--seed",
            seed,
            "--to",
            to,
            "--to-endpoint",
            endpoint,
            stdin=True,
        )
        line = p.next_line(30)
        while not line.startswith("READY "):
            line = p.next_line(30)
        return p, line.split()[1], f"http://127.0.0.1:{port}/submit"

    def cli(self, *args: str) -> AgentProcess:
        """``agent-stream ARGS`` as a process."""
        return self.start("-m", "agent_stream", *args)

    def serve(self, *args: str, seed: str | None = None) -> tuple[AgentProcess, str, str]:
        """``agent-stream serve`` on a free port: (process, address, endpoint)."""
        port = free_port()
        seed = seed or f"integration serve {port} {time.time_ns()}"
        p = self.cli("serve", "--port", str(port), "--seed", seed, *args)
        address = p.wait_for("address:").split(":", 1)[1].strip()
        endpoint = p.wait_for("endpoint:").split(":", 1)[1].strip()
        # The address is printed before the agent's startup runs: wait until it listens and,
        # unless told otherwise, has listed itself in the local directory (by this process: a
        # killed one of the same address may still be).
        listed = None if "--no-directory" in args else address
        self.wait_up("serve", port, listed, endpoint)
        return p, address, endpoint

    def wait_up(
        self, what: str, port: int, address: str | None = None, endpoint: str | None = None
    ) -> None:
        """Wait up to STARTUP_WITHIN until something listens on ``port`` and, given an
        ``address``, the directory lists it (at ``endpoint``, given one)."""
        deadline = time.monotonic() + STARTUP_WITHIN
        while time.monotonic() < deadline:
            if not port_open_failed(port) and (
                address is None
                or (
                    (entry := self.directory_entries().get(address)) is not None
                    and (endpoint is None or entry.get("endpoint") == endpoint)
                )
            ):
                return
            time.sleep(0.02)
        raise AssertionError(f"{what} on port {port} did not come up within {STARTUP_WITHIN:g} s")

    def plain(self, role: str, *args: str, seed: str, port: int) -> AgentProcess:
        """tests/peers/plain_agent.py (uagents alone)."""
        return self.start(
            str(PEERS / "plain_agent.py"), role, "--port", str(port), "--seed", seed, *args
        )

    def list_in_directory(self, address: str, endpoint: str, pid: int) -> None:
        """Add an agent that does not use agent_stream to the local directory."""
        from agent_stream.uagents import LocalDirectory

        LocalDirectory(self.directory).register(address, endpoint, "plain", pid=pid)

    def wait_answering(self, *names: str, timeout: float = 30.0) -> None:
        """Wait until every agent named in ``names`` is listed in the directory and answers its
        readiness probe (a name given twice: two agents of that name)."""
        from collections import Counter

        from agent_stream.uagents import LocalDirectory

        directory = LocalDirectory(self.directory)
        deadline = time.monotonic() + timeout
        for name, count in Counter(names).items():
            while len(directory.named(name)) < count:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{count} agent(s) named {name!r} never answered")
                time.sleep(0.05)

    def directory_entries(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.directory.read_text())
        except (OSError, ValueError):
            return {}
        agents: dict[str, Any] = data.get("agents", {})
        return agents

    def stop_all(self, timeout: float = 10.0) -> None:
        """Stop every process: all are sent SIGTERM first, so that their graceful shutdowns
        (a second or more each) overlap instead of adding up; SIGKILL after ``timeout``."""
        stop_together(reversed(self.procs), timeout)


def stop_together(procs: Iterable[AgentProcess], timeout: float = 10.0) -> None:
    """SIGTERM every one of ``procs``, then wait for them all (SIGKILL after ``timeout``)."""
    procs = list(procs)
    for p in procs:
        p.begin_stop()
    deadline = time.monotonic() + timeout
    for p in procs:
        p.end_stop(deadline - time.monotonic())
