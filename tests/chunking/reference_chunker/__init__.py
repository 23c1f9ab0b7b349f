"""A frozen copy of agent_stream.chunking as it was before the speed work (test-only).

The property tests in ``test_chunker_equivalence.py`` feed it and the live ``TextChunker`` the
same streams and compare them call by call: the speed work must not change any output.
"""

from __future__ import annotations

from .chunker import TextChunker

__all__ = ["TextChunker"]
