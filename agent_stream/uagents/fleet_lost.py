"""What a surviving replica sends for a reply whose replica died: the reply's end, ``lost``.

The replica that held a reply would have ended it itself; once it is dead (its liveness key
expired), another replica of the fleet ends it for the asker instead of leaving the asker to find
out at its idle timeout: one ChatMessage whose tagged group is the reply's ``stream_end`` with
status ``lost``, numbered after the last ChatMessage of the reply's mirror, in the reply's
conversation. The asker decodes it like any end: streams still open are reported not ended,
the reply's status is ``lost``.

:func:`sweep` finds such replies for a :class:`~agent_stream.uagents.fleet.Fleet` (its
``sweep``): the replicas listed in the fleet whose liveness key expired, and a few of the replies
each listed as open (mirrored, not ended). A reply is ended by the replica that takes ``SET NX``
on it, so once in the fleet; not when its mirror's last ChatMessage is its final one (it ended),
nor when its mirror expired (nothing to number the end after), nor when its replica is alive.
It works through the Fleet's own Redis connection, timeouts and batch writer: it is the Fleet's
sweep, in a module of its own.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent

from agent_stream import telemetry
from agent_stream.adapters.chat import ChatEncoder
from agent_stream.adapters.chat.wire import OP_MESSAGE, tagged_items
from agent_stream.message import STREAM_END

if TYPE_CHECKING:
    from agent_stream.uagents.fleet import Fleet

__all__ = [
    "LOST",
    "LOST_DETAIL",
    "SendTo",
    "is_final",
    "lost_end",
    "open_entry",
    "parse_open_entry",
    "sweep",
]

LOG = logging.getLogger("agent_stream.uagents")
SendTo = Callable[[str, ChatMessage], Awaitable[object]]

LOST = "lost"
LOST_DETAIL = "the replica answering it stopped"
_MAX_PEER = 256
_MAX_CONVERSATION = 128
_MAX_ENTRY = 512
_MAX_REPLICA = 64
_SWEEP_REPLICAS = 64  # replicas looked at per sweep
_SWEEP_REPLIES = 16  # open replies of dead replicas ended (or dropped) per sweep
_FAILED = object()  # what a Redis call that failed returns


def lost_end(conversation: str, seq: int) -> ChatMessage:
    """The ChatMessage ending reply ``conversation`` as ``lost``, numbered ``seq``.

    Args:
        conversation: the reply's conversation (its question's msg_id).
        seq: its number: one after the last ChatMessage the reply's mirror holds.

    Raises:
        ValueError: ``seq`` is below 1.
    """
    if seq < 1:
        raise ValueError(f"lost_end: seq must be >= 1, got {seq}")
    encoder = ChatEncoder(conversation, tagged=True, meta_delay=0)
    (chat,) = encoder.close(0.0, status=LOST, error=LOST_DETAIL)
    content: list[Any] = []
    numbered = False
    for item in chat.content:
        if not numbered and isinstance(item, MetadataContent) and "seq" in item.metadata:
            item = MetadataContent(metadata={**item.metadata, "seq": str(seq)})
            numbered = True
        content.append(item)
    return ChatMessage(content=content)


def is_final(chat: ChatMessage) -> bool:
    """Whether ``chat`` carries its reply's final ``stream_end`` (the reply ended already).

    Args:
        chat: a ChatMessage of a reply.
    """
    for md in tagged_items(chat):
        if md.get("op") != OP_MESSAGE or md.get("type") != "event":
            continue
        try:
            props = json.loads(md.get("props", ""))
        except (ValueError, RecursionError):
            continue
        if isinstance(props, dict) and props.get("event") == STREAM_END:
            return True
    return False


def open_entry(peer: str, conversation: str) -> str:
    """The member naming reply ``conversation`` to ``peer`` in a replica's set of open replies.

    Args:
        peer: the asker's address.
        conversation: the question's msg_id.
    """
    return json.dumps([peer, conversation], separators=(",", ":"))


def parse_open_entry(raw: Any) -> tuple[str, str] | None:
    """``(peer, conversation)`` from a member of a set of open replies; None when it is not one
    (too big, not JSON, not two short non-empty strings).

    Args:
        raw: the member as Redis returned it.
    """
    if isinstance(raw, bytes | bytearray):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str) or len(raw) > _MAX_ENTRY:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or len(value) != 2:
        return None
    peer, conversation = value
    ok_peer = isinstance(peer, str) and 0 < len(peer) <= _MAX_PEER
    ok_conv = isinstance(conversation, str) and 0 < len(conversation) <= _MAX_CONVERSATION
    return (peer, conversation) if ok_peer and ok_conv else None


async def sweep(fleet: Fleet) -> int:
    """End, for their askers, a few open replies of the replicas of ``fleet``'s agent found
    dead; returns how many were ended by this replica.

    Args:
        fleet: this replica's share of the fleet (started with ``send_to``).
    """
    send_to = fleet._send_to
    if fleet.address is None or send_to is None:
        return 0
    redis = fleet._redis
    listed = await fleet._bounded(redis.srandmember(fleet._key("replicas"), _SWEEP_REPLICAS), None)
    others = [r for r in map(_text, listed or ()) if _replica_id(r) and r != fleet.replica]
    if not others:
        return 0
    pipe = redis.pipeline(transaction=False)
    for r in others:
        pipe.exists(fleet._key("replica", r))
    found = await fleet._bounded(pipe.execute(), None)
    if not isinstance(found, list) or len(found) != len(others):
        return 0
    budget, sends = _SWEEP_REPLIES, []
    for r, alive in zip(others, found, strict=True):
        if alive or budget <= 0:
            continue
        entries = await fleet._bounded(redis.srandmember(fleet._key("open", r), budget), None)
        if entries is None:
            continue
        if not entries:  # nothing of it is left open: it is forgotten
            fleet._command("srem", fleet._key("replicas"), r)
            continue
        if await fleet.alive(r):  # back (or Redis was slow): a live replica's are never ended
            continue
        for raw in entries[:budget]:
            budget -= 1
            end = await _end_lost(fleet, r, raw)
            if end is not None:
                sends.append(send_to(*end))
    if sends:
        fleet.ended_lost += len(sends)
        telemetry.fleet_ended_lost(len(sends))
        await asyncio.gather(*sends, return_exceptions=True)
    return len(sends)


async def _end_lost(fleet: Fleet, replica: str, raw: Any) -> tuple[str, ChatMessage] | None:
    """(asker, the ChatMessage ending it lost) for one open reply of dead ``replica``, when this
    replica is the one to send it. The entry leaves the dead replica's set unless Redis did not
    answer (a later sweep tries again)."""
    ref = parse_open_entry(raw)
    if ref is None:
        fleet.refused += 1
        fleet._command("srem", fleet._key("open", replica), raw)
        return None
    peer, conv = ref
    redis = fleet._redis
    linger = max(1, int(fleet.policy.replay_linger))
    took = await fleet._bounded(
        redis.set(fleet._key("lost", peer, conv), fleet.replica, nx=True, ex=linger), _FAILED
    )
    if took is _FAILED:
        return None
    fleet._command("srem", fleet._key("open", replica), raw)
    if not took:  # another replica ends it
        return None
    key = fleet._key("replay", peer, conv)
    firsts = await fleet._bounded(redis.hkeys(key), None)
    numbers = [n for n in (_number(_text(k)) for k in firsts or ()) if n is not None]
    if not numbers:  # its mirror expired: there is nothing to number the end after
        return None
    entry = _text(await fleet._bounded(redis.hget(key, str(max(numbers))), None) or "")
    last_text, _, body = entry.partition(":")
    last = _number(last_text)
    try:
        final = is_final(ChatMessage.parse_raw(body))
    except Exception:  # a damaged entry: the reply's end is not known to have gone
        final = False
    if last is None or final:
        return None
    chat = lost_end(conv, last + 1)
    fleet._command("hset", key, str(last + 1), f"{last + 1}:{chat.json()}")
    fleet._command("expire", key, linger)
    LOG.info("fleet: replica %s is gone; its reply to %s is ended lost", replica, peer[:24])
    return peer, chat


def _replica_id(value: str) -> bool:
    return 0 < len(value) <= _MAX_REPLICA


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else str(value)


def _number(text: str) -> int | None:
    if not text.isascii() or not text.isdecimal() or len(text) > 18:
        return None
    return int(text)
