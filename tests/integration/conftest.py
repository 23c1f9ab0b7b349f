"""Fixtures for integration tests: agent processes on 127.0.0.1 (see agents_harness.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agents_harness import AgentProcess, Harness


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    h = Harness(tmp_path_factory.mktemp("agents"))
    try:
        yield h
    finally:
        h.stop_all()


@pytest.fixture(scope="module")
def llm(harness: Harness) -> tuple[AgentProcess, str, str]:
    """One `agent-stream serve --rate 0 --reasoning` for the module: (process, address, url)."""
    return harness.serve("--rate", "0", "--reasoning")
