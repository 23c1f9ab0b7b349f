"""A mapping that keeps only its most recently set entries: past ``limit`` the entry set longest
ago is forgotten. What a peer or a client can make us remember (paused runs, tasks waiting for
an answer) is kept in one, so it stays bounded whatever they send."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["RecentMap"]

K = TypeVar("K")
V = TypeVar("V")


class RecentMap(Generic[K, V]):
    """Values by key, at most ``limit`` of them; setting a key makes it the most recent.

    Args:
        limit: the most entries kept.
    """

    __slots__ = ("_items", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: OrderedDict[K, V] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K) -> V | None:
        """The value set for ``key`` (None: none, or forgotten).

        Args:
            key: the key.
        """
        return self._items.get(key)

    def put(self, key: K, value: V) -> None:
        """Set ``key`` to ``value``, the entry set longest ago forgotten past ``limit``.

        Args:
            key: the key.
            value: its value.
        """
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def pop(self, key: K) -> V | None:
        """Remove ``key``; its value (None: none).

        Args:
            key: the key.
        """
        return self._items.pop(key, None)
