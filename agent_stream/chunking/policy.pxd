# Types for the compiled build of policy.py (Cython's pure-Python mode reads them beside it).
cimport cython

from .buffer cimport DeltaBuffer
from .scanner cimport BoundaryScanner, CodeRegion
from .sentences cimport (find_char, glued, is_space, last_clause_boundary, last_word_boundary,
                         line_kind, rfind_char, substring, visible_word_boundary)

cdef Py_ssize_t _BACKTRACK


cdef class CutPolicy:
    cdef public DeltaBuffer buffer
    cdef public BoundaryScanner scanner
    cdef public Py_ssize_t min_chars, max_chars
    cdef public object first_chars
    cdef public bint early_first, markdown, held_line, held_fence
    cdef public Py_ssize_t held_at

    @cython.locals(buf=DeltaBuffer, mx=Py_ssize_t, b=Py_ssize_t, early=bint, need=Py_ssize_t,
                   c=Py_ssize_t, cand=tuple, cut=Py_ssize_t, w=Py_ssize_t, looked=Py_ssize_t)
    cpdef release(self, list out)
    @cython.locals(buf=DeltaBuffer, sc=BoundaryScanner, b=Py_ssize_t, k=Py_ssize_t, hold=bint,
                   st=Py_ssize_t, up=Py_ssize_t, line=bint)
    cpdef time_cut(self, double now, double max_delay, double block_grace, list out)
    @cython.locals(buf=DeltaBuffer, sc=BoundaryScanner, b=Py_ssize_t, avail=Py_ssize_t,
                   most=Py_ssize_t, lo=Py_ssize_t)
    cdef object _due_cut(self, Py_ssize_t k)
    @cython.locals(buf=DeltaBuffer, b=Py_ssize_t, avail=Py_ssize_t, s=str, s0=Py_ssize_t,
                   z=Py_ssize_t, most=Py_ssize_t, cands=list, ends=Py_ssize_t, lo=Py_ssize_t,
                   x=Py_ssize_t, c=Py_ssize_t)
    cdef object _plain_time_cut(self, Py_ssize_t k)
    @cython.locals(buf=DeltaBuffer, sc=BoundaryScanner, s0=Py_ssize_t)
    cpdef cut(self, Py_ssize_t c, list out)
    @cython.locals(buf=DeltaBuffer, s=str, s0=Py_ssize_t, hi=Py_ssize_t, pos=Py_ssize_t,
                   end=Py_ssize_t, e=Py_ssize_t, c=Py_ssize_t, st=Py_ssize_t, nl=Py_ssize_t)
    cdef Py_ssize_t _first_boundary(self, Py_ssize_t start)
    @cython.locals(b=Py_ssize_t, hi=Py_ssize_t)
    cdef Py_ssize_t _forced_cut(self)
    @cython.locals(buf=DeltaBuffer, sc=BoundaryScanner, reg=CodeRegion, st=Py_ssize_t,
                   e=Py_ssize_t, s0=Py_ssize_t)
    cdef Py_ssize_t _blocking_code(self, Py_ssize_t c, Py_ssize_t kind)
    @cython.locals(st=Py_ssize_t)
    cdef Py_ssize_t _blocked(self, Py_ssize_t c, Py_ssize_t kind)
    @cython.locals(reg=CodeRegion)
    cdef Py_ssize_t _markdown_block(self, Py_ssize_t c)
    @cython.locals(buf=DeltaBuffer, s=str, s0=Py_ssize_t, lo=Py_ssize_t, i=Py_ssize_t,
                   x=Py_ssize_t)
    cdef Py_ssize_t _mid_line(self, Py_ssize_t c)
    @cython.locals(buf=DeltaBuffer, sc=BoundaryScanner, s=str, s0=Py_ssize_t, lo=Py_ssize_t,
                   n=Py_ssize_t, i=Py_ssize_t, ls=Py_ssize_t, j=Py_ssize_t, x=Py_ssize_t)
    cdef Py_ssize_t _blocking_line(self, Py_ssize_t c)
    @cython.locals(buf=DeltaBuffer, s=str, s0=Py_ssize_t, z=Py_ssize_t, a=Py_ssize_t,
                   e=Py_ssize_t, regions=list, st=Py_ssize_t)
    cdef Py_ssize_t _last_match(self, Py_ssize_t kind, Py_ssize_t lo, Py_ssize_t hi)
    @cython.locals(found=Py_ssize_t, reg=CodeRegion, st=Py_ssize_t)
    cdef Py_ssize_t _word_cut(self, Py_ssize_t lo, Py_ssize_t hi)
    @cython.locals(best=Py_ssize_t, reach=Py_ssize_t, cut=Py_ssize_t, kind=Py_ssize_t,
                   c=Py_ssize_t)
    cdef Py_ssize_t _latest_boundary(self, Py_ssize_t lo, Py_ssize_t hi)
    @cython.locals(check=bint, best=Py_ssize_t, best_kind=Py_ssize_t, reach=Py_ssize_t,
                   cut=Py_ssize_t, kind=Py_ssize_t, c=Py_ssize_t, rank=Py_ssize_t,
                   buf=DeltaBuffer, s=str, s0=Py_ssize_t, a=Py_ssize_t, x=Py_ssize_t)
    cdef object _pick(self, Py_ssize_t lo, Py_ssize_t hi, bint inside_word, bint latest,
                      object word=*)
    @cython.locals(buf=DeltaBuffer, s=str, s0=Py_ssize_t, c=Py_ssize_t, st=Py_ssize_t)
    cdef object _inside_word(self, Py_ssize_t lo, Py_ssize_t hi)
