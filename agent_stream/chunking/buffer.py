"""The delta buffer: the deltas fed and when each arrived, and the text they make.

Offsets are absolute, counted from the start of the message. ``text`` holds the characters from
``text_start`` (a little before ``start``, for context) to ``end``; ``start`` is the first
character not yet released. Deltas are appended as they come and joined into ``text`` only when
the text is looked at.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate

__all__ = ["DeltaBuffer"]

# Released text kept before ``start`` so rules can look back (the word before a dot).
_CONTEXT = 64
# Released text is dropped from ``text`` once this much has piled up.
_TRIM_AFTER = 512
# Deltas wholly released are forgotten once this many have piled up.
_FORGET_AFTER = 64


class DeltaBuffer:
    """The deltas of one message, their arrival times, and their text from ``text_start``."""

    __slots__ = (
        "arrivals",
        "deltas",
        "end",
        "first_delta",
        "first_delta_start",
        "joined",
        "start",
        "text",
        "text_start",
    )

    def __init__(self) -> None:
        self.deltas: list[str] = []  # the deltas not wholly released, from first_delta
        self.arrivals: list[float] = []  # and when each arrived
        self.first_delta = 0  # the delta holding ``start``, or one before it
        self.first_delta_start = 0  # where deltas[first_delta] starts
        self.joined = 0  # deltas before this index are in ``text``
        self.text = ""
        self.text_start = 0
        self.start = 0  # the first character not released
        self.end = 0  # the end of ``text``

    def join(self) -> None:
        """Append the deltas fed since the last look to ``text``."""
        deltas = self.deltas
        j = self.joined
        if j == len(deltas):
            return
        new = deltas[j] if j + 1 == len(deltas) else "".join(deltas[j:])
        self.joined = len(deltas)
        self.end += len(new)
        drop = self.start - _CONTEXT - self.text_start
        if drop > _TRIM_AFTER:
            self.text = self.text[drop:] + new
            self.text_start += drop
        else:
            self.text += new

    def slice(self, a: int, z: int) -> str:
        """The text between two absolute offsets.

        Args:
            a: where it starts, counted from the start of the message.
            z: where it ends (excluded).
        """
        s0 = self.text_start
        return self.text[a - s0 : z - s0]

    def emptied(self) -> None:
        """Everything is released: forget the deltas (the next one starts afresh)."""
        self.deltas.clear()
        self.arrivals.clear()
        self.first_delta = self.joined = 0
        self.first_delta_start = self.start

    def arrival_at(self, offset: int) -> float:
        """When a character arrived, on the clock the deltas were fed with.

        Args:
            offset: the character's absolute offset.
        """
        return self.arrivals[self.delta_at(offset)]

    def overdue_end(self, now: float, max_delay: float) -> int:
        """The end of the last joined delta that has waited ``max_delay`` by ``now``, or -1.

        Args:
            now: the current time, in seconds on the deltas' clock.
            max_delay: how long a delta may wait, in seconds.
        """
        i = self.delta_at(self.start)
        arrivals = self.arrivals
        joined = self.joined
        e = i  # arrival times usually rise: count the overdue deltas from the first
        while e < joined:
            t = arrivals[e]
            if not t + max_delay <= now:
                break
            e += 1
        if e + 1 < joined:
            # the later ones' sum and earliest (a loop, not sum() and min(): compiled, it is C)
            total = earliest = arrivals[e + 1]
            for k in range(e + 2, joined):
                t = arrivals[k]
                total += t
                if t < earliest:
                    earliest = t
            if total != total or earliest + max_delay <= now:  # NaN, or out of order
                e = joined  # the last overdue delta, looking back from the newest
                while e > i and arrivals[e - 1] + max_delay > now:
                    e -= 1
        if e == i:
            return -1
        if e == i + 1:  # (the usual case under a steady clock)
            return self.first_delta_start + len(self.deltas[i])
        return self.first_delta_start + sum(map(len, self.deltas[i:e]))

    def delta_at(self, offset: int) -> int:
        """Index of the joined delta holding ``offset`` (forgetting the ones before it).

        Args:
            offset: an absolute offset in the unreleased text.
        """
        deltas = self.deltas
        i = self.first_delta
        base = self.first_delta_start
        if base + len(deltas[i]) <= offset:
            if self.end - offset < offset - base:  # nearer the end: walk back from there
                i = self.joined - 1
                base = self.end - len(deltas[i])
                while base > offset:
                    i -= 1
                    base -= len(deltas[i])
            else:
                starts = list(accumulate(map(len, deltas[i : self.joined]), initial=base))
                k = bisect_right(starts, offset) - 1  # starts[k] <= offset < starts[k + 1]
                base = starts[k]
                i += k
        if i > _FORGET_AFTER:
            del deltas[:i]
            del self.arrivals[:i]
            self.joined -= i
            i = 0
        self.first_delta = i
        self.first_delta_start = base
        return i
