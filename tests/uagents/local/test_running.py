"""Running a local agent: it lists itself only once its own server serves its endpoint, removes
itself however it stops, says where it is, and a busy port is one clean line (library and CLI).

Real agents in real processes on 127.0.0.1, each run with its own directory file.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from uagents.dispatch import dispatcher

from agent_stream.seeds import WeakSeedWarning
from agent_stream.uagents import LocalDirectory, local_agent
from agent_stream.uagents.local._agents import PortInUse, free_port, serve_agent

AGENT = textwrap.dedent("""
    import sys
    from agent_stream.uagents import StreamingChat, local_agent, run_agent

    async def respond(request):
        yield "hello from " + sys.argv[1]

    agent = local_agent(seed=sys.argv[3], port=int(sys.argv[2]), name=sys.argv[1])
    agent.include(StreamingChat(respond), publish_manifest=True)
    if sys.argv[4:] == ["crash"]:
        async def main(ctx):
            raise RuntimeError("the main routine failed")
        run_agent(agent, main)
    else:
        run_agent(agent)
""")


def raw_entries(path: Path) -> dict[str, dict[str, object]]:
    """The directory file as written, dead processes' entries included."""
    try:
        return dict(json.loads(path.read_text())["agents"])
    except FileNotFoundError:
        return {}


class Agents:
    """Start agent processes sharing one directory file."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.book = tmp / "dir" / "agents.json"
        self.env = dict(os.environ, AGENT_STREAM_DIRECTORY=str(self.book), PYTHONUNBUFFERED="1")
        self.procs: list[subprocess.Popen[str]] = []
        (tmp / "agent.py").write_text(AGENT)

    def start(self, name: str, port: int, seed: str, *extra: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, str(self.tmp / "agent.py"), name, str(port), seed, *extra],
            cwd=self.tmp,
            env=self.env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.procs.append(proc)
        return proc

    def wait_listed(self, name: str, timeout: float = 30.0) -> tuple[str, dict[str, object]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for address, entry in raw_entries(self.book).items():
                if entry.get("name") == name:
                    return address, entry
            time.sleep(0.05)
        raise AssertionError(f"{name} was never listed")

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[Agents]:
    a = Agents(tmp_path)
    try:
        yield a
    finally:
        a.close()


def test_a_busy_port_is_one_line_exit_1_and_never_listed(agents: Agents) -> None:
    port = free_port()
    first = agents.start("first", port, "the first agent's seed, long enough")
    address, entry = agents.wait_listed("first")
    assert entry["endpoint"] == f"http://127.0.0.1:{port}/submit"
    second = agents.start("second", port, "the second agent's seed, long enough")
    _, err = second.communicate(timeout=60)
    assert second.returncode == 1
    assert err.strip().splitlines() == [
        f"ERROR: port {port} on 127.0.0.1 is in use: agent 'second' cannot serve there "
        "(choose another port)"
    ]
    assert "Traceback" not in err and "Event loop is closed" not in err
    # Only the agent that serves the port is listed, and asking by name reaches it.
    assert [e["name"] for e in raw_entries(agents.book).values()] == ["first"]
    assert LocalDirectory(agents.book).find("second") is None
    assert LocalDirectory(agents.book).find("first") == (address, entry["endpoint"])
    assert first.poll() is None


def test_an_agent_says_its_name_address_and_endpoint_once_it_serves(agents: Agents) -> None:
    port = free_port()
    proc = agents.start("greeter", port, "the greeter agent's seed, long enough")
    address, _ = agents.wait_listed("greeter")
    # the banner follows the listing by a moment (its own readiness probe): read stderr as it
    # comes and stop the agent once it said it runs, not before
    lines: list[str] = []
    stderr = proc.stderr
    assert stderr is not None

    def read() -> None:
        for line in stderr:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while not any("is running" in line for line in list(lines)):
        assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    reader.join(timeout=10)
    err = "".join(lines)
    assert proc.returncode == 0
    assert "agent 'greeter' is running" in err
    assert f"  address:  {address}" in err
    assert f"  endpoint: http://127.0.0.1:{port}/submit" in err
    assert '  ask it:   agent-stream ask greeter "your question"' in err
    assert raw_entries(agents.book) == {}  # a graceful stop withdraws the entry


def test_the_entry_goes_when_the_main_routine_fails(agents: Agents) -> None:
    proc = agents.start("crasher", free_port(), "the crasher agent's seed, long enough", "crash")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "the main routine failed" in err
    assert raw_entries(agents.book) == {}


def test_serve_agent_raises_port_in_use_before_anything_starts(tmp_path: Path) -> None:
    book = LocalDirectory(tmp_path / "agents.json")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        agent = local_agent("a seed that is long enough", port, name="late", directory=book)
        with pytest.raises(PortInUse) as caught:
            serve_agent(agent)
        assert caught.value.port == port and "in use" in str(caught.value)
        # Taken between the check and the server's bind: the server's failure is the same
        # exception, the agent shuts down cleanly and is never listed.
        racer = local_agent("another seed, long enough", port, name="racer", directory=book)
        racer.local_port = None  # skips the check before starting
        with pytest.raises(PortInUse):
            serve_agent(racer)
    assert raw_entries(book.path) == {}
    for a in (agent, racer):
        dispatcher.unregister(a.address, a)


def test_a_short_seed_is_warned_about_by_the_builder(tmp_path: Path) -> None:
    with pytest.warns(WeakSeedWarning, match="at least 16"):
        weak = local_agent("x", free_port(), directory=LocalDirectory(tmp_path / "a.json"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", WeakSeedWarning)
        ok = local_agent(
            "sixteen chars ok", free_port(), directory=LocalDirectory(tmp_path / "a.json")
        )
    for a in (weak, ok):
        dispatcher.unregister(a.address, a)


def test_a_port_whose_last_server_stopped_is_free_and_a_listening_one_is_not() -> None:
    from agent_stream.uagents.local._agents import port_free

    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's servers do
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    assert not port_free(port)
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    accepted.close()  # the server side closes first: its port stays in TIME_WAIT
    time.sleep(0.05)
    client.close()
    server.close()
    assert port_free(port)  # an agent restarting on its port is not told it is in use
