"""Fixtures shared by every test directory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis_server import redis_server


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real redis-server on 127.0.0.1, started for this module."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url
