"""Asking agents written the way Fetch.ai's templates write them (tests/peers/template_agent.py):
every message of their replies is shown, a metadata-only first message is not the answer, the
reply ends when the agent ends the session or after the quiet period, and a stock
``uagents.Agent`` given ``resolve=local_resolver()`` answers with no internet."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pytest
from agents_harness import PEERS, AgentProcess, Harness, address_of, port_open_failed
from fault_proxy import wait_until

from agent_stream.uagents import free_port

pytestmark = pytest.mark.integration

sys.path.insert(0, str(PEERS))
from template_agent import ANSWER, IMAGE  # noqa: E402


def template(h: Harness, role: str, *args: str) -> tuple[AgentProcess, str, str]:
    port = free_port()
    p = h.start(
        str(PEERS / "template_agent.py"),
        role,
        "--port",
        str(port),
        "--seed",
        f"template {role} agent {port}",
        *args,
    )
    _, address, endpoint = p.wait_for("READY", timeout=90).split()
    h.list_in_directory(address, endpoint, p.proc.pid)
    return p, address, endpoint


def ask(h: Harness, address: str, *args: str) -> tuple[int, str, str]:
    return h.cli("ask", address, *args, "--timeout", "90", "Tell me").finish(120)


def got(p: AgentProcess, n: int) -> list[str]:
    """The content types of the first ``n`` ChatMessages the template agent received."""
    deadline = time.monotonic() + 10
    while True:
        lines = [ln.strip()[4:] for ln in p.lines if ln.startswith("GOT ")]
        if len(lines) >= n or time.monotonic() > deadline:
            return lines[:n]
        time.sleep(0.02)


def shown(transcript: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (m["type"], m["props"].get("content") or m["props"].get("url"))
        for m in transcript["messages"]
    ]


def test_a_template_agent_s_metadata_first_then_its_answer_and_end_of_session(
    harness: Harness,
) -> None:
    p, address, _ = template(harness, "asi1", "--delay", "2")
    try:
        code, out, err = ask(harness, address, "--json")
        assert code == 0, err
        transcript = json.loads(out)
        assert shown(transcript) == [("text", ANSWER)]
        code, out, err = ask(harness, address)
        assert code == 0, err
        assert ANSWER in out and "the agent ended the session" in out
    finally:
        p.stop()


def test_a_status_then_an_image_later_are_both_shown_and_the_quiet_ends_it(
    harness: Harness,
) -> None:
    p, address, _ = template(harness, "imagen", "--delay", "1")
    try:
        code, out, err = ask(harness, address, "--json", "--quiet-timeout", "3")
        assert code == 0, err
        assert shown(json.loads(out)) == [
            ("text", "Generating your image..."),
            ("image", IMAGE),
        ]
        code, out, err = ask(harness, address, "--quiet-timeout", "3")
        assert code == 0, err
        assert "Generating your image..." in out and IMAGE in out
        assert "ended after 3 s of quiet" in out
    finally:
        p.stop()


def test_a_stock_agent_with_the_local_resolver_answers_offline(harness: Harness) -> None:
    # Offline, a stock agent's startup handlers wait ~33 s on Agentverse calls that fail; its
    # server listens and answers meanwhile, so the question goes as soon as the port accepts.
    port = free_port()
    seed = f"template stock agent {port}"
    p = harness.start(
        str(PEERS / "template_agent.py"),
        *("asi1", "--port", str(port), "--seed", seed, "--stock", "--delay", "0.5"),
    )
    address = address_of(seed)
    assert wait_until(lambda: not port_open_failed(port), 60), p.stderr[-2000:]
    harness.list_in_directory(address, f"http://127.0.0.1:{port}/submit", p.proc.pid)
    try:
        code, out, err = ask(harness, address, "--json")
        assert code == 0, err + p.stderr[-2000:]
        assert shown(json.loads(out)) == [("text", ANSWER)]
    finally:
        p.stop()


def test_ask_plain_sends_no_metadata_and_a_plain_agent_is_remembered_as_plain(
    harness: Harness,
) -> None:
    p, address, _ = template(harness, "asi1", "--delay", "0.2")
    try:
        assert ask(harness, address, "--plain")[0] == 0
        assert got(p, 1) == ["StartSessionContent TextContent"]
        # asked without --plain: the directory remembers it answered plainly before
        code, _, err = ask(harness, address)
        assert code == 0, err
        assert got(p, 2)[1] == "StartSessionContent TextContent"
    finally:
        p.stop()


def test_the_first_question_to_an_unknown_agent_is_tagged_and_learns_it_is_plain(
    harness: Harness,
) -> None:
    from agent_stream.uagents import LocalDirectory

    p, address, _ = template(harness, "asi1", "--delay", "0.2")
    try:
        assert not LocalDirectory(harness.directory).is_plain(address)
        assert ask(harness, address)[0] == 0
        assert got(p, 1) == ["StartSessionContent MetadataContent TextContent"]
        assert LocalDirectory(harness.directory).is_plain(address)
    finally:
        p.stop()
