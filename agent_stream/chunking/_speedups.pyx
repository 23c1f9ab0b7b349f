# cython: language_level=3, boundscheck=True, wraparound=True, cdivision=False
"""The compiled twin of ``agent_stream.chunking.chunker.TextChunker``: the same machine, call for
call, at C speed.

Why one long module: it is a line-by-line port of the five pure-Python modules of
``agent_stream/chunking`` (buffer, scanner, sentences, policy, chunker; each function keeps its
name there, prefixed by its module), and tests hold it to them call by call. The pure-Python
modules are the reference: change them first, then this.

Offsets are absolute, as in the pure modules; ``s`` is the buffered text from ``text_start``.
Rare paths reuse the pure module's functions (the word-kind cache of ``sentences`` and its
grapheme rule for non-ASCII text), so the two agree by construction there.
"""

from cpython.unicode cimport PyUnicode_Substring
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memmove

from agent_stream.chunking import sentences as _sentences
from agent_stream.chunking.chunker import check_options

cdef extern from "Python.h":
    Py_ssize_t PyUnicode_FindChar(object s, Py_UCS4 ch, Py_ssize_t start, Py_ssize_t end,
                                  int direction) except -2
    Py_ssize_t PyUnicode_Find(object s, object sub, Py_ssize_t start, Py_ssize_t end,
                              int direction) except -2
    Py_ssize_t PyUnicode_Count(object s, object sub, Py_ssize_t start, Py_ssize_t end) except -1
    bint PyUnicode_IS_ASCII(object s)
    str PyUnicode_FromObject(object s)
    int PyUnicode_KIND(object s)
    void* PyUnicode_DATA(object s)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)
    bint Py_UNICODE_ISLOWER(Py_UCS4 ch)
    bint Py_UNICODE_ISUPPER(Py_UCS4 ch)
    bint Py_UNICODE_ISALPHA(Py_UCS4 ch)
    bint Py_UNICODE_ISSPACE(Py_UCS4 ch)

__all__ = ["TextChunker"]

cdef dict _WORD_KINDS = _sentences._WORD_KINDS
cdef object _word_kind = _sentences._word_kind
cdef object _glued = _sentences.glued

# Boundary kinds, best first (scanner).
cdef enum: PARAGRAPH = 0
cdef enum: SENTENCE = 1
cdef enum: LINE = 2
cdef enum: CLAUSE = 3
cdef enum: WORD = 4
cdef enum: INSIDE_WORD = 5
# What a waiting scanner waits for.
cdef enum: AFTER_TERMINATOR = 0
cdef enum: AFTER_NEWLINE = 1
cdef enum: AFTER_BACKTICKS = 2
cdef enum: NEXT_WORD = 3
cdef enum: FENCE_LINE_MAX = 256
cdef enum: FENCE_MIN = 3
cdef enum: WINDOW_SLACK = 64
cdef enum: CONTEXT = 64
cdef enum: TRIM_AFTER = 512
cdef enum: FORGET_AFTER = 64
cdef enum: BACKTRACK = 16
cdef enum: WORD_LOOKBACK = 64
# Word kinds (sentences._word_kind).
cdef enum: K_NEVER = 0
cdef enum: K_UPPER = 1
cdef enum: K_NOT_LOWER = 2
cdef enum: K_RULE = 3
cdef enum: K_LISTY = 4
cdef enum: K_SPACED = 8
cdef enum: K_NO_WORD = 16
# What feed searches each delta for.
cdef enum: T_EVENT = 0
cdef enum: T_CODE = 1
cdef enum: T_FENCE = 2
# "None" for a cut position (every real one is >= 0).
cdef enum: NONE = -1
# Sizes past this act as this (see __init__).
cdef Py_ssize_t SIZE_CAP = 1 << 60
# An ends_sentence answer of None (the next word decides).
cdef enum: UNDECIDED = -1


# ---------------------------------------------------------------- character classes (sentences)

cdef inline bint is_ws(Py_UCS4 c) noexcept:
    return c in u" \t\n\r\x0c\x0b\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009\u200a\u2028\u2029\u205f\u3000"

cdef inline bint is_term(Py_UCS4 c) noexcept:
    return c in u".!?…‼⁇⁈⁉؟।॥。！？｡"

cdef inline bint is_cjk_term(Py_UCS4 c) noexcept:
    return c in u"。！？｡"

cdef inline bint is_closer(Py_UCS4 c) noexcept:
    return c in u"\"'”’»›)]}」』）】〕〉》〗〙〛*_"

cdef inline bint is_opener(Py_UCS4 c) noexcept:
    return c in u"\"'“‘«‹([{「『（【〔〈《*_"

cdef inline bint may_follow_end(Py_UCS4 c) noexcept:
    return is_ws(c) or is_closer(c) or is_term(c) or (u'A' <= c <= u'Z')

cdef inline bint is_cjk(Py_UCS4 c) noexcept:
    return (0x3040 <= c <= 0x30ff or 0x3400 <= c <= 0x4dbf or 0x4e00 <= c <= 0x9fff
            or 0xf900 <= c <= 0xfaff or 0xff66 <= c <= 0xff9f)

cdef inline bint is_cjk_punct(Py_UCS4 c) noexcept:
    return c in u"。！？｡，、；：…ー・」』）】〕〉》〗〙〛”’"

cdef inline bint is_lower_az(Py_UCS4 c) noexcept:
    return u'a' <= c <= u'z'

cdef inline bint is_upper_az(Py_UCS4 c) noexcept:
    return u'A' <= c <= u'Z'


def _classes(Py_ssize_t upto):
    """The character classes, as strings of every code point below ``upto`` (for tests)."""
    names = ("whitespace", "terminators", "cjk_terminators", "closers", "openers",
             "may_follow_end", "cjk", "cjk_punct")
    found = {name: [] for name in names}
    cdef Py_ssize_t o
    cdef Py_UCS4 c
    for o in range(upto):
        if 0xD800 <= o <= 0xDFFF:
            continue
        c = <Py_UCS4>o
        for name, yes in zip(names, (is_ws(c), is_term(c), is_cjk_term(c), is_closer(c),
                                     is_opener(c), may_follow_end(c), is_cjk(c),
                                     is_cjk_punct(c))):
            if yes:
                found[name].append(chr(o))
    return {name: "".join(chars) for name, chars in found.items()}


# The one-byte characters ``scan`` stops at (a terminator, a line break, a backtick or tilde;
# every other terminator is beyond one byte).
cdef unsigned char _EVENT1[256]
for _o in range(256):
    _EVENT1[_o] = chr(_o) in ".!?\n`~"


# ---------------------------------------------------------------- text helpers

cdef inline Py_ssize_t clamp_len(str s, Py_ssize_t i) noexcept:
    """A regex pos/endpos as ``re`` takes it: clamped to [0, len(s)]."""
    cdef Py_ssize_t n = len(s)
    if i < 0:
        return 0
    return n if i > n else i


cdef inline bint blank_fullmatch(str s, Py_ssize_t a, Py_ssize_t z):
    """``BLANK.fullmatch(s, a, z) is not None``: [ \\t]* over all of s[a:z]."""
    a = clamp_len(s, a)
    z = clamp_len(s, z)
    if z < a:
        return False
    cdef Py_ssize_t i
    cdef Py_UCS4 c
    for i in range(a, z):
        c = s[i]
        if c != u' ' and c != u'\t':
            return False
    return True


cdef inline Py_ssize_t ws_run_end(str s, Py_ssize_t i, Py_ssize_t n):
    """``WHITESPACE_RUN.match(s, i, n).end()`` where s[i] is whitespace."""
    i += 1
    while i < n and is_ws(s[i]):
        i += 1
    return i


cdef bint strip_empty(str s, Py_ssize_t a, Py_ssize_t z):
    """``not s[a:z].strip(" \\t\\r")``."""
    cdef Py_ssize_t n = len(s)
    if a < 0:
        a = max(a + n, 0)
    if z < 0:
        z = max(z + n, 0)
    if z > n:
        z = n
    cdef Py_ssize_t i
    cdef Py_UCS4 c
    for i in range(a, z):
        c = s[i]
        if c != u' ' and c != u'\t' and c != u'\r':
            return False
    return True


# ---------------------------------------------------------------- sentences

cdef inline int word_kind_of(str word) except -1:
    kind = _WORD_KINDS.get(word)
    if kind is None:
        kind = _word_kind(word)
    return <int>kind


cdef bint dot_ends(str s, Py_ssize_t dot, Py_UCS4 following, bint newline,
                   Py_ssize_t line_start) except -1:
    """``sentences.dot_ends``."""
    cdef Py_ssize_t lim = max(dot - WORD_LOOKBACK, 0)
    cdef Py_ssize_t t = PyUnicode_FindChar(s, u' ', lim, dot, -1) + 1
    if t == 0:
        t = lim
    cdef Py_ssize_t x = PyUnicode_FindChar(s, u'\n', t, dot, -1)
    if x >= 0:
        t = x + 1
    cdef int kind = word_kind_of(s[t:dot])
    if kind >= K_SPACED:
        if kind == K_NO_WORD:
            return True
        t = dot
        while t > lim and not is_ws(s[t - 1]):
            t -= 1
        kind = word_kind_of(s[t:dot])
        if kind == K_NO_WORD:
            return True
    if kind & K_LISTY and 0 <= line_start <= t and blank_fullmatch(s, line_start, t):
        return False
    if newline:
        return True
    kind &= K_RULE
    if kind == K_NOT_LOWER:
        return not Py_UNICODE_ISLOWER(following)
    if kind == K_UPPER:
        return Py_UNICODE_ISUPPER(following)
    return False


cdef int glued_word_ends(str s, Py_ssize_t run, Py_ssize_t run_end, Py_ssize_t closers_end,
                         Py_ssize_t end) except -2:
    """``sentences._glued_word_ends``: 1, 0, or UNDECIDED."""
    if closers_end != run_end or run_end != run + 1 or s[run] not in u".!?":
        return 0
    cdef Py_ssize_t t = run
    while t > 0 and Py_UNICODE_ISALPHA(s[t - 1]):
        t -= 1
    if run - t < 2:
        return 0
    cdef Py_ssize_t q
    for q in range(t, run):
        if not is_lower_az(s[q]):
            return 0
    cdef Py_UCS4 before
    if t > 0:
        before = s[t - 1]
        if not is_ws(before) and not is_opener(before):
            return 0
    # _CAP_WORD ([A-Z][a-z]+) at closers_end, the text ending at ``end``
    end = clamp_len(s, end)
    cdef Py_ssize_t e = closers_end
    if e >= end or not is_upper_az(s[e]):
        return 0  # neither _CAP_WORD nor _CAP_PREFIX
    e += 1
    while e < end and is_lower_az(s[e]):
        e += 1
    if e == closers_end + 1:  # no lowercase letter: _CAP_PREFIX fullmatch only if it ends there
        return UNDECIDED if e == end else 0
    if e == end:
        return UNDECIDED
    cdef Py_UCS4 after = s[e]
    if is_ws(after) or after in u",;:!?\"')]":
        return 1
    if after == u'.':
        if e + 1 == end:
            return UNDECIDED
        return 1 if is_ws(s[e + 1]) else 0
    return 0


cdef int ends_sentence(str s, Py_ssize_t run, Py_ssize_t run_end, Py_ssize_t closers_end,
                       Py_ssize_t space_end, Py_ssize_t end, Py_ssize_t line_start) except -2:
    """``sentences.ends_sentence``: 1, 0, or UNDECIDED."""
    if (
        run_end == run + 1
        and space_end == closers_end + 1
        and s[run] == u'.'
        and s[closers_end] != u'\n'
    ):
        return dot_ends(s, run, s[space_end], False, line_start)
    cdef bint cjk = False
    cdef bint ellipsis = False
    cdef Py_ssize_t dots = 0
    cdef Py_ssize_t q
    cdef Py_UCS4 c
    for q in range(run, run_end):
        c = s[q]
        if is_cjk_term(c):
            cjk = True
        elif c == u'…':
            ellipsis = True
        elif c == u'.':
            dots += 1
    if space_end == closers_end:
        if cjk:
            return not (closers_end > run_end and s[space_end] in u"とっ")
        return glued_word_ends(s, run, run_end, closers_end, end)
    cdef bint newline = PyUnicode_FindChar(s, u'\n', closers_end, space_end, 1) >= 0
    if not newline and (ellipsis or dots >= 2):
        return 0
    if cjk:
        return 1
    cdef Py_UCS4 following = s[space_end]
    if run_end == run + 1 and dots == 1:
        return dot_ends(s, run, following, newline, line_start)
    if newline:
        return 1
    return not Py_UNICODE_ISLOWER(following)


cdef Py_ssize_t last_ws(str s, Py_ssize_t a, Py_ssize_t z):
    """The last whitespace character in s[a:z] (as ``re`` clamps them), or -1."""
    a = clamp_len(s, a)
    z = clamp_len(s, z)
    cdef Py_ssize_t i = z - 1
    while i >= a:
        if is_ws(s[i]):
            return i
        i -= 1
    return -1


cdef Py_ssize_t last_word_boundary(str s, Py_ssize_t a, Py_ssize_t z):
    """``sentences.last_word_boundary``."""
    cdef Py_ssize_t e = last_ws(s, a, z)
    if e >= 0:
        e += 1
    if PyUnicode_IS_ASCII(s):
        return e
    cdef Py_ssize_t n = len(s)
    cdef Py_ssize_t p0 = max(a, e)
    cdef Py_ssize_t hi = min(z + 1, n)  # s[p0:z + 1]
    cdef Py_ssize_t q
    cdef Py_UCS4 c
    cdef bint ascii = True
    if p0 < hi:
        for q in range(p0, hi):
            if s[q] >= 128:
                ascii = False
                break
    if ascii:
        return e
    # _LAST_CJK.match(s, p0, hi): the last CJK character followed by one that is neither
    # whitespace nor CJK punctuation
    hi = clamp_len(s, hi)
    p0 = clamp_len(s, p0)
    q = hi - 2
    while q >= p0:
        if is_cjk(s[q]):
            c = s[q + 1]
            if not is_ws(c) and not is_cjk_punct(c):
                if q + 1 > e:
                    e = q + 1
                break
        q -= 1
    return e


cdef Py_ssize_t clause_at(str s, Py_ssize_t p, Py_ssize_t z):
    """``_CLAUSE_AT.match(s, p, z).end()``, or -1 (p < z)."""
    cdef Py_UCS4 c = s[p]
    cdef Py_ssize_t q = -1
    if c in u",;:…—–":
        q = p + 1
    elif c == u'.' and p + 1 < z and s[p + 1] == u'.':
        q = p + 2
        while q < z and s[q] == u'.':
            q += 1
    if q >= 0:
        while q < z and s[q] in u"\"'”’)]":
            q += 1
        if q < z and is_ws(s[q]):
            return ws_run_end(s, q, z)
    if c in u"，、；：…—":
        q = p + 1
        while q < z and s[q] in u"，、；：…—":
            q += 1
        while q < z and s[q] in u"」』）”’":
            q += 1
        return q
    return -1


cdef Py_ssize_t last_clause_boundary(str s, Py_ssize_t a, Py_ssize_t z):
    """``sentences.last_clause_boundary`` (whose first search only spares Python steps: with
    no clause mark the loops below find none either)."""
    cdef Py_ssize_t x, y, e, q
    if PyUnicode_IS_ASCII(s):  # four marks, the last of them first
        while True:
            x = PyUnicode_FindChar(s, u',', a, z, -1)
            y = PyUnicode_FindChar(s, u';', a, z, -1)
            if y > x:
                x = y
            y = PyUnicode_FindChar(s, u':', a, z, -1)
            if y > x:
                x = y
            y = PyUnicode_Find(s, u"..", a, z, -1)
            if y > x:
                x = y
            if x < 0:
                return -1
            e = clause_at(s, x, clamp_len(s, z))
            if e >= 0:
                return e
            z = x
    # _LAST_CLAUSE.match(s, a, z): the last place a clause boundary starts
    cdef Py_ssize_t ca = clamp_len(s, a)
    q = clamp_len(s, z) - 1
    while q >= ca:
        if s[q] in u",;:.…—–，、；：":
            e = clause_at(s, q, clamp_len(s, z))
            if e >= 0:
                return e
        q -= 1
    return -1


cdef bint glued(str s, Py_ssize_t x) except -1:
    """``sentences.glued``."""
    if x <= 0 or x >= len(s):
        return False
    cdef Py_UCS4 c = s[x]
    if c >= 128:
        return _glued(s, x)
    cdef Py_UCS4 p = s[x - 1]
    return p == 0x200d or (p == u'\r' and c == u'\n')


cdef Py_ssize_t visible_word_boundary(str s, Py_ssize_t pos, Py_ssize_t end,
                                      Py_ssize_t* start):
    """``VISIBLE_WORD_BOUNDARY.search(s, pos, end)``: its end (its start in ``start``), or -1."""
    pos = clamp_len(s, pos)
    end = clamp_len(s, end)
    cdef Py_ssize_t p = pos
    cdef Py_ssize_t q
    cdef Py_UCS4 c
    while p <= end:
        if p < end:
            c = s[p]
            if is_ws(c):
                q = ws_run_end(s, p, end)
                if q < end:
                    start[0] = p
                    return q
                return -1  # whitespace to the end: nothing after it
            if p >= 1 and is_cjk(s[p - 1]) and not is_cjk_punct(c):
                start[0] = p
                return p
        p += 1
    return -1


# ---------------------------------------------------------------- the machine

cdef struct Cand:
    Py_ssize_t reach
    Py_ssize_t cut
    int kind

cdef struct Region:
    Py_ssize_t start
    Py_ssize_t end  # -1 while open
    bint fenced


cdef class TextChunker:
    """Buffers text deltas and releases chunks at natural boundaries (compiled; see
    ``agent_stream.chunking.chunker.TextChunker``, whose contract this keeps exactly)."""

    # options: as given (for the properties), and as used (sizes capped at SIZE_CAP)
    cdef object _min_given, _max_given, _first_chars
    cdef Py_ssize_t _min_chars, _max_chars
    cdef double _max_delay
    cdef Py_ssize_t first_n  # first_chars, -1: None
    # chunker
    cdef Py_ssize_t held, deadline_for, look_at, quiet_below
    cdef double deadline
    cdef int trigger
    cdef Py_UCS4 trigger_char
    # buffer
    cdef list deltas
    cdef double* arrivals
    cdef Py_ssize_t n_arrivals, cap_arrivals
    cdef Py_ssize_t first_delta, first_delta_start, joined
    cdef str text
    cdef Py_ssize_t text_start, start, end
    # scanner
    cdef Py_ssize_t scanned_to, window_end, line_start
    cdef bint waiting
    cdef int waiting_for
    cdef Py_UCS4 fence_char  # 0: no open fence
    cdef Py_ssize_t fence_len
    cdef Py_ssize_t code_ticks  # -1: no open code span
    cdef Py_ssize_t not_code_at, fence_closed_at
    cdef Region* regions
    cdef Py_ssize_t n_regions, cap_regions
    cdef Cand* cands
    cdef Py_ssize_t n_cands, cap_cands
    # policy
    cdef bint early_first

    def __cinit__(self):
        self.arrivals = NULL
        self.regions = NULL
        self.cands = NULL

    def __dealloc__(self):
        free(self.arrivals)
        free(self.regions)
        free(self.cands)

    def __init__(self, min_chars=40, max_chars=400, max_delay=0.25, first_chars=20):
        low, high, delay, first = check_options(min_chars, max_chars, max_delay, first_chars)
        self._min_given = low
        self._max_given = high
        self._first_chars = first
        # No text is ever this long, so a larger size acts as this one; below it, offset sums
        # (start + 2 * max_chars + ...) stay far inside a machine word.
        self._min_chars = min(low, SIZE_CAP)
        self._max_chars = min(high, SIZE_CAP)
        self._max_delay = delay
        self.first_n = -1 if first is None else min(first, SIZE_CAP)
        self.start_message()

    # ------------------------------------------------------------ public API

    def feed(self, object delta, double now):
        """Add a delta that arrived at ``now`` (seconds); return the chunks now complete."""
        cdef str piece
        if type(delta) is str:
            piece = <str>delta
        elif isinstance(delta, str):
            piece = PyUnicode_FromObject(delta)  # a str subclass: its characters, as a str
        else:
            raise TypeError(f"delta must be a str, not {type(delta).__name__}")
        cdef Py_ssize_t n = len(piece)
        self.deltas.append(piece)
        self.push_arrival(now)
        cdef Py_ssize_t held = self.held + n
        self.held = held
        if held > self.look_at or now >= self.deadline:
            if held == n and held:
                if self.start_clock(now):
                    return self.advance(now)
            else:
                if (
                    self.waiting
                    and self.waiting_for <= AFTER_NEWLINE
                    and now < self.deadline
                    and held <= self._max_chars
                    and all_space(piece)
                ):
                    return []
                return self.advance(now)
        cdef Py_ssize_t m = self.trigger_at(piece)
        if m < 0:
            return []
        if held < self.quiet_below and u'`' not in piece and u'~' not in piece:
            self.look_at = self._min_chars - 1
            return []
        if m + 1 == n and self.fence_char == 0:
            self.look_at = -1
            self.waiting = True
            self.waiting_for = AFTER_BACKTICKS if piece[n - 1] in u"`~" else AFTER_TERMINATOR
            return []
        return self.advance(now)

    def poll(self, double now):
        """Release what has waited ``max_delay``, cut at the best boundary available."""
        if now < self.deadline:
            return []
        return self.advance(now)

    def flush(self):
        """End of the message: return everything still buffered and start afresh."""
        self.join()
        out = [self.slice(self.start, self.end)] if self.end > self.start else []
        self.start_message()
        return out

    @property
    def next_deadline(self):
        """When to call ``poll`` (see the pure-Python chunker); None: no deadline."""
        return None if self.deadline == INFINITY else self.deadline

    @property
    def buffered(self):
        """Characters held, not yet released."""
        return self.held

    @property
    def min_chars(self):
        """The minimum chunk length (sentence and paragraph ends)."""
        return self._min_given

    @property
    def max_chars(self):
        """The maximum chunk length."""
        return self._max_given

    @property
    def max_delay(self):
        """The longest a character waits when ``poll`` is called on time, in seconds."""
        return self._max_delay

    @property
    def first_chars(self):
        """Length after which the first chunk of a message is released at a word boundary."""
        return self._first_chars

    def __repr__(self):
        return (
            f"TextChunker(min_chars={self._min_given}, max_chars={self._max_given}, "
            f"max_delay={self._max_delay}, first_chars={self._first_chars})"
        )

    # ------------------------------------------------------------ chunker

    cdef Py_ssize_t trigger_at(self, str delta) noexcept:
        """Where the search feed runs on a delta matches first, or -1."""
        cdef int kind = PyUnicode_KIND(delta)
        cdef void* data = PyUnicode_DATA(delta)
        cdef Py_ssize_t n = len(delta)
        cdef Py_ssize_t i
        cdef Py_UCS4 c
        cdef int mode = self.trigger
        for i in range(n):
            c = PyUnicode_READ(kind, data, i)
            if mode == T_EVENT:
                if c < 128:
                    if c == u'.' or c == u'!' or c == u'?' or c == u'\n' or c == u'`' or c == u'~':
                        return i
                elif is_term(c):
                    return i
            elif mode == T_CODE:
                if c == u'`' or c == u'\n':
                    return i
            elif c == self.trigger_char:
                return i
        return -1

    cdef void start_message(self) except *:
        """Fresh machines for a new message."""
        self.deltas = []
        self.n_arrivals = 0
        self.first_delta = 0
        self.first_delta_start = 0
        self.joined = 0
        self.text = u""
        self.text_start = 0
        self.start = 0
        self.end = 0
        self.scanned_to = 0
        self.window_end = 0
        self.waiting = False
        self.waiting_for = AFTER_TERMINATOR
        self.line_start = 0
        self.fence_char = 0
        self.fence_len = 0
        self.code_ticks = -1
        self.not_code_at = -1
        self.fence_closed_at = -1
        self.n_regions = 0
        self.n_cands = 0
        self.early_first = self.first_n >= 0
        self.held = 0
        self.deadline = INFINITY
        self.deadline_for = -1
        self.look_at = -1
        self.quiet_below = 0
        self.set_trigger()

    cdef void set_trigger(self) noexcept:
        """``BoundaryScanner.trigger``, remembered until the next ``arm``."""
        if self.fence_char != 0:
            self.trigger = T_FENCE
            self.trigger_char = self.fence_char
        elif self.code_ticks >= 0:
            self.trigger = T_CODE
        else:
            self.trigger = T_EVENT

    cdef list advance(self, double now):
        """Look at the new text: release what its boundaries, max_chars and the time allow."""
        self.join()
        cdef list out = []
        cdef Py_ssize_t b = self.start
        cdef Py_ssize_t n_cands, stop, held
        if self.end > b:
            n_cands = self.n_cands
            while True:
                stop = min(self.end, self.start + 2 * self._max_chars + WINDOW_SLACK)
                if self.scanned_to < stop:
                    self.scan(stop, False)
                self.window_end = stop
                held = self.end - self.start
                if (
                    (self.n_cands != n_cands and held > self._min_chars)
                    or held > self._max_chars
                    or self.early_first
                ):
                    self.release(out)
                if stop == self.end:
                    break
                n_cands = -1
            if self.start == b and self.fence_char == 0 and self.deadline_for == b:
                self.held = self.end - b
            elif not self.update_deadline():
                return out
            if now >= self.deadline:
                self.time_cut(now, out)
                self.settle()
            else:
                self.arm()
        else:
            self.settle()
        return out

    cdef void settle(self) except *:
        if self.update_deadline():
            self.arm()

    cdef bint update_deadline(self) except -1:
        """Recompute what is held and the deadline; False when nothing is held."""
        cdef Py_ssize_t b = self.start
        cdef Py_ssize_t held = self.end - b
        self.held = held
        if held == 0:
            self.emptied()
            self.deadline = INFINITY
            self.deadline_for = -1
            self.look_at = -1
            self.quiet_below = 0
            return False
        if (
            self.fence_char != 0
            and self.open_region().start == b
            and not self.fence_may_close()
        ):
            self.deadline = INFINITY
            self.deadline_for = -1
        elif b != self.deadline_for:
            self.deadline = self.arrival(self.delta_at(b)) + self._max_delay
            self.deadline_for = b
        return True

    cdef bint start_clock(self, double now) except -1:
        self.deadline = now + self._max_delay
        self.deadline_for = self.start
        self.arm()
        return self.held > self.look_at or now >= self.deadline

    cdef void arm(self) noexcept:
        self.set_trigger()
        cdef bint early_first = self.early_first
        cdef bint plain = self.fence_char == 0 and self.code_ticks < 0 and not early_first
        self.quiet_below = self._min_chars if plain else 0
        if self.waiting:
            self.look_at = -1
        elif early_first and self.first_n >= 0:
            self.look_at = min(self.first_n - 1, self._max_chars)
        else:
            self.look_at = self._max_chars

    # ------------------------------------------------------------ buffer

    cdef int push_arrival(self, double now) except -1:
        cdef Py_ssize_t cap
        cdef double* grown
        if self.n_arrivals == self.cap_arrivals:
            cap = 64 if self.cap_arrivals == 0 else 2 * self.cap_arrivals
            grown = <double*>realloc(self.arrivals, cap * sizeof(double))
            if grown == NULL:
                raise MemoryError()
            self.arrivals = grown
            self.cap_arrivals = cap
        self.arrivals[self.n_arrivals] = now
        self.n_arrivals += 1
        return 0

    cdef void join(self) except *:
        """Append the deltas fed since the last look to ``text``."""
        cdef list deltas = self.deltas
        cdef Py_ssize_t j = self.joined
        cdef Py_ssize_t nd = len(deltas)
        if j == nd:
            return
        cdef str new = deltas[j] if j + 1 == nd else u"".join(deltas[j:])
        self.joined = nd
        self.end += len(new)
        cdef Py_ssize_t drop = self.start - CONTEXT - self.text_start
        if drop > TRIM_AFTER:
            self.text = self.text[drop:] + new
            self.text_start += drop
        else:
            self.text = self.text + new

    cdef inline str slice(self, Py_ssize_t a, Py_ssize_t z):
        cdef Py_ssize_t s0 = self.text_start
        return self.text[a - s0 : z - s0]

    cdef void emptied(self) noexcept:
        del self.deltas[:]
        self.n_arrivals = 0
        self.first_delta = 0
        self.joined = 0
        self.first_delta_start = self.start

    cdef Py_ssize_t overdue_end(self, double now) except -2:
        """The end of the last joined delta that has waited ``max_delay`` by ``now``, or -1."""
        cdef Py_ssize_t i = self.delta_at(self.start)
        cdef double* arrivals = self.arrivals
        cdef Py_ssize_t joined = self.joined
        cdef double max_delay = self._max_delay
        cdef Py_ssize_t e = i
        cdef Py_ssize_t q
        cdef double total, least
        while e < joined and arrivals[e] + max_delay <= now:
            e += 1
        if e + 1 < joined:
            total = 0.0
            least = arrivals[e + 1]
            for q in range(e + 1, joined):
                total += arrivals[q]
                if arrivals[q] < least:
                    least = arrivals[q]
            if total != total or least + max_delay <= now:
                e = joined
                while e > i and arrivals[e - 1] + max_delay > now:
                    e -= 1
        if e == i:
            return -1
        cdef list deltas = self.deltas
        if e == i + 1:
            return self.first_delta_start + len(<str>deltas[i])
        cdef Py_ssize_t size = 0
        for q in range(i, e):
            size += len(<str>deltas[q])
        return self.first_delta_start + size

    cdef Py_ssize_t delta_at(self, Py_ssize_t offset) except -1:
        """Index of the joined delta holding ``offset`` (forgetting the ones before it)."""
        cdef list deltas = self.deltas
        cdef Py_ssize_t i = self.first_delta
        cdef Py_ssize_t base = self.first_delta_start
        cdef Py_ssize_t nxt, k
        if base + len(<str>deltas[i]) <= offset:
            if self.end - offset < offset - base:
                i = self.joined - 1
                base = self.end - len(<str>deltas[i])
                while base > offset:
                    i -= 1
                    base -= len(<str>deltas[i])
            else:  # bisect_right over the starts: the last start <= offset
                k = i
                while k < self.joined:
                    nxt = base + len(<str>deltas[k])
                    if nxt > offset:
                        break
                    base = nxt
                    k += 1
                i = k
        if i > FORGET_AFTER:
            del deltas[:i]
            memmove(self.arrivals, self.arrivals + i, (self.n_arrivals - i) * sizeof(double))
            self.n_arrivals -= i
            self.joined -= i
            i = 0
        self.first_delta = i
        self.first_delta_start = base
        return i

    # ------------------------------------------------------------ scanner

    cdef bint fence_may_close(self) except -1:
        """True when the open fence's last (unfinished) line looks like its closing fence."""
        cdef Py_ssize_t ls = self.line_start - self.text_start
        if self.fence_char == 0 or ls < 0 or self.end - self.line_start > FENCE_LINE_MAX:
            return False
        cdef str s = self.text
        cdef Py_ssize_t a = ls
        cdef Py_ssize_t z = len(s)
        if a > z:
            a = z
        while a < z and s[a] in u" \t\r":
            a += 1
        while z > a and s[z - 1] in u" \t\r":
            z -= 1
        if z - a < self.fence_len:
            return False
        cdef Py_ssize_t q
        for q in range(a, z):
            if s[q] != self.fence_char:
                return False
        return True

    cdef int add(self, Py_ssize_t reach, Py_ssize_t cut, int kind) except -1:
        """Note a boundary (one per cut position: the best kind wins)."""
        if cut <= self.start:
            return 0
        cdef Cand* last
        if self.n_cands:
            last = &self.cands[self.n_cands - 1]
            if last.cut >= cut:
                if last.cut == cut and kind < last.kind:
                    last.kind = kind
                return 0
        cdef Py_ssize_t cap
        cdef Cand* grown
        if self.n_cands == self.cap_cands:
            cap = 16 if self.cap_cands == 0 else 2 * self.cap_cands
            grown = <Cand*>realloc(self.cands, cap * sizeof(Cand))
            if grown == NULL:
                raise MemoryError()
            self.cands = grown
            self.cap_cands = cap
        self.cands[self.n_cands].reach = reach
        self.cands[self.n_cands].cut = cut
        self.cands[self.n_cands].kind = kind
        self.n_cands += 1
        return 0

    cdef Region* open_region(self) except NULL:
        """The open fence or code span: the latest region (nothing else opens while it is)."""
        if self.n_regions == 0:
            raise RuntimeError("TextChunker: no open code region")
        return &self.regions[self.n_regions - 1]

    cdef double arrival(self, Py_ssize_t i) except? -1.0:
        """When delta ``i`` arrived."""
        if not 0 <= i < self.n_arrivals:
            raise IndexError("TextChunker: no such delta")
        return self.arrivals[i]

    cdef int add_region(self, Py_ssize_t start, bint fenced) except -1:
        cdef Py_ssize_t cap
        cdef Region* grown
        if self.n_regions == self.cap_regions:
            cap = 8 if self.cap_regions == 0 else 2 * self.cap_regions
            grown = <Region*>realloc(self.regions, cap * sizeof(Region))
            if grown == NULL:
                raise MemoryError()
            self.regions = grown
            self.cap_regions = cap
        self.regions[self.n_regions].start = start
        self.regions[self.n_regions].end = -1
        self.regions[self.n_regions].fenced = fenced
        self.n_regions += 1
        return 0

    cdef void forget_before(self, Py_ssize_t cut) noexcept:
        """Drop what a cut at ``cut`` released: boundaries up to it, code regions ending by it."""
        cdef Py_ssize_t i, kept
        if self.n_cands and self.cands[0].cut <= cut:
            i = 1
            while i < self.n_cands and self.cands[i].cut <= cut:
                i += 1
            memmove(self.cands, self.cands + i, (self.n_cands - i) * sizeof(Cand))
            self.n_cands -= i
        if self.n_regions:
            kept = 0
            for i in range(self.n_regions):
                if self.regions[i].end < 0 or self.regions[i].end > cut:
                    self.regions[kept] = self.regions[i]
                    kept += 1
            self.n_regions = kept

    cdef void scan(self, Py_ssize_t stop, bint final) except *:
        """Analyse the text from ``scanned_to`` to ``stop`` (``final``: as if it ended there)."""
        cdef str s = self.text
        cdef Py_ssize_t s0 = self.text_start
        cdef Py_ssize_t n = stop - s0
        cdef Py_ssize_t i = max(self.scanned_to - s0, 0)
        if (
            final
            and self.waiting
            and self.waiting_for == AFTER_TERMINATOR
            and stop == self.window_end
            and PyUnicode_FindChar(s, u'\n', i, n, 1) < 0
        ):
            self.waiting = False
            self.scanned_to = stop
            return
        self.waiting = False
        cdef bint in_code = self.code_ticks >= 0
        cdef Py_UCS4 c
        while i < n and not self.waiting:
            if self.fence_char != 0:
                i = self.in_fence(s, s0, i, n, final)
                continue
            i = self.next_event(s, i, n, in_code)
            if i < 0:
                i = n
                break
            c = s[i]
            if c == u'\n':
                i = self.newline(s, s0, i, n, final)
            elif c == u'`' or c == u'~':
                i = self.ticks(s, s0, i, n, final)
            else:
                i = self.terminator(s, s0, i, n, final)
                continue
            in_code = self.code_ticks >= 0
        self.scanned_to = s0 + i

    cdef Py_ssize_t next_event(self, str s, Py_ssize_t i, Py_ssize_t n, bint in_code) noexcept:
        """``_SCAN_EVENT.search(s, i, n)`` (``_IN_CODE`` inside a code span): its start, or -1."""
        if n > len(s):  # (never: the scan stops at the text's end; reads stay inside it)
            n = len(s)
        if i < 0:
            i = 0
        cdef int kind = PyUnicode_KIND(s)
        cdef void* data = PyUnicode_DATA(s)
        cdef const unsigned char* d1 = <const unsigned char*>data
        cdef Py_ssize_t p = i - 1
        cdef Py_UCS4 c, nx
        while True:
            p += 1
            if kind == 1:  # one byte a character: skip what cannot matter, by table
                while p < n and not _EVENT1[d1[p]]:
                    p += 1
            if p >= n:
                return -1
            c = PyUnicode_READ(kind, data, p)
            if in_code:
                if c == u'`' or c == u'\n':
                    return p
                continue
            if c == u'\n' or c == u'`' or c == u'~' or is_cjk_term(c):
                return p
            if not is_term(c):
                continue
            if p + 1 == n:
                return p
            nx = PyUnicode_READ(kind, data, p + 1)
            if (
                c == u'.'
                and p >= 1
                and nx == u' '
                and p + 2 < n
                and is_lower_az(PyUnicode_READ(kind, data, p + 2))
            ):
                c = PyUnicode_READ(kind, data, p - 1)
                if not is_ws(c) and not is_opener(c):
                    continue  # "etc. and": a dot after a word, one space, a lowercase letter
            if may_follow_end(nx):
                return p

    cdef inline Py_ssize_t wait(self, int what, Py_ssize_t at) noexcept:
        self.waiting = True
        self.waiting_for = what
        return at

    cdef Py_ssize_t in_fence(self, str s, Py_ssize_t s0, Py_ssize_t i, Py_ssize_t n,
                             bint final) except -2:
        """Inside a fence only a closing fence line matters: find the fence character."""
        cdef Py_UCS4 fch = self.fence_char
        cdef Py_ssize_t flen = self.fence_len
        cdef Py_ssize_t x = PyUnicode_FindChar(s, fch, i, n, 1)
        cdef Py_ssize_t last = PyUnicode_FindChar(s, u'\n', i, n if x < 0 else x, -1)
        if last >= 0:
            self.line_start = s0 + last + 1
        if x < 0:
            return n
        cdef Py_ssize_t r = x + 1
        while r < n and s[r] == fch:
            r += 1
        cdef Py_ssize_t ls = self.line_start - s0
        if ls < 0 or not blank_fullmatch(s, ls, x) or (r - x < flen and r < n):
            return r
        if r == n and not final:
            return self.wait(AFTER_BACKTICKS, x)
        if r - x < flen:
            return r
        cdef Py_ssize_t nl = PyUnicode_FindChar(s, u'\n', r, n, 1)
        if not strip_empty(s, r, n if nl < 0 else nl):
            return r
        if nl < 0 and not final:
            return self.wait(AFTER_BACKTICKS, x)
        self.open_region().end = s0 + (n if nl < 0 else nl + 1)
        self.fence_char = 0
        if nl < 0:
            return n
        self.fence_closed_at = s0 + nl
        return nl

    cdef Py_ssize_t newline(self, str s, Py_ssize_t s0, Py_ssize_t i, Py_ssize_t n,
                            bint final) except -2:
        """A line break: a code span still open was none; a blank line ends a paragraph."""
        cdef Py_ssize_t reg_start
        if self.code_ticks >= 0:
            reg_start = self.open_region().start
            self.n_regions -= 1
            self.code_ticks = -1
            self.not_code_at = reg_start
            return max(reg_start, self.start, s0) - s0
        cdef Py_ssize_t w = ws_run_end(s, i, n)
        if w == n and not final:
            return self.wait(AFTER_NEWLINE, i)
        cdef Py_ssize_t last = PyUnicode_FindChar(s, u'\n', i, w, -1)
        cdef Py_ssize_t j, lim
        if w < n:
            j = i
            lim = max(self.start - s0, 0)
            while j > lim and is_ws(s[j - 1]):
                j -= 1
            if PyUnicode_Count(s, u"\n", j, w) >= 2 or self.fence_closed_at == s0 + i:
                self.add(s0 + i, s0 + last + 1, PARAGRAPH)
        self.line_start = s0 + last + 1
        return w

    cdef Py_ssize_t ticks(self, str s, Py_ssize_t s0, Py_ssize_t i, Py_ssize_t n,
                          bint final) except -2:
        """A run of backticks or tildes: opens a fence or opens/closes a code span."""
        cdef Py_UCS4 c = s[i]
        cdef Py_ssize_t r = i + 1
        while r < n and s[r] == c:
            r += 1
        if r == n and not final:
            return self.wait(AFTER_BACKTICKS, i)
        cdef Py_ssize_t ls = self.line_start - s0
        if (
            r - i >= FENCE_MIN
            and self.code_ticks < 0
            and ls >= 0
            and blank_fullmatch(s, ls, i)
        ):
            self.add_region(self.line_start, True)
            self.fence_char = c
            self.fence_len = r - i
        elif c == u'`' and s0 + i != self.not_code_at:
            if self.code_ticks < 0:
                self.add_region(s0 + i, False)
                self.code_ticks = r - i
            elif self.code_ticks == r - i:
                self.open_region().end = s0 + r
                self.code_ticks = -1
        return r

    cdef Py_ssize_t terminator(self, str s, Py_ssize_t s0, Py_ssize_t i, Py_ssize_t n,
                               bint final) except -2:
        """A terminator outside code: note a sentence end if the text around it makes one."""
        cdef Py_ssize_t ls = self.line_start - s0
        cdef Py_ssize_t q
        cdef Py_UCS4 c
        if ls >= 0 and s[ls] in u" \t|":
            q = ls  # TABLE_ROW.match(s, ls): [ \t]*\|
            while q < len(s) and s[q] in u" \t":
                q += 1
            if q < len(s) and s[q] == u'|':
                return i + 1
        cdef Py_ssize_t j = i + 1
        cdef Py_ssize_t k, w
        if j < n and (is_term(s[j]) or is_closer(s[j])):
            while j < n and is_term(s[j]):
                j += 1
            k = j
            while k < n and is_closer(s[k]):
                k += 1
            w = k
            while w < n and is_ws(s[w]):
                w += 1
        else:
            k = w = j
            if j < n and is_ws(s[j]):
                w = j + 1
                if w < n and is_ws(s[w]):
                    w = ws_run_end(s, w, n)
        if w == n:
            return j if final else self.wait(AFTER_TERMINATOR, i)
        cdef int end
        c = s[i]
        if j == i + 1 and w == k + 1 and s[k] != u'\n' and c in u".!?":
            if c == u'.':
                end = dot_ends(s, i, s[w], False, ls)
            else:
                end = not Py_UNICODE_ISLOWER(s[w])
        else:
            end = ends_sentence(s, i, j, k, w, n, ls)
        if end == UNDECIDED:
            if not final:
                return self.wait(NEXT_WORD, i)
            end = 0
        cdef Py_ssize_t last
        if end:
            last = PyUnicode_FindChar(s, u'\n', k, w, -1)
            self.add(s0 + k, s0 + (last + 1 if last >= 0 else w), SENTENCE)
        return j

    # ------------------------------------------------------------ policy

    cdef int release(self, list out) except -1:
        """Cut at sentence/paragraph ends (and early for a first chunk), then down to max_chars."""
        cdef Py_ssize_t mx = self._max_chars
        cdef Py_ssize_t b, need, c, w, q, looked
        cdef bint early
        while True:
            b = self.start
            early = self.early_first
            need = 1 if early else self._min_chars
            c = -1
            for q in range(self.n_cands):
                if self.cands[q].cut - b >= need:
                    if self.cands[q].cut - b <= mx:
                        c = self.cands[q].cut
                    break
            if early and self.first_n >= 0 and self.end - b >= self.first_n:
                w = self.first_boundary(b + self.first_n)
                if w >= 0 and (c < 0 or w < c):
                    c = w
            if c < 0 and self.end - b > mx:
                looked = self.window_end
                if looked <= b + mx and looked < self.end:
                    return 0
                c = self.forced_cut()
            if c < 0:
                return 0
            self.cut(c, out)

    cdef int time_cut(self, double now, list out) except -1:
        """Release what has waited max_delay: at the best boundary after the last overdue char."""
        cdef Py_ssize_t b = self.start
        cdef Py_ssize_t k = self.overdue_end(now)
        if k < 0:
            return 0
        cdef Py_ssize_t avail = self.end
        cdef Py_ssize_t c, most, lo, st
        if self.waiting and (self.waiting_for == AFTER_TERMINATOR
                             or self.waiting_for == AFTER_NEWLINE):
            c = avail
        elif not self.n_regions:
            c = self.plain_time_cut(k)
        else:
            most = self.latest_boundary(k, avail)
            lo = k if most < 0 else max(k, b + min(self._min_chars, most - b) // 2)
            c = self.pick(lo, avail, True, True, True, most)
        if c == NONE:
            if self.fence_char != 0:
                st = self.open_region().start
                if st >= b and not self.fence_may_close():
                    c = st if st > b else NONE
                else:
                    c = avail
            else:
                c = avail
        if c != NONE and c > b:
            self.cut(c, out)
        return 0

    cdef Py_ssize_t plain_time_cut(self, Py_ssize_t k) except -2:
        """``CutPolicy._plain_time_cut``: the latest sentence, paragraph or line end after
        ``k``, else clause, else word boundary (NONE: none)."""
        cdef Py_ssize_t b = self.start
        cdef Py_ssize_t avail = self.end
        cdef str s = self.text
        cdef Py_ssize_t s0 = self.text_start
        cdef Py_ssize_t z = avail - s0
        cdef Py_ssize_t most = last_word_boundary(s, max(k - BACKTRACK - s0, 0), z) + s0
        cdef Py_ssize_t ends = -1
        if self.n_cands and self.cands[self.n_cands - 1].cut >= k:
            ends = self.cands[self.n_cands - 1].cut
        if ends > most:
            most = ends
        if most < k:
            return self.pick(k, avail, True, True, False, 0)
        cdef Py_ssize_t lo = max(k, b + min(self._min_chars, most - b) // 2)
        cdef Py_ssize_t x = PyUnicode_FindChar(s, u'\n', lo - 1 - s0, z, -1)
        cdef Py_ssize_t c = max(ends, s0 + x + 1 if x >= 0 else -1)
        if c < lo:
            x = last_clause_boundary(s, max(lo - BACKTRACK - s0, 0), z)
            c = s0 + x if x >= 0 and s0 + x >= lo else most
        return c

    cdef int cut(self, Py_ssize_t c, list out) except -1:
        """Release the text up to ``c``."""
        if c > self.scanned_to:
            self.scan(c, True)
        cdef Py_ssize_t s0 = self.text_start
        out.append(self.text[self.start - s0 : c - s0])
        self.start = c
        self.early_first = False
        self.forget_before(c)
        return 0

    cdef Py_ssize_t first_boundary(self, Py_ssize_t start) except -2:
        """The first word boundary at or after ``start``, with a visible character after it."""
        cdef str s = self.text
        cdef Py_ssize_t s0 = self.text_start
        cdef Py_ssize_t hi = min(self.end, self.start + self._max_chars)
        cdef Py_ssize_t pos = max(start - 1, self.start) - s0
        cdef Py_ssize_t e = self.end - s0
        cdef Py_ssize_t m_start, m_end, c
        while True:
            m_end = visible_word_boundary(s, pos, e, &m_start)
            if m_end < 0:
                return -1
            c = s0 + m_end
            if c > hi:
                return -1
            if c >= start and self.blocking_code(c, WORD) < 0:
                return c
            pos = m_end + (1 if m_end == m_start else 0)

    cdef Py_ssize_t forced_cut(self) except -2:
        """A cut for a buffer over ``max_chars``: the best boundary in it, else inside a word."""
        cdef Py_ssize_t b = self.start
        cdef Py_ssize_t hi = b + self._max_chars
        cdef Py_ssize_t c = self.pick(b + self._min_chars, hi, False, False, False, 0)
        if c == NONE:
            c = self.pick(b + 1, hi, True, False, False, 0)
        return hi if c == NONE else c

    cdef Py_ssize_t blocking_code(self, Py_ssize_t c, int kind) except -2:
        """-1 if a cut at ``c`` (of ``kind``) is allowed, else the start of the code it splits."""
        cdef Py_ssize_t q, st, e, s0
        cdef Region reg
        for q in range(self.n_regions):
            reg = self.regions[q]
            st = reg.start
            if c <= st:
                continue
            if reg.end < 0:
                if reg.fenced and c == self.end and self.fence_may_close():
                    continue
                e = self.end
            elif c >= reg.end:
                continue
            else:
                e = reg.end
            if e - st <= self._max_chars and st >= self.start:
                return st
            if reg.fenced:
                if kind == WORD or kind == INSIDE_WORD:
                    s0 = self.text_start
                    if PyUnicode_FindChar(self.text, u'\n', max(self.start - s0, 0), c - s0,
                                          -1) >= 0:
                        return st
                elif kind != LINE:
                    return st
        return -1

    cdef Py_ssize_t last_match(self, int kind, Py_ssize_t lo, Py_ssize_t hi) except -2:
        """The latest allowed clause (or word) boundary in [lo, hi], or -1."""
        cdef str s = self.text
        cdef Py_ssize_t s0 = self.text_start
        cdef Py_ssize_t z = hi - s0
        cdef Py_ssize_t a = max(lo - BACKTRACK - s0, 0)
        cdef Py_ssize_t e
        while True:
            if kind == CLAUSE:
                e = last_clause_boundary(s, a, z)
            else:
                e = last_word_boundary(s, a, z)
            if e < 0 or s0 + e < lo:
                return -1
            if not self.n_regions or self.blocking_code(s0 + e, kind) < 0:
                return s0 + e
            z = e - 1

    cdef Py_ssize_t word_cut(self, Py_ssize_t lo, Py_ssize_t hi) except -2:
        """The latest word boundary (or start of a code span or fence) in [lo, hi], or -1."""
        cdef Py_ssize_t found = self.last_match(WORD, lo, hi)
        cdef Py_ssize_t q, st
        for q in range(self.n_regions):
            st = self.regions[q].start
            if found < st <= hi and st >= lo and self.blocking_code(st, WORD) < 0:
                found = st
        return found

    cdef Py_ssize_t latest_boundary(self, Py_ssize_t lo, Py_ssize_t hi) except -2:
        """The latest allowed boundary of any kind but inside a word in [lo, hi], or -1."""
        cdef Py_ssize_t best = self.word_cut(lo, hi)
        cdef Py_ssize_t q, c
        for q in range(self.n_cands):
            if self.cands[q].reach > hi:
                break
            c = self.cands[q].cut if self.cands[q].cut < hi else hi
            if c > best and c >= lo and (
                not self.n_regions or self.blocking_code(c, self.cands[q].kind) < 0
            ):
                best = c
        return best

    cdef Py_ssize_t pick(self, Py_ssize_t lo, Py_ssize_t hi, bint inside_word, bint latest,
                         bint has_word, Py_ssize_t word) except -2:
        """``CutPolicy._pick`` (``word`` given when ``has_word``); NONE when there is none."""
        if hi < lo:
            return NONE
        cdef Py_ssize_t best = -1
        cdef int best_kind = INSIDE_WORD + 1
        cdef Py_ssize_t q, c, x, a
        cdef int rank, kind
        for q in range(self.n_cands):
            if self.cands[q].reach > hi:
                break
            c = self.cands[q].cut if self.cands[q].cut < hi else hi
            kind = self.cands[q].kind
            rank = LINE if latest else kind
            if (
                c >= lo
                and (rank < best_kind or (rank == best_kind and c > best))
                and (not self.n_regions or self.blocking_code(c, kind) < 0)
            ):
                best = c
                best_kind = rank
        if best >= 0 and not latest:
            return best
        cdef str s = self.text
        cdef Py_ssize_t s0 = self.text_start
        a = max(lo - 1 - s0, 0)
        x = PyUnicode_FindChar(s, u'\n', a, hi - s0, -1)
        while x >= 0:
            c = s0 + x + 1
            if c < lo or c <= best:
                break
            if not self.n_regions or self.blocking_code(c, LINE) < 0:
                return c
            x = PyUnicode_FindChar(s, u'\n', a, x, -1)
        if best >= 0:
            return best
        c = self.last_match(CLAUSE, lo, hi)
        if c < 0:
            c = word if has_word else self.word_cut(lo, hi)
        if c >= 0:
            return c
        if not inside_word:
            return NONE
        return self.inside_word(lo, hi)

    cdef Py_ssize_t inside_word(self, Py_ssize_t lo, Py_ssize_t hi) except -2:
        """A cut inside a word, as late as possible in [lo, hi], never splitting a grapheme."""
        cdef str s = self.text
        cdef Py_ssize_t s0 = self.text_start
        cdef Py_ssize_t c = hi
        while c > lo and glued(s, c - s0):
            c -= 1
        if c == lo and glued(s, c - s0):
            c = hi
        cdef Py_ssize_t st = self.blocking_code(c, INSIDE_WORD)
        if st < 0:
            return c
        return st if st >= lo else NONE


cdef bint all_space(str delta):
    """``delta.isspace()``."""
    cdef Py_ssize_t n = len(delta)
    if n == 0:
        return False
    cdef Py_ssize_t i
    for i in range(n):
        if not Py_UNICODE_ISSPACE(delta[i]):
            return False
    return True
