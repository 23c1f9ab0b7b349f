"""Fixtures of the local directory tests: ``endpoint``, a readiness endpoint serving ADDR and
ADDR2 (directory_helpers.py), closed after the test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from directory_helpers import ADDR, ADDR2, Endpoint


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint(ADDR, ADDR2)
    try:
        yield e
    finally:
        e.close()
