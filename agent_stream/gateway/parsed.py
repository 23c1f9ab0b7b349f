"""The Messages a gateway just stored as JSON, kept a moment for its own live readers.

Every Message of a reply is written to the resume store as JSON (:meth:`Message.to_json`), and
each client streaming that reply reads the JSON back and parses it: at a thousand replies at
once, parsing back what this process had as an object a moment before was about a twelfth of the
gateway's time. :class:`ParsedEntries` keeps the last few thousand (entry, Message) pairs; a
reader given the very entry string that was stored (the memory store hands out the same
object) takes the Message instead of parsing. Anything else (a Redis store's copy, an entry
read again on resume, one evicted meanwhile) is parsed as before.
"""

from __future__ import annotations

from collections import OrderedDict

from agent_stream.message import Message

__all__ = ["ParsedEntries"]


class ParsedEntries:
    """Stored entries and the Messages they were made from, the newest ``max_entries``.

    Args:
        max_entries: pairs kept at most (the oldest go first).
    """

    def __init__(self, max_entries: int = 8192) -> None:
        self.max_entries = max_entries
        # by the entry's identity; the entry itself is kept, so that identity is not reused
        self._kept: OrderedDict[int, tuple[str, Message]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def keep(self, entry: str, msg: Message) -> None:
        """Remember that ``entry`` is ``msg``'s JSON.

        Args:
            entry: the stored string.
            msg: the Message it was made from (not changed afterwards).
        """
        kept = self._kept
        kept[id(entry)] = (entry, msg)
        if len(kept) > self.max_entries:
            kept.popitem(last=False)

    def message(self, entry: str) -> Message:
        """The Message of a stored entry: the kept one (once; it is then forgotten) when
        ``entry`` is the very string stored, else parsed from the JSON.

        Args:
            entry: a Message JSON entry read from the store.
        """
        hit = self._kept.get(id(entry))
        if hit is not None and hit[0] is entry:
            del self._kept[id(entry)]
            return hit[1]
        return Message.from_json(entry)
