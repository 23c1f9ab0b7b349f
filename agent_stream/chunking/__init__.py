"""Streamed text deltas in, sentence/paragraph chunks out: ``TextChunker`` and its machines.

``chunker`` holds the ``TextChunker`` facade; ``buffer`` the deltas and their arrival times;
``scanner`` code spans, fences and boundary candidates; ``sentences`` the language rules as pure
functions; ``policy`` the cut decisions.
"""

from __future__ import annotations

from agent_stream.chunking.chunker import TextChunker

__all__ = ["TextChunker"]
