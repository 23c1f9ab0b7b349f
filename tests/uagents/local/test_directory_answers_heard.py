"""The blocking readiness probe (``LocalDirectory.answers``: the command line's lookups) counts
a probe that times out as an answer by the same rule as the asynchronous one: the agent is busy,
not gone, when it answered before with no refusal since or just sent us a verified envelope.

Real HTTP on 127.0.0.1: an endpoint whose probe answers come later than ``probe_timeout``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from directory_helpers import ADDR, ADDR2, CountingEndpoint

from agent_stream.uagents import LocalDirectory
from agent_stream.uagents.local._agents import free_port

PROBE_TIMEOUT = 0.3
HEAD_DELAY = 0.8  # always past PROBE_TIMEOUT

Probe = Callable[[LocalDirectory, str, str], bool]


def blocking(directory: LocalDirectory, address: str, endpoint: str) -> bool:
    return directory.answers(address, endpoint)


def not_blocking(directory: LocalDirectory, address: str, endpoint: str) -> bool:
    return asyncio.run(directory.answers_async(address, endpoint))


BOTH = pytest.mark.parametrize("probe", [blocking, not_blocking], ids=["answers", "async"])


@pytest.fixture
def slow() -> Iterator[CountingEndpoint]:
    """An endpoint serving ADDR and ADDR2 whose every probe answer comes too late."""
    e = CountingEndpoint(ADDR, ADDR2, delay=HEAD_DELAY)
    try:
        yield e
    finally:
        e.close()


def directory_of(tmp_path: Path, *entries: tuple[str, str], ttl: float = 10.0) -> LocalDirectory:
    directory = LocalDirectory(tmp_path / "agents.json", probe_timeout=PROBE_TIMEOUT, probe_ttl=ttl)
    for address, endpoint in entries:
        directory.register(address, endpoint)
    return directory


def test_a_lookup_finds_a_slow_agent_heard_from_and_not_one_never_heard_from(
    tmp_path: Path, slow: CountingEndpoint
) -> None:
    directory = directory_of(tmp_path, (ADDR, slow.url), (ADDR2, slow.url))
    directory.heard(ADDR)
    assert directory.lookup(ADDR) == slow.url  # its probe timed out: busy, not gone
    assert directory.lookup(ADDR2) is None  # never heard from: timed out, not found
    assert directory.find(ADDR) == (ADDR, slow.url)  # remembered as an answer: no probe
    assert slow.probes == 2


@BOTH
def test_an_agent_that_answered_before_is_busy_when_it_answers_late(
    tmp_path: Path, probe: Probe
) -> None:
    endpoint = CountingEndpoint(ADDR)
    try:
        directory = directory_of(tmp_path, (ADDR, endpoint.url), ttl=0.2)
        assert probe(directory, ADDR, endpoint.url)  # at once
        endpoint.delay = HEAD_DELAY
        asyncio.run(asyncio.sleep(0.25))  # the answer expired: the next call probes again
        assert probe(directory, ADDR, endpoint.url)
        assert endpoint.probes == 2
    finally:
        endpoint.close()


@BOTH
def test_being_heard_from_lasts_probe_ttl(
    tmp_path: Path, slow: CountingEndpoint, probe: Probe
) -> None:
    directory = directory_of(tmp_path, (ADDR, slow.url), ttl=0.2)
    directory.heard(ADDR)
    asyncio.run(asyncio.sleep(0.25))
    assert not probe(directory, ADDR, slow.url)


@BOTH
def test_heard_from_does_not_outweigh_a_refusal_or_a_wrong_answer(
    tmp_path: Path, probe: Probe
) -> None:
    nobody = CountingEndpoint()  # answers at once, but serves no address: "not-ready"
    closed = f"http://127.0.0.1:{free_port()}/submit"  # nobody listens
    try:
        directory = directory_of(tmp_path, (ADDR, nobody.url), (ADDR2, closed))
        directory.heard(ADDR)
        directory.heard(ADDR2)
        assert not probe(directory, ADDR, nobody.url)
        assert not probe(directory, ADDR2, closed)
        # and the refusal ended the evidence: now slow, it is not trusted on that word
        nobody.serves.add(ADDR)
        nobody.delay = HEAD_DELAY
        assert not probe(directory, ADDR, nobody.url)
    finally:
        nobody.close()


def test_a_bad_endpoint_is_no_answer_even_from_an_agent_heard_from(tmp_path: Path) -> None:
    directory = directory_of(tmp_path)
    directory.heard(ADDR)
    for endpoint in ("ftp://127.0.0.1/submit", "", "http://", "not a url"):
        assert not directory.answers(ADDR, endpoint)
