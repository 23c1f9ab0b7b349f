"""AG-UI out: Messages become events of the ``ag-ui-protocol`` package (``ag_ui.core``). Pure.

Mapping:

- stream -> RUN_STARTED ... RUN_FINISHED; RUN_ERROR when the stream ends with status error or an
  ``error`` Message arrives (nothing follows a RUN_ERROR), or ends without stream_end (code
  ``incomplete``, with a warning); a cancelled stream -> RUN_FINISHED with outcome
  ``cancelled``. Usage goes into RUN_FINISHED's ``usage`` when the stream had it.
- block -> STEP_STARTED/STEP_FINISHED (step name: the block's label, else its type; made unique
  among open steps with the block id).
- text (and refusal) -> TEXT_MESSAGE_START/CONTENT/END, role assistant.
- thinking -> REASONING_START, REASONING_MESSAGE_START/CONTENT/END, REASONING_END (one id).
- tool_call -> TOOL_CALL_START/ARGS/END. START waits until the call's name is known (its
  arguments are held until then); a call that ends nameless is named ``tool``, with a warning.
  An id or name set after START cannot be carried: warned about.
- ``tool_result`` (props ``call_id``, ``name``, ``content``) -> TOOL_CALL_RESULT (role tool,
  content as text) when its message ends; without a ``call_id``, CUSTOM.
- custom (non built-in) types -> ACTIVITY_SNAPSHOT on the first chunk (or a whole chunk, or a
  replace of all props), then ACTIVITY_DELTA with RFC 6902 JSON Patch built against the content
  the client holds: ``add`` where the path is missing (intermediate objects included), ``replace``
  only where it exists, ``add .../-`` to extend lists. A delta that cannot apply is dropped with a
  warning, so every patch applies.
- everything else (loading, image, audio, video, action, user_input, non-lifecycle events,
  thread_start/thread_end) -> CUSTOM with ``name`` the type (or event name) and ``value`` the
  Message JSON (or the event data).

Ordering, as AG-UI clients enforce it: RUN_STARTED first (sent before anything else even when the
stream has no stream_start), no CONTENT/ARGS without START, no second START for an open id,
nothing after RUN_ERROR, and every message, tool call, reasoning span and step is closed before
RUN_FINISHED/RUN_ERROR. Concurrent threads interleave freely: every open item has its own id.
A message closes at its message_end, at the end of its block or thread, or at the run's end.

Text rewrites (replace/merge/set changing the text) follow the OpenAI rule: the extension when
the new text extends the old, else a line break and the new text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

try:
    from ag_ui.core import (
        ActivityDeltaEvent,
        ActivitySnapshotEvent,
        BaseEvent,
        CustomEvent,
        ReasoningEndEvent,
        ReasoningMessageContentEvent,
        ReasoningMessageEndEvent,
        ReasoningMessageStartEvent,
        ReasoningStartEvent,
        RunErrorEvent,
        RunFinishedCancelledOutcome,
        RunFinishedEvent,
        RunStartedEvent,
        StepFinishedEvent,
        StepStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
        TokenUsage,
        ToolCallArgsEvent,
        ToolCallEndEvent,
        ToolCallResultEvent,
        ToolCallStartEvent,
    )
    from ag_ui.encoder import EventEncoder
except ImportError as _exc:  # the optional extra is not installed
    from agent_stream.errors import MissingDependency

    raise MissingDependency("the AG-UI format needs the 'ag-ui-protocol' package: "
                            "pip install 'agent-stream[agui]'") from _exc

from agent_stream import delta as _delta
from agent_stream.adapters._cli import encode_text
from agent_stream.adapters._tracking import Key, MessageTable, Parts, ToolCall, Tracked, Warnings
from agent_stream.adapters._tracking import set_shown as _set_shown
from agent_stream.adapters.framing import run_encoder
from agent_stream.adapters.jsonpatch import json_patch
from agent_stream.delta import APPEND, visible_change
from agent_stream.errors import DeltaError, WarningCode
from agent_stream.events import EventView
from agent_stream.message import (
    BLOCK_END,
    BLOCK_START,
    BUILTIN_TYPES,
    ERROR,
    EVENT,
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
    Message,
)

__all__ = ["AGUIEncoder", "cli_encode", "encode_messages", "frame_sse", "json_patch"]

_TEXT, _REASONING, _TOOL, _ACTIVITY, _CUSTOM = "text", "reasoning", "tool", "activity", "custom"
_RESULT = "result"
TOOL_RESULT = "tool_result"  # props: call_id, name, content
INCOMPLETE_TEXT = "the stream is incomplete: it ended before stream_end"


def _kind(type_: str) -> str:
    if type_ in (TEXT, REFUSAL):
        return _TEXT
    if type_ == THINKING:
        return _REASONING
    if type_ == TOOL_CALL:
        return _TOOL
    if type_ == TOOL_RESULT:
        return _RESULT
    if type_ in BUILTIN_TYPES:
        return _CUSTOM
    return _ACTIVITY


class _AMsg(Tracked):
    """What the encoder keeps of one message: its AG-UI id, kind, text, tool call, props."""

    __slots__ = ("aid", "kind", "opened", "props", "text", "tool")

    def __init__(self, key: Key, type_: str, aid: str, block_id: str | None) -> None:
        super().__init__(key, type_, block_id)
        self.kind = _kind(type_)
        self.aid = aid
        self.opened = False
        self.text = Parts()
        self.tool = ToolCall()
        self.props: dict[str, Any] | None = None


# -- the encoder --------------------------------------------------------------------------------
_FRAMER = EventEncoder()
_CLIENT = "an AG-UI client"


def frame_sse(event: BaseEvent) -> str:
    """One event as the SSE text AG-UI clients read (``ag_ui.encoder.EventEncoder``)."""
    return _FRAMER.encode(event)


class AGUIEncoder(Warnings):
    """Messages in, AG-UI events out (``ag_ui.core`` models; ``frame_sse`` gives their SSE).

    ``thread_id`` is AG-UI's conversation id; ``run_id`` defaults to stream_start's request_id,
    else ``run-1``. ``close()`` closes everything still open and sends RUN_FINISHED (or RUN_ERROR
    for status error) unless the run already ended.
    """

    def __init__(self, *, thread_id: str = "agent-stream", run_id: str | None = None) -> None:
        super().__init__()
        self.thread_id = thread_id
        self.run_id = run_id
        self.finished = False
        self._started = False
        self._table: MessageTable[_AMsg] = MessageTable()
        self._ids: set[str] = set()
        self._steps: dict[str, str] = {}  # block_id -> step name, while open

    # -- public -------------------------------------------------------------------------------
    def feed(self, msg: Message) -> list[BaseEvent]:
        """Encode one Message; returns the events to send now."""
        if self.finished:
            return []
        out: list[BaseEvent] = []
        if not self._started:
            self._start(msg, out)
        if msg.type == EVENT:
            self._event(EventView(msg), out)
        elif msg.type == ERROR:
            p = msg.props or {}
            text = p.get("message")
            code = p.get("code")
            self._end_run(out, "error", text if isinstance(text, str) else None,
                          code if isinstance(code, str) else None, None)
        else:
            self._content(msg, out)
        return out

    def close(self, *, status: str | None = None, error: str | None = None
              ) -> list[BaseEvent]:
        """End the run unless it already ended (idempotent). Without ``status`` the Messages had
        no stream_end: the run ends with RUN_ERROR code ``incomplete``, and a warning."""
        if self.finished:
            return []
        out: list[BaseEvent] = []
        if not self._started:
            self._start(None, out)
        if status is None:
            self._warn(WarningCode.INCOMPLETE, "the stream ended without stream_end; an AG-UI "
                       "client gets RUN_ERROR (code incomplete), not RUN_FINISHED")
            self._end_run(out, "error", error or INCOMPLETE_TEXT, "incomplete", None)
        else:
            self._end_run(out, status, error, None, None)
        return out

    # -- run and structure --------------------------------------------------------------------
    def _start(self, msg: Message | None, out: list[BaseEvent]) -> None:
        self._started = True
        if self.run_id is None:
            rid = EventView(msg).request_id if msg is not None and \
                msg.event == STREAM_START else None
            self.run_id = rid or "run-1"
        out.append(RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id))

    def _end_run(self, out: list[BaseEvent], status: str, error: str | None,
                 code: str | None, usage: dict[str, Any] | None) -> None:
        for st in list(self._table.open.values()):
            self._close(st, out)
        for name in self._steps.values():
            out.append(StepFinishedEvent(step_name=name))
        self._steps.clear()
        self.finished = True
        tokens = _usage(usage)
        if status == "error":
            out.append(RunErrorEvent(message=error or "the stream ended with an error",
                                     code=code or "error", usage=tokens))
        elif status == "cancelled":
            out.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id or "run-1",
                                        outcome=RunFinishedCancelledOutcome(), usage=tokens))
        else:
            out.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id or "run-1",
                                        usage=tokens))

    def _event(self, ev: EventView, out: list[BaseEvent]) -> None:
        name = ev.name
        if name == STREAM_START:
            return
        if name == STREAM_END:
            self._end_run(out, ev.end_status, ev.error, None, ev.usage)
        elif name == BLOCK_START:
            bid = ev.block_id
            if bid is not None and bid not in self._steps:
                step = ev.label or ev.type or bid
                if step in self._steps.values():
                    step = f"{step} ({bid})"
                self._steps[bid] = step
                out.append(StepStartedEvent(step_name=step))
        elif name == BLOCK_END:
            bid = ev.block_id
            for st in self._table.in_block(bid):
                self._close(st, out)
            ended = self._steps.pop(bid, None) if bid is not None else None
            if ended is not None:
                out.append(StepFinishedEvent(step_name=ended))
        elif name == MESSAGE_START:
            mid, type_ = ev.message_id, ev.type
            if mid is not None and type_ is not None:
                key = (ev.thread_id, mid)
                if self._table.get(key) is None:
                    self._open_msg(self._new(key, type_, ev.msg.block_id), out)
        elif name == MESSAGE_END:
            found = self._table.get((ev.thread_id, ev.message_id or ""))
            if found is not None:
                self._close(found, out)
        elif name in (THREAD_START, THREAD_END):
            if name == THREAD_END:
                for st in self._table.in_thread(ev.thread_id):
                    self._close(st, out)
            out.append(CustomEvent(name=name, value=dict(ev.data)))
        elif name not in LIFECYCLE_EVENTS:
            props = ev.msg.props or {}
            out.append(CustomEvent(name=name or "event", value=props.get("data", props)))

    # -- messages -----------------------------------------------------------------------------
    def _new(self, key: Key, type_: str, block_id: str | None) -> _AMsg:
        aid = key[1]
        if aid in self._ids:
            aid = f"{key[0]}.{key[1]}" if key[0] else f"{key[1]}~"
            n = 1
            while aid in self._ids:
                n += 1
                aid = f"{key[0] or ''}.{key[1]}~{n}"
        self._ids.add(aid)
        return self._table.add(_AMsg(key, type_, aid, block_id), is_open=False)

    def _open_msg(self, st: _AMsg, out: list[BaseEvent]) -> None:
        if st.opened or st.done:
            return
        kind = st.kind
        if kind == _TEXT:
            out.append(TextMessageStartEvent(message_id=st.aid, role="assistant"))
        elif kind == _REASONING:
            out.append(ReasoningStartEvent(message_id=st.aid))
            out.append(ReasoningMessageStartEvent(message_id=st.aid))
        elif kind == _TOOL:
            tc = st.tool
            if not tc.ready:
                self._table.open[st.key] = st  # START waits for the name
                return
            if tc.call_id is None:
                tc.call_id = f"call_{st.aid}"
            out.append(ToolCallStartEvent(tool_call_id=tc.call_id,
                                          tool_call_name=tc.name or "tool"))
            args = tc.start()
            if args:
                out.append(ToolCallArgsEvent(tool_call_id=tc.call_id, delta=args))
        else:
            return  # activities and custom events have nothing to open
        st.opened = True
        self._table.open[st.key] = st

    def _close(self, st: _AMsg, out: list[BaseEvent]) -> None:
        if st.done:
            return
        if st.kind == _TOOL and not st.opened:
            st.tool.ensure_name(self, st.key)
            self._open_msg(st, out)
        elif st.kind == _RESULT:
            self._result(st, out)
        st.done = True
        st.text = Parts()
        self._table.open.pop(st.key, None)
        if not st.opened:
            return
        kind = st.kind
        if kind == _TEXT:
            out.append(TextMessageEndEvent(message_id=st.aid))
        elif kind == _REASONING:
            out.append(ReasoningMessageEndEvent(message_id=st.aid))
            out.append(ReasoningEndEvent(message_id=st.aid))
        elif kind == _TOOL:
            out.append(ToolCallEndEvent(tool_call_id=st.tool.call_id or f"call_{st.aid}"))

    def _content(self, msg: Message, out: list[BaseEvent]) -> None:
        t = msg.type
        mid = msg.message_id
        if mid is None:
            st = self._new(self._table.anon_key(msg.thread_id), t, msg.block_id)
            self._chunk(st, msg, out)
            self._close(st, out)
            return
        found = self._table.get((msg.thread_id, mid))
        if found is None:
            st = self._new((msg.thread_id, mid), t, msg.block_id)
        elif found.type != t:
            st = self._retype(found, msg, out)
        else:
            st = found
        if st.block_id is None:
            st.block_id = msg.block_id
        self._chunk(st, msg, out)

    def _retype(self, st: _AMsg, msg: Message, out: list[BaseEvent]) -> _AMsg:
        new_kind = _kind(msg.type)
        if new_kind == st.kind and new_kind != _ACTIVITY:
            st.type = msg.type
            return st
        old_text = st.text.value() if st.kind in (_TEXT, _REASONING) else ""
        old_props = st.props
        self._close(st, out)
        self._table.forget(st)
        new = self._new(st.key, msg.type, st.block_id)
        if msg.props is None:  # type_change without props keeps them
            if new.kind in (_TEXT, _REASONING) and old_text:
                self._open_msg(new, out)
                self._text_set(new, old_text, out)
            elif new.kind == _ACTIVITY and old_props is not None:
                new.props = old_props
                out.append(ActivitySnapshotEvent(message_id=new.aid, activity_type=new.type,
                                                 content=_delta.copy_json(old_props)))
        return new

    def _chunk(self, st: _AMsg, msg: Message, out: list[BaseEvent]) -> None:
        if st.done:
            self._warn(WarningCode.AFTER_END, "chunk for a message that has ended; not sent",
                       msg=msg)
            return
        kind = st.kind
        if kind in (_TEXT, _REASONING):
            ch = visible_change(msg, "content")
            if ch is None:
                return
            if not st.opened:
                self._open_msg(st, out)
            op, s = ch
            if op == APPEND:
                if s:
                    st.text.append(s)
                    out.append(TextMessageContentEvent(message_id=st.aid, delta=s)
                               if kind == _TEXT else
                               ReasoningMessageContentEvent(message_id=st.aid, delta=s))
            else:
                self._text_set(st, s, out)
        elif kind == _TOOL:
            self._tool_chunk(st, msg, out)
        elif kind == _RESULT:
            self._result_chunk(st, msg)
        elif kind == _ACTIVITY:
            self._activity(st, msg, out)
        else:
            out.append(CustomEvent(name=st.type, value=msg.to_dict()))

    def _text_set(self, st: _AMsg, s: str, out: list[BaseEvent]) -> None:
        send = _set_shown(st.text, s, st.key, _CLIENT, self)
        if send is None:
            return
        out.append(TextMessageContentEvent(message_id=st.aid, delta=send)
                   if st.kind == _TEXT else
                   ReasoningMessageContentEvent(message_id=st.aid, delta=send))

    def _tool_chunk(self, st: _AMsg, msg: Message, out: list[BaseEvent]) -> None:
        tc = st.tool
        if tc.take(msg) is not None:
            self._warn(WarningCode.REWRITE, "tool call arguments rewritten after they were sent; "
                       "an AG-UI client keeps the earlier ones", key=st.key)
        tc.warn_changed(self, st.key, _CLIENT)
        if not st.opened:
            if tc.ready:
                self._open_msg(st, out)
            else:
                self._table.open[st.key] = st
            return
        frag = tc.unsent()
        if frag:
            out.append(ToolCallArgsEvent(tool_call_id=tc.call_id or f"call_{st.aid}",
                                         delta=frag))

    def _result_chunk(self, st: _AMsg, msg: Message) -> None:
        """A tool result's props, kept until its message ends."""
        self._table.open[st.key] = st
        if not msg.delta:
            if msg.props is not None or not msg.type_change:
                st.props = _delta.copy_json(msg.props or {})
            return
        try:
            st.props = _delta.apply(st.props or {}, msg.delta_action or "append",
                                    msg.delta_path, msg.props or {})
        except DeltaError as exc:
            self._drop(msg, exc)

    def _result(self, st: _AMsg, out: list[BaseEvent]) -> None:
        props = st.props or {}
        call_id = props.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            out.append(CustomEvent(name=st.type, value=props))
            return
        content = props.get("content")
        text = content if isinstance(content, str) else "" if content is None else \
            json.dumps(content, ensure_ascii=False, separators=(",", ":"))
        out.append(ToolCallResultEvent(message_id=st.aid, tool_call_id=call_id, content=text,
                                       role="tool"))

    def _activity(self, st: _AMsg, msg: Message, out: list[BaseEvent]) -> None:
        chunk_props = msg.props or {}
        action = msg.delta_action or "append"
        whole = not msg.delta or (msg.delta_path is None and action in ("replace", "set"))
        if st.props is None or whole:
            if whole:
                st.props = _delta.copy_json(chunk_props)
            else:
                try:
                    st.props = _delta.apply({}, action, msg.delta_path, chunk_props)
                except DeltaError as exc:
                    self._drop(msg, exc)
                    return
            out.append(ActivitySnapshotEvent(message_id=st.aid, activity_type=st.type,
                                             content=_delta.copy_json(st.props)))
            return
        try:
            ops = json_patch(st.props, action, msg.delta_path, chunk_props)
            st.props = _delta.apply(st.props, action, msg.delta_path, chunk_props)
        except DeltaError as exc:
            self._drop(msg, exc)
            return
        if ops is None:
            out.append(ActivitySnapshotEvent(message_id=st.aid, activity_type=st.type,
                                             content=_delta.copy_json(st.props)))
        elif ops:
            out.append(ActivityDeltaEvent(message_id=st.aid, activity_type=st.type,
                                          patch=ops))  # type: ignore[arg-type]

    def _drop(self, msg: Message, exc: Exception) -> None:
        self._warn(WarningCode.BAD_DELTA, f"delta not sent: {exc}", msg=msg)


def _usage(usage: dict[str, Any] | None) -> list[TokenUsage] | None:
    if usage is None:
        return None
    vals: dict[str, Any] = {}
    for src, dst in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens"),
                     ("total_tokens", "total_tokens")):
        v = usage.get(src)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            vals[dst] = v
    return [TokenUsage(**vals)] if vals else None


def encode_messages(messages: Iterable[Message], **options: Any) -> list[BaseEvent]:
    """Encode a whole Message stream (``AGUIEncoder`` options) into events."""
    return list(run_encoder(AGUIEncoder(**options), messages))


def cli_encode(messages: Iterable[Message], args: Any) -> Iterator[str]:
    """``agent-stream convert --to agui``: AG-UI events as SSE."""
    return encode_text(AGUIEncoder(), messages, frame_sse)
