"""The local directory is parsed again only when its bytes change, while every freshness rule
still holds on each lookup: a dead process's entry is not used though the file did not change,
a new entry is seen at once, an untrusted file is still refused."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_directory import ADDR, ADDR2, Endpoint

from agent_stream.uagents import DirectoryError, LocalDirectory
from agent_stream.uagents.directory import LocalResolver


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint(ADDR, ADDR2)
    try:
        yield e
    finally:
        e.close()


async def test_lookups_parse_the_file_once_until_it_changes(tmp_path: Path,
                                                            endpoint: Endpoint) -> None:
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
        tmp_path: Path, endpoint: Endpoint) -> None:
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
        tmp_path: Path, endpoint: Endpoint, caplog: pytest.LogCaptureFixture) -> None:
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
