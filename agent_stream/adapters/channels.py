"""Multi-channel JSONL out (spec 004): one event stream, a channel per audience. Pure.

Shape (the spec's ``data`` envelope): one JSON object per line,
``{"channel": C, "type": T, "data": {...}}``. ``channel`` says who the content is for, ``type``
what the event is, ``data`` carries it, always with ``message_id`` (and ``thread_id``/``block_id``
when set) for message events, so concurrent messages on one channel never share a buffer.

| channel    | type                                   | data                                       |
| ---------- | -------------------------------------- | ------------------------------------------ |
| text       | message.delta / message.snapshot       | content (delta: appended; snapshot: whole) |
| text       | refusal.delta / refusal.snapshot       | content                                    |
| text       | media, user_input                      | message_type, props (+ delta, path, action)|
| reasoning  | thinking.delta / thinking.snapshot     | content                                    |
| tool       | tool_call.started                      | tool_call_id, name                         |
| tool       | tool_call.arguments.delta              | tool_call_id, delta                        |
| tool       | tool_call.completed                    | tool_call_id, name, arguments              |
| structured | structured, action                     | message_type, props (+ delta, path, action)|
| citation   | citation (custom type ``citation``)    | message_type, props (+ delta, path, action)|
| status     | status (loading)                       | message (whole, current), done             |
| status     | stream.start, block.start/end, thread.start/end, event | the lifecycle/event data   |
| status     | stream.end                             | status, error, usage, finish_reason        |
| error      | error                                  | message, code, details                     |
| (its own)  | message.end                            | status, chunk_count (+ type when retyped)  |

``*.delta`` appends; ``*.snapshot`` replaces the message's text (a replace/merge/set that changed
it). Structured chunks are forwarded as the DSL chunk (props with delta/path/action), so the
receiver merges them with the DSL's rules. Every message ends with ``message.end`` on its own
channel (at its message_end, at the end of its block or thread, or at the stream's end). A message
whose type changes channel ends on the old one with status ``retyped`` and goes on, whole, on the
new one (a retyped message may come back later); a type change within a channel just goes on.

Tool calls: ``tool_call.started`` waits until the call's name is known (arguments are held until
then; a call that ends nameless is named ``tool``, with a warning); ``tool_call.completed``
carries the final name and arguments. An id set after the start is warned about (the
``tool_call_id`` stays what the recipient was first told). A stream closed without stream_end
ends its open messages and ``stream.end`` with status ``incomplete`` (and a warning).

Channel policy, on the sending side: ``ChannelsEncoder(channels=...)`` names the channels the
recipient gets; by default every channel but ``reasoning``. A message's events, its message.end
included, are dropped with its channel. Never dropped: ``stream.end`` (the stream's final event)
and every ``error``-channel event.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any, TypedDict

from agent_stream.adapters._tracking import Key, Parts, Tracked, TrackingEncoder
from agent_stream.adapters.framing import jsonl, run_encoder
from agent_stream.errors import WarningCode, WireError
from agent_stream.events import EventView
from agent_stream.merge import APPEND, visible_change
from agent_stream.message import (
    ACTION,
    AUDIO,
    BLOCK_END,
    BLOCK_START,
    IMAGE,
    LIFECYCLE_EVENTS,
    LOADING,
    MESSAGE_END,
    REFUSAL,
    STREAM_END,
    STREAM_START,
    TEXT,
    THINKING,
    THREAD_END,
    THREAD_START,
    TOOL_CALL,
    USER_INPUT,
    VIDEO,
    Message,
)

__all__ = [
    "CHANNELS",
    "DEFAULT_CHANNELS",
    "ChannelEvent",
    "ChannelsEncoder",
    "encode_messages",
    "frame_jsonl",
    "parse_channels",
]

CHANNELS = ("text", "reasoning", "tool", "structured", "citation", "status", "error")
DEFAULT_CHANNELS = frozenset(c for c in CHANNELS if c != "reasoning")

_CHANNEL_OF_TYPE = {
    TEXT: "text",
    REFUSAL: "text",
    IMAGE: "text",
    AUDIO: "text",
    VIDEO: "text",
    USER_INPUT: "text",
    THINKING: "reasoning",
    TOOL_CALL: "tool",
    LOADING: "status",
    ACTION: "structured",
    "citation": "citation",
}
_DELTA_TYPE = {TEXT: "message.delta", REFUSAL: "refusal.delta", THINKING: "thinking.delta"}
_SNAPSHOT_TYPE = {
    TEXT: "message.snapshot",
    REFUSAL: "refusal.snapshot",
    THINKING: "thinking.snapshot",
}
_EVENT_TYPE = {
    STREAM_START: "stream.start",
    BLOCK_START: "block.start",
    BLOCK_END: "block.end",
    THREAD_START: "thread.start",
    THREAD_END: "thread.end",
}
_CHUNK_EVENT_TYPE = {
    IMAGE: "media",
    AUDIO: "media",
    VIDEO: "media",
    USER_INPUT: "user_input",
    ACTION: "action",
    "citation": "citation",
}


def channel_of(type_: str) -> str:
    """The channel a message of this type goes on.

    Args:
        type_: the Message type (an unknown one goes on ``structured``).
    """
    return _CHANNEL_OF_TYPE.get(type_, "structured")


def parse_channels(spec: str | Collection[str] | None) -> frozenset[str] | None:
    """Channel names, read.

    Args:
        spec: ``"text,tool"`` or a collection of names (None: not given).

    Returns:
        The set of channel names, None when ``spec`` is None.

    Raises:
        WireError: an unknown channel name.
    """
    if spec is None:
        return None
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    names = [n for n in names if n]
    bad = [n for n in names if n not in CHANNELS]
    if bad:
        raise WireError(f"unknown channel(s) {', '.join(bad)}; channels are {', '.join(CHANNELS)}")
    return frozenset(names)


INCOMPLETE = "incomplete"
INCOMPLETE_TEXT = "the stream is incomplete: it ended before stream_end"


class ChannelEvent(TypedDict):
    """One event of the wire: ``{"channel", "type", "data"}``."""

    channel: str
    type: str
    data: dict[str, Any]


def frame_jsonl(event: ChannelEvent) -> str:
    """One event as its JSON line.

    Args:
        event: the channel event.
    """
    return jsonl(event)


class _CMsg(Tracked):
    """What the encoder keeps of one message: channel, ids, chunk count, text, tool call."""

    __slots__ = ("channel", "chunks", "ids", "ok")

    def __init__(self, key: Key, type_: str, ids: dict[str, str], allowed: frozenset[str]) -> None:
        super().__init__(key, type_, ids.get("block_id"))
        self.channel = channel_of(type_)
        self.ok = self.channel in allowed
        self.ids = ids
        self.chunks = 0


class ChannelsEncoder(TrackingEncoder[_CMsg, ChannelEvent]):
    """Messages in, multi-channel events out (``frame_jsonl`` gives their JSON lines).

    ``close()`` ends every open message and sends ``stream.end`` unless the stream already
    ended; without a status, with status ``incomplete``.

    Args:
        channels: the channels the recipient gets (names or ``"a,b"``); None means every
            channel but reasoning. ``error`` is always included, and so is the final
            ``stream.end``.

    Raises:
        WireError: an unknown channel name.
    """

    INCOMPLETE_WARNING = (
        "the stream ended without stream_end; the recipient gets stream.end with status incomplete"
    )

    def __init__(self, channels: str | Collection[str] | None = None) -> None:
        super().__init__()
        chosen = parse_channels(channels)
        self.channels: frozenset[str] = (
            (chosen | {"error"}) if chosen is not None else DEFAULT_CHANNELS
        )

    def _error_msg(self, msg: Message, out: list[ChannelEvent]) -> None:
        p = msg.props or {}
        data: dict[str, Any] = msg.ids()
        for k in ("message", "code", "details"):
            if p.get(k) is not None:
                data[k] = p[k]
        out.append({"channel": "error", "type": "error", "data": data})

    def _incomplete(self, out: list[ChannelEvent], error: str | None) -> None:
        self._end(out, {"status": INCOMPLETE, "error": error or INCOMPLETE_TEXT}, INCOMPLETE)

    def _end_stream(self, out: list[ChannelEvent], status: str, error: str | None) -> None:
        self._end(
            out, {"status": status, **({"error": error} if error else {})}, status or "completed"
        )

    # -- events -------------------------------------------------------------------------------
    def _event(self, ev: EventView, out: list[ChannelEvent]) -> None:
        name = ev.name
        if name == STREAM_END:
            self._end(out, dict(ev.data), ev.end_status)
        elif name in (MESSAGE_END, BLOCK_END, THREAD_END):
            status = ev.status if ev.status is not None else "completed"
            for st in self._table.ended_by(ev):
                self._end_msg(st, out, status)
            if name != MESSAGE_END and "status" in self.channels:
                out.append({"channel": "status", "type": _EVENT_TYPE[name], "data": dict(ev.data)})
        elif name in _EVENT_TYPE:
            if "status" in self.channels:
                d = dict(ev.data)
                tid = ev.msg.thread_id
                if tid and "thread_id" not in d:
                    d["thread_id"] = tid
                out.append({"channel": "status", "type": _EVENT_TYPE[name], "data": d})
        elif name not in LIFECYCLE_EVENTS and "status" in self.channels:
            p = ev.msg.props or {}
            d = {k: v for k, v in p.items() if v is not None}
            out.append({"channel": "status", "type": "event", "data": {**ev.msg.ids(), **d}})

    def _end(self, out: list[ChannelEvent], data: dict[str, Any], status: str) -> None:
        for st in list(self._table.open.values()):
            self._end_msg(st, out, status)
        data.setdefault("status", status)
        out.append({"channel": "status", "type": "stream.end", "data": data})
        self.finished = True

    # -- messages -----------------------------------------------------------------------------
    def _content(self, msg: Message, out: list[ChannelEvent]) -> None:
        mid = msg.message_id
        if mid is None:  # a whole message on its own: its events, no message.end
            st = _CMsg((msg.thread_id, ""), msg.type, msg.ids(), self.channels)
            if st.ok:
                self._chunk(st, msg, out)
                if st.type == TOOL_CALL:
                    self._tool_complete(st, out)
            return
        key = (msg.thread_id, mid)
        found = self._table.get(key)
        if found is None:
            st = self._table.add(_CMsg(key, msg.type, msg.ids(), self.channels))
        elif found.done:  # it ended: whatever type comes now comes after its message.end
            self._after_end(msg)
            return
        elif found.type != msg.type:
            st = self._retype(found, msg, out)
        else:
            st = found
            if "block_id" not in st.ids and msg.block_id:
                st.ids["block_id"] = st.block_id = msg.block_id
        if st.done:
            self._after_end(msg)
            return
        st.chunks += 1
        if st.ok:
            self._chunk(st, msg, out)
        elif st.type in _DELTA_TYPE:  # hidden, but kept in case a type_change reveals it
            ch = visible_change(msg, "content")
            if ch is not None:
                if ch[0] == APPEND:
                    st.text.append(ch[1])
                else:
                    st.text.set(ch[1])

    def _retype(self, st: _CMsg, msg: Message, out: list[ChannelEvent]) -> _CMsg:
        if channel_of(msg.type) == st.channel:  # same channel: it just goes on as the new type
            st.type = msg.type
            return st
        text = (st.tool.args if st.type == TOOL_CALL else st.text).value()
        if not st.done:
            st.done = True
            if st.ok:
                out.append(
                    {
                        "channel": st.channel,
                        "type": "message.end",
                        "data": {
                            **st.ids,
                            "status": "retyped",
                            "type": msg.type,
                            "chunk_count": st.chunks,
                        },
                    }
                )
        self._table.forget(st)
        new = self._table.add(_CMsg(st.key, msg.type, st.ids, self.channels))
        new.chunks = st.chunks
        if msg.props is None and text and new.ok and new.type in _SNAPSHOT_TYPE:
            new.text.set(text)
            out.append(
                {
                    "channel": new.channel,
                    "type": _SNAPSHOT_TYPE[new.type],
                    "data": {**new.ids, "content": text},
                }
            )
        return new

    def _chunk(self, st: _CMsg, msg: Message, out: list[ChannelEvent]) -> None:
        t = st.type
        if t in _DELTA_TYPE:
            ch = visible_change(msg, "content")
            if ch is None:
                return
            op, s = ch
            if op == APPEND:
                if s:
                    st.text.append(s)
                    out.append(
                        {
                            "channel": st.channel,
                            "type": _DELTA_TYPE[t],
                            "data": {**st.ids, "content": s},
                        }
                    )
            else:
                st.text.set(s)
                out.append(
                    {
                        "channel": st.channel,
                        "type": _SNAPSHOT_TYPE[t],
                        "data": {**st.ids, "content": s},
                    }
                )
        elif t == TOOL_CALL:
            self._tool_chunk(st, msg, out)
        elif t == LOADING:
            ch = visible_change(msg, "message")
            props = msg.props or {}
            done = props.get("done")
            if ch is None and not isinstance(done, bool):
                return
            if ch is not None:
                if ch[0] == APPEND:
                    st.text.append(ch[1])
                else:
                    st.text.set(ch[1])
            status: dict[str, Any] = {**st.ids, "message": st.text.value()}
            if isinstance(done, bool):
                status["done"] = done
            out.append({"channel": "status", "type": "status", "data": status})
        else:
            data: dict[str, Any] = {**st.ids, "message_type": t, "props": msg.props or {}}
            if msg.delta:
                data["delta"] = True
                if msg.delta_path:
                    data["path"] = msg.delta_path
                data["action"] = msg.delta_action or "append"
            if msg.type_change:
                data["type_change"] = True
            out.append(
                {
                    "channel": st.channel,
                    "type": _CHUNK_EVENT_TYPE.get(t, "structured"),
                    "data": data,
                }
            )

    def _tool_chunk(self, st: _CMsg, msg: Message, out: list[ChannelEvent]) -> None:
        tc = st.tool
        rewritten = tc.take(msg)
        frag = ""
        if rewritten is not None:
            self._warn(
                WarningCode.REWRITE,
                "tool call arguments rewritten after they were sent; "
                "tool_call.completed carries the final ones",
                key=st.key,
            )
            tc.force(rewritten)
        elif tc.started:
            frag = tc.unsent()
        tc.warn_changed(self, st.key, "the recipient", carried=("name",))
        if not tc.started:
            if not tc.ready:  # never a nameless tool_call.started: hold until the name
                return
            frag = self._tool_start(st, out)
        if frag:
            out.append(self._args_delta(st, frag))

    def _tool_start(self, st: _CMsg, out: list[ChannelEvent]) -> str:
        """Send tool_call.started; returns the arguments so far (not sent yet)."""
        tc = st.tool
        args = tc.start()
        if tc.call_id is None:
            tc.call_id = f"call_{st.key[1]}" if st.key[1] else "call"
        out.append(
            {
                "channel": "tool",
                "type": "tool_call.started",
                "data": {**st.ids, "tool_call_id": tc.call_id, "name": tc.name},
            }
        )
        return args

    def _args_delta(self, st: _CMsg, frag: str) -> ChannelEvent:
        """tool_call.arguments.delta: ``frag`` of the call's arguments."""
        return {
            "channel": "tool",
            "type": "tool_call.arguments.delta",
            "data": {**st.ids, "tool_call_id": st.tool.call_id, "delta": frag},
        }

    def _tool_complete(self, st: _CMsg, out: list[ChannelEvent]) -> None:
        tc = st.tool
        if not tc.started:
            tc.ensure_name(self, st.key)
            args = self._tool_start(st, out)
            if args:
                out.append(self._args_delta(st, args))
        out.append(
            {
                "channel": "tool",
                "type": "tool_call.completed",
                "data": {
                    **st.ids,
                    "tool_call_id": tc.call_id,
                    "name": tc.final_name or tc.name,
                    "arguments": tc.args.value(),
                },
            }
        )

    def _end_msg(self, st: _CMsg, out: list[ChannelEvent], status: str = "completed") -> None:
        if not self._ending(st):
            return
        if not st.ok:
            return
        if st.type == TOOL_CALL and status == "completed":
            self._tool_complete(st, out)
        st.text = Parts()
        st.tool.args = Parts()
        out.append(
            {
                "channel": st.channel,
                "type": "message.end",
                "data": {**st.ids, "status": status, "chunk_count": st.chunks},
            }
        )


def encode_messages(messages: Iterable[Message], **options: Any) -> list[ChannelEvent]:
    """Encode a whole Message stream into events.

    Args:
        messages: the stream's Messages, in order.
        **options: ``ChannelsEncoder``'s options.
    """
    return list(run_encoder(ChannelsEncoder(**options), messages))
