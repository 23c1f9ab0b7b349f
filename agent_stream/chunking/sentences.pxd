# Types for the compiled build of sentences.py (Cython's pure-Python mode reads them beside it).
cimport cython

cdef Py_ssize_t _WORD_LOOKBACK, _LOOK_BACK, _NEVER, _UPPER, _NOT_LOWER, _RULE, _LISTY, _SPACED, _NO_WORD
cdef Py_ssize_t _WORD_KINDS_MAX, _PLAIN_WORD_FROM
cdef dict _WORD_KINDS
cdef str WHITESPACE, _CJK_PUNCT
cdef bint COMPILED
cdef Py_UCS4 _SPACE_OR_CJK_FROM, _CJK_FROM

cdef extern from *:
    """
    /* sentences.find_char and rfind_char: str.find(c, a, z) and str.rfind(c, a, z) for one
       character c, the offsets adjusted as str.find adjusts them; the string's data read
       directly (memchr for one byte a character), without str.find's dispatch. */
    #include <string.h>
    static void agent_stream_adjust(Py_ssize_t len, Py_ssize_t *a, Py_ssize_t *z) {
        if (*z > len) *z = len;
        else if (*z < 0) { *z += len; if (*z < 0) *z = 0; }
        if (*a < 0) { *a += len; if (*a < 0) *a = 0; }
    }
    static Py_ssize_t agent_stream_find_char(PyObject *s, Py_UCS4 c, Py_ssize_t a,
                                             Py_ssize_t z) {
        int kind = PyUnicode_KIND(s);
        const void *data = PyUnicode_DATA(s);
        agent_stream_adjust(PyUnicode_GET_LENGTH(s), &a, &z);
        if (a >= z) return -1;
        if (kind == PyUnicode_1BYTE_KIND) {
            const Py_UCS1 *p = (const Py_UCS1 *)data;
            const Py_UCS1 *f;
            if (c > 0xFF) return -1;
            if (z - a < 16) {  /* (a short span: a loop costs less than the call) */
                for (; a < z; a++) {
                    if (p[a] == c) return a;
                }
                return -1;
            }
            f = (const Py_UCS1 *)memchr(p + a, (int)c, (size_t)(z - a));
            return f == NULL ? -1 : f - p;
        }
        for (; a < z; a++) {
            if (PyUnicode_READ(kind, data, a) == c) return a;
        }
        return -1;
    }
    static Py_ssize_t agent_stream_rfind_char(PyObject *s, Py_UCS4 c, Py_ssize_t a,
                                              Py_ssize_t z) {
        int kind = PyUnicode_KIND(s);
        const void *data = PyUnicode_DATA(s);
        agent_stream_adjust(PyUnicode_GET_LENGTH(s), &a, &z);
        if (kind == PyUnicode_1BYTE_KIND) {
            const Py_UCS1 *p = (const Py_UCS1 *)data;
            if (c > 0xFF || a >= z) return -1;
    #ifdef HAVE_MEMRCHR
            if (z - a >= 16) {  /* (a short span: the loop below costs less than the call) */
                const Py_UCS1 *f = (const Py_UCS1 *)memrchr(p + a, (int)c, (size_t)(z - a));
                return f == NULL ? -1 : f - p;
            }
    #endif
            while (z > a) {
                if (p[--z] == c) return z;
            }
            return -1;
        }
        while (z > a) {
            z--;
            if (PyUnicode_READ(kind, data, z) == c) return z;
        }
        return -1;
    }

    /* dot_ends's cache in front of _WORD_KINDS, for the words of one-byte strings: the kind of
       the word s[t:dot] found by its characters, no string made and no dict looked into. A slot
       per hash of the characters; the last word stored in a slot keeps it. */
    #define AGENT_STREAM_WORD_MAX 15
    #define AGENT_STREAM_WORD_SLOTS 512
    typedef struct {
        unsigned char len;
        signed char kind;
        Py_UCS1 chars[AGENT_STREAM_WORD_MAX];
    } agent_stream_word;
    static agent_stream_word agent_stream_words[AGENT_STREAM_WORD_SLOTS];
    static agent_stream_word *agent_stream_word_slot(PyObject *s, Py_ssize_t t,
                                                     Py_ssize_t dot) {
        const Py_UCS1 *w;
        size_t h = 2166136261u;
        Py_ssize_t k;
        if (PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND || t < 0 || dot - t <= 0
            || dot - t > AGENT_STREAM_WORD_MAX || dot > PyUnicode_GET_LENGTH(s)) return NULL;
        w = PyUnicode_1BYTE_DATA(s) + t;
        for (k = 0; k < dot - t; k++) h = (h ^ w[k]) * 16777619u;
        return &agent_stream_words[(h ^ (h >> 16)) & (AGENT_STREAM_WORD_SLOTS - 1)];
    }
    static Py_ssize_t agent_stream_cached_kind(PyObject *s, Py_ssize_t t, Py_ssize_t dot) {
        agent_stream_word *e = agent_stream_word_slot(s, t, dot);
        if (e == NULL || e->len != dot - t
            || memcmp(e->chars, PyUnicode_1BYTE_DATA(s) + t, (size_t)(dot - t)) != 0) return -1;
        return e->kind;
    }
    static void agent_stream_cache_kind(PyObject *s, Py_ssize_t t, Py_ssize_t dot,
                                        Py_ssize_t kind) {
        agent_stream_word *e = agent_stream_word_slot(s, t, dot);
        if (e == NULL || kind < 0 || kind > 127) return;
        e->len = (unsigned char)(dot - t);
        e->kind = (signed char)kind;
        memcpy(e->chars, PyUnicode_1BYTE_DATA(s) + t, (size_t)(dot - t));
    }

    /* whitespace_end for a one-byte string: the end of the run of " \\t\\n\\r\\f\\v" (the only
       WHITESPACE under U+0100) from s[i], before n; -2 for another string. */
    static Py_ssize_t agent_stream_ucs1_whitespace_end(PyObject *s, Py_ssize_t i,
                                                       Py_ssize_t n) {
        const Py_UCS1 *p;
        if (PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND || i < 0) return -2;
        p = PyUnicode_1BYTE_DATA(s);
        if (n > PyUnicode_GET_LENGTH(s)) n = PyUnicode_GET_LENGTH(s);
        for (; i < n; i++) {
            switch (p[i]) {
            case ' ': case '\\t': case '\\n': case '\\r': case '\\f': case '\\v': continue;
            }
            break;
        }
        return i;
    }
    /* dot_ends: where the word before the dot at s[dot] starts, after the last space or line
       break in s[lim:dot] (lim when there is none); 0 <= lim <= dot <= len(s). */
    static Py_ssize_t agent_stream_word_start(PyObject *s, Py_ssize_t lim, Py_ssize_t dot) {
        int kind = PyUnicode_KIND(s);
        const void *data = PyUnicode_DATA(s);
        Py_UCS4 c;
        if (lim < 0) lim = 0;
        if (dot > PyUnicode_GET_LENGTH(s)) dot = PyUnicode_GET_LENGTH(s);
        while (dot > lim) {
            c = PyUnicode_READ(kind, data, dot - 1);
            if (c == ' ' || c == '\\n') break;
            dot--;
        }
        return dot;
    }
    /* s[t:z] holds ASCII letters only (0 <= t <= z <= len(s)) */
    static int agent_stream_ascii_letters(PyObject *s, Py_ssize_t t, Py_ssize_t z) {
        int kind = PyUnicode_KIND(s);
        const void *data = PyUnicode_DATA(s);
        Py_UCS4 c;
        if (t < 0 || t >= z || z > PyUnicode_GET_LENGTH(s)) return 0;
        for (; t < z; t++) {
            c = PyUnicode_READ(kind, data, t);
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return 0;
        }
        return 1;
    }
    """
    Py_ssize_t ucs1_whitespace_end "agent_stream_ucs1_whitespace_end"(str s, Py_ssize_t i,
                                                                      Py_ssize_t n)
    Py_ssize_t word_start "agent_stream_word_start"(str s, Py_ssize_t lim, Py_ssize_t dot)
    bint ascii_letters "agent_stream_ascii_letters"(str s, Py_ssize_t t, Py_ssize_t z)
    Py_ssize_t cached_kind "agent_stream_cached_kind"(str s, Py_ssize_t t, Py_ssize_t dot)
    void cache_kind "agent_stream_cache_kind"(str s, Py_ssize_t t, Py_ssize_t dot,
                                              Py_ssize_t kind)
    Py_ssize_t find_char "agent_stream_find_char"(str s, Py_UCS4 c, Py_ssize_t a, Py_ssize_t z)
    Py_ssize_t rfind_char "agent_stream_rfind_char"(str s, Py_UCS4 c, Py_ssize_t a,
                                                    Py_ssize_t z)
    # (CPython's: the slice s[a:z], 0 <= a <= z; Cython's own slicing works out whether a piece
    # of a one-byte string is ASCII by reading it, where CPython knows it from s)
    str substring "PyUnicode_Substring"(str s, Py_ssize_t a, Py_ssize_t z)


@cython.locals(e=Py_ssize_t, stop=Py_ssize_t, c=Py_UCS4)
cpdef Py_ssize_t last_word_boundary(str s, Py_ssize_t a, Py_ssize_t z)
cpdef Py_ssize_t char_search(str s, Py_UCS4 c, Py_ssize_t a, Py_ssize_t z, bint backwards)
cpdef bint is_space(Py_UCS4 c)
cpdef bint is_cjk(Py_UCS4 c)
@cython.locals(p=Py_ssize_t, e=Py_ssize_t, c=Py_UCS4)
cpdef Py_ssize_t visible_word_boundary(str s, Py_ssize_t pos, Py_ssize_t end)
@cython.locals(n=Py_ssize_t, c=Py_UCS4)
cpdef bint is_blank(str s, Py_ssize_t a, Py_ssize_t z)
cpdef Py_ssize_t last_line_break(str s, Py_ssize_t a, Py_ssize_t z)
@cython.locals(c=Py_UCS4, e=Py_ssize_t)
cpdef Py_ssize_t whitespace_end(str s, Py_ssize_t i, Py_ssize_t n)
@cython.locals(x=Py_ssize_t, n=Py_ssize_t, stop=Py_ssize_t, c=Py_UCS4)
cpdef Py_ssize_t last_clause_boundary(str s, Py_ssize_t a, Py_ssize_t z)
@cython.locals(i=Py_ssize_t, r=Py_ssize_t, c=Py_UCS4)
cpdef Py_ssize_t line_kind(str s, Py_ssize_t ls, Py_ssize_t n)
@cython.locals(c=Py_UCS4, p=Py_UCS4, o=Py_ssize_t)
cpdef bint glued(str s, Py_ssize_t x)
@cython.locals(newline=bint, cjk=bint)
cpdef object ends_sentence(str s, Py_ssize_t run, Py_ssize_t run_end, Py_ssize_t closers_end,
                           Py_ssize_t space_end, Py_ssize_t end, Py_ssize_t line_start)
@cython.locals(t=Py_ssize_t, e=Py_ssize_t)
cdef object _glued_word_ends(str s, Py_ssize_t run, Py_ssize_t run_end, Py_ssize_t closers_end,
                             Py_ssize_t end)
@cython.locals(lim=Py_ssize_t, t=Py_ssize_t, kind=Py_ssize_t, word=str)
cpdef bint dot_ends(str s, Py_ssize_t dot, Py_UCS4 following, bint newline,
                    Py_ssize_t line_start)
cdef Py_ssize_t _word_kind(str word)
cdef Py_ssize_t _rule(str tok)
