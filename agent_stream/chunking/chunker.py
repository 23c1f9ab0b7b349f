"""TextChunker: streamed text deltas and the time in, sentence/paragraph chunks out.

A pure state machine (no clock reads, no sleeping, no I/O). ``feed`` takes each delta with the time
it arrived, ``poll`` releases text that has waited ``max_delay``, ``flush`` ends the message. The
chunks, concatenated, always equal the deltas, concatenated.

Where a chunk ends, best first: a paragraph break (blank line, or the line after a closing code
fence), a sentence end, a line end (headings, list items, table rows), clause punctuation, a word
boundary; inside a word only when one word is longer than ``max_chars``. A chunk is released as
soon as a paragraph break or sentence end makes it at least ``min_chars`` long; the weaker
boundaries are used only when ``max_chars``, ``max_delay`` or ``flush`` forces a cut. Under
``max_delay`` a cut releases as much as it can: the latest paragraph, sentence or line end after
the text that is due, unless a later word boundary would release far more.

A terminator is confirmed by the next visible character, so ``"3."`` waits for ``"14"``; the chunk
ends after the terminator, any closing quotes or brackets and the whitespace that follows it (up to
and including the last line break; the next line's indentation starts the next chunk). Fenced code
blocks that fit ``max_chars`` are never cut inside, not even by ``poll``: while such a block is
still open at the start of the buffer, nothing can be released and ``next_deadline`` is ``None``.

Cost: ``feed`` appends the delta and tests it for a few characters (only the fence character
inside a fence). A delta that ends with one of them is only noted; the next one, a delta with one
inside, a full buffer or a passed deadline makes it look at the text, and then only at the new
part (a cut looks back over the buffer once). While fewer than ``min_chars`` are held (after the
first chunk, outside code) no sentence end can release anything, so such deltas are only noted
too. The scanner's search (in C) passes over a terminator glued to a letter or digit (``3.14``,
``example.com``, ``e.g``); the sentence rules run only where a sentence may end, and what they
found about a word before a dot is remembered.

The machines behind it: ``DeltaBuffer`` (deltas, arrival times, text), ``BoundaryScanner`` (code,
line starts, paragraph and sentence ends, using the rules in ``sentences``), ``CutPolicy`` (cuts).

These modules are also what gets compiled (Cython's pure-Python mode: the ``.pxd`` files beside
them give the types; ``agent_stream.chunking`` exports the compiled build when it was made). A
change here is a change to both; the tests run each build on the same cases and the golden corpus.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from numbers import Real

from agent_stream.errors import ChunkerConfigError

from .buffer import DeltaBuffer
from .policy import CutPolicy
from .scanner import (
    AFTER_BACKTICKS,
    AFTER_NEWLINE,
    AFTER_TERMINATOR,
    EVENT_CHARS,
    EVENT_SEARCH,
    BoundaryScanner,
)

__all__ = ["TextChunker", "check_options"]

_NEVER = math.inf
# The scanner looks this far ahead of the buffer start at a time (2 * max_chars + this), so a
# huge delta costs linear time.
_WINDOW_SLACK = 64
# A delta this short is tested character by character (longer ones by a regex search).
_SHORT_DELTA = 32


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChunkerConfigError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ChunkerConfigError(f"{name} must be >= {low}, got {value}")
    return value


def check_options(
    min_chars: object, max_chars: object, max_delay: object, first_chars: object
) -> tuple[int, int, float, int | None]:
    """The chunker's options, checked.

    Args:
        min_chars: a paragraph or sentence end releases a chunk once it is this long (>= 1).
        max_chars: no chunk is longer (>= min_chars).
        max_delay: how long text may wait, in seconds (> 0).
        first_chars: the first chunk's early release length (0..max_chars, or None).

    Returns:
        (min_chars, max_chars, max_delay as a float, first_chars).

    Raises:
        ChunkerConfigError: an option is of the wrong type or out of range; it names it.
    """
    low = _check_int("min_chars", min_chars, 1)
    high = _check_int("max_chars", max_chars, 1)
    if high < low:
        raise ChunkerConfigError(f"max_chars ({high}) must be >= min_chars ({low})")
    if isinstance(max_delay, bool) or not isinstance(max_delay, Real):
        raise ChunkerConfigError(f"max_delay must be a number of seconds, got {max_delay!r}")
    try:
        delay = float(max_delay)
    except OverflowError:
        raise ChunkerConfigError(f"max_delay is too large, got {max_delay!r}") from None
    if not delay > 0:  # also rejects NaN, and what rounds to 0.0
        raise ChunkerConfigError(f"max_delay must be > 0 seconds, got {max_delay!r}")
    first = None if first_chars is None else _check_int("first_chars", first_chars, 0)
    if first is not None and first > high:
        raise ChunkerConfigError(f"first_chars ({first}) must be <= max_chars ({high})")
    return low, high, delay, first


class TextChunker:
    """Buffers text deltas and releases chunks at natural boundaries, losslessly and on time.

    Args:
        min_chars: a paragraph or sentence end releases a chunk once it is at least this long.
        max_chars: no chunk is longer.
        max_delay: no text waits longer than this many seconds after it arrived, provided
            ``poll`` is called at ``next_deadline`` (text inside a fenced code block that is
            still open and fits ``max_chars`` excepted).
        first_chars: the first chunk of a message is released at its first sentence end
            whatever its length, or at the first word boundary once it holds this many
            characters; ``None`` treats it like the others.

    Raises:
        ChunkerConfigError: an option is invalid; the error names it.
    """

    __slots__ = (
        "_arrivals",
        "_buffer",
        "_deadline",
        "_deadline_for",
        "_deltas",
        "_first_chars",
        "_held",
        "_look_at",
        "_max_chars",
        "_max_delay",
        "_min_chars",
        "_policy",
        "_quiet_below",
        "_scanner",
        "_trigger",
    )

    _min_chars: int
    _max_chars: int
    _max_delay: float
    _first_chars: int | None
    _buffer: DeltaBuffer
    _scanner: BoundaryScanner
    _policy: CutPolicy
    _deltas: list[str]
    _arrivals: list[float]
    _held: int
    _deadline: float
    _deadline_for: int
    _look_at: int
    _quiet_below: int
    _trigger: Callable[[str], re.Match[str] | None]

    def __init__(
        self,
        min_chars: int = 40,
        max_chars: int = 400,
        max_delay: float = 0.25,
        first_chars: int | None = 20,
    ) -> None:
        self._min_chars, self._max_chars, self._max_delay, self._first_chars = check_options(
            min_chars, max_chars, max_delay, first_chars
        )
        self._start_message()

    # ------------------------------------------------------------------ public API

    def feed(self, delta: str, now: float) -> list[str]:
        """Add a delta; return the chunks now complete.

        Args:
            delta: the text that arrived.
            now: when it arrived, in seconds on any monotonic clock (the one ``poll`` is given).

        Returns:
            The chunks released, possibly none.
        """
        self._deltas.append(delta)
        self._arrivals.append(now)
        held = self._held + len(delta)
        self._held = held
        if held > self._look_at or now >= self._deadline:
            if held == len(delta) and held:
                if self._start_clock(now):  # the buffer was empty: its clock starts now
                    return self._advance(now)
            else:
                sc = self._scanner
                if (
                    sc.waiting
                    and sc.waiting_for <= AFTER_NEWLINE
                    and now < self._deadline
                    and held <= self._max_chars
                    and delta.isspace()
                ):
                    return []  # waiting for what follows a terminator: more space decides nothing
                return self._advance(now)
        trigger = self._trigger
        if trigger is EVENT_SEARCH and len(delta) <= _SHORT_DELTA:
            # a token outside code: its characters one by one (compiled, a loop in C)
            for end, c in enumerate(delta, 1):  # noqa: B007 (``end`` is used after the loop)
                if c in EVENT_CHARS:
                    break
            else:
                return []
        else:
            m = trigger(delta)
            if m is None:
                return []
            end = m.end()
        if held < self._quiet_below and "`" not in delta and "~" not in delta:
            # too little for a chunk yet: the scanner reads this when there is enough
            self._look_at = self._min_chars - 1
            return []
        if end == len(delta) and self._scanner.fence is None:
            # a terminator, line break or backtick at the very end: the next delta decides
            self._look_at = -1
            sc = self._scanner
            sc.waiting = True
            sc.waiting_for = AFTER_BACKTICKS if delta[-1] in "`~" else AFTER_TERMINATOR
            return []
        return self._advance(now)

    def poll(self, now: float) -> list[str]:
        """Release what has waited ``max_delay``, cut at the best boundary available.

        Args:
            now: the current time, in seconds on the clock ``feed`` was given.

        Returns:
            The chunks released, possibly none.
        """
        if now < self._deadline:
            return []
        return self._advance(now)

    def flush(self) -> list[str]:
        """End of the message: return everything still buffered and start afresh."""
        buf = self._buffer
        buf.join()
        out = [buf.slice(buf.start, buf.end)] if buf.end > buf.start else []
        self._start_message()
        return out

    @property
    def next_deadline(self) -> float | None:
        """When to call ``poll``: arrival of the oldest buffered character + ``max_delay``.

        ``None`` when nothing is buffered, or when all that is buffered is a fenced code block
        still open (it is released when it closes, outgrows ``max_chars`` or on ``flush``).
        """
        d = self._deadline
        return None if d == _NEVER else d

    @property
    def buffered(self) -> int:
        """Characters held, not yet released."""
        return self._held

    @property
    def min_chars(self) -> int:
        """The minimum chunk length (sentence and paragraph ends)."""
        return self._min_chars

    @property
    def max_chars(self) -> int:
        """The maximum chunk length."""
        return self._max_chars

    @property
    def max_delay(self) -> float:
        """The longest a character waits when ``poll`` is called on time, in seconds."""
        return self._max_delay

    @property
    def first_chars(self) -> int | None:
        """Length after which the first chunk of a message is released at a word boundary."""
        return self._first_chars

    def __repr__(self) -> str:
        return (
            f"TextChunker(min_chars={self._min_chars}, max_chars={self._max_chars}, "
            f"max_delay={self._max_delay}, first_chars={self._first_chars})"
        )

    # ------------------------------------------------------------------ the machines

    def _start_message(self) -> None:
        """Fresh machines for a new message."""
        self._buffer = buf = DeltaBuffer()
        self._scanner = BoundaryScanner(buf)
        self._policy = CutPolicy(
            buf, self._scanner, self._min_chars, self._max_chars, self._first_chars
        )
        self._deltas = buf.deltas  # feed appends to the buffer's own lists
        self._arrivals = buf.arrivals
        self._held = 0
        self._deadline = _NEVER
        self._deadline_for = -1  # the buffer start the deadline was computed for
        self._look_at = -1  # feed looks at the text once more than this is held
        self._quiet_below = 0  # below this many held, sentence ends can wait (see _settle)
        self._trigger = self._scanner.trigger()

    def _advance(self, now: float) -> list[str]:
        """Look at the new text: release what its boundaries, max_chars and the time allow."""
        buf = self._buffer
        sc = self._scanner
        policy = self._policy
        buf.join()
        out: list[str] = []
        b = buf.start
        if buf.end > b:
            n_cands = len(sc.candidates)
            while True:
                # analyse a window ahead of the buffer start, so a huge delta costs linear time
                stop = min(buf.end, buf.start + 2 * self._max_chars + _WINDOW_SLACK)
                if sc.scanned_to < stop:
                    sc.scan(stop, False)
                sc.window_end = stop
                held = buf.end - buf.start
                if (
                    (len(sc.candidates) != n_cands and held > self._min_chars)
                    or held > self._max_chars
                    or policy.early_first
                ):
                    policy.release(out)
                if stop == buf.end:
                    break
                n_cands = -1
            if buf.start == b and sc.fence is None and self._deadline_for == b:
                self._held = buf.end - b  # nothing released, no fence: the deadline stands
            elif not self._update_deadline():
                return out  # all released
            if now >= self._deadline:
                policy.time_cut(now, self._max_delay, out)
                self._settle()
            else:
                self._arm()
        else:
            self._settle()
        return out

    def _settle(self) -> None:
        """Recompute the deadline and what feed tests each delta against, after a change."""
        if self._update_deadline():
            self._arm()

    def _update_deadline(self) -> bool:
        """Recompute what is held and the deadline; False when nothing is held."""
        buf = self._buffer
        b = buf.start
        self._held = held = buf.end - b
        if held == 0:
            buf.emptied()
            self._deadline = _NEVER
            self._deadline_for = -1
            self._look_at = -1  # the next delta starts the clock
            self._quiet_below = 0
            return False
        sc = self._scanner
        if sc.fence is not None and sc.fence_region.start == b and not sc.fence_may_close():
            self._deadline = _NEVER  # an open code fence that fits: nothing can go yet
            self._deadline_for = -1
        elif b != self._deadline_for:
            self._deadline = buf.arrivals[buf.delta_at(b)] + self._max_delay
            self._deadline_for = b
        return True

    def _start_clock(self, now: float) -> bool:
        """The first delta after an empty buffer: set the deadline it starts, as ``_settle``
        would (no open fence can start there). True when the delta must be looked at now."""
        self._deadline = now + self._max_delay
        self._deadline_for = self._buffer.start
        self._arm()
        return self._held > self._look_at or now >= self._deadline

    def _arm(self) -> None:
        """Set what feed tests each delta against, from the scanner's state."""
        sc = self._scanner
        self._trigger = sc.trigger()
        # Nothing can be released while fewer than min_chars are held (a boundary has a visible
        # character after it), unless the first chunk goes early or code changes the deadline.
        early_first = self._policy.early_first
        plain = sc.fence is None and sc.code_ticks is None and not early_first
        self._quiet_below = self._min_chars if plain else 0
        if sc.waiting:
            self._look_at = -1
        elif early_first and self._first_chars is not None:  # (None: for mypy)
            self._look_at = min(self._first_chars - 1, self._max_chars)
        else:
            self._look_at = self._max_chars
