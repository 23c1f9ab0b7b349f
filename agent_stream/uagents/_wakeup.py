"""A flag a task sleeps on until it is set or a timeout passes, without a task per sleep.

``asyncio.wait_for(event.wait(), timeout)`` wraps the wait in a new Task (before Python 3.12) and
arms a timer each time. A reply's send and timer loops sleep like that after nearly every
ChatMessage; at a thousand replies that was tens of thousands of Tasks a second. :class:`Wakeup`
waits on one future with one timer of the runtime's clock (:mod:`._clock`).
"""

from __future__ import annotations

import asyncio

from agent_stream.uagents._clock import LOOP_CLOCK, Clock

__all__ = ["Wakeup"]


def _expire(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Wakeup:
    """A set/clear flag; :meth:`wait` returns once it is set or ``timeout`` seconds passed."""

    __slots__ = ("_clock", "_flag", "_waiters")

    def __init__(self, clock: Clock = LOOP_CLOCK) -> None:
        self._clock = clock
        self._flag = False
        self._waiters: list[asyncio.Future[None]] = []

    def set(self) -> None:
        """Set the flag and wake whoever waits."""
        self._flag = True
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            _expire(fut)

    def clear(self) -> None:
        """Clear the flag."""
        self._flag = False

    def is_set(self) -> bool:
        """Whether the flag is set."""
        return self._flag

    async def wait(self, timeout: float | None = None) -> bool:
        """Sleep until the flag is set or ``timeout`` seconds passed (None: no timeout).

        Args:
            timeout: the longest sleep, in seconds.

        Returns:
            Whether the flag is set.
        """
        if self._flag:
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        handle = self._clock.call_later(timeout, _expire, fut) if timeout is not None else None
        try:
            await fut
        finally:
            if handle is not None:
                handle.cancel()
            if fut in self._waiters:  # timed out or cancelled: not woken by set()
                self._waiters.remove(fut)
        return self._flag
