"""`agent-stream demo --team`: four agent processes, the planner's reply with every sub-agent's
section labelled by name."""

from __future__ import annotations

import json

import pytest
from agents_harness import Harness

pytestmark = pytest.mark.integration


def test_demo_team_relays_three_sub_agents(harness: Harness) -> None:
    p = harness.cli("demo", "--team", "--rate", "0", "--json")
    code, out, err = p.finish(timeout=90)
    assert code == 0, err
    t = json.loads(out)
    labels = [b["label"] for b in t["blocks"]]
    for name in ("Plan", "Researcher", "Coder", "Chef", "Summary"):
        assert name in labels
    assert {"coder", "chef"} <= {th["label"] for th in t["threads"]}
    assert all(m["status"] == "completed" for m in t["messages"])
    texts = "".join(m["props"].get("content", "") for m in t["messages"] if m["type"] == "text")
    assert "Streaming agent output" in texts and "tomato" in texts and "with_retries" in texts
    assert any(m["type"] == "thinking" for m in t["messages"])
    # the transcript says how the reply ended and which sub-agent wrote what
    assert t["status"] == "completed" and t["error"] is None
    relays = {b["agent_name"]: b for b in t["blocks"] if b["agent_name"]}
    assert set(relays) == {"researcher", "coder", "chef"}
    for b in relays.values():
        assert b["agent"].startswith("agent1") and b["relay_status"] == "completed"
        assert isinstance(b["duration_ms"], int)
        assert b["parent_block_id"] is None  # the planner relays at the top of its stream
    by_id = {b["block_id"]: b for b in t["blocks"]}
    nested = [
        b for b in t["blocks"] if b["parent_block_id"] in {r["block_id"] for r in relays.values()}
    ]
    assert {by_id[b["parent_block_id"]]["agent_name"] for b in nested} == set(relays)
