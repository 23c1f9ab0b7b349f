"""The cyclic garbage collector's thresholds for a process that serves many conversations.

CPython runs a generation-0 collection every 700 net allocations of container objects, and a
full one whenever the long-lived objects grew by a quarter. An agent streaming a thousand
replies at once allocates hundreds of thousands of objects a second (messages, chunks, chat
models, envelopes) and holds about a million (replay buffers, encoders, connections), so with
the defaults it spends its time in the collector: measured, 1,000 replies for 20 s on this
project's pump spent 9 s in it; with the thresholds below, under 2 s. Memory is freed by
reference counting as before; only cycles wait a little longer to be collected.

:func:`serving_thresholds` raises the thresholds of the running process (never lowers one a
program set higher); :func:`~agent_stream.uagents.run_agent` applies it to the process it
runs an agent in.
"""

from __future__ import annotations

import gc

__all__ = ["SERVING_THRESHOLDS", "serving_thresholds"]

#: (generation 0, 1, 2) thresholds for a serving process.
SERVING_THRESHOLDS = (50_000, 20, 10)


def serving_thresholds() -> tuple[int, int, int]:
    """Raise this process's collector thresholds to :data:`SERVING_THRESHOLDS` (each kept when
    already higher); returns the thresholds now in force."""
    current = gc.get_threshold()
    if current[0] == 0:  # the program turned automatic collection off: leave it so
        return (current[0], current[1], current[2])
    wanted = tuple(max(c, w) for c, w in zip(current, SERVING_THRESHOLDS, strict=False))
    gc.set_threshold(*wanted)
    now = gc.get_threshold()
    return (now[0], now[1], now[2])
