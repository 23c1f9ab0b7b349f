"""The Vercel AI SDK UI message stream out (the protocol behind ``useChat``, v5+). Pure.

Messages become UI message chunks, sent as SSE ``data: <json>`` lines ending ``data: [DONE]``
(response header ``x-vercel-ai-ui-message-stream: v1``, see ``HEADERS``). Mapping:

- stream -> ``start`` (messageId ``msg-<request_id>``) ... ``finish`` (finishReason, usage in
  ``messageMetadata.usage``). status error -> ``error`` then ``finish`` with finishReason
  ``error``; cancelled -> ``abort``; closed without stream_end -> ``error`` ("the stream ended
  before it was complete") and no ``finish``, with an ``incomplete`` warning: open parts are
  left as they were, not completed.
- block -> ``start-step``/``finish-step``. The SDK's steps do not nest and a ``finish-step``
  forgets open text, so a step opens only when no tool call is streaming and finishes once no
  block and no part is open; overlapping blocks share one step.
- text and refusal -> ``text-start/-delta/-end``; thinking -> ``reasoning-start/-delta/-end``.
  A rewrite follows the other append-only wires: the extension, else a line break and the new
  text, with a ``rewrite`` warning.
- tool_call -> an agent-side tool: ``tool-input-start`` (``providerExecuted``, ``dynamic``),
  ``tool-input-delta``, ``tool-input-available`` with the parsed input at the message's end
  (``tool-input-error`` when the arguments are not JSON). Nothing is sent before the call's name
  is known; a call that ends nameless is named ``tool`` with a ``late_tool_name`` warning.
- ``tool_result`` (props ``call_id``, ``name``, ``content``) for a call on the wire ->
  ``tool-output-available`` (providerExecuted).
- image, audio, video -> ``file`` (url, mediaType guessed from the url or format).
- error Message -> ``error`` (errorText; the stream goes on: the part is not terminal).
- anything else (loading, action, user_input, custom types, other tool results) ->
  ``data-<type>`` with ``id`` the message's part id and ``data`` its current props, so every
  delta (structured ones included) is sent as the new whole value, which replaces the part;
  non-lifecycle events -> ``data-event``; thread_start/thread_end -> transient ``data-thread``.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from agent_stream import delta as _delta
from agent_stream.adapters._cli import encode_text, opt
from agent_stream.adapters._tracking import (
    Key,
    MessageTable,
    Parts,
    ToolCall,
    Tracked,
    Warnings,
    id_fields,
    set_shown,
)
from agent_stream.adapters.framing import dumps, run_encoder
from agent_stream.delta import APPEND, visible_change
from agent_stream.errors import DeltaError, WarningCode
from agent_stream.events import EventView
from agent_stream.message import (
    AUDIO,
    BLOCK_END,
    BLOCK_START,
    ERROR,
    EVENT,
    IMAGE,
    LIFECYCLE_EVENTS,
    MESSAGE_END,
    MESSAGE_START,
    REFUSAL,
    STREAM_END,
    STREAM_START,
    TEXT,
    THINKING,
    THREAD_END,
    THREAD_START,
    TOOL_CALL,
    VIDEO,
    Message,
)

__all__ = ["CONTENT_TYPE", "DONE", "HEADERS", "AISDKEncoder", "cli_encode", "encode_messages",
           "frame_sse", "media_type"]

HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
CONTENT_TYPE = "text/event-stream"
DONE = "[DONE]"
TOOL_RESULT = "tool_result"
INCOMPLETE_TEXT = "the stream ended before it was complete"
_FINISH = {"stop": "stop", "length": "length", "content_filter": "content-filter",
           "tool_calls": "tool-calls", "function_call": "tool-calls"}
_TEXT, _REASONING, _TOOL, _FILE, _DATA = "text", "reasoning", "tool", "file", "data"
_MEDIA = {IMAGE: "image", AUDIO: "audio", VIDEO: "video"}
_SUBTYPE = {"mp3": "mpeg", "jpg": "jpeg", "mov": "quicktime"}  # formats named unlike subtypes
_SHOWN = {TEXT: "content", REFUSAL: "content", THINKING: "content"}  # the streamed string


def _kind(type_: str) -> str:
    if type_ in (TEXT, REFUSAL):
        return _TEXT
    if type_ == THINKING:
        return _REASONING
    if type_ == TOOL_CALL:
        return _TOOL
    if type_ in _MEDIA:
        return _FILE
    return _DATA


class _UMsg(Tracked):
    """What the encoder keeps of one message (one UI part)."""

    __slots__ = ("call", "kind", "opened", "pid", "props", "text")

    def __init__(self, key: Key, type_: str, pid: str, block_id: str | None) -> None:
        super().__init__(key, type_, block_id)
        self.kind = _kind(type_)
        self.pid = pid
        self.opened = False
        self.text = Parts()
        self.call = ToolCall()
        self.props: dict[str, Any] | None = None


def media_type(type_: str, props: Mapping[str, Any]) -> str:
    """The IANA media type of an image/audio/video Message: its format, its url, or ``type/*``."""
    major = _MEDIA.get(type_, "application")
    fmt = props.get("format")
    if isinstance(fmt, str) and fmt:
        return fmt if "/" in fmt else f"{major}/{_SUBTYPE.get(fmt, fmt)}"
    url = props.get("url")
    guessed = mimetypes.guess_type(url)[0] if isinstance(url, str) else None
    return guessed or f"{major}/*"


class AISDKEncoder(Warnings):
    """Messages in, AI SDK UI message chunks out (dicts, and ``DONE`` last; ``frame_sse`` makes
    them SSE text). ``close()`` ends a stream that had no stream_end as not completed. The
    output depends only on the input."""

    def __init__(self, *, message_id: str | None = None) -> None:
        super().__init__()
        self.message_id = message_id
        self.finished = False
        self._started = False
        self._table: MessageTable[_UMsg] = MessageTable()
        self._calls: dict[str, _UMsg] = {}  # tool call id on the wire -> its call
        self._pids: set[str] = set()
        self._blocks: set[str] = set()
        self._step = False
        self._last_error: str | None = None

    # -- public -------------------------------------------------------------------------------
    def feed(self, msg: Message) -> list[Any]:
        """Encode one Message; returns the chunks to send now."""
        if self.finished:
            return []
        out: list[Any] = []
        if not self._started:
            self._start(msg, out)
        if msg.type == EVENT:
            self._event(EventView(msg), out)
        elif msg.type == ERROR:
            p = msg.props or {}
            m = p.get("message")
            self._error(out, m if isinstance(m, str) and m else "error")
        else:
            self._content(msg, out)
        return out

    def close(self, *, status: str | None = None, error: str | None = None) -> list[Any]:
        """End the stream unless it ended. Without ``status`` (the Messages had no stream_end)
        it ends as not completed: an ``error`` part and an ``incomplete`` warning."""
        if self.finished:
            return []
        out: list[Any] = []
        if not self._started:
            self._start(None, out)
        if status is None:
            self._warn(WarningCode.INCOMPLETE, "the stream ended without stream_end; an AI SDK "
                       "client gets an error part, not a finish")
            for st in list(self._table.open.values()):
                if st.kind == _TOOL and not st.opened and st.call.args.size:
                    self._tool_open(st, out)  # what the call had is shown, not completed
            out.append({"type": "error", "errorText": error or INCOMPLETE_TEXT})
            out.append(DONE)
            self.finished = True
            return out
        self._end(out, status, error, None, None)
        return out

    # -- the stream ---------------------------------------------------------------------------
    def _start(self, msg: Message | None, out: list[Any]) -> None:
        self._started = True
        if self.message_id is None:
            ev = EventView(msg) if msg is not None and msg.event == STREAM_START else None
            rid = ev.request_id if ev is not None else None
            self.message_id = f"msg-{rid}" if rid else "msg-agent-stream"
        out.append({"type": "start", "messageId": self.message_id})

    def _end(self, out: list[Any], status: str, error: str | None, finish_reason: str | None,
             usage: dict[str, Any] | None) -> None:
        for st in list(self._table.open.values()):
            self._close_msg(st, out)
        self._blocks.clear()
        if self._step:
            out.append({"type": "finish-step"})
            self._step = False
        if status == "cancelled":
            out.append({"type": "abort", "reason": error or "the stream was cancelled"})
        else:
            reason = _FINISH.get(finish_reason or "stop", "stop")
            if status != "completed":
                self._error(out, error or "the stream ended with an error")
                reason = "error"
            fin: dict[str, Any] = {"type": "finish", "finishReason": reason}
            if usage:
                fin["messageMetadata"] = {"usage": dict(usage)}
            out.append(fin)
        out.append(DONE)
        self.finished = True

    def _error(self, out: list[Any], text: str) -> None:
        if text != self._last_error:  # stream_end repeating the error Message's text
            out.append({"type": "error", "errorText": text})
            self._last_error = text

    def _event(self, ev: EventView, out: list[Any]) -> None:
        name = ev.name
        if name == STREAM_START:
            return
        if name == STREAM_END:
            self._end(out, ev.end_status, ev.error, ev.finish_reason, ev.usage)
        elif name == BLOCK_START:
            bid = ev.block_id
            if bid is not None:
                self._blocks.add(bid)
                if not self._step and not any(s.kind == _TOOL and s.opened
                                              for s in self._table.open.values()):
                    out.append({"type": "start-step"})
                    self._step = True
        elif name == BLOCK_END:
            for st in self._table.in_block(ev.block_id):
                self._close_msg(st, out)
            self._blocks.discard(ev.block_id or "")
            self._maybe_finish_step(out)
        elif name == MESSAGE_START:
            mid, type_ = ev.message_id, ev.type
            key = (ev.thread_id, mid or "")
            if mid is not None and type_ and self._table.get(key) is None:
                self._new(key, type_, ev.msg.block_id)
        elif name == MESSAGE_END:
            found = self._table.get((ev.thread_id, ev.message_id or ""))
            if found is not None:
                self._close_msg(found, out)
                self._maybe_finish_step(out)
        elif name in (THREAD_START, THREAD_END):
            if name == THREAD_END:
                for st in self._table.in_thread(ev.thread_id):
                    self._close_msg(st, out)
                self._maybe_finish_step(out)
            out.append({"type": "data-thread", "data": {"event": name, **ev.data},
                        "transient": True})
        elif name not in LIFECYCLE_EVENTS:
            out.append({"type": "data-event", "data": _delta.copy_json(ev.msg.props or {})})

    def _maybe_finish_step(self, out: list[Any]) -> None:
        if self._step and not self._blocks and not any(
                s.opened for s in self._table.open.values() if s.kind != _DATA):
            out.append({"type": "finish-step"})
            self._step = False

    # -- messages -----------------------------------------------------------------------------
    def _new(self, key: Key, type_: str, block_id: str | None) -> _UMsg:
        pid = key[1] if key[0] is None else f"{key[0]}:{key[1]}"
        base, n = pid, 1
        while pid in self._pids:
            n += 1
            pid = f"{base}~{n}"
        self._pids.add(pid)
        return self._table.add(_UMsg(key, type_, pid, block_id))

    def _content(self, msg: Message, out: list[Any]) -> None:
        mid = msg.message_id
        if mid is None:
            st = self._new(self._table.anon_key(msg.thread_id), msg.type, msg.block_id)
            self._chunk(st, msg, out)
            self._close_msg(st, out)
            return
        key = (msg.thread_id, mid)
        found = self._table.get(key)
        if found is None:
            st = self._new(key, msg.type, msg.block_id)
        elif found.type != msg.type:
            st = self._retype(found, msg, out)
        else:
            st = found
        if st.block_id is None:
            st.block_id = msg.block_id
        self._chunk(st, msg, out)

    def _retype(self, st: _UMsg, msg: Message, out: list[Any]) -> _UMsg:
        """A type change: same part when the kind stays, else the old part ends, a new begins."""
        if _kind(msg.type) == st.kind and st.kind in (_TEXT, _REASONING):
            st.type = msg.type
            return st
        old_text = st.text.value() if st.kind in (_TEXT, _REASONING) else ""
        old_props = st.props
        self._close_msg(st, out)
        self._table.forget(st)
        new = self._new(st.key, msg.type, st.block_id)
        if msg.props is None:  # type_change without props keeps them
            if new.kind in (_TEXT, _REASONING) and old_text:
                self._text_set(new, old_text, out)
            elif new.kind == _DATA and old_props is not None:
                new.props = old_props
                self._data(new, out)
        return new

    def _chunk(self, st: _UMsg, msg: Message, out: list[Any]) -> None:
        if st.done:
            self._warn(WarningCode.AFTER_END, "chunk for a message that has ended; not sent",
                       msg=msg)
            return
        kind = st.kind
        if kind in (_TEXT, _REASONING):
            ch = visible_change(msg, _SHOWN[st.type])
            if ch is None:
                return
            op, s = ch
            if op == APPEND:
                if s:
                    self._open_text(st, out)
                    st.text.append(s)
                    out.append({"type": f"{kind}-delta", "id": st.pid, "delta": s})
            else:
                self._text_set(st, s, out)
        elif kind == _TOOL:
            self._tool_chunk(st, msg, out)
        elif kind == _FILE:
            p = msg.props or {}
            url = p.get("url")
            if isinstance(url, str) and url and not msg.delta:
                out.append({"type": "file", "url": url, "mediaType": media_type(st.type, p)})
        elif self._update_props(st, msg):
            if st.type == TOOL_RESULT and self._tool_result(st, out):
                return
            self._data(st, out)

    def _open_text(self, st: _UMsg, out: list[Any]) -> None:
        if not st.opened:
            st.opened = True
            out.append({"type": f"{st.kind}-start", "id": st.pid})

    def _text_set(self, st: _UMsg, s: str, out: list[Any]) -> None:
        send = set_shown(st.text, s, st.key, "an AI SDK client", self)
        if send:
            self._open_text(st, out)
            out.append({"type": f"{st.kind}-delta", "id": st.pid, "delta": send})

    def _update_props(self, st: _UMsg, msg: Message) -> bool:
        try:
            if not msg.delta:
                st.props = _delta.copy_json(msg.props) if msg.props else {}
            else:
                st.props = _delta.apply(st.props or {}, msg.delta_action or "append",
                                        msg.delta_path, msg.props or {})
        except DeltaError as exc:
            self._warn(WarningCode.BAD_DELTA, f"delta not sent: {exc}", msg=msg)
            return False
        return True

    def _data(self, st: _UMsg, out: list[Any]) -> None:
        out.append({"type": f"data-{st.type}", "id": st.pid,
                    "data": _delta.copy_json(st.props or {})})

    # -- tools --------------------------------------------------------------------------------
    def _tool_chunk(self, st: _UMsg, msg: Message, out: list[Any]) -> None:
        call = st.call
        if call.started:
            for k, v in id_fields(msg).items():
                cur = call.call_id if k == "id" else call.name
                if cur != v:
                    self._warn(WarningCode.REWRITE, f"tool call {k} {v!r} set after the call "
                               f"was sent as {cur!r}; an AI SDK client keeps {cur!r}", msg=msg)
        rewrite = call.take(msg)
        if rewrite is not None:
            self._warn(WarningCode.REWRITE, "tool call arguments rewritten after they were "
                       "sent; an AI SDK client gets the new input at the call's end", msg=msg)
            call.force(rewrite)
        if not call.started:
            if call.name is not None:
                self._tool_open(st, out)
            return
        frag = call.unsent()
        if frag:
            out.append({"type": "tool-input-delta", "toolCallId": call.call_id,
                        "inputTextDelta": frag})

    def _tool_open(self, st: _UMsg, out: list[Any]) -> None:
        call = st.call
        if call.name is None:
            call.name = "tool"
            self._warn(WarningCode.LATE_TOOL_NAME, "tool call ended without a name; sent as 'tool'",
                       key=st.key)
        if call.call_id is None:
            call.call_id = f"call_{st.pid}"
        elif call.call_id in self._calls:  # the client would merge two calls into one part
            self._warn(WarningCode.DUPLICATE_TOOL_ID, f"tool call id {call.call_id!r} used "
                       f"before; sent as '{call.call_id}~{st.pid}'", key=st.key)
            call.call_id = f"{call.call_id}~{st.pid}"
        st.opened = True
        self._calls[call.call_id] = st
        args = call.start()
        out.append({"type": "tool-input-start", "toolCallId": call.call_id,
                    "toolName": call.name, "providerExecuted": True, "dynamic": True})
        if args:
            out.append({"type": "tool-input-delta", "toolCallId": call.call_id,
                        "inputTextDelta": args})

    def _tool_result(self, st: _UMsg, out: list[Any]) -> bool:
        p = st.props or {}
        cid = p.get("call_id")
        target = self._calls.get(cid) if isinstance(cid, str) else None
        if target is None:
            return False
        if not target.done:
            self._close_msg(target, out)
        output = p["content"] if "content" in p else _delta.copy_json(p)
        out.append({"type": "tool-output-available", "toolCallId": cid, "output": output,
                    "providerExecuted": True, "dynamic": True})
        return True

    def _close_msg(self, st: _UMsg, out: list[Any]) -> None:
        if st.done:
            return
        st.done = True
        self._table.ended(st)
        if st.kind == _TOOL:
            if not st.opened:
                self._tool_open(st, out)
            raw = st.call.args.value()
            base = {"toolCallId": st.call.call_id, "toolName": st.call.name,
                    "providerExecuted": True, "dynamic": True}
            try:
                out.append({"type": "tool-input-available", **base,
                            "input": json.loads(raw) if raw.strip() else {}})
            except ValueError:
                out.append({"type": "tool-input-error", **base, "input": raw,
                            "errorText": "the tool call's arguments are not JSON"})
        elif st.kind in (_TEXT, _REASONING):
            if st.opened:
                out.append({"type": f"{st.kind}-end", "id": st.pid})
            st.text = Parts()


def frame_sse(item: Any) -> str:
    """One chunk (or ``DONE``) as the SSE text the AI SDK reads."""
    return "data: " + (DONE if item == DONE else dumps(item)) + "\n\n"


def encode_messages(messages: Iterable[Message], **options: Any) -> list[Any]:
    """Encode a whole Message stream (``AISDKEncoder`` options)."""
    return list(run_encoder(AISDKEncoder(**options), messages))


def cli_encode(messages: Iterable[Message], args: Any) -> Iterator[str]:
    """``agent-stream convert --to aisdk``: the UI message stream as SSE."""
    yield from encode_text(AISDKEncoder(message_id=opt(args, "message_id")), messages, frame_sse)
