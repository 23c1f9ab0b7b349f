"""The block tree the wires share for sub-agents (AG-UI, OpenAI, the AI SDK): which agent block
a block is nested in, which are open and in what order, and parent cycles that end the walk."""

from __future__ import annotations

from typing import Any

from agent_stream.adapters._subagents import SubAgents
from agent_stream.events import EventView
from agent_stream.message import Message, event


def start(bid: str, type_: str = "agent", **data: Any) -> Message:
    return event("block_start", {"block_id": bid, "type": type_, **data}, block_id=bid)


def end(bid: str) -> Message:
    return event("block_end", {"block_id": bid, "status": "completed"}, block_id=bid)


def fed(*msgs: Message) -> SubAgents:
    blocks = SubAgents()
    for m in msgs:
        blocks.see(EventView(m))
    return blocks


def test_nesting_open_agents_and_their_order() -> None:
    blocks = fed(
        start("A", agent_name="researcher"),
        start("L", "llm", parent_block_id="A"),
        start("C", parent_block_id="L", label="Deep dive"),
        start("Z"),
    )
    assert list(blocks.ancestors("C")) == ["C", "L", "A"]
    assert list(blocks.ancestors(None)) == []
    assert [blocks.agent_of(b) for b in ("A", "L", "C", "unknown")] == ["A", "A", "C", None]
    assert blocks.opened == ["A", "C", "Z"]
    assert [blocks.name(b) for b in ("A", "C", "Z")] == ["researcher", "Deep dive", "agent"]
    blocks.see(EventView(end("C")))
    assert not blocks.is_open("C") and blocks.agent_of("C") == "A"
    blocks.end("A")  # the reply's end closes what is still open
    blocks.end("never-opened")
    assert blocks.opened == ["Z"] and blocks.agent_of("L") is None


def test_a_parent_cycle_ends_the_walk() -> None:
    blocks = fed(
        start("X", "llm", parent_block_id="Y"),
        start("Y", "llm", parent_block_id="X"),
        start("S", parent_block_id="S"),
    )
    assert list(blocks.ancestors("X")) == ["X", "Y"]
    assert blocks.agent_of("X") is None
    assert list(blocks.ancestors("S")) == ["S"] and blocks.agent_of("S") == "S"
