"""Agent2Agent (A2A) streaming out, through the ``a2a-sdk`` package's own models. Pure.

One reply = one Task:

- stream_start -> the ``Task`` (state submitted), then a ``working`` TaskStatusUpdateEvent;
  stream_end -> the last status update (``final``): completed, failed (with the error as the
  status message) or canceled; its metadata carries usage and finish_reason. Closed without
  stream_end: ``failed`` with the message "the stream ended before it was complete", a warning,
  and no ``lastChunk`` for what was still open.
- each message -> one Artifact (``artifactId`` the message id, ``thread:message`` in a thread),
  built with ``append``: the first event creates it, later ones append, the message's end
  appends an empty last chunk (``lastChunk``). text, refusal and thinking are TextParts; a
  rewrite that does not extend the text re-sends the artifact whole (``append`` false replaces
  it, which is what a rewrite means). tool_call, tool_result and custom types are DataParts: the
  first the whole props, then one DataPart per delta (``metadata.agent_stream`` gives its
  ``delta_action``/``delta_path``; none means append at the root), a whole chunk re-sends the
  artifact. A tool call is not sent before its name is known (or its message ends).
  image/audio/video are FileParts (uri, mime type).
- loading, error Messages and other events -> ``working`` status updates (loading and error with
  a status message carrying their text); thread and block events -> status updates whose
  metadata names them.
- every artifact and status message carries ``metadata.agent_stream``: type, message_id,
  thread_id, block_id (and props for status messages), so ``A2ADecoder`` reads the stream back.

The contextId is the conversation (``context_id``); agent_stream threads have no A2A
counterpart inside one task, so they travel in that metadata. See docs/wires-aisdk-a2a.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

try:
    from a2a.types import (
        Artifact,
        DataPart,
        FilePart,
        FileWithUri,
        Part,
        Role,
        SendStreamingMessageSuccessResponse,
        Task,
        TaskArtifactUpdateEvent,
        TaskState,
        TaskStatus,
        TaskStatusUpdateEvent,
        TextPart,
    )
    from a2a.types import Message as A2AMessage
except ImportError as _exc:  # the optional extra is not installed
    from agent_stream.errors import MissingDependency

    raise MissingDependency("the A2A format needs the 'a2a-sdk' package: "
                            "pip install 'agent-stream[a2a]'") from _exc

from agent_stream import delta as _delta
from agent_stream.adapters._cli import encode_text, opt
from agent_stream.adapters._tracking import Key, MessageTable, Parts, Tracked, Warnings
from agent_stream.adapters.aisdk import media_type
from agent_stream.adapters.framing import run_encoder
from agent_stream.delta import APPEND, visible_change
from agent_stream.errors import DeltaError, WarningCode
from agent_stream.events import EventView
from agent_stream.message import (
    AUDIO,
    BLOCK_END,
    ERROR,
    EVENT,
    IMAGE,
    LIFECYCLE_EVENTS,
    LOADING,
    MESSAGE_END,
    MESSAGE_START,
    REFUSAL,
    STREAM_END,
    STREAM_START,
    TEXT,
    THINKING,
    THREAD_END,
    TOOL_CALL,
    VIDEO,
    Message,
)

__all__ = ["KEY", "A2AEncoder", "cli_encode", "encode_messages", "frame_sse"]

KEY = "agent_stream"  # the metadata key of everything agent_stream adds
INCOMPLETE_TEXT = "the stream ended before it was complete"
Event = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
_TEXT, _DATA, _FILE, _STATUS = "text", "data", "file", "status"
_MEDIA = (IMAGE, AUDIO, VIDEO)
_SHOWN = {TEXT: "content", REFUSAL: "content", THINKING: "content", LOADING: "message",
          ERROR: "message"}
_FINAL = {"completed": TaskState.completed, "error": TaskState.failed,
          "cancelled": TaskState.canceled}


def _kind(type_: str) -> str:
    if type_ in (TEXT, REFUSAL, THINKING):
        return _TEXT
    if type_ in _MEDIA:
        return _FILE
    if type_ in (LOADING, ERROR):
        return _STATUS
    return _DATA


def _text_part(s: str) -> Part:
    return Part(root=TextPart(text=s))


class _AMsg(Tracked):
    """What the encoder keeps of one message (one artifact)."""

    __slots__ = ("aid", "kind", "props", "sent", "status_n", "text")

    def __init__(self, key: Key, type_: str, aid: str, block_id: str | None) -> None:
        super().__init__(key, type_, block_id)
        self.kind = _kind(type_)
        self.aid = aid
        self.sent = False
        self.text = Parts()
        self.props: dict[str, Any] = {}
        self.status_n = 0


class A2AEncoder(Warnings):
    """Messages in, A2A events out (``a2a.types`` models; ``frame_sse`` makes them the SSE text of
    JSON-RPC ``message/stream`` responses). The output depends only on the input."""

    def __init__(self, *, task_id: str | None = None, context_id: str | None = None) -> None:
        super().__init__()
        self.task_id = task_id
        self.context_id = context_id
        self.finished = False
        self._started = False
        self._table: MessageTable[_AMsg] = MessageTable()
        self._aids: set[str] = set()

    # -- public -------------------------------------------------------------------------------
    def feed(self, msg: Message) -> list[Any]:
        """Encode one Message; returns the events to send now."""
        if self.finished:
            return []
        out: list[Event] = []
        if not self._started:
            self._start(msg, out)
        if msg.type == EVENT:
            self._event(EventView(msg), out)
        else:
            self._content(msg, out)
        return out

    def close(self, *, status: str | None = None, error: str | None = None) -> list[Any]:
        """End the task unless it ended; without ``status`` (no stream_end) as not completed."""
        if self.finished:
            return []
        out: list[Event] = []
        if not self._started:
            self._start(None, out)
        if status is None:
            self._warn(WarningCode.INCOMPLETE, "the stream ended without stream_end; the A2A "
                       "task fails as incomplete")
            for st in list(self._table.open.values()):
                if not st.sent and st.kind == _DATA and st.props:
                    self._send_whole(st, out, last=False)
            self._final(out, TaskState.failed, error or INCOMPLETE_TEXT,
                        {"status": "incomplete"})
        else:
            self._end(out, {"status": status, "error": error})
        return out

    # -- the task -----------------------------------------------------------------------------
    def _start(self, msg: Message | None, out: list[Event]) -> None:
        self._started = True
        ev = EventView(msg) if msg is not None and msg.event == STREAM_START else None
        data = ev.data if ev is not None else {}
        rid = ev.request_id if ev is not None else None
        self.task_id = self.task_id or (f"task-{rid}" if rid else "task-agent-stream")
        self.context_id = self.context_id or "agent-stream"
        out.append(Task(id=self.task_id, context_id=self.context_id,
                        status=TaskStatus(state=TaskState.submitted),
                        metadata={KEY: {"event": STREAM_START, "data": dict(data)}}))
        out.append(self._status(TaskState.working))

    def _status(self, state: TaskState, message: A2AMessage | None = None,
                meta: dict[str, Any] | None = None, final: bool = False) -> TaskStatusUpdateEvent:
        return TaskStatusUpdateEvent(task_id=self.task_id or "", context_id=self.context_id or "",
                                     status=TaskStatus(state=state, message=message),
                                     final=final, metadata={KEY: meta} if meta else None)

    def _final(self, out: list[Event], state: TaskState, text: str | None,
               data: Mapping[str, Any]) -> None:
        message = None
        if text:
            message = A2AMessage(role=Role.agent, message_id=f"{self.task_id}-final",
                                 parts=[_text_part(text)], task_id=self.task_id,
                                 context_id=self.context_id)
        out.append(self._status(state, message, {"event": STREAM_END, "data": dict(data)},
                                final=True))
        self.finished = True

    def _end(self, out: list[Event], data: Mapping[str, Any]) -> None:
        status = data.get("status") or "completed"
        for st in list(self._table.open.values()):
            if status == "completed":
                self._close_msg(st, out)
            elif not st.sent and st.kind == _DATA and st.props:
                self._send_whole(st, out, last=False)  # a held tool call, shown unfinished
            # an unfinished message gets no lastChunk
        state = _FINAL.get(status, TaskState.failed) if isinstance(status, str) else \
            TaskState.failed
        err = data.get("error")
        text = err if isinstance(err, str) and err else None
        if state == TaskState.failed and text is None:
            text = "the stream ended with an error"
        self._final(out, state, text, {k: v for k, v in data.items() if v is not None})

    def _event(self, ev: EventView, out: list[Event]) -> None:
        name = ev.name
        if name == STREAM_START:
            return
        if name == STREAM_END:
            self._end(out, ev.data)
            return
        if name == MESSAGE_START:
            mid, type_ = ev.message_id, ev.type
            key = (ev.thread_id, mid or "")
            if mid is not None and type_ and self._table.get(key) is None:
                self._new(key, type_, ev.msg.block_id)
            return
        if name == MESSAGE_END:
            found = self._table.get((ev.thread_id, ev.message_id or ""))
            if found is not None:
                self._close_msg(found, out)
            return
        if name in (THREAD_END, BLOCK_END) and ev.end_status == "completed":
            ended = self._table.in_thread(ev.thread_id) if name == THREAD_END else \
                self._table.in_block(ev.block_id)
            for st in ended:  # unfinished ones (status error) get no lastChunk
                self._close_msg(st, out)
        meta: dict[str, Any] = {"event": name or "event"}
        if name in LIFECYCLE_EVENTS:
            meta["data"] = dict(ev.data)
        else:
            meta["props"] = _delta.copy_json(ev.msg.props or {})
        meta.update(ev.msg.ids())
        out.append(self._status(TaskState.working, None, meta))

    # -- messages -----------------------------------------------------------------------------
    def _new(self, key: Key, type_: str, block_id: str | None) -> _AMsg:
        aid = key[1] if key[0] is None else f"{key[0]}:{key[1]}"
        base, n = aid, 1
        while aid in self._aids:
            n += 1
            aid = f"{base}~{n}"
        self._aids.add(aid)
        return self._table.add(_AMsg(key, type_, aid, block_id))

    def _meta(self, st: _AMsg) -> dict[str, Any]:
        meta: dict[str, Any] = {"type": st.type}
        if not st.key[1].startswith("#"):  # anonymous messages have no id to carry
            meta["message_id"] = st.key[1]
        if st.key[0] is not None:
            meta["thread_id"] = st.key[0]
        if st.block_id is not None:
            meta["block_id"] = st.block_id
        return meta

    def _artifact(self, st: _AMsg, parts: list[Part], out: list[Event], *, append: bool,
                  last: bool = False, props: bool = False) -> None:
        meta = None
        if not append:
            meta = self._meta(st)
            if props:  # the props travel whole: a FilePart carries only the url and type
                meta["props"] = _delta.copy_json(st.props)
        art = Artifact(artifact_id=st.aid, parts=parts, name=None if append else st.type,
                       metadata={KEY: meta} if meta else None)
        out.append(TaskArtifactUpdateEvent(task_id=self.task_id or "",
                                           context_id=self.context_id or "", artifact=art,
                                           append=append or None, last_chunk=last or None))
        st.sent = True

    def _content(self, msg: Message, out: list[Event]) -> None:
        mid = msg.message_id
        if mid is None:
            st = self._new(self._table.anon_key(msg.thread_id), msg.type, msg.block_id)
            self._chunk(st, msg, out)
            self._close_msg(st, out)
            return
        key = (msg.thread_id, mid)
        st = self._table.get(key) or self._new(key, msg.type, msg.block_id)
        if st.type != msg.type:
            st = self._retype(st, msg, out)
        if st.block_id is None:
            st.block_id = msg.block_id
        self._chunk(st, msg, out)

    def _retype(self, st: _AMsg, msg: Message, out: list[Event]) -> _AMsg:
        """A type change ends the old artifact; a new one (same message id) starts."""
        old_text, old_props = st.text.value(), st.props
        self._close_msg(st, out)
        self._table.forget(st)
        new = self._new(st.key, msg.type, st.block_id)
        if msg.props is None:  # type_change without props keeps them
            new.props = old_props
            if new.kind == _TEXT and old_text:
                new.text.set(old_text)
                self._artifact(new, [_text_part(old_text)], out, append=False)
        return new

    def _chunk(self, st: _AMsg, msg: Message, out: list[Event]) -> None:
        if st.done:
            self._warn(WarningCode.AFTER_END, "chunk for a message that has ended; not sent",
                       msg=msg)
            return
        if msg.type_change and msg.props is None:
            return
        if st.kind == _TEXT:
            ch = visible_change(msg, _SHOWN[st.type])
            if ch is None:
                return
            op, s = ch
            cur = st.text.value()
            if op == APPEND or (st.sent and s.startswith(cur)):
                ext = s if op == APPEND else s[len(cur):]
                if ext:
                    st.text.append(ext)
                    self._artifact(st, [_text_part(ext)], out, append=st.sent)
            elif s != cur or not st.sent:
                st.text.set(s)
                self._artifact(st, [_text_part(s)], out, append=False)
            return
        try:
            st.props = _delta.apply(st.props, msg.delta_action or "append", msg.delta_path,
                                    msg.props or {}) if msg.delta else \
                _delta.copy_json(msg.props or {})
        except DeltaError as exc:
            self._warn(WarningCode.BAD_DELTA, f"delta not sent: {exc}", msg=msg)
            return
        if st.kind == _STATUS:
            self._status_msg(st, out)
        elif st.kind == _FILE:
            self._send_whole(st, out, last=False)
        elif st.type == TOOL_CALL and not st.sent and not isinstance(st.props.get("name"), str):
            return  # held until the name is known
        elif not st.sent or not msg.delta or (msg.delta_path is None and
                                              msg.delta_action in ("replace", "set")):
            self._send_whole(st, out, last=False)
        else:
            meta = {k: v for k, v in (("delta_action", msg.delta_action),
                                      ("delta_path", msg.delta_path)) if v}
            part = DataPart(data=_delta.copy_json(msg.props or {}),
                            metadata={KEY: meta} if meta else None)
            self._artifact(st, [Part(root=part)], out, append=True)

    def _send_whole(self, st: _AMsg, out: list[Event], *, last: bool) -> None:
        if st.kind == _FILE:
            url = st.props.get("url")
            if not isinstance(url, str) or not url:
                return
            alt = st.props.get("alt")
            part = Part(root=FilePart(file=FileWithUri(
                uri=url, mime_type=media_type(st.type, st.props),
                name=alt if isinstance(alt, str) else None)))
        elif st.kind == _TEXT:
            part = _text_part(st.text.value())
        else:
            if st.type == TOOL_CALL and not isinstance(st.props.get("name"), str):
                self._warn(WarningCode.LATE_TOOL_NAME,
                           "tool call sent without a name (none arrived)", key=st.key)
            part = Part(root=DataPart(data=_delta.copy_json(st.props)))
        self._artifact(st, [part], out, append=False, last=last, props=st.kind == _FILE)

    def _status_msg(self, st: _AMsg, out: list[Event]) -> None:
        st.status_n += 1
        text = st.props.get(_SHOWN.get(st.type, "message"))
        meta = {**self._meta(st), "props": _delta.copy_json(st.props)}
        message = A2AMessage(role=Role.agent, message_id=f"{st.aid}#{st.status_n}",
                             parts=[_text_part(text if isinstance(text, str) else "")],
                             metadata={KEY: meta}, task_id=self.task_id,
                             context_id=self.context_id)
        out.append(self._status(TaskState.working, message))
        st.sent = True

    def _close_msg(self, st: _AMsg, out: list[Event]) -> None:
        if st.done:
            return
        st.done = True
        self._table.ended(st)
        if st.kind == _STATUS:
            return
        if st.sent:
            self._artifact(st, [], out, append=True, last=True)
        elif st.kind == _TEXT or st.props:
            self._send_whole(st, out, last=True)


def frame_sse(event: Event, rpc_id: str | int = 1) -> str:
    """One event as the SSE text of a JSON-RPC ``message/stream`` response (id ``rpc_id``)."""
    return "data: " + SendStreamingMessageSuccessResponse(id=rpc_id, result=event) \
        .model_dump_json(exclude_none=True) + "\n\n"


def encode_messages(messages: Iterable[Message], **options: Any) -> list[Any]:
    """Encode a whole Message stream (``A2AEncoder`` options)."""
    return list(run_encoder(A2AEncoder(**options), messages))


def cli_encode(messages: Iterable[Message], args: Any) -> Iterator[str]:
    """``agent-stream convert --to a2a``: JSON-RPC ``message/stream`` responses as SSE."""
    yield from encode_text(A2AEncoder(context_id=opt(args, "conversation")), messages, frame_sse)
