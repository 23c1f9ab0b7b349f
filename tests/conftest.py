"""Fixtures shared by every test directory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from inprocess_agents import Pair
from redis_server import redis_server


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real redis-server on 127.0.0.1, started for this module."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest_asyncio.fixture
async def pair() -> AsyncIterator[Pair]:
    """In-process agents, added by the test; all stopped afterwards."""
    p = Pair()
    try:
        yield p
    finally:
        await p.close()
