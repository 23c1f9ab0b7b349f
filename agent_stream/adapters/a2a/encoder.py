"""Agent2Agent (A2A) streaming out, through the ``a2a-sdk`` package's own models. Pure.

One reply = one Task:

- stream_start -> the ``Task`` (state submitted), then a ``working`` TaskStatusUpdateEvent;
  stream_end -> the last status update (``final``): completed, failed (with the error as the
  status message) or canceled; its metadata carries usage and finish_reason. Closed without
  stream_end: ``failed`` with the message "the stream ended before it was complete", a warning,
  and what was still open closed by an empty ``lastChunk`` whose metadata says ``status``
  ``incomplete`` (``error`` or ``cancelled`` when stream_end says so).
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
- ``user_input`` (the agent asks, e.g. a LangGraph ``interrupt``): no artifact; a stream that
  ends completed after it ends ``input-required``, the status message the question's text and
  a DataPart of its props (``value``: the content parsed, when a JSON object or list), and a
  question asked as a card (a ``card`` prop) its card as one more DataPart (metadata type
  ``card``); the final
  status metadata lists the questions (``asks``) whatever the state, for ``A2ADecoder``.
- ``task``: the input-required Task a reply continues: the stream opens with it (its history
  and artifacts, state ``working``), new artifact ids avoid its ids, status message ids are
  numbered by the user turn.
- every artifact and status message carries ``metadata.agent_stream``: type, message_id,
  thread_id, block_id (and props for status messages), so ``A2ADecoder`` reads the stream back.

The contextId is the conversation (``context_id``); agent_stream threads have no A2A
counterpart inside one task, so they travel in that metadata. See docs/wires-aisdk-a2a.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from a2a.compat.v0_3.types import (
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
from a2a.compat.v0_3.types import Message as A2AMessage

from agent_stream import merge
from agent_stream.adapters._tracking import (
    Key,
    Tracked,
    TrackingEncoder,
    props_after,
    scoped_id,
    unique_id,
)
from agent_stream.adapters.aisdk import media_type
from agent_stream.adapters.framing import run_encoder
from agent_stream.errors import DeltaError, WarningCode
from agent_stream.events import EventView
from agent_stream.merge import APPEND, visible_change
from agent_stream.message import (
    AUDIO,
    CARD,
    ERROR,
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
    TOOL_CALL,
    USER_INPUT,
    VIDEO,
    Message,
)

__all__ = ["KEY", "A2AEncoder", "encode_messages", "frame_sse"]

KEY = "agent_stream"  # the metadata key of everything agent_stream adds
INCOMPLETE_TEXT = "the stream ended before it was complete"
Event = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
_TEXT, _DATA, _FILE, _STATUS, _ASK = "text", "data", "file", "status", "ask"
_MEDIA = (IMAGE, AUDIO, VIDEO)
_SHOWN = {
    TEXT: "content",
    REFUSAL: "content",
    THINKING: "content",
    LOADING: "message",
    ERROR: "message",
}
_FINAL = {
    "completed": TaskState.completed,
    "error": TaskState.failed,
    "cancelled": TaskState.canceled,
}


def _kind(type_: str) -> str:
    if type_ in (TEXT, REFUSAL, THINKING):
        return _TEXT
    if type_ in _MEDIA:
        return _FILE
    if type_ in (LOADING, ERROR):
        return _STATUS
    if type_ == USER_INPUT:
        return _ASK
    return _DATA


def _text_part(s: str) -> Part:
    return Part(root=TextPart(text=s))


def _ask_data(props: Mapping[str, Any]) -> dict[str, Any]:
    """A question's DataPart: its props, and ``value`` when its content is a JSON object or
    list (an interrupt's structured value, as the agent gave it)."""
    data: dict[str, Any] = merge.copy_json(dict(props))
    content = props.get("content")
    if isinstance(content, str) and content[:1] in ("{", "["):
        try:
            value = json.loads(content)
        except ValueError:
            return data
        if isinstance(value, (dict, list)):
            data["value"] = value
    return data


def _card_parts(asks: list[_Artifact]) -> list[Part]:
    """The card each question is asked as (a ``card`` prop: a review or form card), as a
    DataPart of its own (``metadata.agent_stream.type`` ``card``) that a client renders."""
    return [
        Part(root=DataPart(data=merge.copy_json(a.data["card"]), metadata={KEY: {"type": CARD}}))
        for a in asks
        if isinstance(a.data.get("card"), dict)
    ]


def _user_turns(task: Task) -> int:
    return sum(1 for m in task.history or [] if m.role == Role.user)


class _Artifact(Tracked):
    """What the encoder keeps of one message (one artifact): its props as ``data``."""

    __slots__ = ("data", "sent", "status_n")

    def __init__(self, key: Key, type_: str, aid: str, block_id: str | None) -> None:
        super().__init__(key, type_, block_id, kind=_kind(type_), wid=aid)
        self.sent = False
        self.data: dict[str, Any] = {}
        self.status_n = 0


class A2AEncoder(TrackingEncoder[_Artifact, Any]):
    """Messages in, A2A events out (``a2a.types`` models).

    ``frame_sse`` makes them the SSE text of JSON-RPC ``message/stream`` responses. The output
    depends only on the input.

    Args:
        task_id: the task's id (None: ``task``'s, else ``task-`` + stream_start's request_id).
        context_id: the context's id (None: ``task``'s, else ``agent-stream``).
        task: the task this reply continues, if any (its artifacts' ids are not reused).
    """

    INCOMPLETE_WARNING = "the stream ended without stream_end; the A2A task fails as incomplete"

    def __init__(
        self,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> None:
        super().__init__()
        self.continues = task
        self.task_id = task_id or (task.id if task is not None else None)
        self.context_id = context_id or (task.context_id if task is not None else None)
        self._aids: set[str] = {a.artifact_id for a in (task.artifacts or [])} if task else set()
        self._asks: list[_Artifact] = []
        self._turn = _user_turns(task) if task is not None else 1
        self.final_state: TaskState | None = None  # the state the task ended in (None: open)

    def _incomplete(self, out: list[Any], error: str | None) -> None:
        # Every open artifact is closed (lastChunk), marked incomplete: a client waiting for
        # its last chunk is not left hanging, and none of them looks whole.
        for st in list(self._table.open.values()):
            if not st.sent and st.kind == _DATA and st.data:
                self._send_whole(st, out, last=False)
            if st.sent and st.kind != _STATUS:
                self._artifact(st, [], out, append=True, last=True, status="incomplete")
            self._ending(st)
        self._final(out, TaskState.failed, error or INCOMPLETE_TEXT, {"status": "incomplete"})

    def _suffix(self) -> str:
        return "" if self._turn <= 1 else f"-{self._turn}"

    def _end_stream(self, out: list[Any], status: str, error: str | None) -> None:
        self._end(out, {"status": status, "error": error})

    # -- the task -----------------------------------------------------------------------------
    def _start(self, msg: Message | None, out: list[Event]) -> None:
        ev = EventView(msg) if msg is not None and msg.event == STREAM_START else None
        data = ev.data if ev is not None else {}
        rid = ev.request_id if ev is not None else None
        self.task_id = self.task_id or (f"task-{rid}" if rid else "task-agent-stream")
        self.context_id = self.context_id or "agent-stream"
        opening = {KEY: {"event": STREAM_START, "data": dict(data)}}
        if self.continues is not None:  # the same task goes on, all it had kept
            prior = self.continues
            out.append(
                prior.model_copy(
                    deep=True,
                    update={
                        "status": TaskStatus(state=TaskState.working),
                        "metadata": {**(prior.metadata or {}), **opening},
                    },
                )
            )
        else:
            out.append(
                Task(
                    id=self.task_id,
                    context_id=self.context_id,
                    status=TaskStatus(state=TaskState.submitted),
                    metadata=opening,
                )
            )
        out.append(self._status(TaskState.working))

    def _status(
        self,
        state: TaskState,
        message: A2AMessage | None = None,
        meta: dict[str, Any] | None = None,
        final: bool = False,
    ) -> TaskStatusUpdateEvent:
        return TaskStatusUpdateEvent(
            task_id=self.task_id or "",
            context_id=self.context_id or "",
            status=TaskStatus(state=state, message=message),
            final=final,
            metadata={KEY: meta} if meta else None,
        )

    def _final(
        self, out: list[Event], state: TaskState, text: str | None, data: Mapping[str, Any]
    ) -> None:
        asks = [a for a in self._asks if a.data]
        meta: dict[str, Any] = {"event": STREAM_END, "data": dict(data)}
        if asks:  # the questions, whatever the state: the decoder gives them back
            meta["asks"] = [{**self._meta(a), "props": merge.copy_json(a.data)} for a in asks]
        message = None
        if state == TaskState.completed and asks:
            state = TaskState.input_required
            contents = [a.data.get("content") for a in asks]
            message = A2AMessage(
                role=Role.agent,
                message_id=f"{self.task_id}-input{self._suffix()}",
                parts=[
                    _text_part("\n\n".join(c for c in contents if isinstance(c, str))),
                    *(Part(root=DataPart(data=_ask_data(a.data))) for a in asks),
                    *_card_parts(asks),
                ],
                metadata={KEY: {"type": USER_INPUT}},
                task_id=self.task_id,
                context_id=self.context_id,
            )
        elif text:
            message = A2AMessage(
                role=Role.agent,
                message_id=f"{self.task_id}-final{self._suffix()}",
                parts=[_text_part(text)],
                task_id=self.task_id,
                context_id=self.context_id,
            )
        out.append(self._status(state, message, meta, final=True))
        self.final_state = state
        self.finished = True

    def _end(self, out: list[Event], data: Mapping[str, Any]) -> None:
        status = data.get("status") or "completed"
        for st in list(self._table.open.values()):
            if status == "completed":
                self._end_msg(st, out)
                continue
            if not st.sent and st.kind == _DATA and st.data:
                self._send_whole(st, out, last=False)  # a held tool call, shown unfinished
            if st.sent and st.kind != _STATUS:
                # closed (lastChunk), marked with how the stream ended: a client waiting for
                # its last chunk is not left hanging, and it does not look complete
                mark = status if status in ("error", "cancelled") else "error"
                self._artifact(st, [], out, append=True, last=True, status=mark)
            self._ending(st)
        state = (
            _FINAL.get(status, TaskState.failed) if isinstance(status, str) else TaskState.failed
        )
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
            new = self._table.started_by(ev)
            if new is not None and new[1]:
                self._new(new[0], new[1], ev.msg.block_id)
            return
        if name == MESSAGE_END or ev.end_status == "completed":
            for st in self._table.ended_by(ev):  # unfinished ones (status error): no lastChunk
                self._end_msg(st, out)
            if name == MESSAGE_END:
                return
        meta: dict[str, Any] = {"event": name or "event"}
        if name in LIFECYCLE_EVENTS:
            meta["data"] = dict(ev.data)
        else:
            meta["props"] = merge.copy_json(ev.msg.props or {})
        meta.update(ev.msg.ids())
        out.append(self._status(TaskState.working, None, meta))

    # -- messages -----------------------------------------------------------------------------
    def _new(self, key: Key, type_: str, block_id: str | None) -> _Artifact:
        aid = unique_id(scoped_id(key), self._aids)
        st = self._table.add(_Artifact(key, type_, aid, block_id))
        if st.kind == _ASK:
            self._asks.append(st)
        return st

    def _meta(self, st: _Artifact) -> dict[str, Any]:
        meta: dict[str, Any] = {"type": st.type}
        if not st.key[1].startswith("#"):  # anonymous messages have no id to carry
            meta["message_id"] = st.key[1]
        if st.key[0] is not None:
            meta["thread_id"] = st.key[0]
        if st.block_id is not None:
            meta["block_id"] = st.block_id
        return meta

    def _artifact(
        self,
        st: _Artifact,
        parts: list[Part],
        out: list[Event],
        *,
        append: bool,
        last: bool = False,
        props: bool = False,
        status: str | None = None,
    ) -> None:
        meta: dict[str, Any] | None = None
        if not append:
            meta = self._meta(st)
            if props:  # the props travel whole: a FilePart carries only the url and type
                meta["props"] = merge.copy_json(st.data)
        if status is not None:  # how the message ended, when not completed
            meta = {**(meta or {}), "status": status}
        art = Artifact(
            artifact_id=st.wid,
            parts=parts,
            name=None if append else st.type,
            metadata={KEY: meta} if meta else None,
        )
        out.append(
            TaskArtifactUpdateEvent(
                task_id=self.task_id or "",
                context_id=self.context_id or "",
                artifact=art,
                append=append or None,
                last_chunk=last or None,
            )
        )
        st.sent = True

    def _retype(self, st: _Artifact, msg: Message, out: list[Event]) -> _Artifact:
        """A type change ends the old artifact; a new one (same message id) starts."""
        if st in self._asks:  # no longer a question
            self._asks.remove(st)
        old_text, old_props = st.text.value(), st.data
        new = self._replace(st, msg, out)
        if msg.props is None:  # type_change without props keeps them
            new.data = old_props
            if new.kind == _TEXT and old_text:
                new.text.set(old_text)
                self._artifact(new, [_text_part(old_text)], out, append=False)
        return new

    def _chunk(self, st: _Artifact, msg: Message, out: list[Event]) -> None:
        if msg.type_change and msg.props is None:
            return
        if st.kind == _TEXT:
            ch = visible_change(msg, _SHOWN[st.type])
            if ch is None:
                return
            op, s = ch
            cur = st.text.value()
            if op == APPEND or (st.sent and s.startswith(cur)):
                ext = s if op == APPEND else s[len(cur) :]
                if ext:
                    st.text.append(ext)
                    self._artifact(st, [_text_part(ext)], out, append=st.sent)
            elif s != cur or not st.sent:
                st.text.set(s)
                self._artifact(st, [_text_part(s)], out, append=False)
            return
        try:
            st.data = props_after(st.data, msg)
        except DeltaError as exc:
            self._bad_delta(msg, exc)
            return
        if st.kind == _ASK:
            return  # held for the final status
        if st.kind == _STATUS:
            self._status_msg(st, out)
        elif st.kind == _FILE:
            self._send_whole(st, out, last=False)
        elif st.type == TOOL_CALL and not st.sent and not isinstance(st.data.get("name"), str):
            return  # held until the name is known
        elif (
            not st.sent
            or not msg.delta
            or (msg.delta_path is None and msg.delta_action in ("replace", "set"))
        ):
            self._send_whole(st, out, last=False)
        else:
            meta = {
                k: v
                for k, v in (("delta_action", msg.delta_action), ("delta_path", msg.delta_path))
                if v
            }
            part = DataPart(
                data=merge.copy_json(msg.props or {}), metadata={KEY: meta} if meta else None
            )
            self._artifact(st, [Part(root=part)], out, append=True)

    def _send_whole(self, st: _Artifact, out: list[Event], *, last: bool) -> None:
        if st.kind == _FILE:
            url = st.data.get("url")
            if not isinstance(url, str) or not url:
                return
            alt = st.data.get("alt")
            part = Part(
                root=FilePart(
                    file=FileWithUri(
                        uri=url,
                        mime_type=media_type(st.type, st.data),
                        name=alt if isinstance(alt, str) else None,
                    )
                )
            )
        elif st.kind == _TEXT:
            part = _text_part(st.text.value())
        else:
            if st.type == TOOL_CALL and not isinstance(st.data.get("name"), str):
                self._warn(
                    WarningCode.LATE_TOOL_NAME,
                    "tool call sent without a name (none arrived)",
                    key=st.key,
                )
            part = Part(root=DataPart(data=merge.copy_json(st.data)))
        self._artifact(st, [part], out, append=False, last=last, props=st.kind == _FILE)

    def _status_msg(self, st: _Artifact, out: list[Event]) -> None:
        st.status_n += 1
        text = st.data.get(_SHOWN.get(st.type, "message"))
        meta = {**self._meta(st), "props": merge.copy_json(st.data)}
        message = A2AMessage(
            role=Role.agent,
            message_id=f"{st.wid}#{st.status_n}",
            parts=[_text_part(text if isinstance(text, str) else "")],
            metadata={KEY: meta},
            task_id=self.task_id,
            context_id=self.context_id,
        )
        out.append(self._status(TaskState.working, message))
        st.sent = True

    def _end_msg(self, st: _Artifact, out: list[Event]) -> None:
        if not self._ending(st):
            return
        if st.kind in (_STATUS, _ASK):
            return
        if st.sent:
            self._artifact(st, [], out, append=True, last=True)
        elif st.kind == _TEXT or st.data:
            self._send_whole(st, out, last=True)


def frame_sse(event: Event, rpc_id: str | int = 1) -> str:
    """One event as the SSE text of a JSON-RPC ``message/stream`` response.

    Args:
        event: the A2A event.
        rpc_id: the JSON-RPC request's id.
    """
    return (
        "data: "
        + SendStreamingMessageSuccessResponse(id=rpc_id, result=event).model_dump_json(
            exclude_none=True
        )
        + "\n\n"
    )


def encode_messages(messages: Iterable[Message], **options: Any) -> list[Any]:
    """Encode a whole Message stream.

    Args:
        messages: the stream's Messages, in order.
        **options: ``A2AEncoder``'s options.
    """
    return list(run_encoder(A2AEncoder(**options), messages))
