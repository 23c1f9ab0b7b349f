"""IdGenerator: the C/M/B/T id sequences of one stream context."""

from __future__ import annotations

import threading


class IdGenerator:
    """Sequential ids per stream: C1, C2… for chunks, M… messages, B… blocks, T… threads.

    Safe to share between asyncio tasks and OS threads: every id is drawn under a lock, so no
    two callers ever receive the same id.
    """

    __slots__ = ("_counters", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters = {"C": 0, "M": 0, "B": 0, "T": 0}

    def _next(self, prefix: str) -> str:
        with self._lock:
            n = self._counters[prefix] + 1
            self._counters[prefix] = n
        return f"{prefix}{n}"

    def chunk(self) -> str:
        return self._next("C")

    def message(self) -> str:
        return self._next("M")

    def block(self) -> str:
        return self._next("B")

    def thread(self) -> str:
        return self._next("T")
