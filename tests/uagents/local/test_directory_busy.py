"""A listed agent that answered its readiness probe once and then only answers slowly (busy
streaming to a crowd) is still found; one that never answered in time, or refused since, is
not. Real HTTP endpoints on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path

from directory_helpers import ADDR, CountingEndpoint

from agent_stream.uagents import LocalDirectory
from agent_stream.uagents.local._directory import LocalResolver


async def test_a_verified_agent_that_answers_slowly_is_busy_not_gone(tmp_path: Path) -> None:
    endpoint = CountingEndpoint(ADDR)
    try:
        directory = LocalDirectory(tmp_path / "agents.json", probe_timeout=0.2, probe_ttl=0.1)
        directory.register(ADDR, endpoint.url)
        resolver = LocalResolver(directory=directory)
        assert await resolver.resolve(ADDR) == (ADDR, [endpoint.url])  # answered in time
        endpoint.delay = 0.5  # now busy: every probe times out
        await asyncio.sleep(0.15)  # the positive answer expired
        assert await resolver.resolve(ADDR) == (ADDR, [endpoint.url])
        assert endpoint.probes == 2  # it was asked again, and timed out
    finally:
        endpoint.close()


async def test_an_agent_never_seen_answering_in_time_is_not_used(tmp_path: Path) -> None:
    endpoint = CountingEndpoint(ADDR, delay=0.5)
    try:
        directory = LocalDirectory(tmp_path / "agents.json", probe_timeout=0.2)
        directory.register(ADDR, endpoint.url)
        assert await LocalResolver(directory=directory).resolve(ADDR) == (None, [])
    finally:
        endpoint.close()


async def test_a_refusal_after_a_positive_answer_ends_the_benefit_of_the_doubt(
    tmp_path: Path,
) -> None:
    endpoint = CountingEndpoint(ADDR)
    try:
        directory = LocalDirectory(tmp_path / "agents.json", probe_timeout=0.2, probe_ttl=0.1)
        directory.register(ADDR, endpoint.url)
        resolver = LocalResolver(directory=directory)
        assert await resolver.resolve(ADDR) == (ADDR, [endpoint.url])
        endpoint.serves.clear()  # answers, but no longer for this address
        await asyncio.sleep(0.15)
        assert await resolver.resolve(ADDR) == (None, [])
        endpoint.serves.add(ADDR)
        endpoint.delay = 0.5  # and now slow: not trusted on its word from before the refusal
        await asyncio.sleep(0.15)
        assert await resolver.resolve(ADDR) == (None, [])
    finally:
        endpoint.close()
