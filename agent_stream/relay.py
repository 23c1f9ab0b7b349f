"""Relaying a sub-agent's reply inside your own: re-identification and the delegation chain.

No I/O here. :class:`Reidentifier` (a pure state machine) maps the Messages of a sub-agent's
reply into the caller's id space, under one block of the caller's stream (the *relay block*);
:func:`relay_into` (``Scope.relay``) reads a :class:`Relayable` reply as it arrives and writes
what the Reidentifier returns into a writer, asking the writer's sink to ``flush`` after each
relayed chunk so text is not re-buffered on the way.

- every message, block and thread id of the sub-reply gets a fresh id from the caller's
  :class:`~agent_stream.ids.IdGenerator`, so the sub-agent's ``M1`` never collides with the
  caller's; chunk ids are left empty for the caller's writer to number;
- the sub-reply's blocks become blocks of the caller whose ``block_start`` data names the relay
  block as ``parent_block_id`` (or, for a block that names a parent of its own, that parent's
  new id: nesting survives any number of hops); its threads become threads of the caller
  (``parent_thread_id``: the thread the relay runs in, or the thread's own parent, mapped);
  whatever is outside a sub-block lands in the relay block, and outside a sub-thread in the
  caller's thread;
- content passes chunk for chunk (a text delta stays a delta); repeated chunk ids are dropped;
- ``stream_start``/``stream_end`` are not passed on (the relay block stands for the sub-stream):
  the sub-stream's end status, error and usage are kept on the Reidentifier;
- :meth:`Reidentifier.close` ends whatever the sub-reply left open (a sub-agent lost mid-reply),
  so the caller's stream stays well formed.

The delegation chain travels in the request tags
(:func:`~agent_stream.adapters.chat.wire.request_tags` ``chain=``, ``max_hops=``): the askers
so far, origin first, and the hop limit.
:func:`delegation_path` and :func:`check_delegation` decide whether a delegation may go ahead.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agent_stream.errors import StreamError
from agent_stream.ids import IdGenerator
from agent_stream.message import (
    BLOCK_END,
    BLOCK_START,
    EVENT,
    MESSAGE_END,
    MESSAGE_START,
    STREAM_END,
    STREAM_START,
    THREAD_END,
    THREAD_START,
    BlockEndData,
    Message,
    MessageEndData,
    ThreadEndData,
    lifecycle,
)
from agent_stream.message import error as _error

if TYPE_CHECKING:
    from types import TracebackType

    from agent_stream.assemble import Transcript

__all__ = [
    "DEFAULT_MAX_HOPS",
    "Reidentifier",
    "RelayBlock",
    "RelayError",
    "RelayHost",
    "RelayRefused",
    "Relayable",
    "check_delegation",
    "delegation_path",
    "end_status",
    "relay_into",
]

DEFAULT_MAX_HOPS = 4

Key = tuple[str | None, str]


class RelayRefused(StreamError):
    """A delegation that would exceed the hop limit or loop back to an agent already in the chain.

    It is not sent.

    Args:
        text: what was refused and why.
        code: ``hop_limit`` or ``loop``.
        peer: the agent that was not asked (None: unknown).
    """

    def __init__(self, text: str, code: str, peer: str | None = None) -> None:
        super().__init__(text)
        self.code = code
        self.peer = peer  # the agent that was not asked


class RelayError(StreamError):
    """A relayed sub-reply did not complete.

    Raised by ``Scope.relay`` after the relay block ended (status ``error``, or ``cancelled``).

    Args:
        text: what went wrong.
        status: the sub-reply's end (``error``, ``cancelled``, ``timeout``, ``lost``,
            ``undelivered``, or a refusal code: ``hop_limit``, ``loop``).
        peer: the sub-agent's address (None when unknown).
        transcript: what arrived of the sub-reply (None when nothing was asked).
    """

    def __init__(
        self, text: str, status: str, peer: str | None = None, transcript: Any = None
    ) -> None:
        super().__init__(text)
        self.status = status
        self.peer = peer
        self.transcript = transcript


# -- the chain ---------------------------------------------------------------------------------
def delegation_path(chain: Sequence[str], sender: str | None) -> tuple[str, ...]:
    """The askers of a request so far, origin first, ending with its sender.

    Args:
        chain: the request's ``chain`` tag (empty entries are dropped).
        sender: the request's sender, appended unless it is already last (None: none).
    """
    path = tuple(a for a in chain if a)
    if sender and (not path or path[-1] != sender):
        path += (sender,)
    return path


def check_delegation(path: Sequence[str], me: str, target: str, max_hops: int) -> None:
    """Check that an agent answering a request may ask another agent.

    The new request is hop ``len(path) + 1`` and must be within ``max_hops``; neither ``me``
    nor ``target`` may already be in the chain.

    Args:
        path: the askers of the request being answered, origin first.
        me: this agent's address.
        target: the address of the agent it would ask.
        max_hops: the most hops a chain of requests may have.

    Raises:
        RelayRefused: ``loop`` or ``hop_limit``.
    """
    if me in path:
        raise RelayRefused(
            f"delegation loop: {_short(me)} is already in the chain ({len(path)} hops)", "loop"
        )
    if target == me or target in path:
        raise RelayRefused(
            f"delegation loop: {_short(target)} is already in the chain; not asking it again",
            "loop",
        )
    hop = len(path) + 1
    if hop > max_hops:
        raise RelayRefused(
            f"hop limit: asking {_short(target)} would be hop {hop} of at most {max_hops}",
            "hop_limit",
        )


def _short(address: str | None) -> str | None:
    if not address:
        return None
    return address if len(address) <= 20 else address[:14] + "…" + address[-4:]


def end_status(status: str | None) -> str:
    """The lifecycle status a relay ends with for a sub-reply status.

    Args:
        status: the sub-reply's status; ``completed`` and ``cancelled`` are kept, anything
            else (error, timeout, lost, None...) gives ``error``.
    """
    if status in ("completed", "cancelled"):
        return status
    return "error"


# -- re-identification ---------------------------------------------------------------------------
@dataclass
class _Open:
    message_id: str
    thread_id: str | None
    block_id: str | None
    type: str


class Reidentifier:
    """Maps one sub-reply's Messages into the caller's id space, under the relay block.

    :meth:`feed` returns the Messages to emit (their chunk_id empty); :meth:`close` the ends
    of what is still open.

    Args:
        ids: the caller's IdGenerator.
        block_id: the relay block.
        thread_id: the thread the relay block is in (None: none).
    """

    def __init__(self, ids: IdGenerator, *, block_id: str, thread_id: str | None = None) -> None:
        self.ids = ids
        self.block_id = block_id
        self.thread_id = thread_id
        self._messages: dict[Key, str] = {}
        self._blocks: dict[str, str] = {}
        self._threads: dict[str, str] = {}
        self._open_messages: dict[Key, _Open] = {}  # keyed by the caller's (thread, message)
        self._open_blocks: dict[str, str | None] = {}  # caller block id -> its thread
        self._open_threads: dict[str, str | None] = {}  # caller thread id -> its block
        self._seen: set[str] = set()
        self.status: str | None = None  # the sub-stream's stream_end status
        self.error: str | None = None
        self.usage: dict[str, Any] | None = None
        self.relayed = 0  # Messages passed on

    # -- id maps ----------------------------------------------------------------------------------
    def thread(self, sub: str | None) -> str | None:
        """The caller's thread for a sub-reply thread.

        Args:
            sub: the sub-reply's thread id (None: the relay's own thread).
        """
        return _mapped(self._threads, sub, self.ids.thread) if sub else self.thread_id

    def block(self, sub: str | None) -> str:
        """The caller's block for a sub-reply block.

        Args:
            sub: the sub-reply's block id (None: the relay block).
        """
        return _mapped(self._blocks, sub, self.ids.block) if sub else self.block_id

    def message(self, sub_thread: str | None, sub_message: str) -> str:
        """The caller's message id for a sub-reply message (made on first sight).

        Args:
            sub_thread: the sub-reply's thread id of the message (None: none).
            sub_message: the sub-reply's message id.
        """
        key = (sub_thread or None, sub_message)
        m = self._messages.get(key)
        if m is None:
            m = self._messages[key] = self.ids.message()
        return m

    # -- feeding ----------------------------------------------------------------------------------
    def feed(self, msg: Message) -> list[Message]:
        """One Message of the sub-reply; the Messages to emit in the caller's stream.

        Args:
            msg: the sub-reply's Message (a chunk seen before gives nothing).
        """
        cid = msg.chunk_id
        if cid is not None:
            if cid in self._seen:
                return []
            self._seen.add(cid)
        name = msg.event
        if msg.type == EVENT and name is not None and msg.is_lifecycle:
            out = self._lifecycle(name, msg)
        else:
            out = [self._content(msg)]
        self.relayed += len(out)
        return out

    def _content(self, msg: Message) -> Message:
        sub_thread = msg.thread_id
        mid = msg.message_id
        if mid is None and msg.delta is False and not msg.type_change:
            new_mid = self.ids.message()  # a whole message without an id: give it one
        else:
            new_mid = self.message(sub_thread, mid or "")
        return msg.model_copy(
            update={
                "chunk_id": None,
                "message_id": new_mid,
                "thread_id": self.thread(sub_thread),
                "block_id": self.block(msg.block_id),
                "metadata": None,
            }
        )

    def _lifecycle(self, name: str, msg: Message) -> list[Message]:
        data = dict(msg.event_data)
        sub_thread: str | None = _str(data.get("thread_id")) or msg.thread_id
        if name == STREAM_START:
            return []
        if name == STREAM_END:
            self.status = _str(data.get("status")) or "completed"
            self.error = _str(data.get("error"))
            usage = data.get("usage")
            self.usage = usage if isinstance(usage, dict) else None
            return []
        thread = self.thread(sub_thread)
        if name in (MESSAGE_START, MESSAGE_END):
            sub_mid = _str(data.get("message_id")) or msg.message_id or ""
            mid = self.message(sub_thread, sub_mid)
            block = self.block(msg.block_id)
            data["message_id"] = mid
            if thread is not None:
                data["thread_id"] = thread
            else:
                data.pop("thread_id", None)
            if name == MESSAGE_START:
                typ = _str(data.get("type")) or "text"
                self._open_messages[(thread, mid)] = _Open(mid, thread, block, typ)
            else:
                self._open_messages.pop((thread, mid), None)
            return [_event(msg, data, message_id=mid, thread_id=thread, block_id=block)]
        if name in (BLOCK_START, BLOCK_END):
            sub_block = _str(data.get("block_id")) or msg.block_id
            block = self.block(sub_block)
            data["block_id"] = block
            if name == BLOCK_START:  # nested in its own parent, else in the relay block
                data["parent_block_id"] = self.block(_str(data.get("parent_block_id")))
                self._open_blocks[block] = thread
            else:
                self._open_blocks.pop(block, None)
            return [_event(msg, data, thread_id=thread, block_id=block)]
        # THREAD_START / THREAD_END
        if thread is None:
            return []  # a thread event without a thread id: nothing to map
        data["thread_id"] = thread
        block = self.block(msg.block_id)
        if name == THREAD_START:
            parent = self.thread(_str(data.get("parent_thread_id")))
            if parent is not None:
                data["parent_thread_id"] = parent
            self._open_threads[thread] = block
        else:
            self._open_threads.pop(thread, None)
        return [_event(msg, data, thread_id=thread, block_id=block)]

    def close(self, status: str) -> list[Message]:
        """End what the sub-reply left open: messages, then blocks, then threads.

        Args:
            status: the lifecycle status they end with (completed | error | cancelled).
        """
        out: list[Message] = []
        for o in self._open_messages.values():
            out.append(
                lifecycle(
                    MESSAGE_END,
                    MessageEndData(
                        message_id=o.message_id, type=o.type, thread_id=o.thread_id, status=status
                    ),
                    message_id=o.message_id,
                    thread_id=o.thread_id,
                    block_id=o.block_id,
                )
            )
        for b, t in self._open_blocks.items():
            out.append(
                lifecycle(
                    BLOCK_END,
                    BlockEndData(block_id=b, status=status),  # type: ignore[arg-type]
                    block_id=b,
                    thread_id=t,
                )
            )
        for tid, bid in self._open_threads.items():
            out.append(
                lifecycle(
                    THREAD_END,
                    ThreadEndData(thread_id=tid, status=status),  # type: ignore[arg-type]
                    thread_id=tid,
                    block_id=bid,
                )
            )
        self._open_messages.clear()
        self._open_blocks.clear()
        self._open_threads.clear()
        self.relayed += len(out)
        return out


def _mapped(table: dict[str, str], sub: str, make: Callable[[], str]) -> str:
    """The id ``sub`` maps to in ``table``: a new one from ``make`` the first time."""
    found = table.get(sub)
    if found is None:
        found = table[sub] = make()
    return found


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _event(
    msg: Message,
    data: dict[str, Any],
    *,
    message_id: str | None = None,
    thread_id: str | None = None,
    block_id: str | None = None,
) -> Message:
    props = dict(msg.props or {})
    props["data"] = data
    return Message(
        type=EVENT, props=props, message_id=message_id, thread_id=thread_id, block_id=block_id
    )


class Relayable(Protocol):
    """What ``Scope.relay`` reads: a reply as it arrives (e.g. :class:`agent_stream.uagents.Reply`).

    Its Messages live, its end status (None while it streams; then completed | error |
    cancelled | timeout | lost ...), the assembled Transcript, the peer's address, and
    ``cancel()``.
    """

    peer: str
    status: str | None

    def __aiter__(self) -> AsyncIterator[Message]: ...

    @property
    def transcript(self) -> Transcript: ...

    def cancel(self) -> None:
        """Cancel the reply (the responder is told)."""
        ...


# -- relaying into a writer -------------------------------------------------------------------
_REASONS = {
    "timeout": "no complete reply in time",
    "lost": "the agent stopped answering (lost)",
    "undelivered": "the question could not be delivered",
}


class RelayBlock(Protocol):
    """The writer's side of a relay block (:class:`agent_stream.writer.BlockScope`).

    What :func:`relay_into` needs of it, so this module never imports the writer.
    """

    block_id: str | None
    thread_id: str | None
    status: str | None  # ends with this when the body returns (None: completed)
    end_data: dict[str, Any]  # extra block_end data

    @property
    def _ids(self) -> IdGenerator:
        """The stream's id generator: the sub-reply's ids are renumbered from it."""

    async def _relay_emit(self, m: Message) -> None:
        """Emit a Message already in the stream's id space (counted, then flushed)."""

    async def send(self, msg: Message) -> Message:
        """Send a whole message in the block.

        Args:
            msg: the Message.
        """
        ...

    async def __aenter__(self) -> RelayBlock: ...

    async def __aexit__(
        self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class RelayHost(Protocol):
    """The scope a relay runs in (:class:`agent_stream.writer.Scope`)."""

    thread_id: str | None
    block_id: str | None

    def _relay_block(self, type: str, label: str, start_data: dict[str, Any]) -> RelayBlock:
        """A new block of this scope whose block_start carries ``start_data``."""


async def relay_into(
    scope: RelayHost,
    source: Relayable | Awaitable[Relayable],
    *,
    label: str | None,
    type: str,
    name: str | None,
    agent: str | None,
) -> Transcript:
    """Scope.relay (see there): relay ``source`` into a new block of ``scope``.

    Args:
        scope: the scope the relay block is opened in.
        source: the sub-reply, or an awaitable of it (the ask itself).
        label: the block's label (None: ``name``, else the peer's short address).
        type: the block's type.
        name: the sub-agent's name, the block_start's ``agent_name``.
        agent: the sub-agent's address for the block_start, when the reply has no peer.

    Raises:
        RelayError: the sub-reply did not complete.
    """
    reply: Relayable | None = None
    failure: Exception | None = None
    if inspect.isawaitable(source):
        try:
            reply = await source
        except Exception as exc:  # not delivered, refused: reported in the block
            failure = exc
    else:
        reply = source
    peer = reply.peer if reply is not None else agent or getattr(failure, "peer", None)
    block = scope._relay_block(
        type,
        label or name or _short(peer) or "agent",
        {
            k: v
            for k, v in (("agent", peer), ("agent_name", name), ("parent_block_id", scope.block_id))
            if v
        },
    )
    err: RelayError | None
    async with block as b:
        assert b.block_id is not None
        if reply is None:
            code = getattr(failure, "code", None) or (
                "undelivered" if isinstance(failure, ConnectionError) else "error"
            )
            text = str(failure) or _REASONS.get(code, failure.__class__.__name__)
            await b.send(_error(text, code=code))
            b.status, b.end_data = "error", {"relay_status": code}
            err = RelayError(text, code, peer)
        else:
            err = await _pump(b, reply)
    if err is not None:
        raise err
    assert reply is not None
    return reply.transcript


async def _pump(b: RelayBlock, reply: Relayable) -> RelayError | None:
    """Relay ``reply`` into block ``b``; sets its end status; the error to raise, if any."""
    assert b.block_id is not None
    rid = Reidentifier(b._ids, block_id=b.block_id, thread_id=b.thread_id)
    emit = b._relay_emit

    try:
        async for m in reply:
            for out in rid.feed(m):
                await emit(out)
    except asyncio.CancelledError:
        reply.cancel()
        for out in rid.close("cancelled"):
            await emit(out)
        raise
    status = reply.status or "completed"
    sub = rid.status or status
    final = end_status(sub if status == "completed" else status)
    for out in rid.close(final):
        await emit(out)
    b.end_data = {"relay_status": status if status != "completed" else sub}
    if rid.usage:
        b.end_data["usage"] = rid.usage
    if final == "completed":
        return None
    b.status = final
    why = sub if status == "completed" else status
    text = rid.error or _REASONS.get(why, f"the reply ended {why}")
    if rid.status != "error":  # else the sub-agent's own error message came through
        await b.send(_error(f"{_short(reply.peer)}: {text}", code=why))
    return RelayError(
        f"relayed reply from {_short(reply.peer)} did not complete: {text}",
        why,
        reply.peer,
        reply.transcript,
    )
