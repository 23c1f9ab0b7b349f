"""The agent-stream command runs on uvloop's event loop when it is installed; a program that
embeds agent_stream keeps its own; AGENT_STREAM_LOOP=asyncio keeps asyncio's."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import asyncio, sys
import agent_stream.cli as cli
sys.argv = ["agent-stream"]
before = type(asyncio.new_event_loop()).__module__
{call}
print(before, type(asyncio.new_event_loop()).__module__)
"""


def loops(call: str, **env: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(call=call)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        check=False,
    )
    return out.stdout.split()[-2:]


def test_the_command_switches_to_uvloop_an_embedding_program_does_not() -> None:
    assert loops("cli.main([])") == ["asyncio.unix_events", "asyncio.unix_events"]
    before, after = loops("cli.run()")
    assert before.startswith("asyncio") and after.startswith("uvloop")


def test_agent_stream_loop_asyncio_keeps_asyncios_loop() -> None:
    assert loops("cli.run()", AGENT_STREAM_LOOP="asyncio") == [
        "asyncio.unix_events",
        "asyncio.unix_events",
    ]


def test_any_other_value_of_agent_stream_loop_still_switches() -> None:
    before, after = loops("cli.run()", AGENT_STREAM_LOOP="nonsense \u2028")
    assert before.startswith("asyncio") and after.startswith("uvloop")
