"""One deadline for an agent's whole stop, shared by every stage of it.

An agent that stops (SIGTERM, Ctrl-C, its ``main`` returning) ends its replies in flight (their
ends are sent), then its send lanes finish what is queued. Each stage used to wait a timeout of
its own (the replies' ends 5 s, then the lanes 5 s more, while their posts to a peer that hangs
ran to their own 10 s): a stop took 8-10 s, and container runtimes kill at 10 s.

Now the first stage that sees the agent stopping (the signal itself, under
:func:`~agent_stream.uagents.local._agents.serve_agent`) begins the agent's
:class:`StopDeadline`, ``budget`` seconds away, and every later stage waits at most until then:
what a healthy peer is sent takes milliseconds, and what is left for a peer that hangs is given up
at the deadline. No stage waits for acknowledgements while stopping (the agent's server no
longer takes them).
"""

from __future__ import annotations

import weakref
from typing import Any

from agent_stream.uagents._clock import LOOP_CLOCK, Clock

__all__ = ["STOP_BUDGET", "StopDeadline", "stop_deadline"]

#: Seconds from the start of an agent's stop to the end of its last stage: with the process's
#: own exit, within 2 s of SIGTERM.
STOP_BUDGET = 1.5


class StopDeadline:
    """When an agent's stop must be over; set once, by whichever stage begins the stop first.

    Args:
        budget: seconds from the start of the stop to its deadline.
        clock: the runtime's clock (:mod:`agent_stream.uagents._clock`).
    """

    __slots__ = ("at", "budget", "clock")

    def __init__(self, budget: float = STOP_BUDGET, *, clock: Clock = LOOP_CLOCK) -> None:
        self.budget = budget
        self.clock = clock
        self.at: float | None = None  # the deadline, on ``clock`` (None: not stopping)

    @property
    def stopping(self) -> bool:
        """Whether the stop has begun."""
        return self.at is not None

    def begin(self) -> float:
        """Begin the stop now unless it has begun; returns the deadline."""
        if self.at is None:
            self.at = self.clock.now() + max(0.0, self.budget)
        return self.at

    def reset(self) -> None:
        """Not stopping (an agent started again)."""
        self.at = None

    def left(self, most: float | None = None) -> float:
        """Seconds until the deadline (0 once it passed; the stop begins now if it had not),
        at most ``most``.

        Args:
            most: a stage's own bound (None: none).
        """
        left = max(0.0, self.begin() - self.clock.now())
        return left if most is None else min(most, left)


_DEADLINES: weakref.WeakKeyDictionary[Any, StopDeadline] = weakref.WeakKeyDictionary()


def stop_deadline(agent: Any, clock: Clock = LOOP_CLOCK) -> StopDeadline:
    """``agent``'s one :class:`StopDeadline` (made on first use).

    Args:
        agent: the ``uagents.Agent``.
        clock: the runtime's clock, when this makes it (the first one's stays).
    """
    deadline = _DEADLINES.get(agent)
    if deadline is None:
        deadline = _DEADLINES[agent] = StopDeadline(clock=clock)
    return deadline
