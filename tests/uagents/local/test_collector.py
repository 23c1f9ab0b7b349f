"""A process running an agent collects garbage with serving thresholds (a thousand open replies
otherwise spend their CPU in the collector); a program's own higher or disabled settings stay."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_stream.uagents.local._gc import SERVING_THRESHOLDS, serving_thresholds

RUN = textwrap.dedent("""
    import gc, sys
    from agent_stream.uagents import local_agent, run_agent
    from agent_stream.uagents.local._agents import free_port

    print("before", gc.get_threshold(), flush=True)
    agent = local_agent("collector test agent seed (a process)", free_port(), directory=None)

    async def main(ctx):
        print("running", gc.get_threshold(), flush=True)

    run_agent(agent, main)
""")


@pytest.fixture
def restored() -> Iterator[None]:
    saved = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def test_an_agent_process_runs_with_serving_thresholds(tmp_path: Path) -> None:
    env = dict(os.environ, AGENT_STREAM_DIRECTORY=str(tmp_path / "agents.json"))
    out = subprocess.run(
        [sys.executable, "-c", RUN],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "before (700, 10, 10)" in out.stdout
    assert f"running {SERVING_THRESHOLDS}" in out.stdout


def test_thresholds_are_raised_never_lowered(restored: None) -> None:
    gc.set_threshold(700, 10, 10)
    assert serving_thresholds() == SERVING_THRESHOLDS
    gc.set_threshold(10**6, 5, 100)
    assert serving_thresholds() == (10**6, SERVING_THRESHOLDS[1], 100)


def test_a_program_that_turned_collection_off_keeps_it_off(restored: None) -> None:
    gc.set_threshold(0)
    assert serving_thresholds()[0] == 0
    assert gc.get_threshold()[0] == 0
