"""The event loop agent_stream's commands run on: uvloop's when it is installed.

An agent serving a thousand conversations spends its time in many short callbacks and socket
writes; uvloop (libuv, in C) runs them with far less overhead than asyncio's pure-Python loop.
At a thousand conversations every hop of a message (post, answer, handler, client write) waits
for the loop's next turn: shorter turns are a shorter wait at each (``bench/bench_scale.py``).

Only the ``agent-stream`` command (and ``python -m agent_stream``) switches, at its start. A
program embedding agent_stream keeps the loop it chose (call :func:`use_fast_loop` first to
switch). ``AGENT_STREAM_LOOP=asyncio`` keeps asyncio's loop; uvloop is not installed on Windows.
"""

from __future__ import annotations

import asyncio
import os

__all__ = ["LOOP_ENV", "use_fast_loop"]

#: Set to ``asyncio`` to keep asyncio's own event loop.
LOOP_ENV = "AGENT_STREAM_LOOP"


def use_fast_loop() -> bool:
    """Make the event loops created from now on uvloop's, when it is installed and
    ``AGENT_STREAM_LOOP`` is not ``asyncio``; whether it did.

    Call it before any loop is created (at a program's start).
    """
    if os.environ.get(LOOP_ENV, "").strip().lower() == "asyncio":
        return False
    try:
        import uvloop
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True
