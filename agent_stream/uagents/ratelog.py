"""A logger wrapper that writes at most a few warning lines per period.

A hostile or broken peer can make an agent refuse thousands of envelopes a second; one line
each would flood the log and cost more than the refusal itself. :class:`RateLimitedLog` keeps
the first lines of a burst and counts the rest, naming the count on the next line written.
"""

from __future__ import annotations

import logging
import time

__all__ = ["RateLimitedLog"]


class RateLimitedLog:
    """At most ``burst`` warning lines per ``period`` seconds; the next line after a quiet spell
    says how many were not written."""

    def __init__(self, logger: logging.Logger, burst: int, period: float) -> None:
        self.logger = logger
        self.burst = burst
        self.period = period
        self._window_start = -float("inf")
        self._lines = 0
        self.suppressed = 0

    def warning(self, msg: str, *args: object) -> bool:
        """Log ``msg % args`` unless over the rate; True when written."""
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
