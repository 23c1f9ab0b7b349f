# Types for the compiled build of scanner.py (Cython's pure-Python mode reads them beside it).
cimport cython

from .buffer cimport DeltaBuffer
from .sentences cimport (dot_ends, ends_sentence, find_char, is_blank, is_space,
                         last_line_break, rfind_char, whitespace_end)

cdef extern from *:
    """
    /* scanner.find_stop: the first character in s[i:n] that may stop the scanner, or -1;
       outside code one of EVENT_CHARS, inside a code span a backtick or a line break. One loop
       per character width, the string's data read directly (no call, no bounds check). */
    #if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
    #include <emmintrin.h>
    #define AGENT_STREAM_SSE2 1
    #endif
    /* the first of . ! ? line break ` ~ in p[i:n], or -1 */
    static CYTHON_INLINE Py_ssize_t agent_stream_ucs1_stop(const Py_UCS1 *p, Py_ssize_t i,
                                                           Py_ssize_t n) {
    #ifdef AGENT_STREAM_SSE2
        /* sixteen characters at a time: compared with each stop, the matches' bits ORed */
        const __m128i dot = _mm_set1_epi8('.'), bang = _mm_set1_epi8('!');
        const __m128i ask = _mm_set1_epi8('?'), nl = _mm_set1_epi8('\\n');
        const __m128i tick = _mm_set1_epi8('`'), tilde = _mm_set1_epi8('~');
        for (; i + 16 <= n; i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
            __m128i m = _mm_or_si128(
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, dot), _mm_cmpeq_epi8(v, bang)),
                             _mm_or_si128(_mm_cmpeq_epi8(v, ask), _mm_cmpeq_epi8(v, nl))),
                _mm_or_si128(_mm_cmpeq_epi8(v, tick), _mm_cmpeq_epi8(v, tilde)));
            int bits = _mm_movemask_epi8(m);
            if (bits) return i + __builtin_ctz((unsigned int)bits);
        }
    #endif
        for (; i < n; i++) {
            switch (p[i]) {
            case '.': case '!': case '?': case '\\n': case '`': case '~': return i;
            }
        }
        return -1;
    }
    static Py_ssize_t agent_stream_find_stop(PyObject *s, Py_ssize_t i, Py_ssize_t n,
                                             int in_code) {
        int kind = PyUnicode_KIND(s);
        const void *data = PyUnicode_DATA(s);
        if (n > PyUnicode_GET_LENGTH(s)) n = PyUnicode_GET_LENGTH(s);
        if (i < 0) i = 0;
        if (in_code) {
            for (; i < n; i++) {
                Py_UCS4 c = PyUnicode_READ(kind, data, i);
                if (c == '`' || c == '\\n') return i;
            }
            return -1;
        }
        if (kind == PyUnicode_1BYTE_KIND) {  /* (every stop under U+0100 is ASCII) */
            return agent_stream_ucs1_stop((const Py_UCS1 *)data, i, n);
        }
        for (; i < n; i++) {
            switch (PyUnicode_READ(kind, data, i)) {
            case '.': case '!': case '?': case '\\n': case '`': case '~':
            case 0x2026: case 0x203C: case 0x2047: case 0x2048: case 0x2049: case 0x061F:
            case 0x0964: case 0x0965: case 0x3002: case 0xFF01: case 0xFF1F: case 0xFF61:
                return i;
            }
        }
        return -1;
    }
    /* next_event outside code, for a one-byte string (-2 for another): its loop, written out
       over the string's data, with what may follow a sentence end and what may precede the dot
       of "etc. and" as tables of the 256 characters (scanner.py makes them from the sets). */
    static Py_ssize_t agent_stream_ucs1_next_event(PyObject *s, Py_ssize_t i, Py_ssize_t n,
                                                   const char *follows_end,
                                                   const char *before_lower) {
        const Py_UCS1 *p;
        Py_UCS1 c, f;
        if (PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND) return -2;
        p = PyUnicode_1BYTE_DATA(s);
        if (n > PyUnicode_GET_LENGTH(s)) n = PyUnicode_GET_LENGTH(s);
        if (i < 0) i = 0;
        for (;; i++) {
            i = agent_stream_ucs1_stop(p, i, n);
            if (i < 0) return -1;
            c = p[i];
            if (c == '\\n' || c == '`' || c == '~' || i + 1 == n) return i;
            f = p[i + 1];
            if (f == ' ') {
                /* "etc. and": a dot after a word, before one space and a lowercase letter */
                if (!(c == '.' && i + 2 < n && p[i + 2] >= 'a' && p[i + 2] <= 'z' && i > 0
                      && !before_lower[p[i - 1]])) return i;
            }
            else if (follows_end[f]) return i;
        }
    }
    """
    Py_ssize_t find_stop "agent_stream_find_stop"(str s, Py_ssize_t i, Py_ssize_t n,
                                                  bint in_code)
    Py_ssize_t ucs1_next_event "agent_stream_ucs1_next_event"(
        str s, Py_ssize_t i, Py_ssize_t n, const char *follows_end, const char *before_lower)

cdef Py_ssize_t _FENCE_LINE_MAX, _FENCE_MIN
cdef bint COMPILED
cdef bytes _FOLLOWS_END_UCS1, _BEFORE_LOWER_UCS1


@cython.locals(c=Py_UCS4, f=Py_UCS4, e=Py_ssize_t)
cpdef Py_ssize_t next_event(str s, Py_ssize_t i, Py_ssize_t n, bint in_code)


cdef class CodeRegion:
    cdef public Py_ssize_t start
    cdef public object end
    cdef public bint fenced


@cython.locals(reg=CodeRegion)
cdef CodeRegion _region(Py_ssize_t start, bint fenced)


cdef class BoundaryScanner:
    cdef public DeltaBuffer buffer
    cdef public Py_ssize_t scanned_to, window_end, waiting_for, line_start, not_code_at
    cdef public Py_ssize_t fence_closed_at, marked_at
    cdef public bint waiting
    cdef public object fence, code_ticks
    cdef public CodeRegion fence_region, code_region
    cdef public list regions, candidates

    cpdef object trigger(self)
    @cython.locals(ls=Py_ssize_t, buf=DeltaBuffer)
    cpdef bint fence_may_close(self)
    @cython.locals(cands=list, last=tuple, at=Py_ssize_t)
    cpdef add(self, Py_ssize_t reach, Py_ssize_t cut, Py_ssize_t kind)
    @cython.locals(cands=list, cand=tuple, i=Py_ssize_t, at=Py_ssize_t, regions=list,
                   reg=CodeRegion, end=object)
    cpdef forget_before(self, Py_ssize_t cut)
    @cython.locals(buf=DeltaBuffer, s=str, s0=Py_ssize_t, n=Py_ssize_t, i=Py_ssize_t, c=Py_UCS4)
    cpdef scan(self, Py_ssize_t stop, bint final)
    cdef Py_ssize_t _wait(self, Py_ssize_t what, Py_ssize_t at)
    @cython.locals(flen=Py_ssize_t, x=Py_ssize_t, last=Py_ssize_t, r=Py_ssize_t, ls=Py_ssize_t,
                   nl=Py_ssize_t)
    cdef Py_ssize_t _in_fence(self, str s, Py_ssize_t s0, Py_ssize_t i, Py_ssize_t n, bint final)
    @cython.locals(reg=CodeRegion, w=Py_ssize_t, last=Py_ssize_t, j=Py_ssize_t, lim=Py_ssize_t,
                   c=Py_UCS4)
    cdef Py_ssize_t _newline(self, str s, Py_ssize_t s0, Py_ssize_t i, Py_ssize_t n, bint final)
    @cython.locals(c=Py_UCS4, r=Py_ssize_t, ls=Py_ssize_t)
    cdef Py_ssize_t _ticks(self, str s, Py_ssize_t s0, Py_ssize_t i, Py_ssize_t n, bint final)
    @cython.locals(ls=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t, w=Py_ssize_t, last=Py_ssize_t)
    cdef Py_ssize_t _terminator(self, str s, Py_ssize_t s0, Py_ssize_t i, Py_ssize_t n,
                                bint final)
