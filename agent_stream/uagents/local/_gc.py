"""The cyclic garbage collector in a process that serves many conversations.

CPython runs a generation-0 collection every 700 net allocations of container objects, and a
full one whenever the long-lived objects grew by a quarter. An agent streaming a thousand
replies at once allocates hundreds of thousands of objects a second (messages, chunks, chat
models, envelopes) and holds about a million (replay buffers, encoders, connections), so with
the defaults it spends its time in the collector: measured, 1,000 replies for 20 s on this
project's pump spent 9 s in it; with the thresholds below, under 2 s. Memory is freed by
reference counting as before; only cycles wait a little longer to be collected.

:func:`serving_thresholds` raises the thresholds of the running process (never lowers one a
program set higher); :func:`~agent_stream.uagents.run_agent` applies it to the process it
runs an agent in, and runs an :class:`IdleCollector` beside the agent.

With those thresholds the collector runs seldom, but each collection of generation 1 walks every
object made since the last one: a gateway that took a thousand questions collected ~400,000 of
them in one pause of 0.2 s, due four seconds later, in the middle of the burst of the thousand
replies' first texts, which all waited for it. The :class:`IdleCollector` collects
generation 1 while the process is idle instead (under :data:`IDLE_SHARE` of a core over the last
:data:`IDLE_EVERY` seconds), so a burst starts with it nearly empty. The work is the same (each
object is walked once in generation 1, then moved on); only its moment changes. Generation 2
(a full collection) is left to CPython.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from agent_stream.uagents._clock import LOOP_CLOCK, Clock

__all__ = [
    "IDLE_EVERY",
    "IDLE_SHARE",
    "SERVING_THRESHOLDS",
    "IdleCollector",
    "serving_thresholds",
]

#: (generation 0, 1, 2) thresholds for a serving process.
SERVING_THRESHOLDS = (50_000, 20, 10)
#: Seconds between two looks at the process's load (:class:`IdleCollector`).
IDLE_EVERY = 0.5
#: CPU share of one core (process time over wall time) under which the process counts as idle.
IDLE_SHARE = 0.3


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


class IdleCollector:
    """Collects generation 1 when the process is idle (module doc).

    Every ``every`` seconds of ``clock`` time it looks at the process's CPU time: when it used
    under ``idle_share`` of a core since the last look and generation 1 holds objects (a
    generation-0 collection moved some there since its last collection), it collects
    generation 1. It never collects in a process whose program turned automatic collection
    off (``gc.disable()`` or a threshold of 0).
    """

    def __init__(
        self,
        *,
        clock: Clock = LOOP_CLOCK,
        every: float = IDLE_EVERY,
        idle_share: float = IDLE_SHARE,
        cpu: Callable[[], float] = time.process_time,
        counts: Callable[[], tuple[int, int, int]] = gc.get_count,
        collect: Callable[[int], int] = gc.collect,
    ) -> None:
        """Start counting the process's load from now.

        Args:
            clock: the runtime's clock (the looks' schedule and the wall time between them).
            every: seconds between two looks.
            idle_share: CPU share of one core under which the process is idle.
            cpu: the process's CPU seconds (:func:`time.process_time`).
            counts: the collector's counts (:func:`gc.get_count`).
            collect: collects a generation (:func:`gc.collect`).
        """
        if not every > 0 or not 0 < idle_share <= 1:
            raise ValueError(
                f"every must be > 0 and idle_share in (0, 1], got {every}, {idle_share}"
            )
        self.clock = clock
        self.every = every
        self.idle_share = idle_share
        self._cpu = cpu
        self._counts = counts
        self._collect = collect
        self._at = clock.now()
        self._cpu_at = cpu()
        self.collections = 0  # generation-1 collections made while idle

    def look(self) -> bool:
        """Collect generation 1 now if the process was idle since the last look and it holds
        objects; returns whether it did."""
        now, used = self.clock.now(), self._cpu()
        elapsed = now - self._at
        share = (used - self._cpu_at) / elapsed if elapsed > 0 else 1.0
        self._at, self._cpu_at = now, used
        if share >= self.idle_share or not gc.isenabled() or gc.get_threshold()[0] == 0:
            return False
        if self._counts()[1] == 0:  # no generation-0 collection since: generation 1 is empty
            return False
        self._collect(1)
        self.collections += 1
        # the collection's own CPU is not the process's load
        self._at, self._cpu_at = self.clock.now(), self._cpu()
        return True

    async def run(self) -> None:
        """Look every ``every`` seconds, until cancelled."""
        while True:
            await self.clock.sleep(self.every)
            self.look()
