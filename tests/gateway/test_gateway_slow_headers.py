"""`agent-stream gateway --header-timeout 1` (a real process on 127.0.0.1) cuts off a client
sending its request headers a byte at a time (slowloris) within that second, and keeps
answering /healthz meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from gateway_harness import Gateway, Harness, start_gateway
from slow_client import SLACK, drip_while_getting


@pytest.fixture
def short_timeout_gateway(tmp_path: Path) -> Iterator[Gateway]:
    h = Harness(tmp_path)
    try:
        yield start_gateway(h, "--header-timeout", "1")
    finally:
        h.stop_all()


async def test_a_dripping_client_is_dropped_by_the_gateway(short_timeout_gateway: Gateway) -> None:
    port = urlsplit(short_timeout_gateway.url).port
    assert port is not None
    took, _, statuses = await drip_while_getting(port, "/healthz")
    assert took is not None, "the dripping client was never cut off"
    assert 0.9 <= took <= 1.0 + SLACK, took
    assert len(statuses) >= 3 and set(statuses) == {200}, statuses
