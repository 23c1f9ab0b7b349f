"""Two running agents share a name: a team member relaying that name refuses it with a message
naming both addresses instead of asking one of them at random (real processes on 127.0.0.1)."""

from __future__ import annotations

import json

import pytest
from agents_harness import Harness, free_port
from relay_ask import ask

pytestmark = pytest.mark.integration


def test_a_relay_to_a_name_two_agents_share_is_refused_naming_both(harness: Harness) -> None:
    addresses = []
    for extra in (("--rate", "0"), ("--rate", "0"), ("--rate", "0", "--relay", "twin")):
        name = "boss" if "--relay" in extra else "twin"
        port = free_port()
        p = harness.start(
            "-m",
            "agent_stream.commands.team",
            "--name",
            name,
            "--port",
            str(port),
            "--seed",
            f"shared name {name} {port}",
            *extra,
        )
        addresses.append(p.wait_for("address:", 60).split(":", 1)[1].strip())
    harness.wait_answering("twin", "twin", "boss")
    result = ask(harness, addresses[2])
    said = json.dumps([m.to_dict() for m in result["msgs"]])
    assert "2 running agents are named 'twin'" in said, said[-3000:]
    assert addresses[0] in said and addresses[1] in said
    # refused as a relay (its own block ends in error), the boss's reply itself completes
    assert result["status"] == "completed", result["status"]
