"""Streamed text deltas in, sentence/paragraph chunks out: ``TextChunker`` and its machines.

``chunker`` holds the ``TextChunker`` facade; ``buffer`` the deltas and their arrival times;
``scanner`` code spans, fences and boundary candidates; ``sentences`` the language rules as pure
functions; ``policy`` the cut decisions.

``TextChunker`` here is the compiled twin from ``_speedups`` (built from ``_speedups.pyx`` at
install time, when a C compiler was there) if it imports, else the pure-Python one from
``chunker``; both give the same chunks. ``AGENT_STREAM_PURE_PYTHON=1`` (any non-empty value)
forces the pure-Python one. ``IMPLEMENTATION`` says which was chosen: ``"compiled"`` or
``"python"``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Final, Literal

from agent_stream.chunking import chunker as _pure

__all__ = ["IMPLEMENTATION", "TextChunker"]


def _select() -> tuple[type[object], Literal["compiled", "python"]]:
    if not os.environ.get("AGENT_STREAM_PURE_PYTHON"):
        try:
            from agent_stream.chunking import _speedups
        except ImportError:  # not built (no compiler, AGENT_STREAM_NO_COMPILE) or unloadable
            pass
        else:
            if hasattr(_speedups, "TextChunker"):
                return _speedups.TextChunker, "compiled"
    return _pure.TextChunker, "python"


_chosen, _implementation = _select()
IMPLEMENTATION: Final[Literal["compiled", "python"]] = _implementation

if TYPE_CHECKING:
    # One type for annotations: _speedups.pyi declares the compiled class with the same API.
    from agent_stream.chunking.chunker import TextChunker
else:
    TextChunker = _chosen
