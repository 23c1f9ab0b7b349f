"""IdGenerator: the C/M/B/T id sequences of one stream context."""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Callable

# With the GIL, drawing from an itertools.count is one C call and atomic, so ids need no lock
# (a chunk id is drawn for every token streamed); a free-threaded build keeps the lock.
_GIL = bool(getattr(sys, "_is_gil_enabled", lambda: True)())


class IdGenerator:
    """Sequential ids per stream: C1, C2… for chunks, M… messages, B… blocks, T… threads.

    Safe to share between asyncio tasks and OS threads: no two callers ever receive the same
    id (each draw is atomic: an ``itertools.count`` under the GIL, a lock without it).
    """

    __slots__ = ("_next_block", "_next_chunk", "_next_message", "_next_thread")

    def __init__(self) -> None:
        lock = None if _GIL else threading.Lock()
        self._next_chunk = _sequence(lock)
        self._next_message = _sequence(lock)
        self._next_block = _sequence(lock)
        self._next_thread = _sequence(lock)

    def chunk(self) -> str:
        """The next chunk id: C1, C2…"""
        return f"C{self._next_chunk()}"

    def message(self) -> str:
        """The next message id: M1, M2…"""
        return f"M{self._next_message()}"

    def block(self) -> str:
        """The next block id: B1, B2…"""
        return f"B{self._next_block()}"

    def thread(self) -> str:
        """The next thread id: T1, T2…"""
        return f"T{self._next_thread()}"


def _sequence(lock: threading.Lock | None) -> Callable[[], int]:
    """1, 2, 3… one per call, atomically."""
    count = itertools.count(1)
    if lock is None:
        return count.__next__

    def draw() -> int:
        with lock:
            return next(count)

    return draw
