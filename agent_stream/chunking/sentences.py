"""Language rules as pure functions: which characters end sentences and clauses, where words end,
which graphemes must stay whole, and whether a terminator run really ends a sentence.

Nothing here holds state: every function reads the text it is given and the offsets it is told.
(``dot_ends`` remembers what it worked out about a word, a cache of a pure function's results.)
"""

from __future__ import annotations

import re
import unicodedata
from types import SimpleNamespace

try:
    import cython
except ImportError:  # the interpreted modules, without Cython installed
    cython = SimpleNamespace(compiled=False)
COMPILED = cython.compiled  # (False when Cython runs this module uncompiled)

__all__ = [
    "BLANK",
    "CJK_TERMINATOR_SET",
    "CLOSER_SET",
    "FENCE_LINE",
    "HEADING_LINE",
    "ITEM_LINE",
    "MAY_FOLLOW_END",
    "OPENERS",
    "PENDING_LINE",
    "PLAIN_LINE",
    "TABLE_LINE",
    "TABLE_ROW",
    "TERMINATORS",
    "TERMINATOR_SET",
    "VISIBLE_WORD_BOUNDARY",
    "WHITESPACE_RUN",
    "WHITESPACE_SET",
    "char_search",
    "dot_ends",
    "ends_sentence",
    "glued",
    "is_blank",
    "is_cjk",
    "is_space",
    "last_clause_boundary",
    "last_line_break",
    "last_word_boundary",
    "line_kind",
    "visible_word_boundary",
    "whitespace_end",
]

# Whitespace that separates words (not NBSP, figure space or narrow NBSP: those glue).
WHITESPACE = (
    " \t\n\r\f\v\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a"
    "\u2028\u2029\u205f\u3000"
)
WHITESPACE_SET = frozenset(WHITESPACE)
_WS_CLASS = "".join(re.escape(c) for c in WHITESPACE)
WHITESPACE_RUN = re.compile(f"[{_WS_CLASS}]+")

_CJK_TERMINATORS = "。！？｡"
_OTHER_TERMINATORS = ".!?…‼⁇⁈⁉؟।॥"
TERMINATORS = _OTHER_TERMINATORS + _CJK_TERMINATORS
TERMINATOR_SET = frozenset(TERMINATORS)
# Closing quotes, brackets and emphasis markers that stay with the sentence they close.
_CLOSERS = "\"'”’»›)]}」』）】〕〉》〗〙〛*_"
CLOSER_SET = frozenset(_CLOSERS)
# What may follow a terminator for it to end a sentence: after any other character ("3.14",
# "example.com", "e.g") only a CJK terminator does (``ends_sentence`` says no to the others).
MAY_FOLLOW_END = frozenset(WHITESPACE + _CLOSERS + TERMINATORS + "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
CJK_TERMINATOR_SET = frozenset(_CJK_TERMINATORS)
OPENERS = "\"'“‘«‹([{「『（【〔〈《*_"
# After a quoted sentence in Japanese these continue the outer sentence: 「…。」と言った.
_QUOTE_CONTINUERS = "とっ"
# What may follow a glued "one.Two" for it to be a sentence end.
_AFTER_GLUED_WORD = ",;:!?\"')]"

_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
_CJK_PUNCT = "。！？｡，、；：…ー・」』）】〕〉》〗〙〛”’"
_CLAUSE_AT = re.compile(rf"(?:[,;:]|…|\.\.+|—|–)[\"'”’)\]]*[{_WS_CLASS}]+|[，、；：…—]+[」』）”’]*")
# The last place a clause boundary starts, in text that is not all ASCII: a greedy ".*"
# backtracks from the end, in C, trying only where a clause mark is.
_LAST_CLAUSE = re.compile(f"(?s).*(?=[,;:.…—–，、；：])(?:{_CLAUSE_AT.pattern})")
# Any character a clause mark starts with: no match, no clause boundary (a match may be none).
_ANY_CLAUSE_MARK = re.compile(r"[,;:.…—–，、；：]")
# The same in ASCII: one of , ; : or two dots (a class first: a search runs at its speed).
_ASCII_CLAUSE_MARK = re.compile(r"[,;:.](?:(?<=[,;:])|(?=\.))")
# The last space, or the last CJK character followed by another: a greedy ".*" backtracks.
_LAST_SPACE = re.compile(rf"(?s).*[{_WS_CLASS}]")
_SPACE = re.compile(f"[{_WS_CLASS}]")
# Whitespace is ASCII (up to " ") or from U+1680 on, CJK from U+3040 on: the first tests (C
# comparisons, compiled) pass over most characters.
_SPACE_OR_CJK_FROM = "\u1680"
_CJK_FROM = "\u3040"
# A CJK character followed by another (a word boundary after it), and the last such.
_CJK_PAIR = re.compile(rf"[{_CJK_CHARS}](?=[^{_WS_CLASS}{re.escape(_CJK_PUNCT)}])")
_LAST_CJK = re.compile(f"(?s).*{_CJK_PAIR.pattern}")
# A word boundary with a visible character after it (where a first chunk may end early).
VISIBLE_WORD_BOUNDARY = re.compile(
    rf"[{_WS_CLASS}]+(?=[^{_WS_CLASS}])|(?<=[{_CJK_CHARS}])(?=[^{_WS_CLASS}{re.escape(_CJK_PUNCT)}])"
)
BLANK = re.compile(r"[ \t]*")
TABLE_ROW = re.compile(r"[ \t]*\|")
_LIST_TOKEN = re.compile(r"\d{1,3}(?:\.\d{1,3})*|[A-Za-z]|[ivxlcdmIVXLCDM]{1,5}")
_LIST_FIRST = frozenset("0123456789ivxlcdmIVXLCDM")
_DOTTED = re.compile(r"(?:[A-Za-z]{1,3}\.)+[A-Za-z]{1,3}")
_CAP_WORD = re.compile(r"[A-Z][a-z]+")
_CAP_PREFIX = re.compile(r"[A-Z][a-z]*")
# How far back from a dot the word before it is looked for.
_WORD_LOOKBACK = 64
# How many characters before the end the boundary searches read one by one before a regex.
_LOOK_BACK = 32

# Never end a sentence: titles and Latin abbreviations that always continue.
_NEVER_ENDS = frozenset(
    (
        "mr",
        "mrs",
        "ms",
        "mx",
        "dr",
        "prof",
        "rev",
        "hon",
        "st",
        "mt",
        "gen",
        "col",
        "capt",
        "cmdr",
        "lt",
        "sgt",
        "maj",
        "adm",
        "gov",
        "sen",
        "rep",
        "pres",
        "supt",
        "insp",
        "messrs",
        "mme",
        "mlle",
        "e.g",
        "i.e",
        "eg",
        "ie",
        "cf",
        "viz",
        "vs",
        "approx",
        "ca",
    )
)
# End a sentence only when a capitalised word follows ("Apple Inc. is" / "No. 5" do not).
_ENDS_BEFORE_CAPITAL = frozenset(
    (
        "etc",
        "inc",
        "ltd",
        "co",
        "corp",
        "llc",
        "plc",
        "bros",
        "jr",
        "sr",
        "al",
        "no",
        "nos",
        "vol",
        "vols",
        "fig",
        "figs",
        "eq",
        "eqs",
        "pp",
        "ch",
        "chap",
        "sec",
        "art",
        "ed",
        "eds",
        "esp",
        "incl",
        "excl",
        "dept",
        "est",
        "min",
        "max",
        "ave",
        "blvd",
        "rd",
        "hwy",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "lb",
        "lbs",
        "oz",
        "hr",
        "hrs",
        "yr",
        "yrs",
        "mo",
        "wk",
        "pt",
        "pts",
    )
)


def last_word_boundary(s: str, a: int, z: int) -> int:
    """End of the last word boundary in s[a:z] (after a space, between CJK characters), or -1.

    Args:
        s: the text.
        a: where the search starts.
        z: where it ends (excluded).
    """
    # The last few positions one by one (compiled, a loop in C: in prose the space is near, in
    # CJK the boundary is at the end), then the rest with ".*" (it backtracks from the end in C).
    e = min(z, len(s))
    stop = max(a, 0, e - _LOOK_BACK)
    while e > stop:
        c = s[e - 1]
        if (c <= " " or c >= _SPACE_OR_CJK_FROM) and (
            c in WHITESPACE
            or (c >= _CJK_FROM and e < len(s) and _CJK_PAIR.match(s, e - 1) is not None)
        ):
            return e
        e -= 1
    if e <= a:
        return -1
    z = e
    if s.isascii():  # (a flag of the string: no scan)
        m = _LAST_SPACE.match(s, a, z)
        return -1 if m is None else m.end()
    m = _SPACE.search(s, a, z)  # (in CJK there may be none: then ".*" need not backtrack)
    e = -1 if m is None else _LAST_SPACE.match(s, m.start(), z).end()  # type: ignore[union-attr]
    if not s[max(a, e) : z + 1].isascii():
        m = _LAST_CJK.match(s, max(a, e), min(z + 1, len(s)))  # may look one past z
        if m is not None and m.end() > e:
            e = m.end()
    return e


def whitespace_end(s: str, i: int, n: int) -> int:
    """The end of the run of whitespace that starts at s[i], before ``n`` (``i`` when s[i] is not
    whitespace): a loop, where a run is a character or two (compiled, a loop in C).

    Args:
        s: the text.
        i: where the run may start.
        n: where the search stops.
    """
    if COMPILED:
        e = ucs1_whitespace_end(s, i, n)  # (a one-byte string: its data read in C)
        if e >= 0:
            return e
    while i < n:
        c = s[i]
        if c != " " and c != "\n" and ((" " < c < _SPACE_OR_CJK_FROM) or c not in WHITESPACE):
            return i
        i += 1
    return i


if not cython.compiled:  # (compiled, Cython drops this: sentences.pxd declares them, in C)
    # ``s.find(c, a, z)`` and ``s.rfind(c, a, z)`` for one character ``c`` (compiled, loops over
    # the string's data, without ``str.find``'s dispatch); ``s[a:z]`` for 0 <= a <= z (compiled,
    # CPython's slicing, which knows an ASCII string's pieces are ASCII).
    find_char = str.find
    rfind_char = str.rfind

    def ucs1_whitespace_end(s: str, i: int, n: int) -> int:
        """``whitespace_end`` for a one-byte string (compiled, in C); interpreted, not called.

        Args:
            s: the text.
            i: where the run may start.
            n: where the search stops.
        """
        return -2

    def word_start(s: str, lim: int, dot: int) -> int:
        """Where the word before the dot at s[dot] starts: after the last space or line break in
        s[lim:dot], else ``lim`` (compiled, in C).

        Args:
            s: the text.
            lim: how far back to look (>= 0).
            dot: the dot's position.
        """
        t = dot
        while t > lim and s[t - 1] != " " and s[t - 1] != "\n":
            t -= 1
        return t

    def ascii_letters(s: str, t: int, z: int) -> bool:
        """s[t:z] holds ASCII letters only (compiled, in C).

        Args:
            s: the text.
            t: where the word starts.
            z: where it ends (excluded).
        """
        word = s[t:z]
        return word.isascii() and word.isalpha()

    def cached_kind(s: str, t: int, dot: int) -> int:
        """What ``_word_kind`` says of s[t:dot], if remembered by the compiled build's own cache
        (sentences.pxd, in C), else -1; interpreted, not called.

        Args:
            s: the text.
            t: where the word starts.
            dot: where it ends (the dot after it).
        """
        return -1

    def cache_kind(s: str, t: int, dot: int, kind: int) -> None:
        """Remember what ``_word_kind`` says of s[t:dot] (compiled, in C); interpreted, not
        called.

        Args:
            s: the text.
            t: where the word starts.
            dot: where it ends (the dot after it).
            kind: what ``_word_kind`` says of it.
        """

    def substring(s: str, a: int, z: int) -> str:
        """``s[a:z]`` (compiled, ``PyUnicode_Substring``).

        Args:
            s: the text.
            a: where the piece starts (>= 0).
            z: where it ends (>= a).
        """
        return s[a:z]


def char_search(s: str, c: str, a: int, z: int, backwards: bool) -> int:
    """``find_char`` (``rfind_char`` when ``backwards``) as a Python function in both builds (the
    compiled ones are C, for the tests to hold them to ``str.find``).

    Args:
        s: the text.
        c: the character looked for.
        a: where the search starts.
        z: where it ends (excluded).
        backwards: the last one, not the first.
    """
    return rfind_char(s, c, a, z) if backwards else find_char(s, c, a, z)


def is_space(c: str) -> bool:
    """True when ``c`` separates words (is in ``WHITESPACE``): most characters are told apart by
    two comparisons (compiled, in C, where a set lookup makes a string of the character).

    Args:
        c: one character.
    """
    return c == " " or c == "\n" or (not (" " < c < _SPACE_OR_CJK_FROM) and c in WHITESPACE)


def is_cjk(c: str) -> bool:
    """True when ``c`` is one of ``_CJK_CHARS`` (kana, CJK ideographs, halfwidth katakana), by
    comparisons (compiled, in C).

    Args:
        c: one character.
    """
    return (
        "\u3040" <= c <= "\u30ff"
        or "\u3400" <= c <= "\u4dbf"
        or "\u4e00" <= c <= "\u9fff"
        or "\uf900" <= c <= "\ufaff"
        or "\uff66" <= c <= "\uff9f"
    )


def visible_word_boundary(s: str, pos: int, end: int) -> int:
    """Where the first match of ``VISIBLE_WORD_BOUNDARY`` in s[pos:end] ends, or -1: the end of a
    run of whitespace with a visible character after it, or a place after a CJK character before
    a visible one that is not CJK punctuation (an empty match: ``s[e - 1]`` is no space). A loop
    (compiled, in C: a search makes a match object and tries both alternatives everywhere).

    Args:
        s: the text.
        pos: where the search starts.
        end: where it stops.
    """
    end = min(end, len(s))
    p = max(pos, 0)
    while p < end:
        c = s[p]
        if is_space(c):  # (a run reaching ``end`` has nothing visible after it: none further)
            e = whitespace_end(s, p, end)
            return e if e < end else -1
        if p > 0 and s[p - 1] >= _CJK_FROM and is_cjk(s[p - 1]) and c not in _CJK_PUNCT:
            return p
        p += 1
    return -1


def is_blank(s: str, a: int, z: int) -> bool:
    """``BLANK.fullmatch(s, a, z) is not None`` (s[a:z] holds only spaces and tabs, the offsets
    clamped as a regex clamps them), a loop (compiled, in C: a match costs a match object).

    Args:
        s: the text.
        a: where the span starts.
        z: where it ends (excluded).
    """
    n = len(s)
    a = min(max(a, 0), n)
    z = min(max(z, 0), n)
    if a > z:
        return False
    while a < z:
        c = s[a]
        if c != " " and c != "\t":
            return False
        a += 1
    return True


def last_line_break(s: str, a: int, z: int) -> int:
    """``s.rfind("\\n", a, z)`` over a short span (a run of whitespace): ``rfind_char``
    (compiled, in C: ``rfind`` boxes its offsets into Python ints).

    Args:
        s: the text.
        a: where the span starts (>= 0).
        z: where it ends (excluded).
    """
    return rfind_char(s, "\n", a, z) if z > 0 else -1


def last_clause_boundary(s: str, a: int, z: int) -> int:
    """End of the last clause boundary in s[a:z] (, ; : … — followed by a space), or -1.

    Args:
        s: the text.
        a: where the search starts.
        z: where it ends (excluded).
    """
    # The last few characters one by one (compiled, a loop in C), from the last back ...
    n = min(z, len(s))
    x = n
    stop = max(a, 0, n - _LOOK_BACK)
    while x > stop:
        x -= 1
        c = s[x]
        if c in ",;:…—–，、；：" or (c == "." and x + 1 < n and s[x + 1] == "."):
            m = _CLAUSE_AT.match(s, x, z)
            if m is not None:
                return m.end()
    if stop <= a:
        return -1
    if s.isascii():  # (a flag of the string: no scan) four marks: , ; : ..
        if _ASCII_CLAUSE_MARK.search(s, a, stop + 1) is None:
            return -1  # the usual case, in one look
        # ... then the marks before ``stop``, the last of them first
        while True:
            x = max(
                s.rfind(",", a, stop),
                s.rfind(";", a, stop),
                s.rfind(":", a, stop),
                s.rfind("..", a, stop + 1),
            )
            if x < 0:
                return -1
            m = _CLAUSE_AT.match(s, x, z)
            if m is not None:
                return m.end()
            stop = x
    # ... then the last of the rest (none from ``stop`` on was one)
    if _ANY_CLAUSE_MARK.search(s, a, stop + 1) is None:
        return -1
    m = _LAST_CLAUSE.match(s, a, z)
    return -1 if m is None else m.end()


# What a line is, for where a chunk may end (``line_kind``): none of the below, a table row, an ATX
# heading, a list item's first line, a code fence's line, or a line whose start has not arrived
# far enough to tell.
PLAIN_LINE, TABLE_LINE, HEADING_LINE, ITEM_LINE, FENCE_LINE, PENDING_LINE = range(6)


def line_kind(s: str, ls: int, n: int) -> int:
    """What the line starting at s[ls] is, as far as s[:n] shows it.

    ``TABLE_LINE``: its first visible character is ``|``. ``HEADING_LINE``: one to six ``#``
    then a space, a tab or the line's end. ``ITEM_LINE`` (a list item's first line): ``-``,
    ``*``, ``+``, or one to nine digits and ``.`` or ``)``, then a space, a tab or the line's end.
    ``FENCE_LINE``: three or more backticks or tildes (a code fence opening or closing). Leading
    spaces and tabs are passed over. A start cut short by ``n`` is taken for what it may still
    become: ``"#"`` is a heading, ``"12"`` may be a list item and ``"``"`` a fence
    (``PENDING_LINE``), a line of blanks may be anything (``PENDING_LINE``). Otherwise
    ``PLAIN_LINE``.

    Args:
        s: the text.
        ls: where the line starts.
        n: where the text known so far ends.
    """
    i = ls
    while i < n and (s[i] == " " or s[i] == "\t"):
        i += 1
    if i == n:
        return PENDING_LINE
    c = s[i]
    if c == "|":
        return TABLE_LINE
    r = i + 1
    if c == "#":
        while r < n and s[r] == "#":
            r += 1
        if r - i <= 6 and (r == n or s[r] in " \t\r\n"):
            return HEADING_LINE
        return PLAIN_LINE
    if c == "-" or c == "*" or c == "+":
        return ITEM_LINE if r == n or s[r] in " \t\r\n" else PLAIN_LINE
    if c == "`" or c == "~":
        while r < n and s[r] == c:
            r += 1
        if r - i >= 3:
            return FENCE_LINE
        return PENDING_LINE if r == n else PLAIN_LINE
    if "0" <= c <= "9":
        while r < n and "0" <= s[r] <= "9":
            r += 1
        if r - i > 9:
            return PLAIN_LINE
        if r == n:
            return PENDING_LINE
        if s[r] == "." or s[r] == ")":
            r += 1
            if r == n or s[r] in " \t\r\n":
                return ITEM_LINE
    return PLAIN_LINE


def glued(s: str, x: int) -> bool:
    """True when s[x-1] and s[x] belong to one grapheme (or one CRLF) and must not be cut apart.

    Args:
        s: the text.
        x: the cut position looked at.
    """
    if x <= 0 or x >= len(s):
        return False
    c, p = s[x], s[x - 1]
    o = ord(c)
    return (
        unicodedata.combining(c) != 0
        or unicodedata.category(c) in ("Mn", "Me", "Mc")
        or c == "\u200d"
        or p == "\u200d"
        or 0xFE00 <= o <= 0xFE0F  # variation selectors
        or 0x1F3FB <= o <= 0x1F3FF  # skin tone modifiers
        or 0xE0020 <= o <= 0xE007F  # tag characters (flag sequences)
        or (p == "\r" and c == "\n")
    )


def ends_sentence(
    s: str, run: int, run_end: int, closers_end: int, space_end: int, end: int, line_start: int
) -> bool | None:
    """Does the terminator run s[run:run_end] end a sentence?

    Args:
        s: the text.
        run: where the run of terminators starts.
        run_end: where it ends.
        closers_end: where the closing quotes and brackets after it end.
        space_end: where the whitespace after those ends.
        end: where the text known so far ends.
        line_start: where the line holding the run starts (-1 when it is no longer in ``s``).

    Returns:
        Whether it ends a sentence; ``None`` when the next word decides and has not fully
        arrived.
    """
    if (
        run_end == run + 1
        and space_end == closers_end + 1
        and s[run] == "."
        and s[closers_end] != "\n"
    ):
        return dot_ends(s, run, s[space_end], False, line_start)  # "word. Next": the usual case
    if run_end == run + 1 and s[run] in ".!?":  # one of them alone: the rules below, in short
        if space_end == closers_end:
            return _glued_word_ends(s, run, run_end, closers_end, end)
        newline = last_line_break(s, closers_end, space_end) >= 0
        if s[run] == ".":
            return dot_ends(s, run, s[space_end], newline, line_start)
        return newline or not s[space_end].islower()
    terms = s[run:run_end]
    cjk = not CJK_TERMINATOR_SET.isdisjoint(terms)
    if space_end == closers_end:  # no whitespace after it
        if cjk:
            return not (closers_end > run_end and s[space_end] in _QUOTE_CONTINUERS)
        return _glued_word_ends(s, run, run_end, closers_end, end)
    newline = last_line_break(s, closers_end, space_end) >= 0
    if not newline and ("…" in terms or terms.count(".") >= 2):
        return False  # an ellipsis
    if cjk:
        return True
    following = s[space_end]
    if terms == ".":
        return dot_ends(s, run, following, newline, line_start)
    if newline:
        return True
    return not following.islower()


def _glued_word_ends(s: str, run: int, run_end: int, closers_end: int, end: int) -> bool | None:
    """ "one.Two": a lowercase word, a terminator, a capitalised word, no space between."""
    if closers_end != run_end or s[run:run_end] not in (".", "!", "?"):
        return False
    t = run
    while t > 0 and s[t - 1].isalpha():
        t -= 1
    word = s[t:run]
    if len(word) < 2 or not (word.isascii() and word.islower()):
        return False
    if t > 0 and s[t - 1] not in WHITESPACE_SET and s[t - 1] not in OPENERS:
        return False
    m = _CAP_WORD.match(s, closers_end, end)
    if m is None:
        return None if _CAP_PREFIX.fullmatch(s, closers_end, end) else False
    e = m.end()
    if e == end:
        return None
    after = s[e]
    if after in WHITESPACE_SET or after in _AFTER_GLUED_WORD:
        return True
    if after == ".":
        if e + 1 == end:
            return None
        return s[e + 1] in WHITESPACE_SET
    return False


def dot_ends(s: str, dot: int, following: str, newline: bool, line_start: int) -> bool:
    """Does a single dot end a sentence? (Abbreviations, initials, list markers.)

    Args:
        s: the text.
        dot: the dot's position.
        following: the first character of the next word.
        newline: whether a line break follows the dot.
        line_start: where the dot's line starts (-1 when it is no longer in ``s``).
    """
    lim = max(dot - _WORD_LOOKBACK, 0)
    t = word_start(s, lim, dot)  # (after a space or a line break)
    if dot - t >= _PLAIN_WORD_FROM and ascii_letters(s, t, dot):
        kind = _NOT_LOWER  # a plain word, no abbreviation, too long for a list marker
    else:
        kind = cached_kind(s, t, dot) if COMPILED else -1  # (compiled: by its characters, in C)
        if kind < 0:
            word = s[t:dot]
            kind = _WORD_KINDS.get(word, -1)
            if kind < 0:
                kind = _word_kind(word)
            if COMPILED:
                cache_kind(s, t, dot, kind)
    if kind >= _SPACED:
        if kind == _NO_WORD:
            return True
        t = dot  # another kind of space in it: look closer
        while t > lim and s[t - 1] not in WHITESPACE_SET:
            t -= 1
        word = s[t:dot]
        kind = _WORD_KINDS.get(word, -1)
        if kind < 0:
            kind = _word_kind(word)
        if kind == _NO_WORD:
            return True
    if kind & _LISTY and 0 <= line_start <= t and is_blank(s, line_start, t):
        return False  # "1. ", "a. ", "iv. " at the start of a line
    if newline:
        return True
    kind &= _RULE
    if kind == _NOT_LOWER:
        return not following.islower()
    if kind == _UPPER:
        return following.isupper()
    return False


# What the word before a dot says, once known (``_word_kind``): which rule the character after
# the space applies, whether it may be a list marker; or that it holds a space other than " " and
# "\n" (look closer), or nothing but opening quotes and brackets (no word: a sentence end).
_NEVER, _UPPER, _NOT_LOWER = 0, 1, 2
_RULE = 3
_LISTY = 4
_SPACED = 8
_NO_WORD = 16
_WORD_KINDS: dict[str, int] = {}
_WORD_KINDS_MAX = 4096  # a cache of the words seen: cleared when it grows past this
# A word of ASCII letters this long is none of the abbreviations and no list marker: what
# ``_word_kind`` says of it is ``_NOT_LOWER`` (``dot_ends`` needs no lookup).
_PLAIN_WORD_FROM = max(6, *map(len, _NEVER_ENDS | _ENDS_BEFORE_CAPITAL)) + 1


def _word_kind(word: str) -> int:
    """What a dot after ``word`` depends on (as ``dot_ends`` applies it), remembered."""
    if not WHITESPACE_SET.isdisjoint(word):
        kind = _SPACED
    else:
        tok = word.lstrip(OPENERS)
        kind = _NO_WORD if not tok else _rule(tok)
    if len(_WORD_KINDS) >= _WORD_KINDS_MAX:
        _WORD_KINDS.clear()
    _WORD_KINDS[word] = kind
    return kind


def _rule(tok: str) -> int:
    """The rule for a dot after the word ``tok``, opening quotes and brackets stripped."""
    listy = (tok[0] in _LIST_FIRST or len(tok) == 1) and _LIST_TOKEN.fullmatch(tok) is not None
    if len(tok) == 1:
        rule = _NEVER if tok.isalpha() else _NOT_LOWER  # "J." is an initial
    else:
        low = tok.lower()
        if low in _NEVER_ENDS:
            rule = _NEVER
        elif low in _ENDS_BEFORE_CAPITAL or ("." in tok and _DOTTED.fullmatch(tok)):
            rule = _UPPER
        else:
            rule = _NOT_LOWER
    return rule | (_LISTY if listy else 0)
