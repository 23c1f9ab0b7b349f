"""What the encoders (OpenAI, AG-UI, AI SDK, A2A, channels) keep of each message; their shape.

- ``MessageTable``: every message seen, by (thread_id, message_id), and those not ended yet;
  ended by their message_end, their block's or thread's end, or the stream's end.
- ``ToolCall``: one tool call's id, name and arguments, and how much of them a client has; a
  rewrite of arguments already sent is refused (an append-only client cannot take it back).
- ``Parts`` and ``set_shown``: a message's shown text and the rule for rewriting it.
- ``Warnings``: the queue of warnings an encoder or decoder reports (``drain_warnings``).
- ``TrackingEncoder``: feed/close, the dispatch of events, errors and content, a message's
  lookup, retype and end: each encoder writes only what its own wire does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from agent_stream import merge
from agent_stream.errors import StreamWarning, WarningCode
from agent_stream.events import EventView
from agent_stream.merge import APPEND, visible_change
from agent_stream.message import BLOCK_END, ERROR, EVENT, MESSAGE_END, THREAD_END, Message

Key = tuple[str | None, str]  # (thread_id, message_id)


class Warnings:
    """Base class: a queue of warnings, handed over by ``drain_warnings``."""

    def __init__(self) -> None:
        self._warnings: list[StreamWarning] = []

    def drain_warnings(self) -> list[StreamWarning]:
        """The warnings since the last call (and forget them)."""
        w, self._warnings = self._warnings, []
        return w

    def _warn(
        self, code: str, detail: str, *, msg: Message | None = None, key: Key | None = None
    ) -> None:
        """Queue a warning about the chunk ``msg`` or the message ``key``."""
        if msg is not None:
            w = StreamWarning(
                code,
                detail,
                chunk_id=msg.chunk_id,
                message_id=msg.message_id,
                thread_id=msg.thread_id,
            )
        elif key is not None:
            w = StreamWarning(code, detail, message_id=key[1], thread_id=key[0])
        else:
            w = StreamWarning(code, detail)
        self._warnings.append(w)


class Parts:
    """A string built by appends: parts joined only when read (linear in total length)."""

    __slots__ = ("_parts", "size")

    def __init__(self, s: str = "") -> None:
        self._parts = [s] if s else []
        self.size = len(s)

    def append(self, s: str) -> None:
        self._parts.append(s)
        self.size += len(s)

    def value(self) -> str:
        parts = self._parts
        if not parts:
            return ""
        if len(parts) > 1:
            joined = "".join(parts)
            parts.clear()
            parts.append(joined)
        return parts[0]

    def set(self, s: str) -> None:
        self._parts = [s] if s else []
        self.size = len(s)


def set_shown(text: Parts, new: str, key: Key, client: str, warner: Warnings) -> str | None:
    """Set a shown string to ``new``; what an append-only client must be sent, or None.

    The extension when ``new`` extends what was shown; otherwise (a rewrite the client cannot
    take back) a line break and ``new`` whole, with a ``rewrite`` warning naming ``client``.
    """
    cur = text.value()
    if new == cur:
        return None
    text.set(new)
    if new.startswith(cur):
        return new[len(cur) :]
    warner._warn(
        WarningCode.REWRITE,
        f"the message's text was rewritten; {client} gets the new text after a line break",
        key=key,
    )
    return "\n" + new


def id_fields(msg: Message) -> dict[str, str]:
    """Tool-call ``id``/``name`` strings this chunk sets (whole chunk, root delta or their path)."""
    props = msg.props
    if not props:
        return {}
    path = msg.delta_path
    if msg.delta and path is not None and path not in ("id", "name"):
        return {}
    out: dict[str, str] = {}
    for k in ("id", "name"):
        v = props.get(k)
        if isinstance(v, str) and v and (path is None or path == k):
            out[k] = v
    return out


FALLBACK_TOOL_NAME = "tool"  # the name of a tool call that ended before its name arrived


class ToolCall:
    """One tool call as an encoder tracks it: id, name, arguments, and what was sent.

    ``call_id`` and ``name`` are what the client is told: until ``start`` they follow the latest
    chunk that sets them; after it they stay, and a chunk setting another value is listed in
    ``changed`` (the encoder carries it where its wire can, and warns where not) and kept in
    ``final_id``/``final_name``. ``sent`` is how much of the arguments the client has. A call is
    ``ready`` to start once its name is known: no wire is sent a nameless call, except at the
    end (``ensure_name``).
    """

    __slots__ = ("args", "call_id", "changed", "final_id", "final_name", "name", "sent", "started")

    def __init__(self) -> None:
        self.call_id: str | None = None
        self.name: str | None = None
        self.final_id: str | None = None
        self.final_name: str | None = None
        self.changed: list[str] = []
        self.args = Parts()
        self.sent = 0
        self.started = False

    @property
    def ready(self) -> bool:
        return self.name is not None

    def take(self, msg: Message) -> str | None:
        """Read one chunk. Returns the new arguments when they rewrite what was already sent
        (left unapplied: the caller warns, and may ``force`` them), else None."""
        ids = id_fields(msg)
        if self.changed:
            self.changed = []
        if ids:
            self.final_id = ids.get("id", self.final_id)
            self.final_name = ids.get("name", self.final_name)
            if not self.started:
                self.call_id, self.name = self.final_id, self.final_name
            else:
                self.changed = [
                    k
                    for k, told, now in (
                        ("id", self.call_id, self.final_id),
                        ("name", self.name, self.final_name),
                    )
                    if k in ids and now != told
                ]
        ch = visible_change(msg, "arguments")
        if ch is None:
            return None
        kind, s = ch
        if kind == APPEND:
            self.args.append(s)
        elif not self.started or s.startswith(self.args.value()):
            self.args.set(s)
        else:
            return s
        return None

    def warn_changed(
        self, warner: Warnings, key: Key, client: str, carried: tuple[str, ...] = ()
    ) -> None:
        """Warn about the id or name the last chunk changed after ``client`` got the call
        (except the fields in ``carried``: those the wire still delivers)."""
        for k in self.changed:
            if k in carried:
                continue
            told, now = (self.call_id, self.final_id) if k == "id" else (self.name, self.final_name)
            code = WarningCode.LATE_TOOL_ID if k == "id" else WarningCode.LATE_TOOL_NAME
            warner._warn(
                code,
                f"tool call {k} {now!r} set after {client} got the call; it keeps {told!r}",
                key=key,
            )

    def take_append_only(self, msg: Message, warner: Warnings, key: Key, client: str) -> None:
        """Read one chunk for an append-only ``client``, which keeps what it got: a rewrite of
        arguments it has is warned and dropped, as is a later id or name (:meth:`warn_changed`)."""
        if self.take(msg) is not None:
            warner._warn(
                WarningCode.REWRITE,
                f"tool call arguments rewritten after they were sent; {client} keeps the "
                "earlier ones",
                key=key,
            )
        self.warn_changed(warner, key, client)

    def ensure_name(self, warner: Warnings, key: Key) -> None:
        """At the message's end: a call whose name never came is named ``tool``, warned."""
        if self.name is None:
            self.name = FALLBACK_TOOL_NAME
            warner._warn(
                WarningCode.LATE_TOOL_NAME,
                f"tool call ended before its name arrived; sent as {FALLBACK_TOOL_NAME!r}",
                key=key,
            )

    def force(self, s: str) -> None:
        """Take rewritten arguments as the current ones, counted as sent."""
        self.args.set(s)
        self.sent = self.args.size

    def start(self) -> str:
        """Mark the call started; returns all arguments so far (now counted as sent)."""
        self.started = True
        args = self.args.value()
        self.sent = len(args)
        return args

    def unsent(self) -> str:
        """The arguments past what the client has ("" when none), now counted as sent."""
        if self.args.size <= self.sent:
            return ""
        frag = self.args.value()[self.sent :]
        self.sent = self.args.size
        return frag


class Tracked:
    """What an encoder keeps of one message: its key, type, thread, block, whether it ended, its
    wire id and kind (each encoder's own), whether its wire item is open, its shown text, props
    and tool call, its place in the stream (``order``, by first appearance) and whether it came
    ``whole`` (one full chunk, no message_start). Encoders with more to keep subclass it."""

    __slots__ = (
        "block_id",
        "done",
        "key",
        "kind",
        "opened",
        "order",
        "props",
        "text",
        "thread_id",
        "tool",
        "type",
        "whole",
        "wid",
    )

    def __init__(
        self, key: Key, type_: str, block_id: str | None, *, kind: str = "", wid: str = ""
    ) -> None:
        self.key = key
        self.type = type_
        self.thread_id = key[0]
        self.block_id = block_id
        self.done = False
        self.kind = kind
        self.wid = wid
        self.opened = False
        self.text = Parts()
        self.props: dict[str, Any] | None = None
        self.tool = ToolCall()
        self.order = 0
        self.whole = False


S = TypeVar("S", bound=Tracked)


class MessageTable(Generic[S]):
    """Every message an encoder has seen, and those still open (not ended)."""

    __slots__ = ("_anon", "_count", "open", "seen")

    def __init__(self) -> None:
        self.seen: dict[Key, S] = {}
        self.open: dict[Key, S] = {}
        self._anon = 0
        self._count = 0

    def get(self, key: Key) -> S | None:
        return self.seen.get(key)

    def add(self, st: S, *, is_open: bool = True) -> S:
        """Remember ``st`` (as open unless ``is_open=False``), after every message before it."""
        self._count += 1
        st.order = self._count
        self.seen[st.key] = st
        if is_open:
            self.open[st.key] = st
        return st

    def anon_key(self, thread_id: str | None) -> Key:
        """A fresh key for a chunk without message_id (a whole message on its own)."""
        self._anon += 1
        return (thread_id, f"#{self._anon}")

    def ended(self, st: S) -> None:
        """``st`` is no longer open."""
        if self.open.get(st.key) is st:
            del self.open[st.key]

    def forget(self, st: S) -> None:
        """Drop ``st`` entirely (a retyped message is replaced by a new state)."""
        self.ended(st)
        if self.seen.get(st.key) is st:
            del self.seen[st.key]

    def open_where(self, pred: Callable[[S], bool]) -> list[S]:
        """The open messages ``pred`` selects, in order of opening."""
        return [s for s in self.open.values() if pred(s)]

    def in_block(self, block_id: str | None) -> list[S]:
        return self.open_where(lambda s: s.block_id == block_id)

    def in_thread(self, thread_id: str | None) -> list[S]:
        return self.open_where(lambda s: s.thread_id == thread_id)

    def started_by(self, ev: EventView) -> tuple[Key, str] | None:
        """The key and type of the message a message_start announces, when not yet seen."""
        mid, type_ = ev.message_id, ev.type
        if mid is None or type_ is None:
            return None
        key = (ev.thread_id, mid)
        return None if key in self.seen else (key, type_)

    def ended_by(self, ev: EventView) -> list[S]:
        """The messages an event ends: message_end its message (open or not), block_end and
        thread_end the open messages of that block or thread; none for other events."""
        name = ev.name
        if name == MESSAGE_END:
            st = self.seen.get((ev.thread_id, ev.message_id or ""))
            return [] if st is None else [st]
        if name == BLOCK_END:
            return self.in_block(ev.block_id)
        if name == THREAD_END:
            return self.in_thread(ev.thread_id)
        return []


def scoped_id(key: Key) -> str:
    """A message's id on a wire without threads: ``thread:message`` when in a thread."""
    return key[1] if key[0] is None else f"{key[0]}:{key[1]}"


def unique_id(base: str, taken: set[str]) -> str:
    """``base``, else ``base~2``, ``base~3``...: the first not in ``taken`` (now added to it)."""
    wid, n = base, 1
    while wid in taken:
        n += 1
        wid = f"{base}~{n}"
    taken.add(wid)
    return wid


def props_after(props: dict[str, Any] | None, msg: Message) -> dict[str, Any]:
    """A message's props after the chunk ``msg``: the chunk's props whole, or its delta applied
    (DeltaError when it cannot apply)."""
    if not msg.delta:
        new: dict[str, Any] = merge.copy_json(msg.props or {})
        return new
    return merge.apply(props or {}, msg.delta_action or "append", msg.delta_path, msg.props or {})


W = TypeVar("W")
TEXT_KINDS = ("text", "reasoning")  # the kinds whose wire item streams a text


class TrackingEncoder(Warnings, Generic[S, W]):
    """The shape every message-tracking encoder shares (OpenAI, AG-UI, AI SDK, A2A, channels).

    ``feed`` starts the wire on the first Message (``_start``), then hands events to ``_event``,
    error Messages to ``_error_msg`` and content to ``_content``, which finds (or makes, with
    ``_new``) the message's state, retypes it (``_retype``) and hands the chunk to ``_chunk``;
    a chunk without message_id is a whole message, ended (``_end_msg``) at once. ``close`` ends
    the stream: ``_end_stream`` with a status, ``_incomplete`` (after a warning) without one.
    Subclasses write the hooks; every list they append to is the caller's ``out``.
    """

    INCOMPLETE_WARNING = "the stream ended without stream_end"
    SETTLES = False  # whether a message's chunk first ends the earlier ones (``_settle``)

    def __init__(self) -> None:
        super().__init__()
        self.finished = False
        self._started = False
        self._table: MessageTable[S] = MessageTable()

    def feed(self, msg: Message) -> list[W]:
        """Encode one Message; returns the wire items to send now."""
        if self.finished:
            return []
        out = self._output(msg)
        if msg.type == EVENT:
            self._event(EventView(msg), out)
        elif msg.type == ERROR:
            self._error_msg(msg, out)
        else:
            self._content(msg, out)
        return out

    def close(self, *, status: str | None = None, error: str | None = None) -> list[W]:
        """End the stream unless it ended (idempotent). Without ``status`` the Messages had no
        stream_end: the stream was cut and ends as not completed, with an ``incomplete``
        warning."""
        if self.finished:
            return []
        out = self._output(None)
        if status is None:
            self._warn(WarningCode.INCOMPLETE, self.INCOMPLETE_WARNING)
            self._incomplete(out, error)
        else:
            self._end_stream(out, status, error)
        return out

    def _output(self, msg: Message | None) -> list[W]:
        """The list this call's wire items go to: the wire's opening first, once."""
        out: list[W] = []
        if not self._started:
            self._started = True
            self._start(msg, out)
        return out

    # -- hooks --------------------------------------------------------------------------------
    def _start(self, msg: Message | None, out: list[W]) -> None:
        """The wire's opening, before the first Message (None: closed before any)."""

    def _event(self, ev: EventView, out: list[W]) -> None:
        raise NotImplementedError

    def _error_msg(self, msg: Message, out: list[W]) -> None:
        self._content(msg, out)

    def _end_stream(self, out: list[W], status: str, error: str | None) -> None:
        raise NotImplementedError

    def _incomplete(self, out: list[W], error: str | None) -> None:
        raise NotImplementedError

    def _tracks(self, type_: str) -> bool:
        """Whether messages of this type are kept at all (else their chunks are dropped)."""
        return True

    def _new(self, key: Key, type_: str, block_id: str | None) -> S:
        raise NotImplementedError

    def _retype(self, st: S, msg: Message, out: list[W]) -> S | None:
        """The message changed type: the same wire item goes on when ``_same_item`` says so;
        else the old one ends and a new one starts, given the old text or props (``_keep_text``,
        ``_keep_props``) when the type_change has no props of its own. None: not kept."""
        if self._same_item(st, msg.type):
            st.type = msg.type
            return st
        old_text = st.text.value() if st.kind in TEXT_KINDS else ""
        old_props = st.props
        new = self._replace(st, msg, out)
        if msg.props is None:  # type_change without props keeps them
            if new.kind in TEXT_KINDS and old_text:
                self._keep_text(new, old_text, out)
            elif old_props is not None:
                self._keep_props(new, old_props, out)
        return new

    def _same_item(self, st: S, type_: str) -> bool:
        return False

    def _keep_text(self, new: S, text: str, out: list[W]) -> None:
        """A retyped message's text, shown again on its new item."""

    def _keep_props(self, new: S, props: dict[str, Any], out: list[W]) -> None:
        """A retyped message's props, on its new item."""

    def _chunk(self, st: S, msg: Message, out: list[W]) -> None:
        raise NotImplementedError

    def _end_msg(self, st: S, out: list[W]) -> None:
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------------
    def _content(self, msg: Message, out: list[W]) -> None:
        mid = msg.message_id
        if mid is None:
            if self._tracks(msg.type):
                st = self._new(self._table.anon_key(msg.thread_id), msg.type, msg.block_id)
                self._chunk(st, msg, out)
                self._end_msg(st, out)
            return
        key = (msg.thread_id, mid)
        found = self._table.get(key)
        if found is None:
            if not self._tracks(msg.type):
                return
            st = self._new(key, msg.type, msg.block_id)
            st.whole = not msg.delta
        elif found.type != msg.type:
            retyped = self._retype(found, msg, out)
            if retyped is None:
                return
            st = retyped
        else:
            st = found
        if st.block_id is None:
            st.block_id = msg.block_id
        if st.done:
            self._after_end(msg)
        else:
            if self.SETTLES:
                self._settle(st, out)
            self._chunk(st, msg, out)

    def _waits(self, st: S) -> bool:
        """Whether ``st``'s wire form waits for its end (a tool line, a tool call's close)."""
        return False

    def _settle(self, st: S, out: list[W]) -> None:
        """Within a thread the wire follows the stream: before ``st`` goes on, the earlier
        open messages of its thread end when they came whole (nothing more is coming) or, unless
        ``st`` waits too, when they wait for their end to show. Without this, a tool call sent
        whole would show after the answer written below it."""
        waits = self._waits(st)
        tid, order = st.thread_id, st.order
        for p in self._table.open_where(
            lambda s: (
                s.thread_id == tid
                and s.order < order
                and (s.whole or (not waits and self._waits(s)))
            )
        ):
            self._end_msg(p, out)

    def _replace(self, st: S, msg: Message, out: list[W]) -> S:
        """End ``st`` and forget it; the new state (same key and block) for ``msg``'s type."""
        self._end_msg(st, out)
        self._table.forget(st)
        return self._new(st.key, msg.type, st.block_id)

    def _ending(self, st: S) -> bool:
        """Mark ``st`` ended (no longer open); False when it had ended already."""
        if st.done:
            return False
        st.done = True
        self._table.ended(st)
        return True

    def _after_end(self, msg: Message) -> None:
        self._warn(WarningCode.AFTER_END, "chunk for a message that has ended; not sent", msg=msg)

    def _bad_delta(self, msg: Message, exc: Exception, what: str = "delta not sent") -> None:
        self._warn(WarningCode.BAD_DELTA, f"{what}: {exc}", msg=msg)


def keeps_props(msg: Message) -> bool:
    """A type_change without props and without delta: the message keeps the props it had."""
    return not msg.delta and msg.props is None and msg.type_change
