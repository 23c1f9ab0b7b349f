"""`agent-stream serve --max-replies N --trust ADDRESS[=N] --lean-gather S`: the caps a gateway in front of
the agent needs, refused in one line when they cannot work."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from uagents.dispatch import dispatcher

from agent_stream.cli import build_parser, main
from agent_stream.commands.serve import build
from agent_stream.uagents._protection import guard_of
from agent_stream.uagents.local._agents import free_port

ADDR = "agent1qwtsvqrttweaa5kjq7seu2natjj4gh2qnh3q99ug9narsmgwchzy72nw57p"
ADDR2 = "agent1qg6q03f0tm5cchfskztzaj6yge9zhytd3fh9hrls73xwsdh44wey7hjrh8e"
SEED = "a seed long enough to be a key"


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    monkeypatch.chdir(tmp_path)
    agents: list[Any] = []
    yield agents
    for a in agents:
        dispatcher.unregister(a.address, a)


def serve_args(*extra: str) -> Any:
    return build_parser().parse_args(
        ["serve", "--no-directory", "--port", str(free_port()), *extra]
    )


def test_max_replies_and_trusted_peers_reach_the_agent(built: list[Any]) -> None:
    agent, chat, _ = build(
        serve_args("--max-replies", "700", "--trust", f"{ADDR}=500", "--trust", ADDR2), SEED
    )
    built.append(agent)
    caps = chat.settings.caps
    assert caps.max_replies == 700 and dict(caps.trusted) == {ADDR: 500, ADDR2: 700}
    guard = guard_of(agent)
    assert guard is not None and guard.settings.trusted_senders == {ADDR, ADDR2}


def test_without_trust_the_defaults_stay(built: list[Any]) -> None:
    agent, chat, _ = build(serve_args(), SEED)
    built.append(agent)
    assert chat.settings.caps.max_replies == 64 and not chat.settings.caps.trusted
    guard = guard_of(agent)
    assert guard is not None and guard.settings.trusted_senders == frozenset()


@pytest.mark.parametrize(
    "extra,said",
    [
        (["--max-replies", "0"], "--max-replies must be at least 1"),
        (["--trust", "not-an-address"], "is not an agent address"),
        (["--trust", f"user1{'q' * 60}"], "is not an agent address"),
        (["--trust", f"{ADDR}=0"], "N must be a positive integer"),
        (["--trust", f"{ADDR}=lots"], "N must be a positive integer"),
    ],
)
def test_bad_values_are_refused_in_one_line(
    extra: list[str],
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENT_STREAM_DIRECTORY", str(tmp_path / "agents.json"))
    code = main(["serve", "--seed", SEED, "--no-directory", "--port", str(free_port()), *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and said in err[-1] and err[-1].startswith("agent-stream serve: ")


def test_lean_gather_reaches_the_agent_and_its_help_names_the_default(
    built: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_stream.adapters.chat import LEAN_GATHER

    agent, chat, _ = build(serve_args("--lean-gather", "0.2"), SEED)
    built.append(agent)
    assert chat.lean_gather == 0.2
    agent, chat, _ = build(serve_args(), SEED)
    built.append(agent)
    assert chat.lean_gather == LEAN_GATHER
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    assert f"default: {LEAN_GATHER:g})" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("value", ["-1", "inf", "nan", "soon"])
def test_a_bad_lean_gather_is_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["serve", "--lean-gather", value])
    assert caught.value.code == 2 and "--lean-gather" in capsys.readouterr().err
