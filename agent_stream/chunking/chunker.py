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

Markdown stays whole in each chunk: no cut inside a table row, a heading line or a list item's
first line, none right after a heading (it goes with what follows it), and a code block too long
for one chunk is cut at line ends only. Under ``max_delay`` the cut moves to the latest boundary
that keeps them whole; with none, the text before them goes and the rest may wait up to
``block_grace`` seconds more (for the row or line to end); then, as with a line longer than
``max_chars``, the cut is made as if the rules were not there.

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
them give the types and hold the few C loops the compiled build reads strings with;
``agent_stream.chunking`` exports the compiled build when it was made). A change here is a change
to both; the tests run each build on the same cases and the golden corpus.
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


def _seconds(name: str, value: object) -> float:
    if type(value) is float:  # (the usual case: no check against the Real ABC, ~0.3 us)
        return value
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ChunkerConfigError(f"{name} must be a number of seconds, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ChunkerConfigError(f"{name} is too large, got {value!r}") from None


def check_options(
    min_chars: object,
    max_chars: object,
    max_delay: object,
    first_chars: object,
    block_grace: object = 1.0,
) -> tuple[int, int, float, int | None, float]:
    """The chunker's options, checked.

    Args:
        min_chars: a paragraph or sentence end releases a chunk once it is this long (>= 1).
        max_chars: no chunk is longer (>= min_chars).
        max_delay: how long text may wait, in seconds (> 0).
        first_chars: the first chunk's early release length (0..max_chars, or None).
        block_grace: how much longer text may wait to keep markdown whole, in seconds (>= 0).

    Returns:
        (min_chars, max_chars, max_delay as a float, first_chars, block_grace as a float).

    Raises:
        ChunkerConfigError: an option is of the wrong type or out of range; it names it.
    """
    low = _check_int("min_chars", min_chars, 1)
    high = _check_int("max_chars", max_chars, 1)
    if high < low:
        raise ChunkerConfigError(f"max_chars ({high}) must be >= min_chars ({low})")
    delay = _seconds("max_delay", max_delay)
    if not delay > 0:  # also rejects NaN, and what rounds to 0.0
        raise ChunkerConfigError(f"max_delay must be > 0 seconds, got {max_delay!r}")
    first = None if first_chars is None else _check_int("first_chars", first_chars, 0)
    if first is not None and first > high:
        raise ChunkerConfigError(f"first_chars ({first}) must be <= max_chars ({high})")
    grace = _seconds("block_grace", block_grace)
    if not grace >= 0:  # also rejects NaN
        raise ChunkerConfigError(f"block_grace must be >= 0 seconds, got {block_grace!r}")
    return low, high, delay, first, grace


class TextChunker:
    """Buffers text deltas and releases chunks at natural boundaries, losslessly and on time.

    Args:
        min_chars: a paragraph or sentence end releases a chunk once it is at least this long.
        max_chars: no chunk is longer.
        max_delay: no text waits longer than this many seconds after it arrived, provided
            ``poll`` is called at ``next_deadline`` (text inside a fenced code block that is
            still open and fits ``max_chars`` excepted, with the headings right before it, and
            see ``block_grace``).
        first_chars: the first chunk of a message is released at its first sentence end
            whatever its length, or at the first word boundary once it holds this many
            characters; ``None`` treats it like the others.
        block_grace: text may wait this many seconds past ``max_delay`` when releasing it
            then would cut inside a table row, a heading line, a list item's first line or a
            code line, or right after a heading (0: never past ``max_delay``; ``math.inf``:
            until the line ends or ``max_chars`` is reached, like an open code fence).

    Raises:
        ChunkerConfigError: an option is invalid; the error names it.
    """

    __slots__ = (
        "_arrivals",
        "_block_grace",
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
    _block_grace: float
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
        block_grace: float = 1.0,
    ) -> None:
        (
            self._min_chars,
            self._max_chars,
            self._max_delay,
            self._first_chars,
            self._block_grace,
        ) = check_options(min_chars, max_chars, max_delay, first_chars, block_grace)
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
            # a token outside code: its characters one by one (compiled, a loop in C; the
            # characters of EVENT_CHARS spelled out: compiled, a test of a literal is a switch)
            for end, c in enumerate(delta, 1):  # noqa: B007 (``end`` is used after the loop)
                if c in ".!?…‼⁇⁈⁉؟।॥。！？｡\n`~":
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
        if (
            end == len(delta)
            and self._scanner.fence is None
            and self._policy.held_at != self._buffer.start  # (held: it may complete it)
        ):
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
        """When to call ``poll``: arrival of the oldest buffered character + ``max_delay``
        (+ ``block_grace`` while it is held to keep markdown whole).

        ``None`` when nothing is buffered, or when all that is buffered is a fenced code block
        still open (it is released when it closes, outgrows ``max_chars`` or on ``flush``; the
        headings right before it wait with it), or held with an infinite ``block_grace``.
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

    @property
    def block_grace(self) -> float:
        """How much longer than ``max_delay`` text may wait to keep markdown whole, in seconds."""
        return self._block_grace

    def __repr__(self) -> str:
        return (
            f"TextChunker(min_chars={self._min_chars}, max_chars={self._max_chars}, "
            f"max_delay={self._max_delay}, first_chars={self._first_chars}, "
            f"block_grace={self._block_grace})"
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
            if now >= self._deadline or policy.held_at == buf.start:
                # (held to keep markdown whole: new text may have completed it)
                policy.time_cut(now, self._max_delay, self._block_grace, out)
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
        holding = self._policy.held_at == b
        if (
            sc.fence is not None
            and (sc.fence_region.start == b or (holding and self._policy.held_fence))
            and not sc.fence_may_close()
        ):
            # an open code fence that fits (and the headings before it): nothing can go yet
            self._deadline = _NEVER
            self._deadline_for = -1
        elif holding:  # overdue, held to keep markdown whole: the grace
            self._deadline = buf.arrivals[buf.delta_at(b)] + self._max_delay + self._block_grace
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
        policy = self._policy
        self._trigger = sc.trigger()
        # Nothing can be released while fewer than min_chars are held (a boundary has a visible
        # character after it), unless the first chunk goes early, code changes the deadline or
        # text is held to keep markdown whole (what completes it releases it).
        early_first = policy.early_first
        held = policy.held_at == self._buffer.start
        plain = sc.fence is None and sc.code_ticks is None and not early_first and not held
        self._quiet_below = self._min_chars if plain else 0
        if sc.waiting or (held and not policy.held_line):
            # (held, not a line that only a line break ends: every delta may complete it)
            self._look_at = -1
        elif early_first and self._first_chars is not None:  # (None: for mypy)
            self._look_at = min(self._first_chars - 1, self._max_chars)
        else:
            self._look_at = self._max_chars
