"""The local directory is parsed again only when its bytes change, while every freshness rule
still holds on each lookup: a dead process's entry is not used though the file did not change,
a new entry is seen at once, an untrusted file is still refused."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from directory_helpers import ADDR, ADDR2, CountingEndpoint, Endpoint
from uagents.dispatch import dispatcher

from agent_stream.uagents import DirectoryError, LocalDirectory, _compat
from agent_stream.uagents.local._directory import LocalResolver


async def test_lookups_parse_the_file_once_until_it_changes(
    tmp_path: Path, endpoint: Endpoint
) -> None:
    directory = LocalDirectory(tmp_path / "agents.json")
    directory.register(ADDR, endpoint.url, name="one")
    resolver = LocalResolver(directory=directory)
    before = directory.parses
    for _ in range(50):
        assert await resolver.resolve(ADDR) == (ADDR, [endpoint.url])
    assert directory.parses - before <= 1
    assert await resolver.resolve(ADDR2) == (None, [])
    directory.register(ADDR2, endpoint.url, name="two")  # the file changed: seen at once
    assert await resolver.resolve(ADDR2) == (ADDR2, [endpoint.url])
    assert directory.parses - before <= 3


async def test_a_dead_process_entry_is_not_used_though_the_file_did_not_change(
    tmp_path: Path, endpoint: Endpoint
) -> None:
    directory = LocalDirectory(tmp_path / "agents.json")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        directory.register(ADDR, endpoint.url, pid=proc.pid)
        resolver = LocalResolver(directory=directory)
        assert await resolver.resolve(ADDR) == (ADDR, [endpoint.url])
        raw = directory.path.read_bytes()
    finally:
        proc.kill()
        proc.wait()
    assert directory.path.read_bytes() == raw
    assert await resolver.resolve(ADDR) == (None, [])
    assert directory.entry(ADDR) is None


async def test_a_file_made_untrusted_is_refused_though_it_was_parsed(
    tmp_path: Path, endpoint: Endpoint, caplog: pytest.LogCaptureFixture
) -> None:
    directory = LocalDirectory(tmp_path / "agents.json")
    directory.register(ADDR, endpoint.url)
    resolver = LocalResolver(directory=directory)
    assert await resolver.resolve(ADDR) == (ADDR, [endpoint.url])
    os.chmod(directory.path, 0o666)
    assert await resolver.resolve(ADDR) == (None, [])
    with pytest.raises(DirectoryError):
        directory.entries()


def test_a_file_rewritten_in_place_with_new_bytes_is_parsed_again(tmp_path: Path) -> None:
    directory = LocalDirectory(tmp_path / "agents.json")
    directory.register(ADDR, "http://127.0.0.1:1/submit")
    assert set(directory.entries()) == {ADDR}
    text = directory.path.read_text().replace(ADDR, ADDR2)  # same size, same inode
    directory.path.write_text(text)
    assert set(directory.entries()) == {ADDR2}
    directory.path.write_text("not json")
    assert directory.entries() == {}


async def test_concurrent_lookups_share_one_probe(tmp_path: Path) -> None:
    endpoint = CountingEndpoint(ADDR, delay=0.2)
    try:
        directory = LocalDirectory(tmp_path / "agents.json")
        directory.register(ADDR, endpoint.url)
        resolver = LocalResolver(directory=directory)
        found = await asyncio.gather(*(resolver.resolve(ADDR) for _ in range(50)))
        assert found == [(ADDR, [endpoint.url])] * 50
        assert endpoint.probes == 1
    finally:
        endpoint.close()


async def test_a_delivery_counts_as_an_answer_for_probe_ttl(tmp_path: Path) -> None:
    endpoint = CountingEndpoint()  # serves nobody: its probes say not ready
    try:
        directory = LocalDirectory(tmp_path / "agents.json", probe_ttl=0.3)
        directory.register(ADDR, endpoint.url)
        resolver = LocalResolver(directory=directory)
        assert await resolver.resolve(ADDR) == (None, [])
        directory.delivered(ADDR, endpoint.url)  # an envelope was just accepted there
        assert await resolver.resolve(ADDR) == (ADDR, [endpoint.url])
        await asyncio.sleep(0.35)  # then the probe decides again
        assert await resolver.resolve(ADDR) == (None, [])
    finally:
        endpoint.close()


async def test_a_local_agents_lanes_tell_its_directory_what_they_delivered(tmp_path: Path) -> None:
    from agent_stream.uagents import local_agent
    from agent_stream.uagents.local._agents import free_port
    from agent_stream.uagents.transport._lanes import PeerDispenser

    directory = LocalDirectory(tmp_path / "agents.json")
    agent = local_agent("directory delivery agent seed", free_port(), directory=directory)
    try:
        lanes = _compat.dispenser_of(agent)
        assert isinstance(lanes, PeerDispenser)
        assert directory.delivered in lanes.on_delivered
    finally:
        dispatcher.unregister(agent.address, agent)


async def test_a_crowd_of_lookups_reads_a_settled_file_once_and_an_edit_is_still_seen(
    tmp_path: Path, endpoint: Endpoint
) -> None:
    import agent_stream.uagents.local._directory as d

    directory = LocalDirectory(tmp_path / "agents.json")
    directory.register(ADDR, endpoint.url, name="one")
    old = time.time() - 10
    os.utime(directory.path, (old, old))  # written a while ago
    resolver = LocalResolver(directory=directory)
    before = directory.reads
    for _ in range(200):
        assert await resolver.resolve(ADDR) == (ADDR, [endpoint.url])
    assert directory.reads - before == 1
    # an edit in place, same size (same inode): its new time tells it apart at once
    directory.path.write_text(directory.path.read_text().replace(ADDR, ADDR2))
    assert await resolver.resolve(ADDR2) == (ADDR2, [endpoint.url])
    # and a file that looks untouched is read again once REREAD_AFTER has passed
    now = time.time() - 10
    os.utime(directory.path, (now, now))
    directory.entries()
    reads = directory.reads
    directory.entries()
    assert directory.reads == reads
    time.sleep(d.REREAD_AFTER + 0.05)
    directory.entries()
    assert directory.reads == reads + 1
