"""Where ``TextChunker`` used to live: it is now in ``agent_stream.chunking``."""

from __future__ import annotations

from agent_stream.chunking import TextChunker

__all__ = ["TextChunker"]
