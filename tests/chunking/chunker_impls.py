"""The two builds of the chunker the tests run alike: interpreted and compiled.

``PURE`` is ``agent_stream.chunking.chunker.TextChunker``, the modules run by the interpreter;
``FAST`` is the same modules compiled by Cython, ``agent_stream.chunking._compiled.chunker
.TextChunker``, or None while they are not built (tests of it skip with ``NOT_BUILT``;
``test_compiled_build`` is the one that fails when they are required). ``STALE`` names a source
changed since the compiled modules were built (an editable install is rebuilt by ``make
speedups``), else None.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from agent_stream.chunking import chunker
from agent_stream.chunking.chunker import TextChunker as PURE

__all__ = ["FAST", "NOT_BUILT", "PURE", "STALE", "compiled_module"]

NOT_BUILT = "compiled chunker not built"
SOURCE = Path(chunker.__file__).parent


def compiled_module(name: str) -> ModuleType | None:
    """``agent_stream.chunking._compiled.<name>``, or None while it is not built."""
    try:
        return importlib.import_module(f"agent_stream.chunking._compiled.{name}")
    except ImportError:
        return None


def _stale(mod: ModuleType | None) -> str | None:
    if mod is None or mod.__file__ is None:
        return None
    built = Path(mod.__file__).stat().st_mtime
    newer = [
        p.name
        for p in sorted(SOURCE.glob("*.pxd")) + sorted(SOURCE.glob("*.py"))
        if p.stat().st_mtime > built and p.name != "__init__.py"
    ]
    return ", ".join(newer) or None


_compiled = compiled_module("chunker")
FAST: type[PURE] | None = None if _compiled is None else _compiled.TextChunker
STALE = _stale(_compiled)
