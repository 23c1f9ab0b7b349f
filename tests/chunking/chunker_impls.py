"""The two TextChunker implementations the chunking tests run alike or compare.

``PURE`` is the pure-Python ``agent_stream.chunking.chunker.TextChunker``; ``FAST`` is its
compiled twin, ``agent_stream.chunking._speedups.TextChunker``, or None while that is not built
(or is still the placeholder without a ``TextChunker``). Tests of ``FAST`` skip with
``NOT_BUILT`` then; ``test_speedups_build`` is the one that fails when it is required.

``AGENT_STREAM_DIFF_SELF=1`` makes ``FAST`` the pure class itself: the differential tests then
check themselves (their driver, strategies and time budget), not the compiled code.
"""

from __future__ import annotations

import os

from agent_stream.chunking.chunker import TextChunker as PURE

__all__ = ["FAST", "NOT_BUILT", "PURE"]

NOT_BUILT = "compiled chunker not built"


def _compiled() -> type[PURE] | None:
    if os.environ.get("AGENT_STREAM_DIFF_SELF") == "1":
        return PURE
    try:
        from agent_stream.chunking import _speedups
    except ImportError:
        return None
    fast: type[PURE] | None = getattr(_speedups, "TextChunker", None)
    return fast


FAST = _compiled()
