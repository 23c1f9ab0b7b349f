"""How many requests the gateway prepares in one turn of its event loop.

A thousand clients asking at once arrive in one or two turns of the loop, and each request's
preparation (its run, its question signed and queued) runs before any socket is read or written
again: measured, the gateway took all of them (0.3 s) before its first question reached the
agent, which sat idle meanwhile. A :class:`TurnBudget` lets ``per_turn`` requests through in a
turn; the others wait for a later turn, which begins with the loop's poll for I/O, so the first
questions are on their way (and the agent at work) while the rest are prepared.
"""

from __future__ import annotations

import asyncio

__all__ = ["PER_TURN", "TurnBudget"]

#: Requests prepared in one turn of the loop (a full batch of envelopes).
PER_TURN = 64


class TurnBudget:
    """At most ``per_turn`` callers of :meth:`take` pass in one turn of the running loop."""

    def __init__(self, per_turn: int = PER_TURN) -> None:
        """Let ``per_turn`` callers through per turn.

        Args:
            per_turn: callers that pass in one turn (at least 1).
        """
        if per_turn < 1:
            raise ValueError(f"per_turn must be at least 1, got {per_turn}")
        self.per_turn = per_turn
        self._used = 0
        self._armed = False  # a reset is scheduled for the next turn

    def _reset(self) -> None:
        self._used = 0
        self._armed = False

    async def take(self) -> None:
        """Return in this turn while it has room, else in the first later turn that has."""
        while True:
            if not self._armed:
                self._armed = True
                asyncio.get_running_loop().call_soon(self._reset)
            if self._used < self.per_turn:
                self._used += 1
                return
            await asyncio.sleep(0)  # resumes in the next turn, after the loop's poll for I/O
