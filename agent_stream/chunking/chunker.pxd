# Types for the compiled build of chunker.py (Cython's pure-Python mode reads them beside it).
cimport cython

from .buffer cimport DeltaBuffer
from .policy cimport CutPolicy
from .scanner cimport BoundaryScanner

cdef double _NEVER
cdef Py_ssize_t _WINDOW_SLACK, _SHORT_DELTA


cdef class TextChunker:
    cdef Py_ssize_t _min_chars, _max_chars, _held, _deadline_for, _look_at, _quiet_below
    cdef double _max_delay, _deadline, _block_grace
    cdef object _first_chars, _trigger
    cdef DeltaBuffer _buffer
    cdef BoundaryScanner _scanner
    cdef CutPolicy _policy
    cdef list _deltas, _arrivals

    @cython.locals(held=Py_ssize_t, sc=BoundaryScanner, end=Py_ssize_t, c=Py_UCS4)
    cpdef list feed(self, str delta, double now)
    cpdef list poll(self, double now)
    @cython.locals(buf=DeltaBuffer)
    cpdef list flush(self)
    cdef _start_message(self)
    @cython.locals(buf=DeltaBuffer, sc=BoundaryScanner, policy=CutPolicy, out=list,
                   b=Py_ssize_t, n_cands=Py_ssize_t, stop=Py_ssize_t, held=Py_ssize_t)
    cdef list _advance(self, double now)
    cdef _settle(self)
    @cython.locals(buf=DeltaBuffer, b=Py_ssize_t, held=Py_ssize_t, sc=BoundaryScanner,
                   holding=bint)
    cdef bint _update_deadline(self)
    cdef bint _start_clock(self, double now)
    @cython.locals(sc=BoundaryScanner, policy=CutPolicy, early_first=bint, held=bint, plain=bint)
    cdef _arm(self)
