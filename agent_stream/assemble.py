"""Assembler: a Message stream in arrival order in, a Transcript (threads > blocks > messages) out.

Messages are keyed by (thread_id, message_id), so ids reused in different threads never collide;
blocks by block_id alone (one block may span several threads). Text appended to one path is kept
as a list of parts and joined when read, so a million one-character deltas cost linear time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agent_stream import merge
from agent_stream.errors import (
    DeltaError,
    InvalidMessage,
    StreamWarning,
    UnknownMessage,
    WarningCode,
)
from agent_stream.events import EventView
from agent_stream.ids import SeenIds
from agent_stream.message import (
    BLOCK_END,
    BLOCK_START,
    DELTA_ACTIONS,
    MESSAGE_END,
    MESSAGE_START,
    STREAM_END,
    STREAM_START,
    TEXT,
    THREAD_END,
    THREAD_START,
    Message,
)

STREAMING = "streaming"
COMPLETED = "completed"
INCOMPLETE = "incomplete"

Key = tuple[str | None, str]


class MessageState:
    """One logical message as assembled so far.

    Args:
        message_id: its id (None: a message without one).
        thread_id: the thread it is in (None: none).
        block_id: the block it is in (None: none).
        type_: its Message type.
    """

    __slots__ = (
        "_hot_parts",
        "_hot_path",
        "_props",
        "block_id",
        "chunk_count",
        "duplicates",
        "message_id",
        "reported_chunk_count",
        "status",
        "thread_id",
        "type",
    )

    def __init__(
        self, message_id: str | None, thread_id: str | None, block_id: str | None, type_: str
    ) -> None:
        self.message_id = message_id
        self.thread_id = thread_id
        self.block_id = block_id
        self.type = type_
        self._props: dict[str, Any] = {}
        self.chunk_count = 0
        self.duplicates = 0
        self.status = STREAMING
        self.reported_chunk_count: int | None = None
        self._hot_path: str | None = None
        self._hot_parts: list[str] = []

    @property
    def props(self) -> dict[str, Any]:
        """The merged props (text appended so far joined into place)."""
        self._materialize()
        return self._props

    @property
    def content(self) -> str:
        """props.content when it is a string, else ""."""
        c = self.props.get("content")
        return c if isinstance(c, str) else ""

    def _materialize(self) -> None:
        if self._hot_path is not None:
            parts = self._hot_parts
            if len(parts) > 1:
                joined = "".join(parts)
                parts.clear()
                parts.append(joined)
            merge.set_path(self._props, self._hot_path, parts[0])

    def _cool(self) -> None:
        self._materialize()
        self._hot_path = None
        self._hot_parts = []

    def apply(self, msg: Message) -> None:
        """Merge one content chunk.

        Args:
            msg: the chunk (a whole message, a delta or a type change).

        Raises:
            DeltaError: the delta does not apply; the message is left as it was.
        """
        if not msg.delta:
            self._cool()
            self._props = merge.copy_json(msg.props) if msg.props else {}
            self.type = msg.type
            return
        action = msg.delta_action or "append"
        path = msg.delta_path
        chunk_props = msg.props or {}
        if action == "append":
            if path is None and len(chunk_props) == 1:
                ((k, v),) = chunk_props.items()
                if isinstance(v, str) and "." not in k:
                    path, value = k, v
                else:
                    value = None
            elif path is not None:
                value = merge.read_path(chunk_props, path)
            else:
                value = None
            if isinstance(value, str) and path is not None:
                if path == self._hot_path:
                    self._hot_parts.append(value)
                    return
                self._cool()
                _, _, cur = merge._locate(self._props, merge.split_path(path), path)
                if cur is merge._MISSING or cur is None or isinstance(cur, str):
                    self._hot_path = path
                    self._hot_parts = [cur if isinstance(cur, str) else "", value]
                    if cur is merge._MISSING or cur is None:
                        merge.set_path(self._props, path, "")
                    return
                merge.check_append(cur, value, path)  # raises: a string onto a non-string
        elif action not in DELTA_ACTIONS:
            raise DeltaError(f"unknown delta_action {action!r}")
        self._cool()
        self._props = merge.apply(self._props, action, path, chunk_props)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, as a transcript prints it."""
        return {
            "message_id": self.message_id,
            "thread_id": self.thread_id,
            "block_id": self.block_id,
            "type": self.type,
            "props": self.props,
            "chunk_count": self.chunk_count,
            "status": self.status,
        }


@dataclass
class BlockState:
    """One block: its block_start data and its block_end's.

    Attributes:
        block_id: the block's id.
        type: what the block is (``llm``, ``tool``, ``agent``...), from block_start.
        label: its name for people to read, from block_start.
        status: ``streaming`` until block_end, then the status it ended with.
        thread_ids: the threads started inside it, in order.
        message_keys: its messages' (thread_id, message_id), in order.
        duration_ms: how long it lasted, from block_end.
        parent_block_id: the block it is nested in, from block_start.
        agent: for a relayed sub-agent's block, the sub-agent's address.
        agent_name: for a relayed sub-agent's block, its name.
        relay_status: for a relay, how the sub-reply ended, from block_end.
        usage: for a relay, the sub-reply's token usage, from block_end.
    """

    block_id: str
    type: str | None = None
    label: str | None = None
    status: str = STREAMING
    thread_ids: list[str] = field(default_factory=list)
    message_keys: list[Key] = field(default_factory=list)
    duration_ms: int | None = None
    parent_block_id: str | None = None
    agent: str | None = None
    agent_name: str | None = None
    relay_status: str | None = None
    usage: dict[str, Any] | None = None

    @property
    def message_count(self) -> int:
        return len(self.message_keys)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, as a transcript prints it."""
        return {
            "block_id": self.block_id,
            "type": self.type,
            "label": self.label,
            "status": self.status,
            "message_count": self.message_count,
            "thread_ids": list(self.thread_ids),
            "parent_block_id": self.parent_block_id,
            "agent": self.agent,
            "agent_name": self.agent_name,
            "duration_ms": self.duration_ms,
            "relay_status": self.relay_status,
            "usage": self.usage,
        }


@dataclass
class ThreadState:
    """One thread: its thread_start data and its thread_end's.

    Attributes:
        thread_id: the thread's id.
        type: what the thread is, from thread_start.
        label: its name for people to read, from thread_start.
        status: ``streaming`` until thread_end, then the status it ended with.
        message_count: how many messages it holds.
        parent_thread_id: the thread it was started in, from thread_start.
        duration_ms: how long it lasted, from thread_end.
    """

    thread_id: str
    type: str | None = None
    label: str | None = None
    status: str = STREAMING
    message_count: int = 0
    parent_thread_id: str | None = None
    duration_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, as a transcript prints it."""
        return {
            "thread_id": self.thread_id,
            "type": self.type,
            "label": self.label,
            "status": self.status,
            "message_count": self.message_count,
            "parent_thread_id": self.parent_thread_id,
            "duration_ms": self.duration_ms,
        }


class Transcript:
    """Threads > blocks > messages, in order of first appearance."""

    def __init__(self) -> None:
        self._messages: dict[Key, MessageState] = {}
        self._blocks: dict[str, BlockState] = {}
        self._threads: dict[str, ThreadState] = {}
        self.status: str | None = None  # None until stream_start / stream_end
        self.stream_data: dict[str, Any] = {}
        self.warnings: list[StreamWarning] = []

    @property
    def messages(self) -> list[MessageState]:
        return list(self._messages.values())

    @property
    def blocks(self) -> list[BlockState]:
        return list(self._blocks.values())

    @property
    def threads(self) -> list[ThreadState]:
        return list(self._threads.values())

    @property
    def finished(self) -> bool:
        """True once stream_end was seen."""
        return self.status in (COMPLETED, "error", "cancelled")

    def get(self, thread_id: str | None, message_id: str) -> MessageState | None:
        """One message, None when the stream has no such message.

        Args:
            thread_id: the thread it is in (None: none).
            message_id: its id.
        """
        return self._messages.get((thread_id, message_id))

    def block(self, block_id: str) -> BlockState | None:
        """One block, None when the stream has no such block.

        Args:
            block_id: its id.
        """
        return self._blocks.get(block_id)

    def thread(self, thread_id: str) -> ThreadState | None:
        """One thread, None when the stream has no such thread.

        Args:
            thread_id: its id.
        """
        return self._threads.get(thread_id)

    def text(self) -> str:
        """The content of every text message, concatenated in order of first appearance."""
        return "".join(m.content for m in self._messages.values() if m.type == TEXT)

    @property
    def usage(self) -> dict[str, Any] | None:
        """stream_end's usage (None when it gave none)."""
        usage = self.stream_data.get("usage")
        return usage if isinstance(usage, dict) else None

    @property
    def withheld(self) -> list[str]:
        """The channels the sender said it withheld (stream_end's ``withheld``; e.g.
        ``["reasoning"]`` from an agent that shares no reasoning with this recipient)."""
        value = self.stream_data.get("withheld")
        if not isinstance(value, list):
            return []
        return [c for c in value if isinstance(c, str)][:16]

    def to_dict(self) -> dict[str, Any]:
        """The `agent-stream assemble` JSON.

        The stream's end first (``status``: None before stream_start, ``streaming`` until
        stream_end; its ``error``, ``usage``, ``finish_reason``, ``duration_ms``, the
        ``withheld`` channels), then messages, blocks, threads.
        """
        data = self.stream_data
        return {
            "status": self.status,
            "error": _text_or_none(data.get("error")),
            "usage": self.usage,
            "finish_reason": _text_or_none(data.get("finish_reason")),
            "duration_ms": _int_or_none(data.get("duration_ms")),
            "withheld": self.withheld,
            "messages": [m.to_dict() for m in self._messages.values()],
            "blocks": [b.to_dict() for b in self._blocks.values()],
            "threads": [t.to_dict() for t in self._threads.values()],
        }


class Assembler:
    """Feeds on Messages in arrival order and keeps a Transcript up to date.

    ``feed`` raises a StreamError subclass naming the chunk and what is wrong; the transcript
    keeps everything it had. Lost chunks and duplicates are reported in ``warnings``.
    """

    def __init__(self) -> None:
        self.transcript = Transcript()
        self._seen_chunks = SeenIds("C")
        self._anon = 0

    @property
    def warnings(self) -> list[StreamWarning]:
        return self.transcript.warnings

    def feed_all(self, messages: Iterable[Message]) -> Transcript:
        """Feed every Message, in order.

        Args:
            messages: the Messages, in arrival order.

        Returns:
            The transcript.
        """
        for m in messages:
            self.feed(m)
        return self.transcript

    def feed(self, msg: Message) -> None:
        """Feed one Message.

        Args:
            msg: the next Message of the stream.

        Raises:
            StreamError: a subclass naming the chunk and what is wrong; the transcript keeps
                everything it had.
        """
        t = self.transcript
        name = msg.event
        if name is not None and name in _HANDLERS:
            _HANDLERS[name](self, EventView(msg))
            return
        cid = msg.chunk_id
        mid = msg.message_id
        if cid is not None and cid in self._seen_chunks:
            self._duplicate(msg, cid)
            return
        if mid is None:
            self._whole(msg, cid)
            return
        key: Key = (msg.thread_id, mid)
        st = t._messages.get(key)
        if msg.type_change:
            if st is None:
                raise UnknownMessage(_where(msg) + "type_change for a message not seen before")
            st._cool()
            st.type = msg.type
            if msg.props is not None:
                st._props = merge.copy_json(msg.props)
        else:
            if st is None:
                st = self._new_message(key, mid, msg)
                try:
                    st.apply(msg)
                except Exception:
                    self._forget(key)
                    raise
            else:
                try:
                    st.apply(msg)
                except DeltaError as exc:
                    raise DeltaError(_where(msg) + str(exc)) from None
            if st.block_id is None and msg.block_id is not None:
                self._attach_block(st, key, msg.block_id)
        st.chunk_count += 1
        if cid is not None:
            self._seen_chunks.add(cid)

    def _duplicate(self, msg: Message, cid: str) -> None:
        """A chunk whose id was seen before: counted and warned about, not applied."""
        t = self.transcript
        mid = msg.message_id
        st = t._messages.get((msg.thread_id, mid or cid))
        if st is not None:
            st.duplicates += 1
        t.warnings.append(
            StreamWarning(
                WarningCode.DUPLICATE_CHUNK,
                "chunk id seen before; ignored",
                chunk_id=cid,
                message_id=mid,
                thread_id=msg.thread_id,
            )
        )

    def _whole(self, msg: Message, cid: str | None) -> None:
        """A chunk without message_id: a whole message of its own, complete."""
        if msg.delta:
            raise DeltaError(_where(msg) + "a delta needs a message_id to merge into")
        if msg.type_change:
            raise UnknownMessage(_where(msg) + "type_change with no message_id to change")
        if cid is None:
            self._anon += 1
            key: Key = (msg.thread_id, f"#{self._anon}")
        else:
            key = (msg.thread_id, cid)
        st = self._new_message(key, None, msg)
        st._props = merge.copy_json(msg.props) if msg.props else {}
        st.chunk_count = 1
        st.status = COMPLETED
        if cid is not None:
            self._seen_chunks.add(cid)

    # -- structure ------------------------------------------------------------------------------
    def _new_message(self, key: Key, mid: str | None, msg: Message) -> MessageState:
        st = MessageState(mid, msg.thread_id, None, msg.type)
        self.transcript._messages[key] = st
        if msg.thread_id is not None:
            self._thread(msg.thread_id).message_count += 1
        if msg.block_id is not None:
            self._attach_block(st, key, msg.block_id)
        return st

    def _forget(self, key: Key) -> None:
        st = self.transcript._messages.pop(key)
        if st.thread_id is not None:
            self._thread(st.thread_id).message_count -= 1
        if st.block_id is not None:
            self._block(st.block_id).message_keys.remove(key)

    def _attach_block(self, st: MessageState, key: Key, block_id: str) -> None:
        st.block_id = block_id
        b = self._block(block_id)
        b.message_keys.append(key)
        if st.thread_id is not None and st.thread_id not in b.thread_ids:
            b.thread_ids.append(st.thread_id)

    def _block(self, block_id: str) -> BlockState:
        b = self.transcript._blocks.get(block_id)
        if b is None:
            b = self.transcript._blocks[block_id] = BlockState(block_id)
        return b

    def _thread(self, thread_id: str) -> ThreadState:
        th = self.transcript._threads.get(thread_id)
        if th is None:
            th = self.transcript._threads[thread_id] = ThreadState(thread_id)
        return th

    # -- lifecycle events (read through events.EventView) ------------------------------------
    def _on_stream_start(self, ev: EventView) -> None:
        self.transcript.status = STREAMING
        self.transcript.stream_data = dict(ev.data)

    def _on_stream_end(self, ev: EventView) -> None:
        status = _status(ev)
        t = self.transcript
        t.status = status
        t.stream_data.update(ev.data)
        for st in t._messages.values():
            if st.status == STREAMING:
                st.status = status
        for b in t._blocks.values():
            if b.status == STREAMING:
                b.status = status
        for th in t._threads.values():
            if th.status == STREAMING:
                th.status = status

    def _on_thread_start(self, ev: EventView) -> None:
        th = self._thread(_id(ev.thread_id, "thread_id", ev))
        th.type = ev.type if ev.type is not None else th.type
        th.label = ev.label if ev.label is not None else th.label
        th.parent_thread_id = _text_or_none(ev.data.get("parent_thread_id")) or th.parent_thread_id

    def _on_thread_end(self, ev: EventView) -> None:
        th = self._thread(_id(ev.thread_id, "thread_id", ev))
        th.status = _status(ev)
        th.duration_ms = ev.duration_ms

    def _on_block_start(self, ev: EventView) -> None:
        b = self._block(_id(ev.block_id, "block_id", ev))
        b.type = ev.type if ev.type is not None else b.type
        b.label = ev.label if ev.label is not None else b.label
        data = ev.data
        b.parent_block_id = _text_or_none(data.get("parent_block_id")) or b.parent_block_id
        b.agent = _text_or_none(data.get("agent")) or b.agent
        b.agent_name = _text_or_none(data.get("agent_name")) or b.agent_name
        tid = ev.msg.thread_id
        if tid is not None and tid not in b.thread_ids:
            b.thread_ids.append(tid)

    def _on_block_end(self, ev: EventView) -> None:
        b = self._block(_id(ev.block_id, "block_id", ev))
        b.status = _status(ev)
        b.duration_ms = ev.duration_ms
        b.relay_status = _text_or_none(ev.data.get("relay_status"))
        b.usage = ev.usage

    def _on_message_start(self, ev: EventView) -> None:
        mid = _id(ev.message_id, "message_id", ev)
        tid = ev.thread_id
        key = (tid, mid)
        if key in self.transcript._messages:
            return
        start = Message(
            type=ev.type or "text", message_id=mid, thread_id=tid, block_id=ev.msg.block_id
        )
        self._new_message(key, mid, start)

    def _on_message_end(self, ev: EventView) -> None:
        mid = _id(ev.message_id, "message_id", ev)
        tid = ev.thread_id
        cid = ev.msg.chunk_id
        st = self.transcript._messages.get((tid, mid))
        if st is None:
            self.transcript.warnings.append(
                StreamWarning(
                    WarningCode.UNKNOWN_MESSAGE,
                    "message_end for a message never seen",
                    chunk_id=cid,
                    message_id=mid,
                    thread_id=tid,
                )
            )
            return
        status = _status(ev)
        reported = ev.chunk_count
        if reported is not None:
            st.reported_chunk_count = reported
            if reported != st.chunk_count:
                st.status = INCOMPLETE
                self.transcript.warnings.append(
                    StreamWarning(
                        WarningCode.CHUNKS_LOST,
                        f"message_end reports {reported} chunks, {st.chunk_count} arrived",
                        chunk_id=cid,
                        message_id=mid,
                        thread_id=tid,
                    )
                )
                return
        st.status = status


def _status(ev: EventView) -> str:
    """The event's status (completed when absent); InvalidMessage unless a non-empty string."""
    if not ev.has_status:
        return COMPLETED
    status = ev.status
    if not status:
        raise InvalidMessage(
            _where(ev.msg) + f"event status must be a string, got {ev.data.get('status')!r}"
        )
    return status


def _text_or_none(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _id(value: str | None, name: str, ev: EventView) -> str:
    if not value:
        raise InvalidMessage(_where(ev.msg) + f"{ev.name} event has no {name}")
    return value


def _where(msg: Message) -> str:
    parts = [
        f"{k} {v}"
        for k, v in (
            ("chunk", msg.chunk_id),
            ("message", msg.message_id),
            ("thread", msg.thread_id),
        )
        if v
    ]
    return (", ".join(parts) + ": ") if parts else ""


_HANDLERS = {
    STREAM_START: Assembler._on_stream_start,
    STREAM_END: Assembler._on_stream_end,
    THREAD_START: Assembler._on_thread_start,
    THREAD_END: Assembler._on_thread_end,
    BLOCK_START: Assembler._on_block_start,
    BLOCK_END: Assembler._on_block_end,
    MESSAGE_START: Assembler._on_message_start,
    MESSAGE_END: Assembler._on_message_end,
}


def assemble(messages: Iterable[Message]) -> Transcript:
    """Assemble a whole stream at once.

    Args:
        messages: the stream's Messages, in arrival order.

    Raises:
        StreamError: a subclass naming the chunk and what is wrong.
    """
    return Assembler().feed_all(messages)


def iter_text(transcript: Transcript) -> Iterator[tuple[Key, str]]:
    """(thread_id, message_id) and content of each text message.

    Args:
        transcript: the assembled stream.

    Yields:
        ((thread_id, message_id), content), in order of first appearance.
    """
    for key, st in transcript._messages.items():
        if st.type == TEXT:
            yield key, st.content
