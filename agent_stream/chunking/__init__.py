"""Streamed text deltas in, sentence/paragraph chunks out: ``TextChunker`` and its machines.

``chunker`` holds the ``TextChunker`` facade; ``buffer`` the deltas and their arrival times;
``scanner`` code spans, fences and boundary candidates; ``sentences`` the language rules as pure
functions; ``policy`` the cut decisions.

These modules are also compiled, as they are, by Cython at install time when a C compiler is
there (``hatch_build.py``; the ``.pxd`` files beside them give the types, and a few loops over a
string's data in C that the compiled build uses where the interpreted one has Python; the
``if not cython.compiled:`` blocks are those loops' interpreted stand-ins): the extension modules
go into ``_compiled`` under the same names, so both stay importable. ``TextChunker`` here is the
compiled one when it imports, else the interpreted one; both give the same chunks.
``AGENT_STREAM_PURE_PYTHON=1`` (any non-empty value) forces the interpreted one. ``IMPLEMENTATION``
says which was chosen: ``"compiled"`` or ``"python"``.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Final, Literal

from agent_stream.chunking import chunker as _interpreted

__all__ = ["IMPLEMENTATION", "TextChunker"]


def _select() -> tuple[type[object], Literal["compiled", "python"]]:
    if not os.environ.get("AGENT_STREAM_PURE_PYTHON"):
        try:
            compiled = importlib.import_module("agent_stream.chunking._compiled.chunker")
        except ImportError:  # not built (no compiler, AGENT_STREAM_NO_COMPILE) or unloadable
            pass
        else:
            return compiled.TextChunker, "compiled"
    return _interpreted.TextChunker, "python"


_chosen, _implementation = _select()
IMPLEMENTATION: Final[Literal["compiled", "python"]] = _implementation

if TYPE_CHECKING:
    # One type for annotations: the compiled class is the same source.
    from agent_stream.chunking.chunker import TextChunker
else:
    TextChunker = _chosen
