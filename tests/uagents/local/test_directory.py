"""The local agent directory: private to the user, entries used only when their process is alive
and their endpoint answers uagents' readiness probe, stale entries pruned.

Endpoints here are real HTTP servers on 127.0.0.1 answering ``HEAD /submit`` the way a uagents
agent does (``x-uagents-status: ready`` for the addresses they serve), a port nobody listens on,
and a socket that accepts connections and never answers.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from directory_helpers import ADDR, ADDR2, Endpoint

from agent_stream.uagents import DirectoryError, LocalDirectory
from agent_stream.uagents.local._agents import free_port
from agent_stream.uagents.local._directory import LocalResolver


@pytest.fixture
def hanging() -> Iterator[str]:
    """An endpoint that accepts connections (the kernel's backlog) and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}/submit"
    finally:
        s.close()


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_register_lookup_find_unregister(tmp_path: Path, endpoint: Endpoint) -> None:
    d = LocalDirectory(tmp_path / "sub" / "agents.json")
    assert d.entries() == {}
    d.register(ADDR, endpoint.url, "llm")
    d.register(ADDR2, endpoint.url, "client")
    assert d.lookup(ADDR) == endpoint.url
    assert d.lookup(f"test-agent://{ADDR2}") == endpoint.url
    assert d.find("llm") == (ADDR, endpoint.url)
    assert d.find(ADDR2) == (ADDR2, endpoint.url)
    assert d.find("nobody") is None
    d.unregister(ADDR)
    assert d.lookup(ADDR) is None and d.lookup(ADDR2) is not None


def test_created_private_directory_0700_and_file_0600(tmp_path: Path) -> None:
    old = os.umask(0)  # the modes must not depend on the user's umask
    try:
        d = LocalDirectory(tmp_path / "fresh" / "agents.json")
        d.register(ADDR, "http://127.0.0.1:1/submit", "llm")
    finally:
        os.umask(old)
    assert stat.S_IMODE(d.path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(d.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(d.path.with_name("agents.json.lock").stat().st_mode) == 0o600


def test_a_dead_pid_is_ignored_and_pruned(tmp_path: Path, endpoint: Endpoint) -> None:
    d = LocalDirectory(tmp_path / "agents.json")
    d.register(ADDR, endpoint.url, "gone", pid=dead_pid())
    assert d.lookup(ADDR) is None and d.find("gone") is None
    assert d.prune() == 1
    assert json.loads(d.path.read_text())["agents"] == {}
    d.register(ADDR, endpoint.url, "gone", pid=dead_pid())
    d.register(ADDR2, endpoint.url, "alive")  # every write prunes too
    assert list(json.loads(d.path.read_text())["agents"]) == [ADDR2]


def test_an_endpoint_that_does_not_answer_is_not_used(
    tmp_path: Path, endpoint: Endpoint, hanging: str
) -> None:
    d = LocalDirectory(tmp_path / "agents.json", probe_timeout=0.3)
    d.register(ADDR, f"http://127.0.0.1:{free_port()}/submit", "refused")
    d.register(ADDR2, hanging, "hangs")
    started = time.monotonic()
    assert d.lookup(ADDR) is None
    assert d.find("hangs") is None
    assert time.monotonic() - started < 2.0  # bounded by the probe timeout
    # An endpoint that answers for another address is not this agent's either.
    other = Endpoint(ADDR2)
    try:
        d.register(ADDR, other.url, "impostor")
        assert d.lookup(ADDR) is None
    finally:
        other.close()


def test_newest_answering_entry_of_a_name_wins(
    tmp_path: Path, endpoint: Endpoint, hanging: str
) -> None:
    d = LocalDirectory(tmp_path / "agents.json", probe_timeout=0.3)
    d.register(ADDR, endpoint.url, "llm")
    time.sleep(0.01)
    d.register(ADDR2, hanging, "llm")  # newer, but does not answer
    assert d.find("llm") == (ADDR, endpoint.url)


def test_pid_1_with_a_far_future_start_does_not_win(tmp_path: Path, endpoint: Endpoint) -> None:
    d = LocalDirectory(tmp_path / "agents.json")
    d.register(ADDR, endpoint.url, "llm")
    data = json.loads(d.path.read_text())
    data["agents"][ADDR2] = {
        "endpoint": f"http://127.0.0.1:{free_port()}/submit",
        "name": "llm",
        "pid": 1,
        "started": time.time() + 10**9,
    }
    d.path.write_text(json.dumps(data))
    assert d.find("llm") == (ADDR, endpoint.url)
    assert ADDR2 not in d.entries()
    data["agents"][ADDR2]["started"] = time.time() + 1  # plausible, but nothing answers
    d.path.write_text(json.dumps(data))
    assert d.find("llm") == (ADDR, endpoint.url)


def test_a_foreign_owned_directory_is_refused(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("giving a directory to another user needs root")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)
    d = LocalDirectory(theirs / "agents.json")
    with pytest.raises(DirectoryError, match=r"owned by uid 65534, not by you"):
        d.entries()
    with pytest.raises(DirectoryError, match="AGENT_STREAM_DIRECTORY"):
        d.register(ADDR, "http://127.0.0.1:1/submit")
    assert not (theirs / "agents.json").exists()


def test_a_directory_or_file_writable_by_others_is_refused(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    with pytest.raises(DirectoryError, match=r"writable by others \(mode 777\); chmod 700"):
        LocalDirectory(open_dir / "agents.json").find("llm")
    private = tmp_path / "private"
    d = LocalDirectory(private / "agents.json")
    d.register(ADDR, "http://127.0.0.1:1/submit")
    d.path.chmod(0o666)
    with pytest.raises(DirectoryError, match="chmod 600"):
        d.lookup(ADDR)


def test_a_corrupt_file_and_concurrent_writers(tmp_path: Path) -> None:
    d = LocalDirectory(tmp_path / "agents.json")
    d.path.write_text("{not json")
    assert d.entries() == {}
    addrs = [f"{ADDR[:-4]}{i:04d}" for i in range(12)]
    threads = [
        threading.Thread(
            target=LocalDirectory(d.path).register,
            args=(a, f"http://127.0.0.1:{i + 1}/submit", None),
        )
        for i, a in enumerate(addrs)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(d.entries()) == set(addrs)


def test_default_directory_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_STREAM_DIRECTORY", str(tmp_path / "x.json"))
    assert LocalDirectory().path == tmp_path / "x.json"
    monkeypatch.delenv("AGENT_STREAM_DIRECTORY")
    assert LocalDirectory().path.name == "agents.json"
    assert "agent-stream-" in LocalDirectory().path.parent.name


async def test_resolver_static_peers_first_then_answering_directory_entries(
    tmp_path: Path, endpoint: Endpoint, hanging: str
) -> None:
    d = LocalDirectory(tmp_path / "agents.json", probe_timeout=0.3)
    d.register(ADDR, endpoint.url)
    d.register(ADDR2, hanging)
    r = LocalResolver({ADDR2: "http://127.0.0.1:9/submit"}, d)
    assert await r.resolve(ADDR) == (ADDR, [endpoint.url])
    assert await r.resolve(f"agent://{ADDR2}") == (ADDR2, ["http://127.0.0.1:9/submit"])
    assert await LocalResolver({}, d).resolve(ADDR2) == (None, [])  # does not answer
    d.unregister(ADDR)
    assert await r.resolve(ADDR) == (None, [])  # read on every lookup


async def test_resolver_with_a_refused_directory_resolves_nothing_and_does_not_raise(
    tmp_path: Path,
) -> None:
    d = LocalDirectory(tmp_path / "agents.json")
    d.register(ADDR, "http://127.0.0.1:1/submit")
    tmp_path.chmod(0o777)
    try:
        assert await LocalResolver({}, d).resolve(ADDR) == (None, [])
    finally:
        tmp_path.chmod(0o700)


def test_ask_says_why_a_refused_directory_is_not_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_stream.cli import main

    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    monkeypatch.setenv("AGENT_STREAM_DIRECTORY", str(open_dir / "agents.json"))
    assert main(["ask", "llm", "question"]) == 2
    assert "writable by others" in capsys.readouterr().err


def test_two_answering_agents_of_one_name_are_ambiguous(tmp_path: Path, endpoint: Endpoint) -> None:
    from agent_stream.uagents.local._directory import AmbiguousName

    d = LocalDirectory(tmp_path / "agents.json")
    d.register(ADDR, endpoint.url, "llm")
    d.register(ADDR2, endpoint.url, "llm")
    assert {a for a, _ in d.named("llm")} == {ADDR, ADDR2}
    with pytest.raises(AmbiguousName) as caught:
        d.find("llm")
    assert ADDR in str(caught.value) and ADDR2 in str(caught.value)
    assert d.find(ADDR2) == (ADDR2, endpoint.url)  # by address it is not ambiguous
    d.unregister(ADDR2)
    assert d.find("llm") == (ADDR, endpoint.url)


def test_unregister_with_a_pid_keeps_another_process_entry(tmp_path: Path) -> None:
    d = LocalDirectory(tmp_path / "agents.json")
    d.register(ADDR, "http://127.0.0.1:1/submit", "llm", pid=1)  # another live process
    d.unregister(ADDR, pid=os.getpid())
    assert list(d.entries()) == [ADDR]
    d.unregister(ADDR, pid=1)
    assert d.entries() == {}
