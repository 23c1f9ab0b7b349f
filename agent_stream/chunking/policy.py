"""The cut policy: where, given the boundaries found so far, a chunk ends.

A chunk is released at the first paragraph or sentence end that makes it at least ``min_chars``
long (the first chunk of a message earlier, see ``first_chars``). Weaker boundaries (line ends,
clause punctuation, word boundaries, inside a word) are used only when ``max_chars`` or
``max_delay`` forces a cut. Code regions that fit ``max_chars`` are never cut inside.

Markdown (``markdown`` on, as it always is but while a rule gives way): no cut falls inside a
table row, a heading line or a list item's first line, nor right after a heading line (a heading
goes with what follows it), nor inside a line of a code block too long to keep whole. Only lines
that start in the unreleased text count. When nothing else is left, the rules give way: to
``max_chars`` at once (a line longer than it), to ``max_delay`` after ``block_grace`` more
seconds (``time_cut`` holds the text meanwhile: ``held_at``).
"""

from __future__ import annotations

from types import SimpleNamespace

from .buffer import DeltaBuffer
from .scanner import (
    AFTER_NEWLINE,
    AFTER_TERMINATOR,
    CLAUSE,
    INSIDE_WORD,
    LINE,
    WORD,
    BoundaryScanner,
)
from .sentences import (
    HEADING_LINE,
    PLAIN_LINE,
    glued,
    is_space,
    last_clause_boundary,
    last_word_boundary,
    line_kind,
    visible_word_boundary,
)

try:
    import cython
except ImportError:  # the interpreted modules, without Cython installed
    cython = SimpleNamespace(compiled=False)
if not cython.compiled:  # (compiled, Cython drops this: sentences.pxd declares them, in C)
    from .sentences import find_char, rfind_char, substring

__all__ = ["CutPolicy"]

# Clause and word boundaries are looked for from this far before the lowest allowed cut, so that
# one straddling it is found whole.
_BACKTRACK = 16


class CutPolicy:
    """Decides the cuts of one message and makes them: chunks are appended to an output list.

    Args:
        buffer: the message's unreleased text.
        scanner: the boundaries found in it.
        min_chars: a paragraph or sentence end releases a chunk once it is this long.
        max_chars: no chunk is longer.
        first_chars: the first chunk may go early once it holds this many characters
            (None: the first chunk is cut like the others).
    """

    __slots__ = (
        "buffer",
        "early_first",
        "first_chars",
        "held_at",
        "held_fence",
        "held_line",
        "markdown",
        "max_chars",
        "min_chars",
        "scanner",
    )

    def __init__(
        self,
        buffer: DeltaBuffer,
        scanner: BoundaryScanner,
        min_chars: int,
        max_chars: int,
        first_chars: int | None,
    ) -> None:
        self.buffer = buffer
        self.scanner = scanner
        self.min_chars = min_chars
        self.max_chars = max_chars
        self.first_chars = first_chars
        # no chunk released yet, and the first one may go early (``first_chars`` is set)
        self.early_first = first_chars is not None
        # the markdown rules apply (off only while a cut is chosen as if there were none)
        self.markdown = True
        # the buffer start at which ``time_cut`` holds overdue text to keep markdown whole, or -1
        self.held_at = -1
        # what is held is a line still open outside a code fence (only a line break ends it),
        # or headings before an open code fence that fits (held with it: ``held_fence``)
        self.held_line = False
        self.held_fence = False

    def release(self, out: list[str]) -> None:
        """Cut at sentence/paragraph ends (and early for a first chunk), then down to max_chars.

        Args:
            out: where the released chunks are appended.
        """
        buf = self.buffer
        mx = self.max_chars
        first_chars = self.first_chars
        while True:
            b = buf.start
            early = self.early_first
            need = 1 if early else self.min_chars
            c = -1
            for cand in self.scanner.candidates:
                cut = cand[1]  # (compiled, read from the tuple unboxed, nothing unpacked)
                if cut - b >= need:
                    if cut - b > mx:
                        break
                    if self._blocking_line(cut) < 0:  # (no candidate is inside code)
                        c = cut
                        break
            if early and first_chars is not None and buf.end - b >= first_chars:
                w = self._first_boundary(b + first_chars)
                if w >= 0 and (c < 0 or w < c):
                    c = w
            if c < 0 and buf.end - b > mx:
                looked = self.scanner.window_end
                if looked <= b + mx and looked < buf.end:
                    return  # look further first
                c = self._forced_cut()
            if c < 0:
                return
            self.cut(c, out)

    def time_cut(self, now: float, max_delay: float, block_grace: float, out: list[str]) -> None:
        """Release what has waited max_delay: at the best boundary after the last overdue char.

        A cut there that would break markdown (see the module) moves to the latest boundary after
        the overdue text that does not; if there is none, what precedes the markdown goes and
        the rest is held (``held_at``) until the oldest character held has waited ``max_delay +
        block_grace``; then the cut is made where it would be without the rules. Headings right
        before an open code fence that fits are held with it (``held_fence``), as long as it.

        Args:
            now: the current time, in seconds on the deltas' clock.
            max_delay: how long text may wait, in seconds.
            block_grace: how much longer text may wait to keep markdown whole, in seconds.
            out: where the released chunks are appended.
        """
        buf = self.buffer
        sc = self.scanner
        b = buf.start
        self.held_at = -1
        self.held_fence = False
        k = buf.overdue_end(now, max_delay)
        if k < 0:
            return
        self.markdown = False
        c = self._due_cut(k)  # the cut as it would be without the markdown rules
        self.markdown = True
        hold = False
        st = -1 if c is None or c <= b else self._markdown_block(c)
        if c is not None and st >= 0:
            if (
                sc.fence is not None
                and c == sc.fence_region.start
                and buf.end - c <= self.max_chars
                and not sc.fence_may_close()
            ):
                # the headings before an open code fence that fits go with it: what precedes
                # them goes
                up = self._blocking_line(st)
                while st > b and up >= 0:
                    st = up
                    up = self._blocking_line(st)
                c = st if st > b else None
                hold = self.held_line = self.held_fence = True
            else:
                # inside a line open since before the due text: no cut after it keeps it whole
                line = st == self._mid_line(c)
                w: int | None = None
                if (
                    not line
                    or k <= st
                    or find_char(buf.text, "\n", st - buf.text_start, len(buf.text)) >= 0
                ):
                    w = self._pick(k, buf.end, False, True)
                if w is not None:
                    c = w
                elif now < buf.arrival_at(b) + max_delay + block_grace:
                    hold = True
                    self.held_line = line and sc.fence is None
                    # what precedes the markdown goes
                    c = None if st == b else self._pick(b + 1, k, False, True)
        if c is not None and c > b:
            self.cut(c, out)
        if hold:
            self.held_at = buf.start

    def _due_cut(self, k: int) -> int | None:
        """``time_cut``'s choice: the latest paragraph, sentence or line end after ``k``, unless
        it releases a sliver while a word boundary further on would release much more; all of
        it after a stall at a terminator or a line break; before an open code fence."""
        buf = self.buffer
        sc = self.scanner
        b = buf.start
        avail = buf.end
        c: int | None
        if sc.waiting and sc.waiting_for in (AFTER_TERMINATOR, AFTER_NEWLINE):
            c = avail  # stalled right after a terminator or a line break: all of it
        elif not sc.regions:
            c = self._plain_time_cut(k)
        else:
            # the latest paragraph, sentence or line end, unless it releases a sliver while a
            # word boundary further on would release much more
            most = self._latest_boundary(k, avail)
            lo = k if most < 0 else max(k, b + min(self.min_chars, most - b) // 2)
            c = self._pick(lo, avail, True, True, most)
        if c is None:
            st = sc.fence_region.start if sc.fence is not None else None
            if st is not None and st >= b and not sc.fence_may_close():
                c = st if st > b else None  # release what precedes an open code fence
            else:
                c = avail  # nothing better: all of it
        return c

    def _plain_time_cut(self, k: int) -> int | None:
        """``time_cut`` with no code in the way (the common case, written out): the latest
        sentence, paragraph or line end after ``k``, else clause, else word boundary."""
        buf = self.buffer
        b = buf.start
        avail = buf.end
        s = buf.text
        s0 = buf.text_start
        z = avail - s0
        most = last_word_boundary(s, max(k - _BACKTRACK - s0, 0), z) + s0
        cands = self.scanner.candidates  # (their cuts rise: the last one is the latest)
        ends = cands[-1][1] if cands and cands[-1][1] >= k else -1
        if ends > most:
            most = ends
        if most < k:
            return self._pick(k, avail, True, True)
        lo = max(k, b + min(self.min_chars, most - b) // 2)
        x = rfind_char(s, "\n", lo - 1 - s0, z)
        c = max(ends, s0 + x + 1 if x >= 0 else -1)
        if c < lo:
            x = last_clause_boundary(s, max(lo - _BACKTRACK - s0, 0), z)
            c = s0 + x if x >= 0 and s0 + x >= lo else most
        return c

    def cut(self, c: int, out: list[str]) -> None:
        """Release the text up to an absolute offset.

        Args:
            c: where the chunk ends (the text scanned up to it first, as if it ended there).
            out: where the chunk is appended.
        """
        buf = self.buffer
        sc = self.scanner
        if c > sc.scanned_to:
            sc.scan(c, True)  # what is skipped is read as if it ended here
        s0 = buf.text_start
        out.append(substring(buf.text, buf.start - s0, c - s0))
        buf.start = c
        self.early_first = False
        sc.forget_before(c)

    def _first_boundary(self, start: int) -> int:
        """The first word boundary at or after ``start``, with a visible character after it."""
        buf = self.buffer
        s = buf.text
        s0 = buf.text_start
        hi = min(buf.end, buf.start + self.max_chars)
        pos = max(start - 1, buf.start) - s0
        end = buf.end - s0
        while True:
            e = visible_word_boundary(s, pos, end)  # (VISIBLE_WORD_BOUNDARY's match's end)
            if e < 0:
                return -1
            c = s0 + e
            if c > hi:
                return -1
            if c >= start and (not self.scanner.regions or self._blocking_code(c, WORD) < 0):
                st = self._markdown_block(c) if self.markdown else -1
                if st < 0:
                    return c
                if st == self._mid_line(c):  # inside a line kept whole: on from its end
                    nl = find_char(s, "\n", e, end)
                    if nl < 0:
                        return -1
                    pos = nl
                    continue
            pos = e if is_space(s[e - 1]) else e + 1  # (on past an empty match)

    def _forced_cut(self) -> int:
        """A cut for a buffer over ``max_chars``: the best boundary in it, else inside a word."""
        b = self.buffer.start
        hi = b + self.max_chars
        c = self._pick(b + self.min_chars, hi, False, False)
        if c is None:
            c = self._pick(b + 1, hi, True, False)
        if c is None and self.markdown:  # no cut keeps the markdown whole: as if there were none
            self.markdown = False
            c = self._pick(b + self.min_chars, hi, False, False)
            if c is None:
                c = self._pick(b + 1, hi, True, False)
            self.markdown = True
        return hi if c is None else c

    def _blocking_code(self, c: int, kind: int) -> int:
        """-1 if a cut at ``c`` (of ``kind``) is allowed, else the start of the code it splits
        (-2: allowed, inside a fenced block too long to keep whole)."""
        buf = self.buffer
        sc = self.scanner
        for reg in sc.regions:
            st = reg.start
            if c <= st:
                continue
            if reg.end is None:
                if reg.fenced and c == buf.end and sc.fence_may_close():
                    continue
                e = buf.end
            elif c >= reg.end:
                continue
            else:
                e = reg.end
            if e - st <= self.max_chars and st >= buf.start:
                return st  # fits (and is still whole): never cut inside
            if reg.fenced:
                if kind in (WORD, INSIDE_WORD):
                    # too long: cut at line ends; inside a line only when the chunk would
                    # otherwise hold nothing but (part of) that one line
                    s0 = buf.text_start
                    if rfind_char(buf.text, "\n", max(buf.start - s0, 0), c - s0) >= 0:
                        return st
                elif kind != LINE:
                    return st
                return -2
        return -1

    def _blocked(self, c: int, kind: int) -> int:
        """-1 if a cut at ``c`` (of ``kind``) is allowed, else the start of the code it splits
        or (``markdown`` on) of the markdown it breaks."""
        if self.scanner.regions:
            st = self._blocking_code(c, kind)
            if st >= 0:
                return st
        if self.markdown:
            return self._markdown_block(c)
        return -1

    def _markdown_block(self, c: int) -> int:
        """-1 if a cut at ``c`` keeps the markdown whole, else where what it breaks starts: the
        line it falls inside (a table row, a heading, a list item's first line, any line of a
        code block), or the heading it would end a chunk right after."""
        for reg in self.scanner.regions:
            if reg.fenced and reg.start < c and (reg.end is None or c < reg.end):
                if reg.end is None and c == self.buffer.end and self.scanner.fence_may_close():
                    return -1  # after what looks like its closing fence
                return self._mid_line(c)  # inside a code block: at line ends only
        return self._blocking_line(c)

    def _mid_line(self, c: int) -> int:
        """The start of the line ``c`` falls inside (not at its start), if that line starts in
        the unreleased text; else -1."""
        buf = self.buffer
        s = buf.text
        s0 = buf.text_start
        lo = buf.start - s0
        i = c - s0
        if i <= lo or s[i - 1] == "\n":
            return -1
        x = rfind_char(s, "\n", lo - 1 if lo > 0 else 0, i - 1)
        if x < 0 and lo > 0:
            return -1  # the line started before the unreleased text: it is cut already
        return s0 + x + 1

    def _blocking_line(self, c: int) -> int:
        """-1 if a cut at ``c`` (outside code) falls inside no table row, heading line, list
        item's first line or code fence line (nor a line too short yet to tell, see
        ``line_kind``) and right after no heading line; else that line's start."""
        buf = self.buffer
        sc = self.scanner
        s = buf.text
        s0 = buf.text_start
        if sc.marked_at < buf.start and (
            c <= sc.scanned_to or find_char(s, "\n", sc.scanned_to - s0, c - s0) < 0
        ):
            # no line that starts in the unreleased text (up to c: all of them scanned) starts
            # like a table row, heading, list item or fence (the usual case)
            return -1
        lo = buf.start - s0
        n = buf.end - s0
        i = c - s0
        ls = self._mid_line(c)
        if ls >= 0:
            ls -= s0
            # (a line that starts with none of these is plain: line_kind need not read it)
            if s[ls] in " \t|#-*+`~0123456789" and line_kind(s, ls, n) != PLAIN_LINE:
                return s0 + ls
            j = i
            while j > ls and (s[j - 1] == " " or s[j - 1] == "\t"):
                j -= 1
            if j > ls:
                return -1  # after a visible character of a plain line
            i = ls  # after blanks only: the line before decides
        elif i <= lo or s[i - 1] != "\n":
            return -1
        # right after a heading? (the line of the last visible character before the cut)
        j = i
        while j > lo and s[j - 1] in " \t\r\n":
            j -= 1
        if j == lo:
            return -1
        x = rfind_char(s, "\n", lo - 1 if lo > 0 else 0, j - 1)
        if x < 0 and lo > 0:
            return -1
        if s[x + 1] in " \t#" and line_kind(s, x + 1, n) == HEADING_LINE:  # (a heading: "#")
            return s0 + x + 1
        return -1

    def _last_match(self, kind: int, lo: int, hi: int) -> int:
        """The latest allowed clause (or word) boundary in [lo, hi], or -1."""
        buf = self.buffer
        s = buf.text
        s0 = buf.text_start
        z = hi - s0
        a = max(lo - _BACKTRACK - s0, 0)
        find = last_clause_boundary if kind == CLAUSE else last_word_boundary
        regions = self.scanner.regions
        while True:
            e = find(s, a, z)
            if e < 0 or s0 + e < lo:
                return -1
            if regions and self._blocking_code(s0 + e, kind) >= 0:
                z = e - 1  # inside code: try the one before
                continue
            st = self._markdown_block(s0 + e) if self.markdown else -1
            if st < 0:
                return s0 + e
            z = st - s0  # it breaks markdown: try from the start of what it breaks

    def _word_cut(self, lo: int, hi: int) -> int:
        """The latest word boundary (or start of a code span or fence) in [lo, hi], or -1."""
        found = self._last_match(WORD, lo, hi)
        for reg in self.scanner.regions:
            st = reg.start
            if found < st <= hi and st >= lo and self._blocked(st, WORD) < 0:
                found = st
        return found

    def _latest_boundary(self, lo: int, hi: int) -> int:
        """The latest allowed boundary of any kind but inside a word in [lo, hi], or -1."""
        best = self._word_cut(lo, hi)
        for reach, cut, kind in self.scanner.candidates:
            if reach > hi:
                break
            c = cut if cut < hi else hi
            if c > best and c >= lo and self._blocked(c, kind) < 0:
                best = c
        return best

    def _pick(
        self, lo: int, hi: int, inside_word: bool, latest: bool, word: int | None = None
    ) -> int | None:
        """The best cut in [lo, hi]: the best kind present, the latest position within it.

        Without ``inside_word``, None rather than a cut inside a word. With ``latest``,
        paragraph, sentence and line ends rank alike (under time pressure release as much as
        possible). ``word``: the latest word boundary in [lo, hi] (or -1) if already known.
        """
        if hi < lo:
            return None
        check = bool(self.scanner.regions) or self.markdown
        best = -1
        best_kind = INSIDE_WORD + 1
        for reach, cut, kind in self.scanner.candidates:
            if reach > hi:
                break
            c = cut if cut < hi else hi
            rank = LINE if latest else kind
            if (
                c >= lo
                and (rank < best_kind or (rank == best_kind and c > best))
                and (not check or self._blocked(c, kind) < 0)
            ):
                best, best_kind = c, rank
        if best >= 0 and not latest:
            return best
        buf = self.buffer
        s = buf.text
        s0 = buf.text_start
        a = max(lo - 1 - s0, 0)
        x = rfind_char(s, "\n", a, hi - s0)
        while x >= 0:
            c = s0 + x + 1
            if c < lo or c <= best:
                break
            if not check or self._blocked(c, LINE) < 0:
                return c
            x = rfind_char(s, "\n", a, x)
        if best >= 0:
            return best
        c = self._last_match(CLAUSE, lo, hi)
        if c < 0:
            c = self._word_cut(lo, hi) if word is None else word
        if c >= 0:
            return c
        if not inside_word:
            return None
        return self._inside_word(lo, hi)

    def _inside_word(self, lo: int, hi: int) -> int | None:
        """A cut inside a word, as late as possible in [lo, hi], never splitting a grapheme."""
        buf = self.buffer
        s = buf.text
        s0 = buf.text_start
        c = hi
        while c > lo and glued(s, c - s0):
            c -= 1
        if c == lo and glued(s, c - s0):
            c = hi
        st = self._blocked(c, INSIDE_WORD)
        if st < 0:
            return c
        if not self.markdown:
            return st if st >= lo else None
        while st >= lo:  # the start of what it splits, if a cut there splits nothing
            c = st
            st = self._blocked(c, LINE)
            if st < 0:
                return c
        return None
