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
part (a cut looks back over the buffer once).
"""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from numbers import Real

from agent_stream.errors import ChunkerConfigError

__all__ = ["TextChunker"]

# Boundary classes, best first.
_PARA, _SENT, _LINE, _CLAUSE, _WORD, _HARD = range(6)
# Protected region kinds.
_INLINE, _FENCE = 0, 1
# What a pending scan waits for.
_TERM, _NL, _TICK, _NEXTWORD = range(4)  # _TERM and _NL first: see feed()

_INF = math.inf

# Whitespace that separates words (not NBSP, figure space or narrow NBSP: those glue).
_WS = (
    " \t\n\r\f\v\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000"
)
_WS_SET = frozenset(_WS)
_WS_CLASS = "".join(re.escape(c) for c in _WS)
_WS_RUN = re.compile(f"[{_WS_CLASS}]+")

_CJK_TERMS = "。！？｡"
_TERMS = ".!?…‼⁇⁈⁉؟।॥" + _CJK_TERMS
_TERM_SET = frozenset(_TERMS)
_CJK_TERM_SET = frozenset(_CJK_TERMS)
# Closing quotes, brackets and emphasis markers that stay with the sentence they close.
_CLOSERS = "\"'”’»›)]}」』）】〕〉》〗〙〛*_"
_CLOSER_SET = frozenset(_CLOSERS)
_OPENERS = "\"'“‘«‹([{「『（【〔〈《*_"

# The characters that make a delta worth a look: in text, inside a code span, inside a fence.
_EVENT = re.compile("[" + re.escape(_TERMS) + "\n`~]")
_IN_CODE = re.compile("[`\n]")
_IN_FENCE = {"`": re.compile("`"), "~": re.compile("~")}

_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
_CJK_PUNCT = "。！？｡，、；：…ー・」』）】〕〉》〗〙〛”’"
_CLAUSE_PAT = rf"(?:[,;:]|…|\.\.+|—|–)[\"'”’)\]]*[{_WS_CLASS}]+|[，、；：…—]+[」』）”’]*"
_CLAUSE_AT = re.compile(_CLAUSE_PAT)
_CLAUSE_MARKS = (",", ";", ":", "..")
_CLAUSE_MARKS_ALL = (*_CLAUSE_MARKS, "…", "—", "–", "，", "、", "；", "：")
# The last space, or the last CJK character followed by another: a greedy ".*" backtracks.
_LAST_WS = re.compile(rf"(?s).*[{_WS_CLASS}]")
_LAST_CJK = re.compile(rf"(?s).*[{_CJK_CHARS}](?=[^{_WS_CLASS}{re.escape(_CJK_PUNCT)}])")
# A word boundary with a visible character after it (where a first chunk may end early).
_FIRST_RX = re.compile(
    rf"[{_WS_CLASS}]+(?=[^{_WS_CLASS}])|(?<=[{_CJK_CHARS}])(?=[^{_WS_CLASS}{re.escape(_CJK_PUNCT)}])"
)
_BLANK = re.compile(r"[ \t]*")
_TABLE_ROW = re.compile(r"[ \t]*\|")
_LIST_TOKEN = re.compile(r"\d{1,3}(?:\.\d{1,3})*|[A-Za-z]|[ivxlcdmIVXLCDM]{1,5}")
_LIST_FIRST = frozenset("0123456789ivxlcdmIVXLCDM")
_DOTTED = re.compile(r"(?:[A-Za-z]{1,3}\.)+[A-Za-z]{1,3}")
_CAP_WORD = re.compile(r"[A-Z][a-z]+")
_CAP_PREFIX = re.compile(r"[A-Z][a-z]*")

# Never end a sentence: titles and Latin abbreviations that always continue.
_NEVER = frozenset(
    (
        "mr", "mrs", "ms", "mx", "dr", "prof", "rev", "hon", "st", "mt", "gen", "col", "capt",
        "cmdr", "lt", "sgt", "maj", "adm", "gov", "sen", "rep", "pres", "supt", "insp",
        "messrs", "mme", "mlle", "e.g", "i.e", "eg", "ie", "cf", "viz", "vs", "approx", "ca",
    )
)
# End a sentence only when a capitalised word follows ("Apple Inc. is" / "No. 5" do not).
_MAYBE = frozenset(
    (
        "etc", "inc", "ltd", "co", "corp", "llc", "plc", "bros", "jr", "sr", "al", "no", "nos",
        "vol", "vols", "fig", "figs", "eq", "eqs", "pp", "ch", "chap", "sec", "art", "ed",
        "eds", "esp", "incl", "excl", "dept", "est", "min", "max", "ave", "blvd", "rd", "hwy",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
        "lb", "lbs", "oz", "hr", "hrs", "yr", "yrs", "mo", "wk", "pt", "pts",
    )
)


def _last_word(s: str, a: int, z: int) -> int:
    """End of the last word boundary in s[a:z] (after a space, between CJK characters), or -1."""
    m = _LAST_WS.match(s, a, z)
    e = -1 if m is None else m.end()
    if not s[max(a, e) : z + 1].isascii():
        m = _LAST_CJK.match(s, max(a, e), min(z + 1, len(s)))  # may look one past z
        if m is not None and m.end() > e:
            e = m.end()
    return e


def _last_clause(s: str, a: int, z: int) -> int:
    """End of the last clause boundary in s[a:z] (, ; : … — followed by a space), or -1."""
    marks = _CLAUSE_MARKS if s[a:z].isascii() else _CLAUSE_MARKS_ALL
    while True:
        x = max([s.rfind(c, a, z) for c in marks])
        if x < 0:
            return -1
        m = _CLAUSE_AT.match(s, x, z)
        if m is not None:
            return m.end()
        z = x


def _glued(s: str, x: int) -> bool:
    """True when s[x-1] and s[x] belong to one grapheme (or one CRLF) and must not be cut apart."""
    if x <= 0 or x >= len(s):
        return False
    c, p = s[x], s[x - 1]
    o = ord(c)
    return (
        unicodedata.combining(c) != 0
        or unicodedata.category(c) in ("Mn", "Me", "Mc")
        or c == "\u200d"
        or p == "\u200d"
        or 0xFE00 <= o <= 0xFE0F
        or 0x1F3FB <= o <= 0x1F3FF
        or 0xE0020 <= o <= 0xE007F
        or (p == "\r" and c == "\n")
    )


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ChunkerConfigError(f"{name} must be an integer, got {value!r}")
    if value < low:
        raise ChunkerConfigError(f"{name} must be >= {low}, got {value}")
    return value


class TextChunker:
    """Buffers text deltas and releases chunks at natural boundaries, losslessly and on time.

    ``min_chars``: a paragraph or sentence end releases a chunk once it is at least this long.
    ``max_chars``: no chunk is longer. ``max_delay`` (seconds): no text waits longer than this after
    it arrived, provided ``poll`` is called at ``next_deadline`` (text inside a fenced code block
    that is still open and fits ``max_chars`` excepted). ``first_chars``: the first chunk of a
    message is released at its first sentence end whatever its length, or at the first word
    boundary once it holds this many characters; ``None`` treats it like the others.

    Invalid options raise ``ChunkerConfigError`` naming the option.
    """

    __slots__ = (
        "_after_fence",
        "_avail",
        "_b",
        "_cands",
        "_code",
        "_code_reg",
        "_deadline",
        "_dl_b",
        "_fence",
        "_fence_reg",
        "_first",
        "_first_chars",
        "_joined",
        "_limit",
        "_line",
        "_literal",
        "_max",
        "_max_delay",
        "_min",
        "_n",
        "_parts",
        "_pbase",
        "_pend_kind",
        "_pending",
        "_pi",
        "_prot",
        "_ptimes",
        "_s",
        "_s0",
        "_scan",
        "_scanned",
        "_watch",
    )

    _min: int
    _max: int
    _max_delay: float
    _first_chars: int | None
    _parts: list[str]
    _ptimes: list[float]
    _pi: int
    _pbase: int
    _joined: int
    _s: str
    _s0: int
    _b: int
    _avail: int
    _n: int
    _scan: int
    _scanned: int
    _pending: bool
    _pend_kind: int
    _line: int
    _fence: tuple[str, int] | None
    _fence_reg: list[int | None]
    _code: int | None
    _code_reg: list[int | None]
    _literal: int
    _after_fence: int
    _prot: list[list[int | None]]
    _cands: list[tuple[int, int, int]]
    _first: bool
    _deadline: float
    _dl_b: int
    _limit: int
    _watch: Callable[[str], re.Match[str] | None]

    def __init__(
        self,
        min_chars: int = 40,
        max_chars: int = 400,
        max_delay: float = 0.25,
        first_chars: int | None = 20,
    ) -> None:
        self._min = _check_int("min_chars", min_chars, 1)
        self._max = _check_int("max_chars", max_chars, 1)
        if max_chars < min_chars:
            raise ChunkerConfigError(
                f"max_chars ({max_chars}) must be >= min_chars ({min_chars})"
            )
        if isinstance(max_delay, bool) or not isinstance(max_delay, Real):
            raise ChunkerConfigError(f"max_delay must be a number of seconds, got {max_delay!r}")
        if not max_delay > 0:  # also rejects NaN
            raise ChunkerConfigError(f"max_delay must be > 0 seconds, got {max_delay!r}")
        self._max_delay = float(max_delay)
        if first_chars is not None:
            _check_int("first_chars", first_chars, 0)
            if first_chars > max_chars:
                raise ChunkerConfigError(
                    f"first_chars ({first_chars}) must be <= max_chars ({max_chars})"
                )
        self._first_chars = first_chars
        self._reset()

    # ------------------------------------------------------------------ public API

    def feed(self, delta: str, now: float) -> list[str]:
        """Add a delta that arrived at ``now`` (seconds); return the chunks now complete."""
        self._parts.append(delta)
        self._ptimes.append(now)
        self._n += len(delta)
        if self._n > self._limit or now >= self._deadline:
            if (
                self._pending
                and self._pend_kind <= _NL
                and now < self._deadline
                and self._n <= self._max
                and delta.isspace()
            ):
                return []  # waiting for what follows a terminator: more space decides nothing
            return self._advance(now)
        m = self._watch(delta)
        if m is None:
            return []
        if m.end() == len(delta) and self._fence is None:
            # a terminator, line break or backtick at the very end: the next delta decides
            self._limit = -1
            self._pending = True
            self._pend_kind = _TICK if delta[-1] in "`~" else _TERM
            return []
        return self._advance(now)

    def poll(self, now: float) -> list[str]:
        """Release what has waited ``max_delay``, cut at the best boundary available."""
        if now < self._deadline:
            return []
        return self._advance(now)

    def flush(self) -> list[str]:
        """End of the message: return everything still buffered and start afresh."""
        self._integrate()
        out = [self._s[self._b - self._s0 :]] if self._avail > self._b else []
        self._reset()
        return out

    @property
    def next_deadline(self) -> float | None:
        """When to call ``poll``: arrival of the oldest buffered character + ``max_delay``.

        ``None`` when nothing is buffered, or when all that is buffered is a fenced code block
        still open (it is released when it closes, outgrows ``max_chars`` or on ``flush``).
        """
        d = self._deadline
        return None if d == _INF else d

    @property
    def buffered(self) -> int:
        """Characters held, not yet released."""
        return self._n

    @property
    def min_chars(self) -> int:
        """The minimum chunk length (sentence and paragraph ends)."""
        return self._min

    @property
    def max_chars(self) -> int:
        """The maximum chunk length."""
        return self._max

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
            f"TextChunker(min_chars={self._min}, max_chars={self._max}, "
            f"max_delay={self._max_delay}, first_chars={self._first_chars})"
        )

    # ------------------------------------------------------------------ state

    def _reset(self) -> None:
        self._parts = []  # the deltas not wholly released, from index _pi
        self._ptimes = []  # and when each arrived
        self._pi = 0
        self._pbase = 0  # absolute offset of _parts[_pi]
        self._joined = 0  # _parts before this index are in _s
        self._s = ""  # text from absolute offset _s0 (a little before _b) to _avail
        self._s0 = 0
        self._b = 0  # absolute offset of the first buffered character
        self._avail = 0
        self._n = 0
        self._scan = 0  # text before this is analysed
        self._scanned = 0  # how far the last look went (possibly stopping short, pending)
        self._pending = False
        self._pend_kind = _TERM
        self._line = 0  # absolute offset where the current line starts
        self._fence = None
        self._fence_reg = []
        self._code = None
        self._code_reg = []
        self._literal = -1
        self._after_fence = -1
        self._prot = []  # [start, end or None, kind]
        self._cands = []  # (after closers, cut, class)
        self._first = True
        self._deadline = _INF
        self._dl_b = -1  # the _b the deadline was computed for
        self._limit = -1
        self._watch = _EVENT.search

    def _integrate(self) -> None:
        """Append the deltas fed since the last look to the text buffer."""
        parts = self._parts
        j = self._joined
        if j == len(parts):
            return
        text = parts[j] if j + 1 == len(parts) else "".join(parts[j:])
        self._joined = len(parts)
        self._avail += len(text)
        drop = self._b - 64 - self._s0  # keep a little released text for context
        if drop > 512:
            self._s = self._s[drop:] + text
            self._s0 += drop
        else:
            self._s += text

    def _advance(self, now: float) -> list[str]:
        """Look at the new text: release what its boundaries, max_chars and the time allow."""
        parts = self._parts
        j = self._joined
        if j < len(parts):
            self._integrate()
        out: list[str] = []
        if self._avail > self._b:
            n_cands = len(self._cands)
            while True:
                # analyse a window ahead of the buffer start, so a huge delta costs linear time
                stop = min(self._avail, self._b + 2 * self._max + 64)
                if self._scan < stop:
                    self._scan_text(False, stop)
                self._scanned = stop
                if (
                    len(self._cands) != n_cands
                    or self._avail - self._b > self._max
                    or (self._first and self._first_chars is not None)
                ):
                    self._release(out)
                if stop == self._avail:
                    break
                n_cands = -1
            self._settle()
            if now >= self._deadline:
                self._time_cut(now, out)
                self._settle()
        else:
            self._settle()
        return out

    def _settle(self) -> None:
        """Recompute the deadline and the feed() fast-path limit after a change."""
        b = self._b
        self._n = n = self._avail - b
        if n == 0:
            self._parts.clear()
            self._ptimes.clear()
            self._pi = self._joined = 0
            self._pbase = b
            self._deadline = _INF
            self._dl_b = -1
            self._limit = -1  # the next delta starts the clock
            return
        fence = self._fence
        if fence is not None and self._fence_reg[0] == b and not self._fence_tentative():
            self._deadline = _INF  # an open code fence that fits: nothing can go yet
            self._dl_b = -1
        elif b != self._dl_b:
            self._deadline = self._ptimes[self._part_at(b)] + self._max_delay
            self._dl_b = b
        if fence is not None:
            self._watch = _IN_FENCE[fence[0]].search
        elif self._code is not None:
            self._watch = _IN_CODE.search
        else:
            self._watch = _EVENT.search
        if self._pending:
            self._limit = -1
        elif self._first and self._first_chars is not None:
            self._limit = min(self._first_chars - 1, self._max)
        else:
            self._limit = self._max

    def _part_at(self, b: int) -> int:
        """Index of the delta holding absolute offset ``b`` (forgetting the ones before it)."""
        parts = self._parts
        i = self._pi
        base = self._pbase
        if base + len(parts[i]) <= b:
            if self._avail - b < b - base:  # nearer the end: walk back from there
                i = self._joined - 1
                base = self._avail - len(parts[i])
                while base > b:
                    i -= 1
                    base -= len(parts[i])
            else:
                ends = list(accumulate(map(len, parts[i : self._joined]), initial=base))
                k = bisect_right(ends, b) - 1  # ends[k] <= b < ends[k + 1]
                base = ends[k]
                i += k
        if i > 64:
            del parts[:i]
            del self._ptimes[:i]
            self._joined -= i
            i = 0
        self._pi = i
        self._pbase = base
        return i

    def _fence_tentative(self) -> bool:
        """True when the open fence's last (unfinished) line looks like its closing fence."""
        fence = self._fence
        ls = self._line - self._s0
        if fence is None or ls < 0 or self._avail - self._line > 256:
            return False
        tail = self._s[ls:].strip(" \t\r")
        return len(tail) >= fence[1] and tail == fence[0] * len(tail)

    # ------------------------------------------------------------------ scanning

    def _add(self, q: int, p: int, cls: int) -> None:
        if p <= self._b:
            return
        cands = self._cands
        if cands and cands[-1][1] >= p:
            last = cands[-1]
            if last[1] == p and cls < last[2]:
                cands[-1] = (last[0], p, cls)
            return
        cands.append((q, p, cls))

    def _scan_text(self, final: bool, stop: int) -> None:
        """Analyse text from ``_scan`` to ``stop``: code spans, fences, line starts, sentence ends.

        It stops early (``_pending``) where the next characters decide, unless ``final``, where
        ``stop`` is taken as the end of the text.
        """
        s = self._s
        s0 = self._s0
        n = stop - s0
        i = self._scan - s0
        if i < 0:
            i = 0
        self._pending = False
        while True:
            fence = self._fence
            if fence is not None:
                # inside a fence only a closing fence line matters: find the fence character
                fch, flen = fence
                x = s.find(fch, i, n)
                last = s.rfind("\n", i, n if x < 0 else x)
                if last >= 0:
                    self._line = s0 + last + 1
                if x < 0:
                    i = n
                    break
                r = x + 1
                while r < n and s[r] == fch:
                    r += 1
                ls = self._line - s0
                if ls < 0 or _BLANK.fullmatch(s, ls, x) is None or (r - x < flen and r < n):
                    i = r
                    continue
                if r == n and not final:
                    i = x
                    self._pending = True
                    self._pend_kind = _TICK
                    break
                if r - x < flen:
                    i = r
                    continue
                nl = s.find("\n", r, n)
                rest = s[r : n if nl < 0 else nl]
                if rest.strip(" \t\r"):
                    i = r  # text after the fence characters: not a closing fence
                    continue
                if nl < 0 and not final:
                    i = x
                    self._pending = True
                    self._pend_kind = _TICK
                    break
                self._fence = None
                self._fence_reg[1] = s0 + (n if nl < 0 else nl + 1)
                if nl < 0:
                    i = n
                    break
                self._after_fence = s0 + nl
                i = nl  # the line break after the closing fence is handled like any other
            m = (_EVENT if self._code is None else _IN_CODE).search(s, i, n)
            if m is None:
                i = n
                break
            i = m.start()
            c = s[i]
            if c == "\n":
                if self._code is not None:
                    # a code span still open at a line break was never one: rescan its text
                    reg = self._code_reg
                    self._prot.remove(reg)
                    self._code = None
                    start = reg[0]
                    assert start is not None
                    self._literal = start
                    i = max(start, self._b, s0) - s0
                    continue
                w = _WS_RUN.match(s, i, n).end()  # type: ignore[union-attr]
                if w == n and not final:
                    self._pending = True
                    self._pend_kind = _NL
                    break
                last = s.rfind("\n", i, w)
                if w < n:
                    j = i
                    lim = max(self._b - s0, 0)
                    while j > lim and s[j - 1] in _WS_SET:
                        j -= 1
                    if s.count("\n", j, w) >= 2 or self._after_fence == s0 + i:
                        self._add(s0 + i, s0 + last + 1, _PARA)
                self._line = s0 + last + 1
                i = w
                continue
            if c == "`" or c == "~":
                r = i + 1
                while r < n and s[r] == c:
                    r += 1
                if r == n and not final:
                    self._pending = True
                    self._pend_kind = _TICK
                    break
                ls = self._line - s0
                if (
                    r - i >= 3
                    and self._code is None
                    and ls >= 0
                    and _BLANK.fullmatch(s, ls, i) is not None
                ):
                    reg = [self._line, None, _FENCE]
                    self._prot.append(reg)
                    self._fence_reg = reg
                    self._fence = (c, r - i)
                elif c == "`" and s0 + i != self._literal:
                    if self._code is None:
                        reg = [s0 + i, None, _INLINE]
                        self._prot.append(reg)
                        self._code_reg = reg
                        self._code = r - i
                    elif self._code == r - i:
                        self._code_reg[1] = s0 + r
                        self._code = None
                i = r
                continue
            # a terminator
            if self._code is not None:
                i += 1
                continue
            ls = self._line - s0
            if ls >= 0 and _TABLE_ROW.match(s, ls) is not None:
                i += 1  # never inside a table row
                continue
            j = i + 1
            while j < n and s[j] in _TERM_SET:
                j += 1
            k = j
            while k < n and s[k] in _CLOSER_SET:
                k += 1
            w = k
            if k < n and s[k] in _WS_SET:
                w = _WS_RUN.match(s, k, n).end()  # type: ignore[union-attr]
            if w == n:
                if not final:
                    self._pending = True
                    self._pend_kind = _TERM
                    break
                i = j
                continue
            end = self._is_end(s, i, j, k, w, n)
            if end is None:
                if not final:
                    self._pending = True
                    self._pend_kind = _NEXTWORD
                    break
                end = False
            if end:
                last = s.rfind("\n", k, w)
                self._add(s0 + k, s0 + (last + 1 if last >= 0 else w), _SENT)
            i = j
        self._scan = s0 + i

    def _is_end(self, s: str, i: int, j: int, k: int, w: int, n: int) -> bool | None:
        """Does the terminator run s[i:j] (closers to k, whitespace to w) end a sentence?

        ``None``: the next word decides and has not fully arrived.
        """
        run = s[i:j]
        nxt = s[w]
        cjk = not _CJK_TERM_SET.isdisjoint(run)
        if w == k:  # no whitespace after it
            if cjk:
                # 「…。」と言った: a quoted sentence inside a Japanese one
                return not (k > j and nxt in "とっ")
            # "one.Two": a lowercase word, then a capitalised one, no space between
            if k != j or run not in (".", "!", "?"):
                return False
            t = i
            while t > 0 and s[t - 1].isalpha():
                t -= 1
            word = s[t:i]
            if len(word) < 2 or not (word.isascii() and word.islower()):
                return False
            if t > 0 and s[t - 1] not in _WS_SET and s[t - 1] not in _OPENERS:
                return False
            m = _CAP_WORD.match(s, k, n)
            if m is None:
                return None if _CAP_PREFIX.fullmatch(s, k, n) else False
            e = m.end()
            if e == n:
                return None
            after = s[e]
            if after in _WS_SET or after in ",;:!?\"')]":
                return True
            if after == ".":
                if e + 1 == n:
                    return None
                return s[e + 1] in _WS_SET
            return False
        newline = s.find("\n", k, w) >= 0
        if not newline and ("…" in run or run.count(".") >= 2):
            return False  # an ellipsis
        if cjk:
            return True
        if run == ".":
            # the word before the dot
            lim = max(i - 64, 0)
            t = max(s.rfind(" ", lim, i), s.rfind("\n", lim, i)) + 1
            if t == 0:
                t = lim
            tok = s[t:i]
            if not _WS_SET.isdisjoint(tok):  # another kind of space: look closer
                t = i
                while t > lim and s[t - 1] not in _WS_SET:
                    t -= 1
                tok = s[t:i]
            raw = t
            if tok and tok[0] in _OPENERS:
                tok = tok.lstrip(_OPENERS)
            if not tok:
                return True
            if tok[0] in _LIST_FIRST or len(tok) == 1:
                ls = self._line - self._s0
                if (
                    _LIST_TOKEN.fullmatch(tok)
                    and 0 <= ls <= raw
                    and _BLANK.fullmatch(s, ls, raw) is not None
                ):
                    return False  # "1. ", "a. ", "iv. " at the start of a line
            if newline:
                return True
            if len(tok) == 1:
                return not tok.isalpha() and not nxt.islower()  # "J." is an initial
            low = tok.lower()
            if low in _NEVER:
                return False
            if low in _MAYBE or ("." in tok and _DOTTED.fullmatch(tok)):
                return nxt.isupper()
        elif newline:
            return True
        return not nxt.islower()

    # ------------------------------------------------------------------ cutting

    def _release(self, out: list[str]) -> None:
        """Cut at sentence/paragraph ends (and early for a first chunk), then down to max_chars."""
        mx = self._max
        first_chars = self._first_chars
        while True:
            b = self._b
            need = 1 if self._first and first_chars is not None else self._min
            c = -1
            for _q, p, _cls in self._cands:
                if p - b >= need:
                    if p - b <= mx:
                        c = p
                    break
            if self._first and first_chars is not None and self._avail - b >= first_chars:
                w = self._first_boundary(b + first_chars)
                if w >= 0 and (c < 0 or w < c):
                    c = w
            if c < 0 and self._avail - b > mx:
                if self._scanned <= b + mx and self._scanned < self._avail:
                    return  # look further first
                c = self._forced_cut()
            if c < 0:
                return
            self._cut(c, out)

    def _first_boundary(self, start: int) -> int:
        """The first word boundary at or after ``start``, with a visible character after it."""
        s = self._s
        s0 = self._s0
        hi = min(self._avail, self._b + self._max)
        pos = max(start - 1, self._b) - s0
        end = self._avail - s0
        while True:
            m = _FIRST_RX.search(s, pos, end)
            if m is None:
                return -1
            c = s0 + m.end()
            if c > hi:
                return -1
            if c >= start and self._inside(c, _WORD) < 0:
                return c
            pos = m.end() + (1 if m.end() == m.start() else 0)

    def _forced_cut(self) -> int:
        b = self._b
        hi = b + self._max
        c = self._pick(b + self._min, hi, False, False)
        if c is None:
            c = self._pick(b + 1, hi, True, False)
        return hi if c is None else c

    def _time_cut(self, now: float, out: list[str]) -> None:
        """Release what has waited max_delay: at the best boundary after the last overdue char."""
        b = self._b
        parts = self._parts
        times = self._ptimes
        i = self._part_at(b)
        d = self._max_delay
        e = self._joined - 1
        while e >= i and times[e] + d > now:
            e -= 1
        if e < i:
            return
        avail = self._avail
        k = avail - sum(map(len, parts[e + 1 : self._joined]))  # end of the last overdue delta
        c: int | None
        if self._pending and self._pend_kind in (_TERM, _NL):
            c = avail  # stalled right after a terminator or a line break: all of it
        elif not self._prot:
            # no code in the way (the common case, written out): the latest sentence, paragraph
            # or line end, else clause, else word boundary
            s = self._s
            s0 = self._s0
            z = avail - s0
            most = _last_word(s, max(k - 16 - s0, 0), z) + s0
            ends = -1
            for _q, p, _cls in self._cands:
                if p >= k:
                    ends = p
            if ends > most:
                most = ends
            if most < k:
                c = self._pick(k, avail, True, True)
            else:
                lo = max(k, b + min(self._min, most - b) // 2)
                x = s.rfind("\n", lo - 1 - s0, z)
                c = max(ends, s0 + x + 1 if x >= 0 else -1)
                if c < lo:
                    x = _last_clause(s, max(lo - 16 - s0, 0), z)
                    c = s0 + x if x >= 0 and s0 + x >= lo else most
        else:
            # the latest paragraph, sentence or line end, unless it releases a sliver while a
            # word boundary further on would release much more
            most = self._latest_word(k, avail)
            lo = k if most < 0 else max(k, b + min(self._min, most - b) // 2)
            c = self._pick(lo, avail, True, True, most)
        if c is None:
            st = self._fence_reg[0] if self._fence is not None else None
            if st is not None and st >= b and not self._fence_tentative():
                c = st if st > b else None  # release what precedes an open code fence
            else:
                c = avail  # nothing better: all of it
        if c is not None and c > b:
            self._cut(c, out)

    def _cut(self, c: int, out: list[str]) -> None:
        if c > self._scan:
            self._scan_text(True, c)  # what is skipped is read as if it ended here
        s0 = self._s0
        out.append(self._s[self._b - s0 : c - s0])
        self._b = c
        self._first = False
        cands = self._cands
        if cands and cands[0][1] <= c:
            i = 1
            while i < len(cands) and cands[i][1] <= c:
                i += 1
            del cands[:i]
        if self._prot:
            self._prot = [r for r in self._prot if r[1] is None or r[1] > c]

    def _inside(self, c: int, cls: int) -> int:
        """-1 if a cut at ``c`` (class ``cls``) is allowed, else the start of the code it splits."""
        for st, en, kind in self._prot:
            assert st is not None
            if c <= st:
                continue
            if en is None:
                if kind == _FENCE and c == self._avail and self._fence_tentative():
                    continue
                e = self._avail
            elif c >= en:
                continue
            else:
                e = en
            if e - st <= self._max and st >= self._b:
                return st  # fits (and is still whole): never cut inside
            if kind == _FENCE:
                if cls in (_WORD, _HARD):
                    # too long: cut at line ends; inside a line only when the chunk would
                    # otherwise hold nothing but (part of) that one line
                    s0 = self._s0
                    if self._s.rfind("\n", max(self._b - s0, 0), c - s0) >= 0:
                        return st
                elif cls != _LINE:
                    return st
        return -1

    def _last_match(self, cls: int, lo: int, hi: int) -> int:
        """The latest allowed clause (or word) boundary in [lo, hi], or -1."""
        s = self._s
        s0 = self._s0
        z = hi - s0
        a = max(lo - 16 - s0, 0)
        find = _last_clause if cls == _CLAUSE else _last_word
        prot = self._prot
        while True:
            e = find(s, a, z)
            if e < 0 or s0 + e < lo:
                return -1
            if not prot or self._inside(s0 + e, cls) < 0:
                return s0 + e
            z = e - 1  # inside code: try the one before

    def _word_cut(self, lo: int, hi: int) -> int:
        """The latest word boundary (or start of a code span or fence) in [lo, hi], or -1."""
        found = self._last_match(_WORD, lo, hi)
        for st, _en, _kind in self._prot:
            assert st is not None
            if found < st <= hi and st >= lo and self._inside(st, _WORD) < 0:
                found = st
        return found

    def _latest_word(self, lo: int, hi: int) -> int:
        """The latest allowed boundary of any class but hard in [lo, hi], or -1."""
        best = self._word_cut(lo, hi)
        prot = self._prot
        for q, p, cls in self._cands:
            if q > hi:
                break
            c = p if p < hi else hi
            if c > best and c >= lo and (not prot or self._inside(c, cls) < 0):
                best = c
        return best

    def _pick(self, lo: int, hi: int, hard: bool, latest: bool, word: int = -2) -> int | None:
        """The best cut in [lo, hi]: the best class present, the latest position within it.

        Without ``hard``, None rather than a cut inside a word. With ``latest``, paragraph,
        sentence and line ends rank alike (under time pressure release as much as possible).
        ``word``: the latest boundary in [lo, hi] if the caller knows it already.
        """
        if hi < lo:
            return None
        inside = self._inside
        prot = self._prot
        best = -1
        best_cls = _HARD + 1
        for q, p, cls in self._cands:
            if q > hi:
                break
            c = p if p < hi else hi
            rank = _LINE if latest else cls
            if (
                c >= lo
                and (rank < best_cls or (rank == best_cls and c > best))
                and (not prot or inside(c, cls) < 0)
            ):
                best, best_cls = c, rank
        if best >= 0 and not latest:
            return best
        s = self._s
        s0 = self._s0
        a = max(lo - 1 - s0, 0)
        x = s.rfind("\n", a, hi - s0)
        while x >= 0:
            c = s0 + x + 1
            if c < lo or c <= best:
                break
            if not prot or inside(c, _LINE) < 0:
                return c
            x = s.rfind("\n", a, x)
        if best >= 0:
            return best
        c = self._last_match(_CLAUSE, lo, hi)
        if c < 0:
            c = word if word >= -1 else self._word_cut(lo, hi)
        if c >= 0:
            return c
        if not hard:
            return None
        c = hi
        while c > lo and _glued(s, c - s0):
            c -= 1
        if c == lo and _glued(s, c - s0):
            c = hi
        st = inside(c, _HARD)
        if st < 0:
            return c
        return st if st >= lo else None
