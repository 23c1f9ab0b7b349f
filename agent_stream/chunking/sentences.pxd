# Types for the compiled build of sentences.py (Cython's pure-Python mode reads them beside it).
cimport cython

cdef Py_ssize_t _WORD_LOOKBACK, _LOOK_BACK, _NEVER, _UPPER, _NOT_LOWER, _RULE, _LISTY, _SPACED, _NO_WORD
cdef Py_ssize_t _WORD_KINDS_MAX
cdef dict _WORD_KINDS
cdef str WHITESPACE
cdef Py_UCS4 _SPACE_OR_CJK_FROM, _CJK_FROM


@cython.locals(e=Py_ssize_t, stop=Py_ssize_t, c=Py_UCS4)
cpdef Py_ssize_t last_word_boundary(str s, Py_ssize_t a, Py_ssize_t z)
cpdef bint is_space(Py_UCS4 c)
@cython.locals(n=Py_ssize_t, c=Py_UCS4)
cpdef bint is_blank(str s, Py_ssize_t a, Py_ssize_t z)
cpdef Py_ssize_t last_line_break(str s, Py_ssize_t a, Py_ssize_t z)
@cython.locals(c=Py_UCS4)
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
