"""The commands that run agents refuse what cannot work before anything starts, and say once,
in one line, what went wrong: durations and rates, short seeds, duplicate names, an endpoint
that does not answer."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent_stream.cli import main
from agent_stream.uagents import LocalDirectory
from agent_stream.uagents.local._agents import free_port

ADDR = "agent1qwtsvqrttweaa5kjq7seu2natjj4gh2qnh3q99ug9narsmgwchzy72nw57p"
ADDR2 = "agent1qg6q03f0tm5cchfskztzaj6yge9zhytd3fh9hrls73xwsdh44wey7hjrh8e"
SEED = "a seed long enough to be a key"


@pytest.fixture
def directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalDirectory:
    path = tmp_path / "dir" / "agents.json"
    monkeypatch.setenv("AGENT_STREAM_DIRECTORY", str(path))
    monkeypatch.chdir(tmp_path)
    return LocalDirectory(path)


@pytest.fixture
def ready() -> Iterator[str]:
    """An endpoint answering uagents' readiness probe for ADDR and ADDR2."""

    class Handler(BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            ok = self.headers.get("x-uagents-address") in (ADDR, ADDR2)
            self.send_response(200)
            self.send_header("x-uagents-status", "ready" if ok else "not-ready")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/submit"
    finally:
        server.shutdown()
        server.server_close()


BAD_VALUES = [
    ("ask", ["ask", ADDR, "q", "--timeout"], "0"),
    ("ask", ["ask", ADDR, "q", "--timeout"], "-1"),
    ("ask", ["ask", ADDR, "q", "--idle-timeout"], "0"),
    ("ask", ["ask", ADDR, "q", "--gap-timeout"], "0"),
    ("ask", ["ask", ADDR, "q", "--gap-timeout"], "soon"),
    ("ask", ["ask", ADDR, "q", "--timeout"], "nan"),
    ("demo", ["demo", "--rate"], "-5"),
    ("demo", ["demo", "--rate"], "inf"),
    ("serve", ["serve", "--rate"], "-1"),
    ("gateway", ["gateway", "--timeout"], "0"),
    ("gateway", ["gateway", "--resume-window"], "-3"),
    ("serve", ["serve", "--port"], "70000"),
    ("serve", ["serve", "--port"], "0"),
    ("ask", ["ask", ADDR, "q", "--port"], "-1"),
    ("gateway", ["gateway", "--port"], "65536"),
    ("gateway", ["gateway", "--agent-port"], "x"),
]


@pytest.mark.parametrize(("command", "argv", "value"), BAD_VALUES)
def test_non_positive_durations_and_negative_rates_are_refused(
    command: str,
    argv: list[str],
    value: str,
    directory: LocalDirectory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        main([*argv, value])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert f"agent-stream {command}: error: argument {argv[-1]}" in err
    assert any(why in err for why in ("more", "not a number", "a port is", "not a port"))


def test_a_short_seed_is_refused_on_a_network_before_anything_is_sent(
    directory: LocalDirectory, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--network", "testnet", "--seed", "x", "--port", str(free_port())]) == 2
    err = capsys.readouterr().err
    assert "refused on a network" in err and "the seed is 1 character long" in err


def test_a_short_seed_is_warned_about_locally(
    directory: LocalDirectory, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["ask", "nobody", "--seed", "short", "q"]) == 2  # no such agent
    assert "agent-stream ask: warning: the seed is 5 characters long" in capsys.readouterr().err
    with socket.socket() as busy:  # serve stops at the busy port, gateway too
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        monkeypatch.setenv("AGENT_STREAM_SEED", "seven77")
        assert main(["serve", "--port", port]) == 2
        monkeypatch.setenv("AGENT_STREAM_GATEWAY_SEED", "seven77")
        assert main(["gateway", "--port", port]) == 2
    err = capsys.readouterr().err
    assert "agent-stream gateway: warning: the seed is 7 characters long" in err
    # serve checks its port first: nothing about the seed when it cannot start anyway
    monkeypatch.setenv("AGENT_STREAM_SEED", "seven77")
    ready_port = str(free_port())
    assert main(["serve", "--port", ready_port, "--network", "mainnet"]) == 2
    assert "agent-stream serve: refused on a network" in capsys.readouterr().err


def test_a_second_agent_of_a_running_name_says_so(
    directory: LocalDirectory, ready: str, capsys: pytest.CaptureFixture[str]
) -> None:
    directory.register(ADDR, ready, "llm")
    # (--mailbox without --network stops serve right after the check, before it starts)
    assert (
        main(["serve", "--name", "llm", "--seed", SEED, "--port", str(free_port()), "--mailbox"])
        == 2
    )
    err = capsys.readouterr().err
    assert "warning: an agent named 'llm' is already running" in err and ADDR in err
    assert "`ask llm` is refused while both run" in err


def test_asking_a_name_two_running_agents_share_names_both(
    directory: LocalDirectory, ready: str, capsys: pytest.CaptureFixture[str]
) -> None:
    directory.register(ADDR, ready, "llm")
    directory.register(ADDR2, ready, "llm")
    assert main(["ask", "llm", "q"]) == 2
    err = capsys.readouterr().err
    assert "2 running agents are named 'llm'" in err and ADDR in err and ADDR2 in err


def test_the_gateway_lists_both_agents_of_one_name(directory: LocalDirectory, ready: str) -> None:
    from agent_stream.gateway.link import Agents

    directory.register(ADDR, ready, "llm")
    directory.register(ADDR2, ready, "llm")
    directory.register(ADDR2[:-1] + "x", ready, "solo", pid=os.getpid())
    agents = Agents([], directory)
    names = {ref.name for ref in agents.listed()}
    assert {f"llm@{ADDR}", f"llm@{ADDR2}", "solo"} <= names
    picked = agents.pick(f"llm@{ADDR2}")
    assert picked is not None and picked.address == ADDR2
    # --agent llm: both, never one of them at random
    from agent_stream.gateway.link import parse_agent_spec

    named = Agents([parse_agent_spec("llm")], directory)
    assert {ref.name for ref in named.listed()} == {f"llm@{ADDR}", f"llm@{ADDR2}"}
    assert named.pick("llm") is None


def test_a_dead_endpoint_is_one_line_with_the_reason(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}/submit"
    env = dict(os.environ, AGENT_STREAM_DIRECTORY=str(tmp_path / "agents.json"))
    done = subprocess.run(
        [sys.executable, "-m", "agent_stream", "ask", ADDR, "--endpoint", dead, "q"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "not delivered" in lines[0] and "connect" in lines[0].lower()  # with the reason


@pytest.mark.parametrize(
    ("flag", "value"), [("--rate", "-5"), ("--sub-timeout", "0"), ("--sub-idle-timeout", "-1")]
)
def test_team_members_refuse_the_same_values(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_stream.commands.team import build_parser

    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["--name", "x", "--port", "1", "--seed", SEED, flag, value])
    assert caught.value.code == 2 and f"argument {flag}" in capsys.readouterr().err
