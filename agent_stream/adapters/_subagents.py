"""Which sub-agent a Message belongs to: the open blocks of type ``agent`` (a relayed sub-agent,
a framework's sub-agent, subgraph or handoff) and the blocks nested in them, as block_start and
block_end say.

The wires without sub-agents of their own (OpenAI, the AI SDK UI stream) use it so that an
``error`` Message inside a sub-agent is shown as that sub-agent's failure, which the caller may
recover from, not as the end of the whole reply; AG-UI, whose sub-agents are events of their
own, also for their nesting and for ending those still open when the run ends.
"""

from __future__ import annotations

from collections.abc import Iterator

from agent_stream.events import EventView
from agent_stream.message import BLOCK_END, BLOCK_START

__all__ = ["AGENT_BLOCK", "SubAgents"]

AGENT_BLOCK = "agent"  # the block type of a sub-agent


class SubAgents:
    """The stream's blocks as far as sub-agents go: each block's parent, and the agent blocks
    still open with their names. Feed it every event (``see``)."""

    __slots__ = ("_open", "_parents")

    def __init__(self) -> None:
        self._parents: dict[str, str | None] = {}  # block_id -> parent_block_id, every block
        self._open: dict[str, str] = {}  # open agent block_id -> the sub-agent's name

    def see(self, ev: EventView) -> None:
        """Take one event: a block_start records the block (an agent block opens), a block_end
        closes it; other events change nothing."""
        bid = ev.block_id
        if bid is None:
            return
        if ev.name == BLOCK_START:
            parent = ev.data.get("parent_block_id")
            self._parents[bid] = parent if isinstance(parent, str) and parent else None
            if ev.type == AGENT_BLOCK:
                name = ev.data.get("agent_name")
                self._open[bid] = name if isinstance(name, str) and name else ev.label or "agent"
        elif ev.name == BLOCK_END:
            self.end(bid)

    def end(self, block_id: str) -> None:
        """The agent block ``block_id`` is over (its block_end, or the reply's end).

        Args:
            block_id: the block's id (nothing happens unless it is an open agent block).
        """
        self._open.pop(block_id, None)

    def is_open(self, block_id: str) -> bool:
        """Whether ``block_id`` is an open agent block.

        Args:
            block_id: the block's id.
        """
        return block_id in self._open

    @property
    def opened(self) -> list[str]:
        """The open agent blocks, in the order they opened."""
        return list(self._open)

    def ancestors(self, block_id: str | None) -> Iterator[str]:
        """``block_id``, then the block it is nested in, and so on up (a cycle ends it).

        Args:
            block_id: the block's id (None: nothing).
        """
        seen: set[str] = set()
        b = block_id
        while b is not None and b not in seen:
            yield b
            seen.add(b)
            b = self._parents.get(b)

    def agent_of(self, block_id: str | None) -> str | None:
        """The open agent block that ``block_id`` is, or is nested in (nearest first), or None
        when the block belongs to no open sub-agent (the reply's own)."""
        return next((b for b in self.ancestors(block_id) if b in self._open), None)

    def name(self, agent: str) -> str:
        """The name of the open agent block ``agent`` (its agent_name, label, else ``agent``)."""
        return self._open.get(agent, AGENT_BLOCK)
