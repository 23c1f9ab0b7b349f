"""What the OpenAI, AG-UI and channels encoders keep of each message, shared by all three.

- ``MessageTable``: every message seen, by (thread_id, message_id), and those not ended yet;
  ended by their message_end, their block's or thread's end, or the stream's end.
- ``ToolCall``: one tool call's id, name and arguments, and how much of them a client has; a
  rewrite of arguments already sent is refused (an append-only client cannot take it back).
- ``Parts`` and ``set_shown``: a message's shown text and the rule for rewriting it.
- ``Warnings``: the queue of warnings an encoder or decoder reports (``drain_warnings``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from agent_stream.delta import APPEND, visible_change
from agent_stream.errors import StreamWarning, WarningCode
from agent_stream.message import Message

Key = tuple[str | None, str]  # (thread_id, message_id)


class Warnings:
    """Base class: a queue of warnings, handed over by ``drain_warnings``."""

    def __init__(self) -> None:
        self._warnings: list[StreamWarning] = []

    def drain_warnings(self) -> list[StreamWarning]:
        """The warnings since the last call (and forget them)."""
        w, self._warnings = self._warnings, []
        return w

    def _warn(self, code: str, detail: str, *, msg: Message | None = None,
              key: Key | None = None) -> None:
        """Queue a warning about the chunk ``msg`` or the message ``key``."""
        if msg is not None:
            w = StreamWarning(code, detail, chunk_id=msg.chunk_id, message_id=msg.message_id,
                              thread_id=msg.thread_id)
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
        return new[len(cur):]
    warner._warn(WarningCode.REWRITE, f"the message's text was rewritten; {client} gets the new "
                 "text after a line break", key=key)
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

    __slots__ = ("args", "call_id", "changed", "final_id", "final_name", "name", "sent",
                 "started")

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
                self.changed = [k for k, told, now in (("id", self.call_id, self.final_id),
                                                       ("name", self.name, self.final_name))
                                if k in ids and now != told]
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

    def warn_changed(self, warner: Warnings, key: Key, client: str,
                     carried: tuple[str, ...] = ()) -> None:
        """Warn about the id or name the last chunk changed after ``client`` got the call
        (except the fields in ``carried``: those the wire still delivers)."""
        for k in self.changed:
            if k in carried:
                continue
            told, now = (self.call_id, self.final_id) if k == "id" else (self.name,
                                                                        self.final_name)
            code = WarningCode.LATE_TOOL_ID if k == "id" else WarningCode.LATE_TOOL_NAME
            warner._warn(code, f"tool call {k} {now!r} set after {client} got the call; it "
                         f"keeps {told!r}", key=key)

    def ensure_name(self, warner: Warnings, key: Key) -> None:
        """At the message's end: a call whose name never came is named ``tool``, warned."""
        if self.name is None:
            self.name = FALLBACK_TOOL_NAME
            warner._warn(WarningCode.LATE_TOOL_NAME, "tool call ended before its name arrived; "
                         f"sent as {FALLBACK_TOOL_NAME!r}", key=key)

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
        frag = self.args.value()[self.sent:]
        self.sent = self.args.size
        return frag


class Tracked:
    """Base of an encoder's per-message state: its key, type, thread, block and whether done."""

    __slots__ = ("block_id", "done", "key", "thread_id", "type")

    def __init__(self, key: Key, type_: str, block_id: str | None) -> None:
        self.key = key
        self.type = type_
        self.thread_id = key[0]
        self.block_id = block_id
        self.done = False


S = TypeVar("S", bound=Tracked)


class MessageTable(Generic[S]):
    """Every message an encoder has seen, and those still open (not ended)."""

    __slots__ = ("_anon", "open", "seen")

    def __init__(self) -> None:
        self.seen: dict[Key, S] = {}
        self.open: dict[Key, S] = {}
        self._anon = 0

    def get(self, key: Key) -> S | None:
        return self.seen.get(key)

    def add(self, st: S, *, is_open: bool = True) -> S:
        """Remember ``st`` (as open unless ``is_open=False``)."""
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
