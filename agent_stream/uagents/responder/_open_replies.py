"""The replies an agent is streaming, indexed by asker and conversation.

An agent with a thousand replies open gets, for each incoming control op, resent question or
session end, a question about one asker's reply (or all of that asker's replies): answered here
from an index instead of by scanning every open reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_stream.uagents.responder._pump import Outgoing

__all__ = ["OpenReplies"]


class OpenReplies:
    """A set of :class:`~._pump.Outgoing` replies with lookups by asker
    (``peer``) and by asker and conversation (a reply's peer and conversation never change)."""

    def __init__(self) -> None:
        self._by_peer: dict[str, dict[str, list[Outgoing]]] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Outgoing]:
        for convs in list(self._by_peer.values()):
            for outs in list(convs.values()):
                yield from list(outs)

    def __contains__(self, out: object) -> bool:
        peer, conv = getattr(out, "peer", None), getattr(out, "conversation", None)
        if not isinstance(peer, str) or not isinstance(conv, str):
            return False
        return any(o is out for o in self._by_peer.get(peer, {}).get(conv, ()))

    def add(self, out: Outgoing) -> None:
        """Add ``out`` (once; adding it again changes nothing).

        Args:
            out: the reply.
        """
        outs = self._by_peer.setdefault(out.peer, {}).setdefault(out.conversation, [])
        if not any(o is out for o in outs):
            outs.append(out)
            self._count += 1

    def discard(self, out: Outgoing) -> None:
        """Remove ``out`` if it is here.

        Args:
            out: the reply.
        """
        convs = self._by_peer.get(out.peer)
        outs = convs.get(out.conversation) if convs is not None else None
        if outs is None or convs is None:
            return
        for i, o in enumerate(outs):
            if o is out:
                del outs[i]
                self._count -= 1
                break
        if not outs:
            del convs[out.conversation]
            if not convs:
                del self._by_peer[out.peer]

    def find(self, peer: str, conversation: str) -> list[Outgoing]:
        """The open replies to ``peer``'s question ``conversation`` (usually one, or none).

        Args:
            peer: the asker's address.
            conversation: the question's msg_id.
        """
        return list(self._by_peer.get(peer, {}).get(conversation, ()))

    def of_peer(self, peer: str) -> Iterator[Outgoing]:
        """Every open reply to ``peer``, as it is read (lazily: every incoming ChatMessage
        offers them to a check that reads them only for a session end; built as a list, a
        gateway's thousand questions each copied the replies opened before it).

        Args:
            peer: the asker's address.
        """
        for outs in list(self._by_peer.get(peer, {}).values()):
            yield from list(outs)

    def has_peer(self, peer: str) -> bool:
        """Whether any reply to ``peer`` is open.

        Args:
            peer: the asker's address.
        """
        return peer in self._by_peer
