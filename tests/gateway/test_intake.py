"""The gateway prepares at most a batch of requests per turn of its loop: a crowd's first
questions are on their way (the loop polls its sockets between turns) while the rest wait."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter

import pytest

from agent_stream.gateway.intake import PER_TURN, TurnBudget


class Turns:
    """Counts the loop's turns: a callback that schedules itself again for the next turn."""

    def __init__(self) -> None:
        self.n = 0
        self.on = True
        asyncio.get_running_loop().call_soon(self._tick)

    def _tick(self) -> None:
        self.n += 1
        if self.on:
            asyncio.get_running_loop().call_soon(self._tick)


async def test_at_most_per_turn_callers_pass_in_a_turn_and_every_caller_passes() -> None:
    budget = TurnBudget(per_turn=8)
    turns = Turns()
    passed: list[int] = []

    async def caller() -> None:
        await budget.take()
        passed.append(turns.n)

    await asyncio.gather(*(caller() for _ in range(30)))
    turns.on = False
    per_turn = Counter(passed)
    assert len(passed) == 30
    assert max(per_turn.values()) == 8  # full turns, never more
    assert len(per_turn) == 4  # 8 + 8 + 8 + 6


async def test_the_loop_reads_its_sockets_before_the_last_callers_pass() -> None:
    budget = TurnBudget(per_turn=4)
    loop = asyncio.get_running_loop()
    passed: list[int] = []
    read_after: list[int] = []
    a, b = socket.socketpair()
    try:
        b.setblocking(False)
        a.send(b"an answer waiting")  # e.g. the agent's answer to the first questions
        loop.add_reader(b, lambda: (read_after.append(len(passed)), loop.remove_reader(b)))

        async def caller(i: int) -> None:
            await budget.take()
            passed.append(i)

        await asyncio.gather(*(caller(i) for i in range(20)))
    finally:
        loop.remove_reader(b)
        a.close()
        b.close()
    assert read_after and read_after[0] < 20  # read between turns, not after all twenty


def test_the_default_is_a_full_batch_and_a_budget_below_one_is_refused() -> None:
    assert TurnBudget().per_turn == PER_TURN == 64
    with pytest.raises(ValueError, match="at least 1"):
        TurnBudget(0)
