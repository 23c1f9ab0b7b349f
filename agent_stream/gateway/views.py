"""A reply's log as one client's wire: encoded from the start, framed, with SSE ids, resumable.

Every reader encodes the log from its first entry with a fresh encoder built from the options the
reply was started with; encoders are deterministic, so the n-th wire event is the same for every
reader and ``<reply id>:<n>`` is a stable SSE ``id:``. A reader resuming after event n (its
``Last-Event-ID``) encodes the same way, skips events up to n, and on AG-UI and the AI SDK stream
first sends again the start events of whatever was still open at n (the run or message start,
the open steps, messages, reasoning spans and tool calls, in their original order, with the
cursor as their id), so a client that verifies a stream on its own sees a well-formed one.
An A2A reply that answers a task's question continues that task: its options carry the task as
it was (:data:`CONTINUES`), so a replay opens with it too, as the live stream did.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

from agent_stream.adapters.framing import Encoder
from agent_stream.adapters.registry import Framing, Wire
from agent_stream.adapters.routing import encoder_for, wire_for
from agent_stream.gateway.parsed import ParsedEntries
from agent_stream.gateway.store import ResumeStore, parse_end
from agent_stream.message import Message

__all__ = [
    "CONTINUES",
    "NATIVE",
    "Cursor",
    "Reopen",
    "encoder_of",
    "event_batches",
    "events",
    "framed",
    "parse_cursor",
    "wire_of",
]

# The gateway's name for the native Message stream: the ``cui`` wire, SSE unless the client
# asks for JSON lines (``sse=False``). Every other format is an ``accept`` value.
NATIVE = "native"
CONTINUES = "continues"  # an A2A reply's option: the task (as JSON) the reply continues


def wire_of(fmt: str, sse: bool = True) -> tuple[Wire, Framing]:
    """The wire and framing of ``fmt`` (an accept value, or ``native``); ``sse`` matters for
    ``native`` only (every accept value has its own framing).

    Args:
        fmt: an accept value, or ``native``.
        sse: for ``native``: SSE framing, else JSON lines.
    """
    if fmt == NATIVE:
        return wire_for("cui", sse=sse)
    return wire_for(fmt)


def encoder_of(fmt: str, options: dict[str, Any]) -> Encoder[Any]:
    """A fresh encoder of ``fmt`` with a reply's options, as its live stream was encoded.

    Args:
        fmt: an accept value, or ``native``.
        options: the wire encoder's options (``continues``: the A2A task the reply continues).
    """
    opts = dict(options)
    continues = opts.pop(CONTINUES, None)
    if continues is not None and wire_of(fmt)[0].name == "a2a":
        from a2a.compat.v0_3.types import Task

        from agent_stream.adapters.a2a import A2AEncoder

        return A2AEncoder(
            task_id=opts.get("task_id"),
            context_id=opts.get("context_id"),
            task=Task.model_validate(continues),
        )
    return encoder_for("cui" if fmt == NATIVE else fmt, **opts)


Cursor = tuple[str, int]


def parse_cursor(value: str | None) -> Cursor | None:
    """``"<reply id>:<n>"`` -> (reply id, n); None when it is not one of ours.

    Args:
        value: a ``Last-Event-ID`` (None: none).
    """
    if not value:
        return None
    rid, sep, n = value.strip().rpartition(":")
    # ASCII digits, at most 18 (int() refuses "²" and thousands of digits with ValueError)
    if not sep or not rid or not (n.isascii() and n.isdigit()) or len(n) > 18:
        return None
    return rid, int(n)


def _kind(obj: Any) -> str:
    if isinstance(obj, dict):
        t = obj.get("type")
        return t if isinstance(t, str) else ""
    t = getattr(obj, "type", None)
    return str(getattr(t, "value", t) or "")


class Reopen:
    """Tracks the start/end pairs of AG-UI events or AI SDK chunks sent so far.

    Args:
        fmt: the wire the client reads (an accept value, or ``native``).
    """

    # start kind -> (end kinds, id field); None id: only one can be open (the run, a step)
    AGUI: ClassVar[dict[str, tuple[tuple[str, ...], str | None]]] = {
        "RUN_STARTED": (("RUN_FINISHED", "RUN_ERROR"), None),
        "STEP_STARTED": (("STEP_FINISHED",), "step_name"),
        "TEXT_MESSAGE_START": (("TEXT_MESSAGE_END",), "message_id"),
        "TOOL_CALL_START": (("TOOL_CALL_END",), "tool_call_id"),
        "REASONING_START": (("REASONING_END",), "message_id"),
        "REASONING_MESSAGE_START": (("REASONING_MESSAGE_END",), "message_id"),
    }
    AISDK: ClassVar[dict[str, tuple[tuple[str, ...], str | None]]] = {
        "start": (("finish", "abort"), None),
        "start-step": (("finish-step",), None),
        "text-start": (("text-end",), "id"),
        "reasoning-start": (("reasoning-end",), "id"),
        "tool-input-start": (("tool-input-available", "tool-input-error"), "toolCallId"),
    }

    def __init__(self, fmt: str) -> None:
        f = wire_of(fmt)[0].name
        self.pairs = self.AGUI if f == "agui" else self.AISDK if f == "aisdk" else {}
        self._ends = {e: (s, key) for s, (ends, key) in self.pairs.items() for e in ends}
        self._open: dict[tuple[str, str], Any] = {}  # insertion order = the order sent

    def _id(self, obj: Any, key: str | None) -> str:
        if key is None:
            return ""
        v = obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)
        return str(v)

    def see(self, obj: Any) -> None:
        """An event the client already has.

        Args:
            obj: the wire object (a dict or a model).
        """
        k = _kind(obj)
        if k in self.pairs:
            self._open[(k, self._id(obj, self.pairs[k][1]))] = obj
        elif k in self._ends:
            start, key = self._ends[k]
            self._open.pop((start, self._id(obj, key)), None)
            if key is None and start in ("RUN_STARTED", "start"):
                self._open.clear()  # the run is over: nothing stays open

    def preface(self) -> list[Any]:
        """The start events to send again before resuming."""
        return list(self._open.values())


async def event_batches(
    store: ResumeStore,
    reply_id: str,
    fmt: str,
    options: dict[str, Any],
    after: int = -1,
    *,
    idle: float | None = None,
    parsed: ParsedEntries | None = None,
) -> AsyncIterator[list[tuple[int, Any]]]:
    """(n, wire object) of the reply's wire from event ``after + 1`` on, live to the end, in
    batches: the events of all the entries there were to read at once (:meth:`.read_batches`);
    a resumed stream (``after >= 0``) starts with the reopening preface, numbered ``after``.

    Args:
        store: the resume store.
        reply_id: the reply's id.
        fmt: the wire (an accept value, or ``native``).
        options: the wire encoder's options.
        after: the last event the client has (-1: from the start).
        idle: when given, an empty batch after each ``idle`` seconds without an event.
        parsed: the Messages this process just stored, taken instead of parsing their JSON.

    Yields:
        Batches of (n, wire object) pairs (none of them empty, but the ``idle`` ones).
    """
    enc = encoder_of(fmt, options)
    reopen = Reopen(fmt) if after >= 0 else None
    n = -1
    async for entries in store.read_batches(reply_id, idle=idle):
        if not entries:  # quiet for ``idle`` seconds
            yield []
            continue
        out: list[tuple[int, Any]] = []
        done = False
        for entry in entries:
            end = parse_end(entry)
            if end is not None:
                objs = enc.close(status=end.get("status") or "error", error=end.get("error"))
            else:
                msg = parsed.message(entry) if parsed is not None else Message.from_json(entry)
                objs = enc.feed(msg)
            for obj in objs:
                n += 1
                if n <= after:
                    assert reopen is not None
                    reopen.see(obj)
                    continue
                if reopen is not None:
                    out.extend((after, p) for p in reopen.preface())
                    reopen = None
                out.append((n, obj))
            if end is not None or enc.finished:
                done = True
                break
        if out:
            yield out
        if done:
            return


async def events(
    store: ResumeStore,
    reply_id: str,
    fmt: str,
    options: dict[str, Any],
    after: int = -1,
    *,
    idle: float | None = None,
    parsed: ParsedEntries | None = None,
) -> AsyncIterator[tuple[int, Any]]:
    """(n, wire object) of the reply's wire from event ``after + 1`` on, live to the end, one
    by one (:func:`event_batches`); ``(n, None)`` after each ``idle`` seconds without one.

    Args:
        store: the resume store.
        reply_id: the reply's id.
        fmt: the wire (an accept value, or ``native``).
        options: the wire encoder's options.
        after: the last event the client has (-1: from the start).
        idle: when given, ``(n, None)`` after each ``idle`` seconds without an event.
        parsed: the Messages this process just stored, taken instead of parsing their JSON.

    Yields:
        (n, wire object) pairs.
    """
    n = -1
    async for batch in event_batches(
        store, reply_id, fmt, options, after, idle=idle, parsed=parsed
    ):
        if not batch:
            yield n, None
        for item in batch:
            n = item[0]
            yield item


async def framed(
    store: ResumeStore,
    reply_id: str,
    fmt: str,
    options: dict[str, Any],
    *,
    after: int = -1,
    sse: bool = True,
    keepalive: float | None = None,
    parsed: ParsedEntries | None = None,
) -> AsyncIterator[str]:
    """The reply's wire as text: SSE events with ``id: <reply id>:<n>``, or JSON lines.

    With ``keepalive`` (SSE), an SSE comment (``: keepalive``) after each ``keepalive`` seconds
    of silence, so proxies and clients keep a slow reply's connection (a long tool call) open.

    Args:
        store: the resume store.
        reply_id: the reply's id.
        fmt: the wire (an accept value, or ``native``).
        options: the wire encoder's options.
        after: the last event the client has (-1: from the start).
        sse: for ``native``: SSE framing, else JSON lines.
        keepalive: seconds of silence before a keepalive comment (None: none; SSE only).
        parsed: the Messages this process just stored (see :func:`events`).

    Yields:
        The framed events: those ready at once as one text (one write to the client).
    """
    wire, framing = wire_of(fmt, sse)
    frame = wire.frame(framing)
    ids = framing == "sse"
    idle = keepalive if ids else None
    batches = event_batches(store, reply_id, fmt, options, after, idle=idle, parsed=parsed)
    async for batch in batches:
        if not batch:
            yield ": keepalive\n\n"
        elif ids:
            yield "".join([f"id: {reply_id}:{n}\n{frame(obj)}" for n, obj in batch])
        else:
            yield "".join([frame(obj) for _, obj in batch])
