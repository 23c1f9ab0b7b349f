"""The runtime's one clock: every time read, sleep and timer of the uagents runtime goes here.

:class:`LoopClock` (the default) is monotonic time and the event loop's own sleeps and timers.
:class:`DrivenClock` is time a test moves by hand (:meth:`DrivenClock.advance`): resends,
keepalives, holds, liveness and heartbeats then run on exact schedules, with no real sleep.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

__all__ = ["LOOP_CLOCK", "Clock", "DrivenClock", "LoopClock", "Timer"]

T = TypeVar("T")


class Timer(Protocol):
    """A pending call made by :meth:`Clock.call_later`."""

    def cancel(self) -> None:
        """Stop it from running (a no-op once it ran)."""


class Clock(Protocol):
    """Monotonic seconds, a sleep, a timer and a bounded wait, all on the same time."""

    def now(self) -> float:
        """The time, in monotonic seconds."""

    async def sleep(self, seconds: float) -> None:
        """Return after ``seconds`` of this clock's time."""

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> Timer:
        """Call ``callback(*args)`` after ``delay`` seconds of this clock's time."""

    async def wait_for(self, aw: Awaitable[T], timeout: float | None) -> T:
        """``await aw``, or :class:`TimeoutError` once ``timeout`` seconds passed."""


class LoopClock:
    """Real time: :func:`time.monotonic` and the running event loop's sleeps and timers."""

    def now(self) -> float:
        """The time, in monotonic seconds."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of real time."""
        await asyncio.sleep(seconds)

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> Timer:
        """The running loop's ``call_later``."""
        return asyncio.get_running_loop().call_later(max(0.0, delay), callback, *args)

    async def wait_for(self, aw: Awaitable[T], timeout: float | None) -> T:
        """:func:`asyncio.wait_for`."""
        return await asyncio.wait_for(aw, timeout)


LOOP_CLOCK = LoopClock()
"""The default clock: real time."""


class _DrivenTimer:
    __slots__ = ("args", "callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[..., object], args: tuple[Any, ...]):
        self.when = when
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class DrivenClock:
    """Time that moves only when a test calls :meth:`advance` (starts at ``start``).

    Sleeps and timers fire in time order, each at its exact time, and the tasks they wake run
    before time moves on, so a test asserts a schedule ("the resend goes at 2.0 s") instead of
    sleeping for it.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _DrivenTimer]] = []
        self._order = itertools.count()

    def now(self) -> float:
        """The driven time."""
        return self._now

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> Timer:
        """Run ``callback(*args)`` when :meth:`advance` reaches ``now() + delay``."""
        timer = _DrivenTimer(self._now + max(0.0, delay), callback, args)
        heapq.heappush(self._timers, (timer.when, next(self._order), timer))
        return timer

    async def sleep(self, seconds: float) -> None:
        """Return once driven time passed ``seconds`` (at once for zero or less)."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        timer = self.call_later(seconds, _wake, fut)
        try:
            await fut
        finally:
            timer.cancel()

    async def wait_for(self, aw: Awaitable[T], timeout: float | None) -> T:
        """``await aw``, or :class:`TimeoutError` once driven time passed ``timeout``."""
        task = asyncio.ensure_future(aw)
        if timeout is None:
            return await task
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        timer = self.call_later(timeout, expire)
        try:
            return await task
        except asyncio.CancelledError:
            if expired:
                raise asyncio.TimeoutError from None
            raise
        finally:
            timer.cancel()
            if not task.done():
                task.cancel()

    @property
    def pending(self) -> list[float]:
        """The times of the timers still to fire, in order."""
        return sorted(t.when for _, _, t in self._timers if not t.cancelled)

    async def settle(self, rounds: int = 20) -> None:
        """Let the tasks that can run now run (``rounds`` passes of the event loop)."""
        for _ in range(rounds):
            await asyncio.sleep(0)

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing each timer due on the way at its time."""
        target = self._now + seconds
        await self.settle()
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.cancelled = True  # fired: cancel() is now a no-op
            timer.callback(*timer.args)
            await self.settle()
        self._now = max(self._now, target)
        await self.settle()

    async def run_until(
        self, done: Callable[[], bool], *, step: float = 0.01, limit: float = 600.0
    ) -> float:
        """Advance in ``step`` until ``done()`` is true; returns the driven seconds it took.

        Raises:
            TimeoutError: ``done()`` still false after ``limit`` driven seconds.
        """
        start = self._now
        await self.settle()
        while not done():
            if self._now - start >= limit:
                raise asyncio.TimeoutError(f"not done after {limit} driven seconds")
            await self.advance(step)
        return self._now - start
