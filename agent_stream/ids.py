"""IdGenerator: the C/M/B/T id sequences of one stream context; SeenIds: which were seen."""

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


class SeenIds:
    """A set of ids, as small as a counter while they are IdGenerator's own: C1, C2, C3...

    ``id in seen`` and ``seen.add(id)`` as with a ``set[str]``. An id ``<prefix><n>`` (``n``
    written without leading zeros) joins a run: all of 1..n seen is one integer, and numbers
    seen ahead of the run wait in a set of ints until it reaches them. Any other id is kept as
    it is. A thousand replies each remembering its ~500 chunk ids held ~30 MB as sets of
    strings.

    Args:
        prefix: the ids' letter (``"C"`` for chunks).
    """

    __slots__ = ("_ahead", "_other", "_prefix", "_upto")

    def __init__(self, prefix: str = "C") -> None:
        self._prefix = prefix
        self._upto = 0  # 1..upto all seen
        self._ahead: set[int] | None = None  # seen, above upto + 1
        self._other: set[str] | None = None  # ids of any other form

    def _number(self, key: str) -> int:
        """The id's number, or 0 when it is not ``<prefix><n>``."""
        digits = key[1:]
        if (
            key[:1] == self._prefix
            and 0 < len(digits) <= 18
            and digits.isascii()
            and digits.isdigit()
            and digits[0] != "0"
        ):
            return int(digits)
        return 0

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        n = self._number(key)
        if n:
            return n <= self._upto or (self._ahead is not None and n in self._ahead)
        return self._other is not None and key in self._other

    def add(self, key: str) -> bool:
        """Remember ``key``; whether it was new (one parse where ``in`` then ``add`` take two).

        Args:
            key: the id.
        """
        n = self._number(key)
        if not n:
            if self._other is None:
                self._other = set()
            elif key in self._other:
                return False
            self._other.add(key)
        elif n <= self._upto or (self._ahead is not None and n in self._ahead):
            return False
        elif n == self._upto + 1:
            self._upto = n
            ahead = self._ahead
            if ahead:
                while self._upto + 1 in ahead:
                    self._upto += 1
                    ahead.discard(self._upto)
        else:
            if self._ahead is None:
                self._ahead = set()
            self._ahead.add(n)
        return True

    def __len__(self) -> int:
        return self._upto + len(self._ahead or ()) + len(self._other or ())
