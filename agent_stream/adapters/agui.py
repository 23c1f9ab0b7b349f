"""AG-UI out: Messages become events of the ``ag-ui-protocol`` package (``ag_ui.core``). Pure.

Mapping:

- stream -> RUN_STARTED ... RUN_FINISHED; RUN_ERROR when the stream ends with status error or an
  ``error`` Message arrives (nothing follows a RUN_ERROR); a cancelled stream -> RUN_FINISHED
  with outcome ``cancelled``. Usage goes into RUN_FINISHED's ``usage``.
- block -> STEP_STARTED/STEP_FINISHED (step name: the block's label, else its type; made unique
  among open steps with the block id).
- text (and refusal) -> TEXT_MESSAGE_START/CONTENT/END, role assistant.
- thinking -> REASONING_START, REASONING_MESSAGE_START/CONTENT/END, REASONING_END (one id).
- tool_call -> TOOL_CALL_START/ARGS/END (START waits until the call's name or arguments are
  known).
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
        ToolCallStartEvent,
    )
    from ag_ui.encoder import EventEncoder
except ImportError as _exc:  # the optional extra is not installed
    from agent_stream.errors import MissingDependency

    raise MissingDependency("the AG-UI format needs the 'ag-ui-protocol' package: "
                            "pip install 'agent-stream[agui]'") from _exc

from agent_stream import delta as _delta
from agent_stream.adapters._common import (
    APPEND,
    VISIBLE_FIELD,
    Parts,
    id_fields,
    report_warnings,
    run_encoder,
    set_shown,
    sid,
    visible_change,
)
from agent_stream.errors import DeltaError, StreamWarning
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

__all__ = ["AGUIEncoder", "cli_encode", "encode_messages", "json_patch"]

_TEXT, _REASONING, _TOOL, _ACTIVITY, _CUSTOM = "text", "reasoning", "tool", "activity", "custom"


def _kind(type_: str) -> str:
    if type_ in (TEXT, REFUSAL):
        return _TEXT
    if type_ == THINKING:
        return _REASONING
    if type_ == TOOL_CALL:
        return _TOOL
    if type_ in BUILTIN_TYPES:
        return _CUSTOM
    return _ACTIVITY


class _AMsg:
    __slots__ = ("aid", "args_sent", "block_id", "call_id", "done", "key", "kind", "name",
                 "opened", "props", "text", "thread_id", "type")

    def __init__(self, key: tuple[str | None, str], type_: str, aid: str,
                 thread_id: str | None, block_id: str | None) -> None:
        self.key = key
        self.type = type_
        self.kind = _kind(type_)
        self.aid = aid
        self.thread_id = thread_id
        self.block_id = block_id
        self.opened = False
        self.done = False
        self.text = Parts()
        self.call_id: str | None = None
        self.name: str | None = None
        self.args_sent = 0
        self.props: dict[str, Any] | None = None


# -- JSON Patch ---------------------------------------------------------------------------------
def _ptr(segs: list[str]) -> str:
    return "".join("/" + s.replace("~", "~0").replace("/", "~1") for s in segs)


def _nest(segs: list[str], value: Any) -> Any:
    for s in reversed(segs):
        value = {s: value}
    return value


def _append_ops(segs: list[str], cur: Any, val: Any, ops: list[dict[str, Any]]) -> None:
    where = _ptr(segs)
    if isinstance(cur, str):
        ops.append({"op": "replace", "path": where, "value": cur + val})
    elif isinstance(cur, list):
        for item in (val if isinstance(val, list) else [val]):
            ops.append({"op": "add", "path": where + "/-", "value": _delta.copy_json(item)})
    elif isinstance(cur, dict):
        for k, v in val.items():
            if k in cur and cur[k] is not None:
                _append_ops([*segs, k], cur[k], v, ops)
            else:
                ops.append({"op": "add", "path": _ptr([*segs, k]), "value": _delta.copy_json(v)})
    else:  # null, number or bool: replaced
        ops.append({"op": "replace", "path": where, "value": _delta.copy_json(val)})


def json_patch(props: dict[str, Any], action: str, path: str | None,
               chunk_props: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The RFC 6902 patch that turns ``props`` into what the delta makes of it.

    None means "send a snapshot" (all props replaced). Call it before applying the delta; it does
    not check that the delta applies (``agent_stream.delta.apply`` does).
    """
    ops: list[dict[str, Any]] = []
    if path is None:
        if action in ("replace", "set"):
            return None
        if action == "merge":
            for k, v in chunk_props.items():
                ops.append({"op": "replace" if k in props else "add", "path": _ptr([k]),
                            "value": _delta.copy_json(v)})
            return ops
        _append_ops([], props, chunk_props, ops)
        return ops
    segs = _delta.split_path(path)
    val = _delta.read_path(chunk_props, path)
    cur: Any = props
    for i, seg in enumerate(segs):
        if isinstance(cur, dict):
            if seg not in cur:
                if action == "merge" and not isinstance(val, dict):
                    return ops
                ops.append({"op": "add", "path": _ptr(segs[:i + 1]),
                            "value": _nest(segs[i + 1:], _delta.copy_json(val))})
                return ops
            cur = cur[seg]
        elif isinstance(cur, list) and seg.isdigit() and int(seg) < len(cur):
            cur = cur[int(seg)]
        else:
            return ops  # the delta cannot apply; apply() says why
    if action == "append":
        if cur is None:
            ops.append({"op": "replace", "path": _ptr(segs), "value": _delta.copy_json(val)})
        else:
            _append_ops(segs, cur, val, ops)
    elif action == "merge":
        if isinstance(cur, dict) and isinstance(val, dict):
            for k, v in val.items():
                ops.append({"op": "replace" if k in cur else "add", "path": _ptr([*segs, k]),
                            "value": _delta.copy_json(v)})
    else:
        ops.append({"op": "replace", "path": _ptr(segs), "value": _delta.copy_json(val)})
    return ops


# -- the encoder --------------------------------------------------------------------------------
class AGUIEncoder:
    """Messages in, AG-UI events out (``ag_ui.core`` models; with ``sse=True`` their SSE text).

    ``thread_id`` is AG-UI's conversation id; ``run_id`` defaults to stream_start's request_id,
    else ``run-1``. ``close()`` closes everything still open and sends RUN_FINISHED (or RUN_ERROR
    for status error) unless the run already ended.
    """

    def __init__(self, *, thread_id: str = "agent-stream", run_id: str | None = None,
                 sse: bool = False) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.sse = sse
        self.finished = False
        self._started = False
        self._encoder = EventEncoder()
        self._msgs: dict[tuple[str | None, str], _AMsg] = {}
        self._open: dict[tuple[str | None, str], _AMsg] = {}
        self._ids: set[str] = set()
        self._steps: dict[str, str] = {}  # block_id -> step name, while open
        self._anon = 0
        self._warnings: list[StreamWarning] = []

    # -- public -------------------------------------------------------------------------------
    def feed(self, msg: Message) -> list[Any]:
        """Encode one Message; returns events (or SSE strings with ``sse=True``)."""
        if self.finished:
            return []
        out: list[BaseEvent] = []
        if not self._started:
            self._start(msg, out)
        if msg.type == EVENT:
            self._event(msg, out)
        elif msg.type == ERROR:
            p = msg.props or {}
            text = p.get("message")
            code = p.get("code")
            self._end_run(out, "error", text if isinstance(text, str) else None,
                          code if isinstance(code, str) else None, None)
        else:
            self._content(msg, out)
        return self._wire(out)

    def close(self, *, status: str = "completed", error: str | None = None) -> list[Any]:
        """End the run unless it already ended (idempotent)."""
        if self.finished:
            return []
        out: list[BaseEvent] = []
        if not self._started:
            self._start(None, out)
        self._end_run(out, status, error, None, None)
        return self._wire(out)

    def drain_warnings(self) -> list[StreamWarning]:
        w, self._warnings = self._warnings, []
        return w

    def _wire(self, events: list[BaseEvent]) -> list[Any]:
        if not self.sse:
            return list(events)
        enc = self._encoder.encode
        return [enc(e) for e in events]

    # -- run and structure --------------------------------------------------------------------
    def _start(self, msg: Message | None, out: list[BaseEvent]) -> None:
        self._started = True
        if self.run_id is None:
            rid = msg.event_data.get("request_id") if msg is not None and \
                msg.event == STREAM_START else None
            self.run_id = rid if isinstance(rid, str) and rid else "run-1"
        out.append(RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id))

    def _end_run(self, out: list[BaseEvent], status: str, error: str | None,
                 code: str | None, usage: Any) -> None:
        for st in list(self._open.values()):
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

    def _event(self, msg: Message, out: list[BaseEvent]) -> None:
        name = msg.event
        data = msg.event_data
        if name == STREAM_START:
            return
        if name == STREAM_END:
            status = data.get("status") or "completed"
            err = data.get("error")
            self._end_run(out, status if isinstance(status, str) else "error",
                          err if isinstance(err, str) else None, None, data.get("usage"))
        elif name == BLOCK_START:
            bid = sid(data, "block_id", msg.block_id)
            if isinstance(bid, str) and bid not in self._steps:
                step = data.get("label") or data.get("type") or bid
                step = str(step)
                if step in self._steps.values():
                    step = f"{step} ({bid})"
                self._steps[bid] = step
                out.append(StepStartedEvent(step_name=step))
        elif name == BLOCK_END:
            bid = sid(data, "block_id", msg.block_id)
            for st in [s for s in self._open.values() if s.block_id == bid]:
                self._close(st, out)
            step = self._steps.pop(bid, None) if isinstance(bid, str) else None
            if step is not None:
                out.append(StepFinishedEvent(step_name=step))
        elif name == MESSAGE_START:
            mid = sid(data, "message_id", msg.message_id)
            type_ = data.get("type")
            if isinstance(mid, str) and isinstance(type_, str):
                key = (sid(data, "thread_id", msg.thread_id), mid)
                if key not in self._msgs:
                    st = self._new(key, type_, msg.block_id)
                    self._open_msg(st, out)
        elif name == MESSAGE_END:
            mid = sid(data, "message_id", msg.message_id)
            found = self._msgs.get((sid(data, "thread_id", msg.thread_id), mid or ""))
            if found is not None:
                self._close(found, out)
        elif name in (THREAD_START, THREAD_END):
            if name == THREAD_END:
                tid = sid(data, "thread_id", msg.thread_id)
                for st in [s for s in self._open.values() if s.thread_id == tid]:
                    self._close(st, out)
            out.append(CustomEvent(name=name, value=dict(data)))
        elif name not in LIFECYCLE_EVENTS:
            props = msg.props or {}
            out.append(CustomEvent(name=name or "event", value=props.get("data", props)))

    # -- messages -----------------------------------------------------------------------------
    def _new(self, key: tuple[str | None, str], type_: str, block_id: str | None) -> _AMsg:
        aid = key[1]
        if aid in self._ids:
            aid = f"{key[0]}.{key[1]}" if key[0] else f"{key[1]}~"
            n = 1
            while aid in self._ids:
                n += 1
                aid = f"{key[0] or ''}.{key[1]}~{n}"
        self._ids.add(aid)
        st = _AMsg(key, type_, aid, key[0], block_id)
        self._msgs[key] = st
        return st

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
            if st.name is None and not st.text.size:
                self._open[st.key] = st  # START waits for a name or arguments
                return
            if st.call_id is None:
                st.call_id = f"call_{st.aid}"
            out.append(ToolCallStartEvent(tool_call_id=st.call_id,
                                          tool_call_name=st.name or "tool"))
            args = st.text.value()
            if args:
                out.append(ToolCallArgsEvent(tool_call_id=st.call_id, delta=args))
            st.args_sent = len(args)
        else:
            return  # activities and custom events have nothing to open
        st.opened = True
        self._open[st.key] = st

    def _close(self, st: _AMsg, out: list[BaseEvent]) -> None:
        if st.done:
            return
        if st.kind == _TOOL and not st.opened:
            st.name = st.name or "tool"
            self._open_msg(st, out)
        st.done = True
        st.text = Parts()
        self._open.pop(st.key, None)
        if not st.opened:
            return
        kind = st.kind
        if kind == _TEXT:
            out.append(TextMessageEndEvent(message_id=st.aid))
        elif kind == _REASONING:
            out.append(ReasoningMessageEndEvent(message_id=st.aid))
            out.append(ReasoningEndEvent(message_id=st.aid))
        elif kind == _TOOL:
            out.append(ToolCallEndEvent(tool_call_id=st.call_id or f"call_{st.aid}"))

    def _content(self, msg: Message, out: list[BaseEvent]) -> None:
        t = msg.type
        mid = msg.message_id
        if mid is None:
            self._anon += 1
            st = self._new((msg.thread_id, f"#{self._anon}"), t, msg.block_id)
            self._chunk(st, msg, out)
            self._close(st, out)
            return
        key = (msg.thread_id, mid)
        found = self._msgs.get(key)
        if found is None:
            st = self._new(key, t, msg.block_id)
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
        del self._msgs[st.key]
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
            self._warnings.append(StreamWarning(
                "after_end", "chunk for a message that has ended; not sent",
                chunk_id=msg.chunk_id, message_id=msg.message_id, thread_id=msg.thread_id))
            return
        kind = st.kind
        if kind in (_TEXT, _REASONING):
            ch = visible_change(msg, VISIBLE_FIELD[st.type])
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
        elif kind == _ACTIVITY:
            self._activity(st, msg, out)
        else:
            out.append(CustomEvent(name=st.type, value=msg.to_dict()))

    def _text_set(self, st: _AMsg, s: str, out: list[BaseEvent]) -> None:
        send = set_shown(st.text, s, st.key, "an AG-UI client", self._warnings)
        if send is None:
            return
        out.append(TextMessageContentEvent(message_id=st.aid, delta=send)
                   if st.kind == _TEXT else
                   ReasoningMessageContentEvent(message_id=st.aid, delta=send))

    def _tool_chunk(self, st: _AMsg, msg: Message, out: list[BaseEvent]) -> None:
        ids = id_fields(msg)
        if not st.opened:
            if "id" in ids:
                st.call_id = ids["id"]
            if "name" in ids:
                st.name = ids["name"]
        ch = visible_change(msg, "arguments")
        if ch is not None:
            op, s = ch
            if op == APPEND:
                st.text.append(s)
            elif s.startswith(st.text.value()) or not st.opened:
                st.text.set(s)
            else:
                self._warnings.append(StreamWarning(
                    "rewrite", "tool call arguments rewritten after they were sent; an AG-UI "
                    "client keeps the earlier ones", message_id=st.key[1], thread_id=st.key[0]))
        if not st.opened:
            if st.name is not None or st.text.size:
                self._open_msg(st, out)
            else:
                self._open[st.key] = st
            return
        if st.text.size > st.args_sent:
            frag = st.text.value()[st.args_sent:]
            st.args_sent = st.text.size
            out.append(ToolCallArgsEvent(tool_call_id=st.call_id or f"call_{st.aid}",
                                         delta=frag))

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
        self._warnings.append(StreamWarning(
            "bad_delta", f"delta not sent: {exc}", chunk_id=msg.chunk_id,
            message_id=msg.message_id, thread_id=msg.thread_id))


def _usage(usage: Any) -> list[TokenUsage] | None:
    if not isinstance(usage, dict):
        return None
    vals: dict[str, Any] = {}
    for src, dst in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens"),
                     ("total_tokens", "total_tokens")):
        v = usage.get(src)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            vals[dst] = v
    return [TokenUsage(**vals)] if vals else None


def encode_messages(messages: Iterable[Message], **options: Any) -> list[Any]:
    """Encode a whole Message stream (``AGUIEncoder`` options)."""
    return list(run_encoder(AGUIEncoder(**options), messages))


def cli_encode(messages: Iterable[Message], args: Any) -> Iterator[str]:
    """``agent-stream convert --to agui``: AG-UI events as SSE."""
    enc = AGUIEncoder(sse=True)
    yield from run_encoder(enc, messages)
    report_warnings(enc.drain_warnings())
