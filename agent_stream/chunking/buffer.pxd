# Types for the compiled build of buffer.py (Cython's pure-Python mode reads them beside it).
cimport cython

cdef Py_ssize_t _CONTEXT, _TRIM_AFTER, _FORGET_AFTER


cdef class DeltaBuffer:
    cdef public list deltas, arrivals
    cdef public Py_ssize_t first_delta, first_delta_start, joined, text_start, start, end
    cdef public str text

    @cython.locals(j=Py_ssize_t, drop=Py_ssize_t)
    cpdef join(self)
    cpdef str slice(self, Py_ssize_t a, Py_ssize_t z)
    cpdef emptied(self)
    cpdef object arrival_at(self, Py_ssize_t offset)
    @cython.locals(i=Py_ssize_t, e=Py_ssize_t, k=Py_ssize_t, joined=Py_ssize_t, arrivals=list,
                   t=double, total=double, earliest=double)
    cpdef Py_ssize_t overdue_end(self, double now, double max_delay)
    @cython.locals(i=Py_ssize_t, base=Py_ssize_t, k=Py_ssize_t, deltas=list)
    cpdef Py_ssize_t delta_at(self, Py_ssize_t offset)
