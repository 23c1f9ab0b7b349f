"""Wakeup: a flag a task sleeps on until it is set or a timeout passes."""

from __future__ import annotations

import asyncio
import time

import pytest

from agent_stream.uagents._wakeup import Wakeup


async def test_a_set_flag_does_not_sleep_and_a_clear_one_sleeps_its_timeout() -> None:
    w = Wakeup()
    w.set()
    t = time.monotonic()
    assert await w.wait(5.0)
    w.clear()
    assert not await w.wait(0.05)
    assert 0.04 <= time.monotonic() - t < 1.0
    assert not await w.wait(0)  # no time at all
    assert not w.is_set()


async def test_setting_wakes_every_sleeper_at_once() -> None:
    w = Wakeup()
    sleepers = [asyncio.ensure_future(w.wait(None)), asyncio.ensure_future(w.wait(10.0))]
    await asyncio.sleep(0.01)
    t = time.monotonic()
    w.set()
    assert await asyncio.gather(*sleepers) == [True, True]
    assert time.monotonic() - t < 0.5


async def test_a_cancelled_sleeper_leaves_the_others_asleep_and_nothing_behind() -> None:
    w = Wakeup()
    cancelled = asyncio.ensure_future(w.wait(10.0))
    other = asyncio.ensure_future(w.wait(10.0))
    await asyncio.sleep(0.01)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert not other.done()
    w.set()
    assert await other
    assert not w._waiters
    w.clear()
    for _ in range(100):  # timed-out sleeps leave nothing behind either
        await w.wait(0)
    assert not w._waiters
