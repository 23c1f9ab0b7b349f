"""Fixtures of the uAgents plugin's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from inprocess_agents import Pair


@pytest_asyncio.fixture
async def pair() -> AsyncIterator[Pair]:
    """In-process agents, added by the test; all stopped afterwards."""
    p = Pair()
    try:
        yield p
    finally:
        await p.close()
