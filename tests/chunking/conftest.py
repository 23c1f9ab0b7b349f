"""``implementation``: a test that asks for it runs twice, on the interpreted chunker and on
the compiled one (skipped while that is not built)."""

from __future__ import annotations

import pytest
from chunker_impls import FAST, NOT_BUILT, PURE, STALE


@pytest.fixture(params=["python", "compiled"])
def implementation(request: pytest.FixtureRequest) -> type[PURE]:
    """The TextChunker class of one build."""
    if request.param == "python":
        return PURE
    if FAST is None:
        pytest.skip(NOT_BUILT)
    if STALE:
        pytest.fail(f"the compiled chunker is older than {STALE}: `make speedups` rebuilds it")
    return FAST
