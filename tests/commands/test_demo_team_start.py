"""``demo --team`` waiting for its members: a member that exits, or is never listed, is named."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from agent_stream.commands.demo import _wait_listed, private_directory
from agent_stream.uagents import LocalDirectory

NAMES = ("planner", "researcher", "coder", "chef")


def _python(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code], text=True)


@pytest.fixture
def members() -> Iterator[dict[str, subprocess.Popen[str]]]:
    """Four real processes that wait (killed after the test), in a private agent directory."""
    with private_directory("agent-stream-test-team-"):
        procs = {n: _python("import time; time.sleep(60)") for n in NAMES}
        try:
            yield procs
        finally:
            for proc in procs.values():
                proc.kill()
                proc.wait(10)


def test_a_member_that_exits_before_listing_is_named_with_its_status(
    members: dict[str, subprocess.Popen[str]],
) -> None:
    members["coder"].kill()
    members["coder"].wait(10)
    members["coder"] = _python("import sys; sys.exit(3)")
    members["coder"].wait(10)
    with pytest.raises(RuntimeError) as err:
        _wait_listed(members, timeout=30)
    assert "coder exited with status 3" in str(err.value)
    assert "planner" not in str(err.value)


def test_members_not_listed_in_time_are_named(
    members: dict[str, subprocess.Popen[str]],
) -> None:
    book = LocalDirectory()
    book.register("agent1qplanner", "http://127.0.0.1:1/submit", "planner", members["planner"].pid)
    book.register("agent1qchef", "http://127.0.0.1:2/submit", "chef", members["chef"].pid)
    with pytest.raises(RuntimeError) as err:
        _wait_listed(members, timeout=0.3)
    assert "researcher, coder not listed after 0.3 s" in str(err.value)


def test_once_every_member_is_listed_their_entries_are_returned(
    members: dict[str, subprocess.Popen[str]],
) -> None:
    book = LocalDirectory()
    for i, name in enumerate(NAMES):
        book.register(f"agent1q{name}", f"http://127.0.0.1:{i + 1}/submit", name, members[name].pid)
    got = _wait_listed(members, timeout=30)
    assert got == {
        name: (f"agent1q{name}", f"http://127.0.0.1:{i + 1}/submit") for i, name in enumerate(NAMES)
    }
