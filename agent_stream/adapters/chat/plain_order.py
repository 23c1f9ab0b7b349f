"""Serialising chat streams for a plain peer: one message holds the turn at a time.

A plain peer concatenates TextContent, so two messages' text must not interleave. The message
whose chat stream is open holds the turn: its groups go at once; other groups a plain peer would
read wait in order (and every group behind them waits too, so nothing is reordered) until the
stream ends. A recipient that declared tag support gets every group as produced.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from agent_stream.adapters.chat.wire import Group, MessageKey

__all__ = ["PlainOrder"]


class PlainOrder:
    """Routes groups to ``sink`` in wire order.

    Args:
        tagged: the wire is tagged (groups need not be serialised).
        sink: takes each group in its turn.
    """

    def __init__(self, tagged: bool, sink: Callable[[Group], None]) -> None:
        self.tagged = tagged
        self._sink = sink
        self.holder: MessageKey | None = None  # the message whose stream is open
        self._waiting: deque[Group] = deque()

    def route(self, group: Group) -> None:
        """Send a group now, or queue it behind what waits for its turn.

        Args:
            group: the group.
        """
        if self.tagged:
            self._sink(group)
            return
        holder = self.holder
        if holder is not None and group.owner == holder:
            self._emit(group)  # the turn holder's items overtake what waits
        elif self._waiting or (group.needs_turn and holder is not None):
            self._waiting.append(group)
        else:
            self._emit(group)

    def _emit(self, group: Group) -> None:
        self._sink(group)
        if group.opens:
            self.holder = group.owner
        elif group.closes and group.owner == self.holder:
            self.holder = None
            self.flush()

    def flush(self) -> None:
        """Send waiting groups until one needs the turn another message holds."""
        waiting = self._waiting
        while waiting:
            group = waiting[0]
            holder = self.holder
            if group.needs_turn and holder is not None and group.owner != holder:
                return
            waiting.popleft()
            self._sink(group)
            if group.opens:
                self.holder = group.owner
                self._extract(group.owner)
            elif group.closes and group.owner == self.holder:
                self.holder = None

    def _extract(self, owner: MessageKey | None) -> None:
        """Send the new turn holder's waiting groups (up to its stream's end)."""
        waiting = self._waiting
        if not waiting:
            return
        keep: list[Group] = []
        while waiting:
            group = waiting.popleft()
            if self.holder == owner and group.owner == owner:
                self._sink(group)
                if group.closes:
                    self.holder = None
            else:
                keep.append(group)
        waiting.extend(keep)
