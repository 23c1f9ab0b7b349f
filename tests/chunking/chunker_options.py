"""``options``: a Hypothesis strategy of TextChunker options (test_chunker_props and
test_chunking_machines)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st


@st.composite
def options(draw: st.DrawFn) -> dict[str, Any]:
    lo = draw(st.integers(1, 60))
    hi = draw(st.integers(lo, lo + 300))
    first = draw(st.none() | st.integers(0, hi))
    delay = draw(st.sampled_from([0.05, 0.25, 1.0]))
    grace = draw(st.sampled_from([0.0, 0.1, 1.0]))
    return {
        "min_chars": lo,
        "max_chars": hi,
        "first_chars": first,
        "max_delay": delay,
        "block_grace": grace,
    }
