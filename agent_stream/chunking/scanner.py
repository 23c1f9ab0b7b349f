# cython: boundscheck=False, wraparound=False
# (compiled: a character read in a few instructions, where a checked read is a call of ~30: every
# offset read here is >= 0 and has just been compared with the end of the text, ``n``)
"""The boundary scanner: reads the buffered text once, left to right, and notes code spans, fenced
code blocks, line starts and the places a chunk may end (paragraph and sentence ends).

It stops early, ``waiting``, where the next characters decide (a terminator at the end of the
text, a line break, a run of backticks), unless told the text ends there (``final``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from types import SimpleNamespace

from .buffer import DeltaBuffer
from .sentences import (
    CJK_TERMINATOR_SET,
    CLOSER_SET,
    MAY_FOLLOW_END,
    OPENERS,
    TABLE_ROW,
    TERMINATOR_SET,
    TERMINATORS,
    WHITESPACE_SET,
    dot_ends,
    ends_sentence,
    is_blank,
    is_space,
    last_line_break,
    whitespace_end,
)

__all__ = [
    "CLAUSE",
    "EVENT_CHARS",
    "EVENT_SEARCH",
    "INSIDE_WORD",
    "LINE",
    "PARAGRAPH",
    "SENTENCE",
    "WORD",
    "BoundaryScanner",
    "CodeRegion",
]

# Boundary kinds, best first.
PARAGRAPH, SENTENCE, LINE, CLAUSE, WORD, INSIDE_WORD = range(6)
# What a waiting scanner waits for (the first two: whitespace alone decides nothing).
AFTER_TERMINATOR, AFTER_NEWLINE, AFTER_BACKTICKS, NEXT_WORD = range(4)
# A line this much longer than a fence is not taken for a closing fence still arriving.
_FENCE_LINE_MAX = 256
# A fence is at least this many backticks or tildes.
_FENCE_MIN = 3

# The characters that make a delta worth a look: in text, inside a code span, inside a fence.
EVENT_CHARS = TERMINATORS + "\n`~"
_EVENT = re.compile("[" + re.escape(EVENT_CHARS) + "]")
_IN_CODE = re.compile("[`\n]")


def _chars(chars: Iterable[str]) -> str:
    """``chars`` for a regex character class."""
    return "".join(re.escape(c) for c in sorted(chars))


# What ``scan`` stops at outside code: the above, less what cannot end a sentence, found in C
# (spares a Python step for each): a terminator glued to what follows it ("3.14", "example.com",
# "e.g"; only a CJK terminator, or one followed by a character that may follow a sentence end or
# by the end of the text, may end one), and a dot after a word and before one space and a
# lowercase letter ("etc. and": ``dot_ends`` says no whatever the word). (One character class
# first, then the checks: a search for it runs at the speed of a search for the class alone.)
_SCAN_EVENT = re.compile(
    f"[{_chars(TERMINATOR_SET | set(chr(10) + '`~'))}]"
    f"(?:(?<=[{_chars(CJK_TERMINATOR_SET | set(chr(10) + '`~'))}])"
    f"|(?!(?<=[^{_chars(WHITESPACE_SET | set(OPENERS))}]\\.) [a-z])"
    f"(?=[{_chars(MAY_FOLLOW_END)}]|\\Z))"
)
# After a terminator: the rest of its run, then (group 1) closers, then whitespace.
_TAIL = re.compile(
    f"[{_chars(TERMINATOR_SET)}]*([{_chars(CLOSER_SET)}]*)[{_chars(WHITESPACE_SET)}]*"
)
_RUN_OR_CLOSER = TERMINATOR_SET | CLOSER_SET
_IN_FENCE = {"`": re.compile("`").search, "~": re.compile("~").search}
# The searches, bound once (a bound method made at each call costs an allocation).
EVENT_SEARCH = _EVENT.search
_IN_CODE_SEARCH = _IN_CODE.search
_SCAN_SEARCH = _SCAN_EVENT.search
_NOT_BEFORE_LOWER = WHITESPACE_SET | set(OPENERS)  # (see _SCAN_EVENT: "etc. and")
# The two sets above for the compiled next_event over a one-byte string (ucs1_next_event, in C):
# a byte for each of the 256 characters, 1 for those in the set.
_FOLLOWS_END_UCS1 = bytes(chr(o) in MAY_FOLLOW_END for o in range(256))
_BEFORE_LOWER_UCS1 = bytes(chr(o) in _NOT_BEFORE_LOWER for o in range(256))

try:
    import cython
except ImportError:  # the interpreted modules, without Cython installed
    cython = SimpleNamespace(compiled=False)
COMPILED = cython.compiled  # (False when Cython runs this module uncompiled)

if not cython.compiled:  # (compiled, Cython drops this: the .pxd files declare them, in C)
    from .sentences import find_char, rfind_char

    def find_stop(s: str, i: int, n: int, in_code: bool) -> int:
        """The first character in s[i:n] that may stop the scanner, or -1: outside code one
        of ``EVENT_CHARS``, inside a code span a backtick or a line break.

        Compiled, a loop in C over the string's characters (scanner.pxd); interpreted (unused,
        ``next_event`` searches with regexes), a loop.

        Args:
            s: the text.
            i: where the search starts.
            n: where it stops.
            in_code: s[i] is inside a code span.
        """
        stops = "`\n" if in_code else EVENT_CHARS
        while i < n:
            if s[i] in stops:
                return i
            i += 1
        return -1

    def ucs1_next_event(s: str, i: int, n: int, follows_end: bytes, before_lower: bytes) -> int:
        """``next_event`` outside code for a one-byte string, in C (scanner.pxd); interpreted,
        not called (-2: not done here).

        Args:
            s: the text.
            i: where the search starts.
            n: where it stops.
            follows_end: ``_FOLLOWS_END_UCS1``.
            before_lower: ``_BEFORE_LOWER_UCS1``.
        """
        return -2


def next_event(s: str, i: int, n: int, in_code: bool) -> int:
    """Where ``scan`` stops next in s[i:n], or -1: outside code (``in_code`` false) the first
    match of ``_SCAN_EVENT``, inside a code span the first backtick or line break.

    Interpreted, a regex search; compiled, the same test as a loop in C (a search costs a match
    object for each stop, most of a stop's cost on a long text).

    Args:
        s: the text.
        i: where the search starts.
        n: where it stops.
        in_code: s[i] is inside a code span.
    """
    if not COMPILED:
        m = _IN_CODE_SEARCH(s, i, n) if in_code else _SCAN_SEARCH(s, i, n)
        return -1 if m is None else m.start()
    n = min(n, len(s))  # (the reads below are unchecked, compiled: never past the text)
    if in_code:
        return find_stop(s, i, n, True)
    e = ucs1_next_event(s, i, n, _FOLLOWS_END_UCS1, _BEFORE_LOWER_UCS1)
    if e != -2:
        return e  # a one-byte string: the loop below, in C
    while True:
        i = find_stop(s, i, n, False)
        if i < 0:
            return -1
        c = s[i]
        if c in "\n`~。！？｡" or i + 1 == n:
            return i
        f = s[i + 1]
        if f == " ":  # (the usual case, and "etc. and": no end after a word, before a lowercase)
            if not (
                c == "."
                and i + 2 < n
                and "a" <= s[i + 2] <= "z"
                and i > 0
                and ("a" <= s[i - 1] <= "z" or s[i - 1] not in _NOT_BEFORE_LOWER)
            ):  # (a lowercase letter before it, the usual case, needs no set lookup)
                return i
        elif f == "\n" or "A" <= f <= "Z":
            return i
        elif not ("a" <= f <= "z" or "0" <= f <= "9") and f in MAY_FOLLOW_END:
            return i  # (a lowercase letter or a digit may not follow: no set lookup for them)
        i += 1


class CodeRegion:
    """A code span or fenced block: text from ``start`` to ``end`` (``None`` while open).

    Args:
        start: its absolute offset.
        fenced: a fenced block (else a code span).
    """

    __slots__ = ("end", "fenced", "start")

    def __init__(self, start: int, fenced: bool) -> None:
        self.start = start
        self.end: int | None = None
        self.fenced = fenced


def _region(start: int, fenced: bool) -> CodeRegion:
    """``CodeRegion(start, fenced)``, made without a call through the type (compiled, its fields
    are set in C).

    Args:
        start: its absolute offset.
        fenced: a fenced block (else a code span).
    """
    reg = CodeRegion.__new__(CodeRegion)
    reg.start = start
    reg.end = None
    reg.fenced = fenced
    return reg


class BoundaryScanner:
    """Finds code regions and paragraph/sentence boundaries in a ``DeltaBuffer``'s text.

    Offsets are absolute (counted from the start of the message). ``candidates`` holds
    ``(reach, cut, kind)``: a chunk may end at ``cut``; ``reach`` is where the sentence with its
    closing quotes ends (a cut before ``reach`` would split it).

    Args:
        buffer: the message's unreleased text.
    """

    __slots__ = (
        "buffer",
        "candidates",
        "code_region",
        "code_ticks",
        "fence",
        "fence_closed_at",
        "fence_region",
        "line_start",
        "marked_at",
        "not_code_at",
        "regions",
        "scanned_to",
        "waiting",
        "waiting_for",
        "window_end",
    )

    def __init__(self, buffer: DeltaBuffer) -> None:
        self.buffer = buffer
        self.scanned_to = 0  # text before this is analysed
        self.window_end = 0  # how far the last look went (possibly stopping short, waiting)
        self.waiting = False
        self.waiting_for = AFTER_TERMINATOR
        self.line_start = 0  # where the current line starts
        self.fence: tuple[str, int] | None = None  # an open fence: its character and length
        self.fence_region = _region(0, True)  # the latest fenced block
        self.code_ticks: int | None = None  # an open code span: its number of backticks
        self.code_region = _region(0, False)  # the latest code span
        self.not_code_at = -1  # backticks here were found to open no code span
        self.fence_closed_at = -1  # the line break that ends a closing fence line
        # the latest line start (outside code) whose first visible character may begin a table
        # row, a heading, a list item or a fence (the first line: not looked at, so it may)
        self.marked_at = 0
        self.regions: list[CodeRegion] = []
        self.candidates: list[tuple[int, int, int]] = []

    def trigger(self) -> Callable[[str], re.Match[str] | None]:
        """The search for the characters that make a delta worth a look, in this state."""
        if self.fence is not None:
            return _IN_FENCE[self.fence[0]]
        if self.code_ticks is not None:
            return _IN_CODE_SEARCH
        return EVENT_SEARCH

    def fence_may_close(self) -> bool:
        """True when the open fence's last (unfinished) line looks like its closing fence."""
        fence = self.fence
        buf = self.buffer
        ls = self.line_start - buf.text_start
        if fence is None or ls < 0 or buf.end - self.line_start > _FENCE_LINE_MAX:
            return False
        tail = buf.text[ls:].strip(" \t\r")
        return len(tail) >= fence[1] and tail == fence[0] * len(tail)

    def add(self, reach: int, cut: int, kind: int) -> None:
        """Note a boundary (one per cut position: the best kind wins).

        Args:
            reach: where the sentence with its closing quotes ends.
            cut: where a chunk may end.
            kind: the boundary's kind (``PARAGRAPH``, ``SENTENCE``...; lower is better).
        """
        if cut <= self.buffer.start:
            return
        cands = self.candidates
        if cands:
            last = cands[len(cands) - 1]
            at = last[1]  # (compiled, a C integer: ``cut`` is compared unboxed)
            if at >= cut:
                if at == cut and kind < last[2]:
                    # (its offsets' objects, no new ones)
                    cands[len(cands) - 1] = (last[0], last[1], kind)
                return
        cands.append((reach, cut, kind))

    def forget_before(self, cut: int) -> None:
        """Drop what a cut released: boundaries up to it, code regions ending by it.

        Args:
            cut: the absolute offset the cut released up to.
        """
        cands = self.candidates
        i = 0
        while i < len(cands):
            cand = cands[i]
            at = cand[1]  # (compiled, a C integer: ``cut`` is compared unboxed)
            if at > cut:
                break
            i += 1
        if i == 1:
            del cands[0]  # (the usual case; compiled, no slice object and no int made for it)
        elif i:
            del cands[:i]
        # Code is met in order and never nests: the regions are in the order of their starts,
        # each ends before the next starts, only the last may be open. Those ending by the cut
        # are the first ones.
        regions = self.regions
        i = 0
        while i < len(regions):
            reg = regions[i]
            end = reg.end
            if end is None:
                break
            at = end  # (compiled, a C integer: ``cut`` is compared unboxed)
            if at > cut:
                break
            i += 1
        if i == 1:
            del regions[0]
        elif i:
            del regions[:i]

    def scan(self, stop: int, final: bool) -> None:
        """Analyse the text from ``scanned_to`` to ``stop``.

        Args:
            stop: the absolute offset to analyse up to.
            final: read the text as if it ended at ``stop`` (nothing more to wait for).
        """
        buf = self.buffer
        s = buf.text
        s0 = buf.text_start
        n = stop - s0
        i = max(self.scanned_to - s0, 0)
        if (
            final
            and self.waiting
            and self.waiting_for == AFTER_TERMINATOR
            and stop == self.window_end
            and find_char(s, "\n", i, n) < 0
        ):
            # Stalled at a terminator with only more of them, closers and spaces after it, to
            # ``stop``: at the end of the text it ends no sentence, and no line either.
            self.waiting = False
            self.scanned_to = stop
            return
        self.waiting = False
        while i < n and not self.waiting:
            if self.fence is not None:
                i = self._in_fence(s, s0, i, n, final)
                continue
            i = next_event(s, i, n, self.code_ticks is not None)
            if i < 0:
                i = n
                break
            c = s[i]
            if c == "\n":
                i = self._newline(s, s0, i, n, final)
            elif c == "`" or c == "~":
                i = self._ticks(s, s0, i, n, final)
            else:  # a terminator not glued to what follows (never found inside a code span)
                i = self._terminator(s, s0, i, n, final)
        self.scanned_to = s0 + i

    def _wait(self, what: int, at: int) -> int:
        """Stop at ``at`` until more text comes: ``what`` decides there."""
        self.waiting = True
        self.waiting_for = what
        return at

    def _in_fence(self, s: str, s0: int, i: int, n: int, final: bool) -> int:
        """Inside a fence only a closing fence line matters: find the fence character."""
        assert self.fence is not None
        fch, flen = self.fence
        x = find_char(s, fch, i, n)
        last = rfind_char(s, "\n", i, n if x < 0 else x)
        if last >= 0:
            self.line_start = s0 + last + 1
        if x < 0:
            return n
        r = x + 1
        while r < n and s[r] == fch:
            r += 1
        ls = self.line_start - s0
        if ls < 0 or not is_blank(s, ls, x) or (r - x < flen and r < n):
            return r
        if r == n and not final:
            return self._wait(AFTER_BACKTICKS, x)
        if r - x < flen:
            return r
        nl = find_char(s, "\n", r, n)
        if s[r : n if nl < 0 else nl].strip(" \t\r"):
            return r  # text after the fence characters: not a closing fence
        if nl < 0 and not final:
            return self._wait(AFTER_BACKTICKS, x)
        self.fence = None
        self.fence_region.end = s0 + (n if nl < 0 else nl + 1)
        if nl < 0:
            return n
        self.fence_closed_at = s0 + nl
        return nl  # the line break after the closing fence is handled like any other

    def _newline(self, s: str, s0: int, i: int, n: int, final: bool) -> int:
        """A line break: a code span still open was none; a blank line ends a paragraph."""
        if self.code_ticks is not None:
            # a code span still open at a line break was never one: rescan its text
            reg = self.code_region
            self.regions.remove(reg)
            self.code_ticks = None
            self.not_code_at = reg.start
            return max(reg.start, self.buffer.start, s0) - s0
        w = whitespace_end(s, i, n)
        if w == n and not final:
            return self._wait(AFTER_NEWLINE, i)
        last = last_line_break(s, i, w)
        if w == n:
            self.marked_at = s0 + last + 1  # (read as the end: what the line holds is unknown)
        else:
            c = s[w]
            if c in "|#-*+0123456789`~":  # (a table row, heading, list item or fence may start)
                self.marked_at = s0 + last + 1
            j = i
            lim = max(self.buffer.start - s0, 0)
            while j > lim and is_space(s[j - 1]):
                j -= 1
            # (two line breaks: one before the last, s[i:w] holding no more after it)
            if last_line_break(s, j, last) >= 0 or self.fence_closed_at == s0 + i:
                self.add(s0 + i, s0 + last + 1, PARAGRAPH)
        self.line_start = s0 + last + 1
        return w

    def _ticks(self, s: str, s0: int, i: int, n: int, final: bool) -> int:
        """A run of backticks or tildes: opens a fence or opens/closes a code span."""
        c = s[i]
        r = i + 1
        while r < n and s[r] == c:
            r += 1
        if r == n and not final:
            return self._wait(AFTER_BACKTICKS, i)
        ls = self.line_start - s0
        if r - i >= _FENCE_MIN and self.code_ticks is None and ls >= 0 and is_blank(s, ls, i):
            self.fence_region = _region(self.line_start, True)
            self.regions.append(self.fence_region)
            self.fence = (c, r - i)
        elif c == "`" and s0 + i != self.not_code_at:
            if self.code_ticks is None:
                self.code_region = _region(s0 + i, False)
                self.regions.append(self.code_region)
                self.code_ticks = r - i
            elif self.code_ticks == r - i:
                self.code_region.end = s0 + r
                self.code_ticks = None
        return r

    def _terminator(self, s: str, s0: int, i: int, n: int, final: bool) -> int:
        """A terminator outside code: note a sentence end if the text around it makes one."""
        ls = self.line_start - s0
        if ls >= 0 and s[ls] in " \t|" and TABLE_ROW.match(s, ls) is not None:
            return i + 1  # never inside a table row
        j = i + 1
        if j < n and s[j] > " " and s[j] in _RUN_OR_CLOSER:  # more of them, closers: one look
            m = _TAIL.match(s, j, n)
            j, k = m.span(1)  # type: ignore[union-attr]
            w = m.end()  # type: ignore[union-attr]
        else:  # the usual case: a space or two, or nothing, after one terminator
            k = w = j
            if j < n and is_space(s[j]):
                w = j + 1
                if w < n and is_space(s[w]):
                    w = whitespace_end(s, w, n)
        if w == n:
            return j if final else self._wait(AFTER_TERMINATOR, i)
        end: bool | None
        if j == i + 1 and w == k + 1 and s[k] != "\n" and s[i] in ".!?":
            # one terminator, one space: the usual cases, as ``ends_sentence`` decides them:
            # "word. Next" by the word, "Wow! Next" (not "Wow! next") by the next one
            end = dot_ends(s, i, s[w], False, ls) if s[i] == "." else not s[w].islower()
        else:
            end = ends_sentence(s, i, j, k, w, n, ls)
        if end is None:
            if not final:
                return self._wait(NEXT_WORD, i)
            end = False
        if end:
            last = last_line_break(s, k, w)
            self.add(s0 + k, s0 + (last + 1 if last >= 0 else w), SENTENCE)
        return j
