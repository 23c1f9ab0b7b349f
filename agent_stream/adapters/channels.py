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

Channel policy, on the sending side: ``ChannelsEncoder(channels=...)`` names the channels the
recipient gets; by default every channel but ``reasoning``. A message's events, its message.end
included, are dropped with its channel. Never dropped: ``stream.end`` (the stream's final event)
and every ``error``-channel event.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator
from typing import Any

from agent_stream.adapters._common import (
    APPEND,
    Parts,
    id_fields,
    opt,
    report_warnings,
    run_encoder,
    sid,
    visible_change,
)
from agent_stream.errors import StreamWarning, UsageError, WireError
from agent_stream.message import (
    ACTION,
    AUDIO,
    BLOCK_END,
    BLOCK_START,
    ERROR,
    EVENT,
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

__all__ = ["CHANNELS", "DEFAULT_CHANNELS", "ChannelsEncoder", "cli_encode", "encode_messages",
           "parse_channels"]

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
_SNAPSHOT_TYPE = {TEXT: "message.snapshot", REFUSAL: "refusal.snapshot",
                  THINKING: "thinking.snapshot"}
_EVENT_TYPE = {STREAM_START: "stream.start", BLOCK_START: "block.start", BLOCK_END: "block.end",
               THREAD_START: "thread.start", THREAD_END: "thread.end"}
_CHUNK_EVENT_TYPE = {IMAGE: "media", AUDIO: "media", VIDEO: "media", USER_INPUT: "user_input",
                     ACTION: "action", "citation": "citation"}


def channel_of(type_: str) -> str:
    """The channel a message of this type goes on."""
    return _CHANNEL_OF_TYPE.get(type_, "structured")


def parse_channels(spec: str | Collection[str] | None) -> frozenset[str] | None:
    """``"text,tool"`` or a collection -> a set of channel names (WireError for unknown ones)."""
    if spec is None:
        return None
    names = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    names = [n for n in names if n]
    bad = [n for n in names if n not in CHANNELS]
    if bad:
        raise WireError(f"unknown channel(s) {', '.join(bad)}; channels are {', '.join(CHANNELS)}")
    return frozenset(names)


class _CMsg:
    __slots__ = ("call_id", "channel", "chunks", "done", "ids", "key", "name", "ok", "started",
                 "text", "type")

    def __init__(self, key: tuple[str | None, str], type_: str, ids: dict[str, str],
                 allowed: frozenset[str]) -> None:
        self.key = key
        self.type = type_
        self.channel = channel_of(type_)
        self.ok = self.channel in allowed
        self.ids = ids
        self.chunks = 0
        self.done = False
        self.text = Parts()
        self.started = False
        self.call_id: str | None = None
        self.name: str | None = None


class ChannelsEncoder:
    """Messages in, multi-channel events out: JSON lines (or dicts with ``as_dicts=True``).

    ``channels``: the channels the recipient gets (names or ``"a,b"``); None means every channel
    but reasoning. ``error`` is always included, and so is the final ``stream.end``.
    """

    def __init__(self, channels: str | Collection[str] | None = None, *,
                 as_dicts: bool = False) -> None:
        chosen = parse_channels(channels)
        self.channels: frozenset[str] = (chosen | {"error"}) if chosen is not None \
            else DEFAULT_CHANNELS
        self.as_dicts = as_dicts
        self.finished = False
        self._msgs: dict[tuple[str | None, str], _CMsg] = {}
        self._open: dict[tuple[str | None, str], _CMsg] = {}  # not ended yet
        self._warnings: list[StreamWarning] = []

    # -- public -------------------------------------------------------------------------------
    def feed(self, msg: Message) -> list[Any]:
        """Encode one Message; returns the events this recipient gets."""
        if self.finished:
            return []
        out: list[dict[str, Any]] = []
        t = msg.type
        if t == EVENT:
            self._event(msg, out)
        elif t == ERROR:
            p = msg.props or {}
            data: dict[str, Any] = msg.ids()
            for k in ("message", "code", "details"):
                if p.get(k) is not None:
                    data[k] = p[k]
            out.append({"channel": "error", "type": "error", "data": data})
        else:
            self._content(msg, out)
        return self._wire(out)

    def close(self, *, status: str = "completed", error: str | None = None) -> list[Any]:
        """End every open message and send ``stream.end`` unless the stream already ended."""
        if self.finished:
            return []
        out: list[dict[str, Any]] = []
        self._end(out, {"status": status, **({"error": error} if error else {})})
        return self._wire(out)

    def drain_warnings(self) -> list[StreamWarning]:
        w, self._warnings = self._warnings, []
        return w

    def _wire(self, events: list[dict[str, Any]]) -> list[Any]:
        if self.as_dicts:
            return list(events)
        dumps = json.dumps
        return [dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in events]

    # -- events -------------------------------------------------------------------------------
    def _event(self, msg: Message, out: list[dict[str, Any]]) -> None:
        name = msg.event
        data = msg.event_data
        if name == STREAM_END:
            self._end(out, dict(data))
        elif name == MESSAGE_END:
            mid = sid(data, "message_id", msg.message_id)
            st = self._msgs.get((sid(data, "thread_id", msg.thread_id), mid or ""))
            if st is not None:
                status = data.get("status")
                self._end_msg(st, out, status if isinstance(status, str) else "completed")
        elif name in (BLOCK_END, THREAD_END):
            field = "block_id" if name == BLOCK_END else "thread_id"
            wid = sid(data, field, getattr(msg, field))
            status = data.get("status")
            for st in [s for s in self._open.values() if s.ids.get(field) == wid]:
                self._end_msg(st, out, status if isinstance(status, str) else "completed")
            if "status" in self.channels:
                out.append({"channel": "status", "type": _EVENT_TYPE[name], "data": dict(data)})
        elif name in _EVENT_TYPE:
            if "status" in self.channels:
                d = dict(data)
                if msg.thread_id and "thread_id" not in d:
                    d["thread_id"] = msg.thread_id
                out.append({"channel": "status", "type": _EVENT_TYPE[name], "data": d})
        elif name not in LIFECYCLE_EVENTS and "status" in self.channels:
            p = msg.props or {}
            d = {k: v for k, v in p.items() if v is not None}
            out.append({"channel": "status", "type": "event", "data": {**msg.ids(), **d}})

    def _end(self, out: list[dict[str, Any]], data: dict[str, Any]) -> None:
        status = data.get("status") or "completed"
        for st in list(self._open.values()):
            self._end_msg(st, out, status if isinstance(status, str) else "error")
        data.setdefault("status", status)
        out.append({"channel": "status", "type": "stream.end", "data": data})
        self.finished = True

    # -- messages -----------------------------------------------------------------------------
    def _content(self, msg: Message, out: list[dict[str, Any]]) -> None:
        mid = msg.message_id
        if mid is None:  # a whole message on its own: its events, no message.end
            st = _CMsg((msg.thread_id, ""), msg.type, msg.ids(), self.channels)
            if st.ok:
                self._chunk(st, msg, out)
                if st.type == TOOL_CALL:
                    self._tool_complete(st, out)
            return
        key = (msg.thread_id, mid)
        st = self._msgs.get(key)  # type: ignore[assignment]
        if st is None:
            st = self._msgs[key] = self._open[key] = _CMsg(key, msg.type, msg.ids(),
                                                           self.channels)
        elif st.type != msg.type:
            st = self._retype(st, msg, out)
        elif "block_id" not in st.ids and msg.block_id:
            st.ids["block_id"] = msg.block_id
        if st.done:
            self._warnings.append(StreamWarning(
                "after_end", "chunk for a message that has ended; not sent",
                chunk_id=msg.chunk_id, message_id=mid, thread_id=msg.thread_id))
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

    def _retype(self, st: _CMsg, msg: Message, out: list[dict[str, Any]]) -> _CMsg:
        if channel_of(msg.type) == st.channel:  # same channel: it just goes on as the new type
            st.type = msg.type
            return st
        text = st.text.value()
        if not st.done:
            st.done = True
            if st.ok:
                out.append({"channel": st.channel, "type": "message.end",
                            "data": {**st.ids, "status": "retyped", "type": msg.type,
                                     "chunk_count": st.chunks}})
        self._open.pop(st.key, None)
        new = self._msgs[st.key] = self._open[st.key] = _CMsg(st.key, msg.type, st.ids,
                                                              self.channels)
        new.chunks = st.chunks
        if msg.props is None and text and new.ok and new.type in _SNAPSHOT_TYPE:
            new.text.set(text)
            out.append({"channel": new.channel, "type": _SNAPSHOT_TYPE[new.type],
                        "data": {**new.ids, "content": text}})
        return new

    def _chunk(self, st: _CMsg, msg: Message, out: list[dict[str, Any]]) -> None:
        t = st.type
        if t in _DELTA_TYPE:
            ch = visible_change(msg, "content")
            if ch is None:
                return
            op, s = ch
            if op == APPEND:
                if s:
                    st.text.append(s)
                    out.append({"channel": st.channel, "type": _DELTA_TYPE[t],
                                "data": {**st.ids, "content": s}})
            else:
                st.text.set(s)
                out.append({"channel": st.channel, "type": _SNAPSHOT_TYPE[t],
                            "data": {**st.ids, "content": s}})
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
            out.append({"channel": st.channel, "type": _CHUNK_EVENT_TYPE.get(t, "structured"),
                        "data": data})

    def _tool_chunk(self, st: _CMsg, msg: Message, out: list[dict[str, Any]]) -> None:
        ids = id_fields(msg)
        if not st.started:
            st.call_id = ids.get("id", st.call_id)
            st.name = ids.get("name", st.name)
        ch = visible_change(msg, "arguments")
        frag = ""
        if ch is not None:
            op, s = ch
            if op == APPEND:
                frag = s
                st.text.append(s)
            elif s.startswith(st.text.value()) or not st.started:
                frag = s[st.text.size:] if st.started else ""
                st.text.set(s)
            else:
                self._warnings.append(StreamWarning(
                    "rewrite", "tool call arguments rewritten after they were sent; "
                    "tool_call.completed carries the final ones", message_id=st.key[1],
                    thread_id=st.key[0]))
                st.text.set(s)
        if not st.started:
            if st.name is None and not st.text.size:
                return
            self._tool_start(st, out)
            frag = st.text.value()
        if frag:
            out.append({"channel": "tool", "type": "tool_call.arguments.delta",
                        "data": {**st.ids, "tool_call_id": st.call_id, "delta": frag}})

    def _tool_start(self, st: _CMsg, out: list[dict[str, Any]]) -> None:
        st.started = True
        if st.call_id is None:
            st.call_id = f"call_{st.key[1]}" if st.key[1] else "call"
        out.append({"channel": "tool", "type": "tool_call.started",
                    "data": {**st.ids, "tool_call_id": st.call_id, "name": st.name}})

    def _tool_complete(self, st: _CMsg, out: list[dict[str, Any]]) -> None:
        if not st.started:
            self._tool_start(st, out)
            args = st.text.value()
            if args:
                out.append({"channel": "tool", "type": "tool_call.arguments.delta",
                            "data": {**st.ids, "tool_call_id": st.call_id, "delta": args}})
        out.append({"channel": "tool", "type": "tool_call.completed",
                    "data": {**st.ids, "tool_call_id": st.call_id, "name": st.name,
                             "arguments": st.text.value()}})

    def _end_msg(self, st: _CMsg, out: list[dict[str, Any]], status: str) -> None:
        if st.done:
            return
        st.done = True
        if self._open.get(st.key) is st:
            del self._open[st.key]
        if not st.ok:
            return
        if st.type == TOOL_CALL and status == "completed":
            self._tool_complete(st, out)
        st.text = Parts()
        out.append({"channel": st.channel, "type": "message.end",
                    "data": {**st.ids, "status": status, "chunk_count": st.chunks}})


def encode_messages(messages: Iterable[Message], **options: Any) -> list[Any]:
    """Encode a whole Message stream (``ChannelsEncoder`` options)."""
    return list(run_encoder(ChannelsEncoder(**options), messages))


def cli_encode(messages: Iterable[Message], args: Any) -> Iterator[str]:
    """``agent-stream convert --to channels [--channels LIST]``."""
    try:
        enc = ChannelsEncoder(opt(args, "channels"))
    except WireError as exc:
        raise UsageError(f"--channels: {exc}") from None
    yield from run_encoder(enc, messages)
    report_warnings(enc.drain_warnings())
