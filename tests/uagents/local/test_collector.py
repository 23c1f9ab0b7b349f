"""A process running an agent collects garbage with serving thresholds (a thousand open replies
otherwise spend their CPU in the collector); a program's own higher or disabled settings stay.
Its young objects are collected while it is idle, not in the middle of its next burst."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_stream.uagents import DrivenClock
from agent_stream.uagents.local._gc import (
    IDLE_EVERY,
    IDLE_SHARE,
    SERVING_THRESHOLDS,
    IdleCollector,
    serving_thresholds,
)

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


def _agent_process(script: str, tmp_path: Path) -> str:
    """What ``script`` (an agent run with run_agent) printed, in a process of its own."""
    env = dict(os.environ, AGENT_STREAM_DIRECTORY=str(tmp_path / "agents.json"))
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_an_agent_process_runs_with_serving_thresholds(tmp_path: Path) -> None:
    stdout = _agent_process(RUN, tmp_path)
    assert "before (700, 10, 10)" in stdout
    assert f"running {SERVING_THRESHOLDS}" in stdout


def test_thresholds_are_raised_never_lowered(restored: None) -> None:
    gc.set_threshold(700, 10, 10)
    assert serving_thresholds() == SERVING_THRESHOLDS
    gc.set_threshold(10**6, 5, 100)
    assert serving_thresholds() == (10**6, SERVING_THRESHOLDS[1], 100)


def test_a_program_that_turned_collection_off_keeps_it_off(restored: None) -> None:
    gc.set_threshold(0)
    assert serving_thresholds()[0] == 0
    assert gc.get_threshold()[0] == 0


IDLE = textwrap.dedent("""
    import asyncio, gc
    from agent_stream.uagents import local_agent, run_agent
    from agent_stream.uagents.local._agents import free_port

    young = []  # generation-1 collections
    gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 1
                        and young.append(1))
    agent = local_agent("collector test agent seed (idle)", free_port(), directory=None)

    async def main(ctx):
        young.clear()
        kept = [[] for _ in range(1000)]
        gc.collect(0)  # they move to generation 1; nothing more is due for a long while
        for _ in range(50):
            if young:
                break
            await asyncio.sleep(0.1)
        print("young collected while idle:", bool(young), len(kept), flush=True)

    run_agent(agent, main)
""")


def test_an_idle_agent_process_collects_its_young_objects(tmp_path: Path) -> None:
    assert "young collected while idle: True 1000" in _agent_process(IDLE, tmp_path)


class _Process:
    """The CPU time and collector a test drives: ``busy`` seconds of CPU per look."""

    def __init__(self, clock: DrivenClock, young: int = 1) -> None:
        self.clock = clock
        self.cpu = 0.0
        self.young = young  # generation-0 collections since the last generation-1 one
        self.collected: list[tuple[int, float]] = []

    def counts(self) -> tuple[int, int, int]:
        return (0, self.young, 0)

    def collect(self, generation: int) -> int:
        self.collected.append((generation, self.clock.now()))
        self.cpu += 0.4  # a long collection: its own CPU is not load
        self.young = 0
        return 0

    def collector(self) -> IdleCollector:
        return IdleCollector(
            clock=self.clock, cpu=lambda: self.cpu, counts=self.counts, collect=self.collect
        )


async def _looks(process: _Process, collector: IdleCollector, busy: list[float]) -> None:
    task = asyncio.create_task(collector.run())
    try:
        for share in busy:
            process.cpu += share * IDLE_EVERY
            process.young = max(process.young, 1)
            await process.clock.advance(IDLE_EVERY)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_generation_1_is_collected_on_a_look_after_an_idle_half_second() -> None:
    process = _Process(DrivenClock(start=0.0))
    collector = process.collector()
    await _looks(process, collector, [0.9, IDLE_SHARE / 2, 0.9])
    assert process.collected == [(1, 2 * IDLE_EVERY)]  # only after the idle one
    assert collector.collections == 1


async def test_a_busy_process_is_never_collected_by_it() -> None:
    process = _Process(DrivenClock(start=0.0))
    await _looks(process, process.collector(), [IDLE_SHARE, 1.0, 0.5, IDLE_SHARE])
    assert process.collected == []


async def test_the_collections_own_cpu_is_not_counted_as_load() -> None:
    process = _Process(DrivenClock(start=0.0))
    await _looks(process, process.collector(), [0.0, 0.0, 0.0])
    assert [at for _, at in process.collected] == [IDLE_EVERY, 2 * IDLE_EVERY, 3 * IDLE_EVERY]


def test_nothing_is_collected_when_generation_1_holds_nothing() -> None:
    process = _Process(DrivenClock(start=0.0), young=0)
    collector = process.collector()
    assert collector.look() is False  # idle (no CPU used), but nothing moved to generation 1
    assert process.collected == []


@pytest.mark.parametrize("turn_off", ["disable", "threshold 0"])
def test_a_program_that_turned_collection_off_is_not_collected(
    restored: None, turn_off: str
) -> None:
    process = _Process(DrivenClock(start=0.0))
    collector = process.collector()
    try:
        if turn_off == "disable":
            gc.disable()
        else:
            gc.set_threshold(0)
        assert collector.look() is False
    finally:
        gc.enable()
    assert process.collected == []


@pytest.mark.parametrize(("every", "share"), [(0, 0.3), (-1, 0.3), (0.5, 0), (0.5, 1.5)])
def test_bad_settings_are_refused(every: float, share: float) -> None:
    with pytest.raises(ValueError, match="every must be > 0"):
        IdleCollector(every=every, idle_share=share)
