"""What a surviving replica sends for a reply whose replica died: the reply's end, ``lost``.

The replica that held a reply would have ended it itself; once it is dead (its liveness key
expired), another replica of the fleet ends it for the asker instead of leaving the asker to find
out at its idle timeout: one ChatMessage whose tagged group is the reply's ``stream_end`` with
status ``lost``, numbered after the last ChatMessage of the reply's mirror, in the reply's
conversation, laid out as the replica's own last ChatMessage would have been: the chat streams
the mirror shows open are ended first (EndStreamContent), and the session too (EndSessionContent)
when the mirror says the question opened one, so an asker without agent_stream sees the end.
The asker decodes it like any end: messages still open are reported not ended, the reply's
status is ``lost``.

:func:`sweep` finds such replies for a :class:`~agent_stream.uagents.fleet._fleet.Fleet` (its
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
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from uagents_core.contrib.protocols.chat import ChatMessage, EndStreamContent, MetadataContent

from agent_stream import telemetry
from agent_stream.adapters.chat import ChatEncoder
from agent_stream.adapters.chat.wire import (
    OP_CHUNK,
    OP_END,
    OP_MESSAGE,
    PROTOCOL_VERSION,
    TAG_KEY,
    tagged_items,
)
from agent_stream.message import STREAM_END

if TYPE_CHECKING:
    from agent_stream.uagents.fleet._fleet import Fleet

__all__ = [
    "LOST",
    "LOST_DETAIL",
    "SendTo",
    "is_final",
    "lost_end",
    "open_entry",
    "open_streams",
    "parse_open_entry",
    "sweep",
]

LOG = logging.getLogger("agent_stream.uagents")
SendTo = Callable[[str, ChatMessage], Awaitable[object]]

LOST = "lost"
LOST_DETAIL = "the replica answering it stopped"
SESSION_FIELD = "session"  # in a reply's mirror: "1" when its last ChatMessage ends the session
_MAX_PEER = 256
_MAX_CONVERSATION = 128
_MAX_ENTRY = 512
_MAX_REPLICA = 64
_MAX_STREAMS = 64  # chat streams a lost end closes (as many as an asker's decoder keeps open)
_SWEEP_REPLICAS = 64  # replicas looked at per sweep
_SWEEP_REPLIES = 16  # open replies of dead replicas ended (or dropped) per sweep
_FAILED = object()  # what a Redis call that failed returns


def lost_end(
    conversation: str, seq: int, *, streams: Sequence[str] = (), session: bool = False
) -> ChatMessage:
    """The ChatMessage ending reply ``conversation`` as ``lost``, numbered ``seq``: laid out as
    the replica's own last ChatMessage would have been, so a plain asker sees the end too.

    Args:
        conversation: the reply's conversation (its question's msg_id).
        seq: its number: one after the last ChatMessage the reply's mirror holds.
        streams: the chat streams the reply left open (:func:`open_streams`): each is ended
            (an ``end`` group with its EndStreamContent) before the ``stream_end``.
        session: the reply's last ChatMessage ends the chat session (EndSessionContent).

    Raises:
        ValueError: ``seq`` is below 1, or a stream id is not a UUID.
    """
    if seq < 1:
        raise ValueError(f"lost_end: seq must be >= 1, got {seq}")
    content: list[Any] = []
    for sid in streams:
        stream_id = uuid.UUID(sid)
        meta = {TAG_KEY: PROTOCOL_VERSION, "op": OP_END, "stream_id": str(stream_id)}
        content += [MetadataContent(metadata=meta), EndStreamContent(stream_id=stream_id)]
    encoder = ChatEncoder(conversation, tagged=True, meta_delay=0, session=session)
    (chat,) = encoder.close(0.0, status=LOST, error=LOST_DETAIL)
    content += chat.content
    numbered = False
    for i, item in enumerate(content):  # the first group is numbered, as the encoder does
        if isinstance(item, MetadataContent):
            md = {k: v for k, v in item.metadata.items() if k not in ("seq", "conversation")}
            if not numbered:
                md.update(seq=str(seq), conversation=conversation)
                numbered = True
            content[i] = MetadataContent(metadata=md)
    return ChatMessage(content=content)


def open_streams(bodies: Iterable[str]) -> list[str]:
    """The chat streams a reply's mirrored ChatMessages leave open: started (or carrying a
    chunk) and not ended, at most a few; ids that are not UUIDs are skipped.

    Args:
        bodies: the mirrored ChatMessages, as JSON text (damaged ones are skipped).
    """
    seen: dict[str, None] = {}
    ended: set[str] = set()
    for body in bodies:
        try:
            items = json.loads(body).get("content")
        except (ValueError, RecursionError, AttributeError):
            continue
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, dict):
                continue
            kind, sid = item.get("type"), item.get("stream_id")
            if kind == "metadata" and isinstance(item.get("metadata"), dict):
                md = item["metadata"]
                if TAG_KEY in md and md.get("op") in (OP_CHUNK, OP_END):
                    kind, sid = md["op"], md.get("stream_id")
            sid = _stream_id(sid)
            if sid is None:
                continue
            if kind in ("end-stream", OP_END):
                ended.add(sid)
            elif kind in ("start-stream", OP_CHUNK):
                seen[sid] = None
    return [sid for sid in seen if sid not in ended][:_MAX_STREAMS]


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
    send_to = fleet.send_to
    if fleet.address is None or send_to is None:
        return 0
    redis = fleet.redis
    listed = await fleet.bounded(redis.srandmember(fleet.key("replicas"), _SWEEP_REPLICAS), None)
    others = [r for r in map(_text, listed or ()) if _replica_id(r) and r != fleet.replica]
    if not others:
        return 0
    pipe = redis.pipeline(transaction=False)
    for r in others:
        pipe.exists(fleet.key("replica", r))
    found = await fleet.bounded(pipe.execute(), None)
    if not isinstance(found, list) or len(found) != len(others):
        return 0
    budget, sends = _SWEEP_REPLIES, []
    for r, alive in zip(others, found, strict=True):
        if alive or budget <= 0:
            continue
        entries = await fleet.bounded(redis.srandmember(fleet.key("open", r), budget), None)
        if entries is None:
            continue
        if not entries:  # nothing of it is left open: it is forgotten
            fleet.command("srem", fleet.key("replicas"), r)
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
        fleet.command("srem", fleet.key("open", replica), raw)
        return None
    peer, conv = ref
    redis = fleet.redis
    linger = max(1, int(fleet.policy.replay_linger))
    took = await fleet.bounded(
        redis.set(fleet.key("lost", peer, conv), fleet.replica, nx=True, ex=linger), _FAILED
    )
    if took is _FAILED:
        return None
    fleet.command("srem", fleet.key("open", replica), raw)
    if not took:  # another replica ends it
        return None
    key = fleet.key("replay", peer, conv)
    raw = await fleet.bounded(redis.hgetall(key), None)
    entries: dict[int, str] = {}
    session = False
    for k, v in raw.items() if isinstance(raw, dict) else ():
        field, n = _text(k), _number(_text(k))
        if n is not None:
            entries[n] = _text(v)
        elif field == SESSION_FIELD:
            session = _text(v) == "1"
    if not entries:  # its mirror expired: there is nothing to number the end after
        return None
    last_text, _, body = entries[max(entries)].partition(":")
    last = _number(last_text)
    try:
        final = is_final(ChatMessage.parse_raw(body))
    except Exception:  # a damaged entry: the reply's end is not known to have gone
        final = False
    if last is None or final:
        return None
    streams = open_streams(e.partition(":")[2] for _, e in sorted(entries.items()))
    chat = lost_end(conv, last + 1, streams=streams, session=session)
    fleet.command("hset", key, str(last + 1), f"{last + 1}:{chat.json()}")
    fleet.command("expire", key, linger)
    LOG.info("fleet: replica %s is gone; its reply to %s is ended lost", replica, peer[:24])
    return peer, chat


def _stream_id(value: Any) -> str | None:
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def _replica_id(value: str) -> bool:
    return 0 < len(value) <= _MAX_REPLICA


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes | bytearray) else str(value)


def _number(text: str) -> int | None:
    if not text.isascii() or not text.isdecimal() or len(text) > 18:
        return None
    return int(text)
