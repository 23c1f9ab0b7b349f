"""Local running helpers: offline agents (per instance), the local directory, the resolver,
peers, and the networked configuration up to the point where the network would be reached."""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
import uagents.agent
import uagents.asgi
import uagents.network
from uagents import Protocol
from uagents_core.contrib.protocols.chat import chat_protocol_spec

from agent_stream.commands import serve
from agent_stream.uagents import ChatProtocolConflict, StreamingChat, local_agent, network_agent
from agent_stream.uagents.local._agents import (
    LocalAgent,
    NoRegistration,
    free_port,
    network_agent_options,
    parse_peer,
)
from agent_stream.uagents.local._directory import LocalResolver
from agent_stream.uagents.transport._http_edge import AgentServer

ADDR = "agent1qwtsvqrttweaa5kjq7seu2natjj4gh2qnh3q99ug9narsmgwchzy72nw57p"
ADDR2 = "agent1qg6q03f0tm5cchfskztzaj6yge9zhytd3fh9hrls73xwsdh44wey7hjrh8e"


async def test_a_local_agent_is_offline_on_its_own_instance() -> None:
    """Building a LocalAgent opens no socket and looks up no name (a stock Agent queries the
    ledger here); starting it posts no status; its server listens on 127.0.0.1. uagents'
    module functions are left as they are."""
    sockets: list[str] = []
    watching = True

    def hook(event: str, args: Any) -> None:
        if watching and event in ("socket.connect", "socket.getaddrinfo"):
            sockets.append(f"{event}{args!r}")

    sys.addaudithook(hook)
    import asyncio

    port = free_port()
    try:
        agent = LocalAgent(
            name="offline",
            seed="local agent offline test",
            port=port,
            endpoint=[f"http://127.0.0.1:{port}/submit"],
            registration_policy=NoRegistration(),
            enable_agent_inspector=False,
            report_events=False,
            loop=asyncio.get_running_loop(),
        )
        await agent._update_agent_status(True)  # uagents calls it at start and stop
    finally:
        watching = False
    try:
        assert sockets == []
        assert agent._almanac_contract is None
        server = agent._server
        assert isinstance(server, AgentServer) and server.host == "127.0.0.1"
        assert uagents.agent.get_almanac_contract is uagents.network.get_almanac_contract
        assert uagents.asgi.HOST == "0.0.0.0"
    finally:
        uagents.agent.dispatcher.unregister(agent.address, agent)


def test_local_agent_is_configured_for_loopback_and_requires_a_seed() -> None:
    with pytest.raises(ValueError):
        local_agent("", 8123)
    agent = local_agent("local agent config", 8123, name="x", directory=None)
    try:
        assert [e.url for e in agent._endpoints] == ["http://127.0.0.1:8123/submit"]
        assert isinstance(agent._resolver, LocalResolver)
        assert agent.mailbox_client is None
    finally:
        uagents.agent.dispatcher.unregister(agent.address, agent)


def test_parse_peer() -> None:
    assert parse_peer(f"{ADDR}=http://127.0.0.1:8000/submit") == (
        ADDR,
        "http://127.0.0.1:8000/submit",
    )
    for bad in ("nothing", f"{ADDR}=", "=http://x", f"{ADDR}=ftp://x", "notanaddress=http://x"):
        with pytest.raises(ValueError):
            parse_peer(bad)


def test_network_agent_options_are_plain_uagents_options() -> None:
    kw = network_agent_options("s", network="testnet", mailbox=True, port=8001, name="llm")
    assert kw == {"name": "llm", "seed": "s", "network": "testnet", "mailbox": True, "port": 8001}
    with pytest.raises(ValueError):
        network_agent_options("s", network="moon")


def test_network_agent_is_protected_beside_local_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    """Local agents change nothing process-wide, so a networked agent can be built in the same
    process (its ledger query intercepted here, where it would reach the network)."""
    from agent_stream.uagents._protection import is_protected

    local = local_agent("local beside a networked one", free_port(), directory=None)
    reached: list[str] = []
    monkeypatch.setattr(
        uagents.agent, "get_almanac_contract", lambda network="testnet": reached.append(network)
    )
    agent = network_agent("networked beside a local one", network="testnet", port=free_port())
    try:
        assert reached == ["testnet"]  # it is built the uagents way: the ledger is queried
        assert isinstance(agent, uagents.agent.Agent) and not isinstance(agent, LocalAgent)
        assert is_protected(agent)
        assert is_protected(local)
    finally:
        for a in (agent, local):
            uagents.agent.dispatcher.unregister(a.address, a)


async def test_serve_network_mailbox_is_configured_up_to_the_network(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`serve --network testnet --mailbox` builds a networked agent; the ledger query, the
    manifest post and every socket are intercepted where they would reach the network."""
    reached: list[str] = []

    def ledger(network: str = "testnet") -> None:
        reached.append(f"ledger:{network}")

    async def manifest(self: Any, manifest: dict[str, Any]) -> None:
        reached.append("manifest")

    sockets: list[str] = []
    watching = True

    def hook(event: str, args: Any) -> None:
        if watching and event in ("socket.connect", "socket.getaddrinfo"):
            sockets.append(f"{event}{args!r}")

    sys.addaudithook(hook)
    monkeypatch.setattr(uagents.agent, "get_almanac_contract", ledger)
    monkeypatch.setattr(uagents.agent.Agent, "publish_manifest", manifest)
    from agent_stream.cli import build_parser

    args = build_parser().parse_args(
        ["serve", "--port", "8002", "--rate", "0", "--network", "testnet", "--mailbox"]
    )
    try:
        agent, chat, where = serve.build(args, "network test seed")
        import asyncio

        await asyncio.sleep(0)  # let include()'s manifest task run
    finally:
        watching = False
        monkeypatch.undo()
    try:
        assert reached == ["ledger:testnet", "manifest"]
        assert sockets == []
        assert agent.identifier.startswith("test-agent://")
        assert agent.mailbox_client is not None and where == "Agentverse mailbox"
        assert isinstance(chat, StreamingChat)
        assert chat.digest in agent.protocols
        with pytest.raises(ChatProtocolConflict, match=r"StreamingChat\.from_protocol"):
            agent.include(Protocol(spec=chat_protocol_spec))  # a second chat protocol
        assert not isinstance(agent._resolver, LocalResolver)  # the Almanac resolver
    finally:
        uagents.agent.dispatcher.unregister(agent.address, agent)


def test_serve_seed_comes_from_the_flag_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_STREAM_SEED", "from env")
    assert serve.seed_from(argparse.Namespace(seed="flag")) == ("flag", False)
    assert serve.seed_from(argparse.Namespace(seed=None)) == ("from env", False)
    monkeypatch.delenv("AGENT_STREAM_SEED")
    seed, throwaway = serve.seed_from(argparse.Namespace(seed=None))
    assert (
        throwaway and len(seed) == 64 and seed != serve.seed_from(argparse.Namespace(seed=None))[0]
    )


def test_cli_errors_exit_2_without_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_stream.cli import main

    env = dict(os.environ, AGENT_STREAM_DIRECTORY=str(tmp_path / "empty.json"))
    old = os.environ.copy()
    os.environ.update(env)
    try:
        assert main(["ask", ADDR, "question"]) == 2
        assert "no endpoint" in capsys.readouterr().err
        assert main(["ask", "not-an-address", "--endpoint", "http://127.0.0.1:1/submit", "q"]) == 2
        assert main(["serve", "--mailbox", "--seed", "x", "--port", str(free_port())]) == 2
        assert "--network" in capsys.readouterr().err
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            port = str(busy.getsockname()[1])
            assert main(["serve", "--port", port, "--seed", "x"]) == 2
            assert (
                main(["ask", ADDR, "--endpoint", "http://127.0.0.1:1/submit", "--port", port, "q"])
                == 2
            )
            assert capsys.readouterr().err.count("in use") == 2
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_serve_wires_the_openai_source_lazily() -> None:
    from agent_stream.sources.openai import OpenAIModel
    from agent_stream.sources.replay import ReplayModel

    ns = argparse.Namespace(
        model="openai", base_url="http://127.0.0.1:9/v1", model_name="tiny", rate=60.0
    )
    model = serve.make_model(ns)
    assert isinstance(model, OpenAIModel)
    assert (model.base_url, model.model) == ("http://127.0.0.1:9/v1", "tiny")
    ns.model = "replay"
    replay = serve.make_model(ns)
    assert isinstance(replay, ReplayModel) and replay.rate == 60.0


@pytest.mark.parametrize("flag", ["--max-replies-per-sender", "--max-question-bytes"])
def test_serve_refuses_a_cap_below_one(flag: str, tmp_path: Any) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "agent_stream", "serve", flag, "0", "--port", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert f"{flag} must be at least 1" in done.stderr
    assert "Traceback" not in done.stderr
