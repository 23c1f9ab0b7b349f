"""Tables with a cap per owner and a cap in total, the oldest entries forgotten first."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["BoundedTable"]

V = TypeVar("V")


class BoundedTable(Generic[V]):
    """Values by (owner, key): at most ``per_owner`` per owner and ``total`` in all.

    Past either cap the oldest entry goes (of the owner, or of anyone); :attr:`shed` counts
    those forgotten because of the total. The order of entries is kept in a deque of at most
    ``total`` (owner, key) pairs, so the memory used is bounded by ``total`` whatever happens.

    Args:
        per_owner: the most entries one owner may have.
        total: the most entries in all.
    """

    __slots__ = ("_order", "_owners", "per_owner", "shed", "total")

    def __init__(self, per_owner: int, total: int) -> None:
        self.per_owner = per_owner
        self.total = total
        self._owners: dict[Hashable, dict[Hashable, V]] = {}
        self._order: deque[tuple[Hashable, Hashable]] = deque()
        self.shed = 0

    def __len__(self) -> int:
        return sum(len(t) for t in self._owners.values())

    def get(self, owner: Hashable, key: Hashable) -> V | None:
        """The value of (owner, key), or None.

        Args:
            owner: whose entry (a sender...).
            key: which of its entries.
        """
        table = self._owners.get(owner)
        return table.get(key) if table is not None else None

    def has(self, owner: Hashable, key: Hashable) -> bool:
        """Whether (owner, key) is remembered.

        Args:
            owner: whose entry (a sender...).
            key: which of its entries.
        """
        table = self._owners.get(owner)
        return table is not None and key in table

    def put(self, owner: Hashable, key: Hashable, value: V) -> None:
        """Remember (owner, key) -> value (a new entry may push the oldest out).

        Args:
            owner: whose entry (a sender...).
            key: which of its entries.
            value: its value.
        """
        table = self._owners.get(owner)
        if table is None:
            table = self._owners[owner] = {}
        elif key in table:
            table[key] = value
            return
        table[key] = value
        if len(table) > self.per_owner:
            del table[next(iter(table))]
        order = self._order
        order.append((owner, key))
        while len(order) > self.total:
            old_owner, old_key = order.popleft()
            old = self._owners.get(old_owner)
            if old is not None and old_key in old:
                del old[old_key]
                self.shed += 1
                if not old:
                    del self._owners[old_owner]

    def discard(self, owner: Hashable, key: Hashable) -> None:
        """Forget (owner, key).

        Args:
            owner: whose entry (a sender...).
            key: which of its entries.
        """
        table = self._owners.get(owner)
        if table is not None:
            table.pop(key, None)
            if not table:
                del self._owners[owner]

    def forget(self, owner: Hashable) -> None:
        """Forget every entry of an owner.

        Args:
            owner: whose entries.
        """
        self._owners.pop(owner, None)
