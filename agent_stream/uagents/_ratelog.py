"""Rate limits: a token bucket, and a logger wrapper that writes a few warning lines per period.

A hostile or broken peer can make an agent refuse thousands of envelopes a second; one line
each would flood the log and cost more than the refusal itself. :class:`RateLimitedLog` keeps
the first lines of a burst and counts the rest, naming the count on the next line written.
"""

from __future__ import annotations

import logging
import time

from agent_stream.uagents._clock import LOOP_CLOCK, Clock

__all__ = ["RateLimitedLog", "TokenBucket"]


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` saved up; starts full.

    Args:
        rate: tokens added per second.
        burst: the most tokens saved up (None: ``2 * rate``).
        clock: the runtime's clock.
    """

    __slots__ = ("burst", "clock", "last", "rate", "tokens")

    def __init__(self, rate: float, burst: float | None = None, clock: Clock = LOOP_CLOCK) -> None:
        self.clock = clock
        self.rate = rate
        self.burst = 2.0 * rate if burst is None else burst
        self.tokens = self.burst
        self.last = clock.now()

    def take(self) -> bool:
        """Spend one token; False (nothing spent) when none is left."""
        now = self.clock.now()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


class RateLimitedLog:
    """At most ``burst`` warning lines per ``period`` seconds.

    The next line after a quiet spell says how many were not written.

    Args:
        logger: where the lines go.
        burst: lines written per period.
        period: the period, in seconds.
    """

    def __init__(self, logger: logging.Logger, burst: int, period: float) -> None:
        self.logger = logger
        self.burst = burst
        self.period = period
        self._window_start = -float("inf")
        self._lines = 0
        self.suppressed = 0

    def warning(self, msg: str, *args: object) -> bool:
        """Log ``msg % args`` unless over the rate; True when written.

        Args:
            msg: the %-format string.
            *args: its arguments.
        """
        now = time.monotonic()
        if now - self._window_start >= self.period:
            self._window_start, self._lines = now, 0
        if self._lines >= self.burst:
            self.suppressed += 1
            return False
        self._lines += 1
        if self.suppressed:
            msg += f" ({self.suppressed} similar lines not logged)"
            self.suppressed = 0
        self.logger.warning(msg, *args)
        return True
