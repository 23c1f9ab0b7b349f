"""Acknowledgements that go together: one ChatAcknowledgement for many ChatMessages.

The chat protocol acknowledges every ChatMessage with an envelope of its own: signed, posted,
verified and dispatched like the message itself. A gateway taking a thousand replies' text at once
sent as many acknowledgements back, and the agent spent as long receiving them as sending the
text. To a peer that reads them (it said so: its tagged question asks ``acks=many``, or its own
acknowledgements carry the agent_stream tag), acknowledgements coalesce while one is on its way:

- :class:`AckBatcher` keeps, per peer, one acknowledgement envelope in flight; the ids
  acknowledged meanwhile wait and go together in the next one (at most ``max_ids``). An idle peer
  gets each acknowledgement at once, as before; a busy one gets fewer envelopes, not later ones
  than its round trip. When a full envelope's worth waits, it goes at once beside the one in
  flight (up to ``max_in_flight``): a single envelope per round trip acknowledged ~600
  ChatMessages a second, and a thousand replies' first texts, due together, were sent twice.
- :func:`ack_for` builds the envelope: ``acknowledged_msg_id`` is the first id (what any chat
  peer reads) and, tagged, ``acked`` lists the others, comma-separated. Every acknowledgement
  agent_stream sends carries the tag, which tells the peer it may send coalesced ones back.
- :func:`acked_ids` reads one, bounded (``limit`` ids at most, each at most 64 characters).

A plain peer (one that never said it reads them) gets one acknowledgement per ChatMessage, as the
protocol has it. Pure state: no I/O, no clock.
"""

from __future__ import annotations

from collections import OrderedDict

from uagents_core.contrib.protocols.chat import ChatAcknowledgement, ChatMessage

from agent_stream.adapters.chat.wire import (
    ACKS_KEY,
    ACKS_MANY,
    PROTOCOL_VERSION,
    TAG_KEY,
    tagged_items,
)

__all__ = [
    "ACKED_KEY",
    "AckBatcher",
    "ack_for",
    "acked_ids",
    "asks_coalesced_acks",
    "reads_coalesced",
]

#: The tagged acknowledgement's key listing the ids acknowledged besides the first.
ACKED_KEY = "acked"
_MAX_ID_CHARS = 64


def ack_for(ids: list[str]) -> ChatAcknowledgement:
    """One acknowledgement of ``ids`` (the first in ``acknowledged_msg_id``).

    Args:
        ids: the acknowledged ChatMessages' msg_ids, at least one.
    """
    meta = {TAG_KEY: PROTOCOL_VERSION}
    if len(ids) > 1:
        meta[ACKED_KEY] = ",".join(ids[1:])
    return ChatAcknowledgement(acknowledged_msg_id=ids[0], metadata=meta)


def acked_ids(ack: ChatAcknowledgement, limit: int = 512) -> list[str]:
    """The msg_ids an acknowledgement acknowledges: its own, then a tagged ``acked`` list's.

    Args:
        ack: the acknowledgement.
        limit: the most ids read from it (the rest are ignored: the peer sends them again).
    """
    ids = [str(ack.acknowledged_msg_id)]
    meta = ack.metadata
    if not meta or TAG_KEY not in meta:
        return ids
    extra = meta.get(ACKED_KEY)
    if not isinstance(extra, str) or not extra:
        return ids
    for key in extra.split(",", limit)[: max(0, limit - 1)]:
        if 0 < len(key) <= _MAX_ID_CHARS:
            ids.append(key)
    return ids


def reads_coalesced(ack: ChatAcknowledgement) -> bool:
    """Whether the acknowledgement's sender says it reads coalesced acknowledgements.

    Args:
        ack: an acknowledgement that arrived.
    """
    return bool(ack.metadata) and TAG_KEY in ack.metadata


def asks_coalesced_acks(chat: ChatMessage) -> bool:
    """Whether a (tagged) question asks for coalesced acknowledgements (``acks=many``).

    Args:
        chat: a ChatMessage that arrived.
    """
    tag = next(tagged_items(chat), None)
    return tag is not None and tag.get(ACKS_KEY) == ACKS_MANY


class AckBatcher:
    """Which acknowledgements to send now, per peer (see the module doc).

    Args:
        max_ids: ids in one acknowledgement at most.
        max_waiting: ids waiting per peer at most (beyond: not acknowledged; the peer sends the
            ChatMessage again and that one is acknowledged).
        max_peers: peers remembered as reading coalesced acknowledgements.
        max_in_flight: acknowledgements on their way to one peer at once, at most (the ones
            beyond the first go only full).
    """

    def __init__(
        self,
        max_ids: int = 256,
        max_waiting: int = 4096,
        max_peers: int = 4096,
        max_in_flight: int = 4,
    ) -> None:
        self.max_ids = max_ids
        self.max_waiting = max_waiting
        self.max_peers = max_peers
        self.max_in_flight = max(1, max_in_flight)
        self._readers: OrderedDict[str, None] = OrderedDict()
        self._busy: dict[str, int] = {}  # peers with acknowledgements on their way: how many
        self._waiting: dict[str, list[str]] = {}
        self.coalesced = 0  # ids that went in another id's envelope
        self.dropped = 0  # ids not acknowledged (over max_waiting)

    def reads(self, peer: str) -> None:
        """``peer`` reads coalesced acknowledgements (it said so).

        Args:
            peer: the peer's address.
        """
        self._readers.pop(peer, None)
        self._readers[peer] = None
        while len(self._readers) > self.max_peers:
            self._readers.popitem(last=False)

    def ack(self, peer: str, msg_id: str) -> list[str] | None:
        """``msg_id`` from ``peer`` is to be acknowledged: the ids to send now, or None when
        it joins the acknowledgement that goes after the one on its way.

        Args:
            peer: the sender of the ChatMessage.
            msg_id: its msg_id.
        """
        if peer not in self._readers:
            return [msg_id]
        flying = self._busy.get(peer, 0)
        if not flying:
            self._busy[peer] = 1
            return [msg_id]
        waiting = self._waiting.setdefault(peer, [])
        if len(waiting) >= self.max_waiting:
            self.dropped += 1
            return None
        waiting.append(msg_id)
        if len(waiting) >= self.max_ids and flying < self.max_in_flight:
            self._busy[peer] = flying + 1
            return self._next(peer)
        return None

    def forget(self, peer: str) -> None:
        """An acknowledgement to ``peer`` on its way was stopped (its task cancelled): when no
        other is on its way, what waited is not sent (the peer sends those ChatMessages
        again), and the next goes at once.

        Args:
            peer: the peer's address.
        """
        flying = self._busy.pop(peer, 0) - 1
        if flying > 0:
            self._busy[peer] = flying
        else:
            self.dropped += len(self._waiting.pop(peer, ()))

    def sent(self, peer: str) -> list[str] | None:
        """The acknowledgement to ``peer`` went (or failed): the next ids to send, or None
        (nothing waits: the peer is idle again).

        Args:
            peer: the peer's address.
        """
        if not self._waiting.get(peer):
            flying = self._busy.pop(peer, 0) - 1
            if flying > 0:
                self._busy[peer] = flying
            return None
        return self._next(peer)

    def _next(self, peer: str) -> list[str]:
        waiting = self._waiting.pop(peer)
        batch, rest = waiting[: self.max_ids], waiting[self.max_ids :]
        if rest:
            self._waiting[peer] = rest
        self.coalesced += len(batch) - 1
        return batch
