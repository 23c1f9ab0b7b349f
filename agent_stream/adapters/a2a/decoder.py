"""A2A streaming in: ``message/stream`` events (models, dicts or SSE lines) become Messages. Pure.

Both versions' events are read: A2A 0.3 (``kind``, ``final``) and A2A 1.0 (a
``SendStreamingMessage`` result: ``{"task"}``, ``{"statusUpdate"}``, ``{"artifactUpdate"}`` or
``{"message"}``, read through a2a-sdk's own mapping to 0.3; a 1.0 stream has no ``final``, so
the status that ends it is the one in a terminal or ``input-required`` state).

Reads what ``A2AEncoder`` writes exactly (its ``metadata.agent_stream`` names types, ids and
deltas) and any other A2A server's stream as well as the wire allows:

- the Task -> stream_start; the ``final`` status update -> stream_end (completed, failed ->
  error with the status message's text, canceled -> cancelled; rejected and the rest -> error).
  A final ``failed`` marked ``incomplete`` (a cut stream) ends nothing: the transcript stays
  ``streaming``, with an ``incomplete`` warning.
- a final ``input-required`` -> the agent's questions as ``user_input`` messages (the ones its
  metadata lists as ``asks``, else one carrying the status message's text), then stream_end
  completed: the reply is whole, it ends by asking.
- an artifact -> one message: TextParts append to ``content`` (type from the metadata, else
  ``text``); a DataPart starts the props (``data``, else the metadata's type) and later ones are
  deltas; a FilePart is an image/audio/video by its mime type. ``append`` false for a known
  artifact replaces it (a whole chunk); ``append`` for an unknown one is dropped with a warning;
  ``lastChunk`` -> message_end (unless its metadata gives a ``status`` other than completed:
  ``incomplete`` closes the artifact of a cut stream, the message stays unfinished).
- status messages -> whole ``loading`` (or ``error``) chunks; status metadata naming a thread or
  block event -> that event.
- a plain Message as the reply (no task) -> one whole text message and stream_end; a JSON-RPC
  error response -> stream_end with status error and its message.
"""

from __future__ import annotations

from typing import Any

from a2a.compat.v0_3.types import (
    DataPart,
    FilePart,
    Part,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2a.compat.v0_3.types import Message as A2AMessage
from pydantic import TypeAdapter, ValidationError

from agent_stream import jsontext
from agent_stream.adapters._tracking import Warnings
from agent_stream.adapters.a2a.encoder import KEY
from agent_stream.adapters.a2a.versions import stream_json
from agent_stream.adapters.framing import sse_payload
from agent_stream.errors import WarningCode, WireError
from agent_stream.message import (
    EVENT,
    LIFECYCLE_EVENTS,
    LOADING,
    MESSAGE_END,
    STREAM_END,
    STREAM_START,
    TEXT,
    USER_INPUT,
    Message,
    MessageEndData,
    lifecycle,
)

__all__ = ["A2ADecoder"]

_EVENT: TypeAdapter[Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | A2AMessage] = (
    TypeAdapter(Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | A2AMessage)
)
_V1 = frozenset({"task", "message", "statusUpdate", "artifactUpdate"})
_PAUSED = (TaskState.input_required, TaskState.auth_required)
_STATUS = {
    TaskState.completed: "completed",
    TaskState.canceled: "cancelled",
    TaskState.input_required: "completed",  # the reply is whole; it ends asking
}


def _meta(obj: Any) -> dict[str, Any]:
    md = getattr(obj, "metadata", None)
    v = md.get(KEY) if isinstance(md, dict) else None
    return v if isinstance(v, dict) else {}


def _str(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    return v if isinstance(v, str) and v else None


class _Art:
    """One artifact read so far: the message it is."""

    __slots__ = ("bid", "mid", "tid", "type")

    def __init__(self, mid: str, tid: str | None, bid: str | None, type_: str) -> None:
        self.mid = mid
        self.tid = tid
        self.bid = bid
        self.type = type_


class A2ADecoder(Warnings):
    """A2A events in (``feed`` a model, a dict, or a JSON-RPC response dict), Messages out.

    A plain Message as the reply (no task) is a whole text message and the stream's end."""

    def __init__(self) -> None:
        super().__init__()
        self._arts: dict[str, _Art] = {}
        self._started = False
        self.ended = False

    def feed(self, event: Any) -> list[Message]:
        """Decode one event.

        Args:
            event: an A2A streaming event: a model, its decoded JSON, or a JSON-RPC response
                carrying it.

        Raises:
            WireError: it is not an A2A streaming event.
        """
        if isinstance(event, dict):
            if "error" in event and "result" not in event:
                err = event["error"] if isinstance(event["error"], dict) else {}
                return self._stream_end("error", str(err.get("message") or "JSON-RPC error"))
            event = event.get("result", event)
            if isinstance(event, dict) and "kind" not in event and _V1.intersection(event):
                try:  # an A2A 1.0 event: {"task": ...}, {"statusUpdate": ...}, ...
                    event = stream_json(event)
                except ValueError as exc:
                    raise WireError(f"not an A2A 1.0 stream event: {exc}") from None
                if isinstance(event, TaskStatusUpdateEvent) and event.status.state in _PAUSED:
                    event.final = True  # a 1.0 stream closes at an interrupted state too
            try:
                event = _EVENT.validate_python(event)
            except ValidationError as exc:
                raise WireError(f"not an A2A streaming event: {exc.errors()[0]['msg']}") from None
        out: list[Message] = []
        if self.ended:
            return out
        if not self._started:
            self._started = True
            data = _meta(event).get("data") if isinstance(event, Task) else None
            data = data if isinstance(data, dict) else None
            out.append(Message(type=EVENT, props={"event": STREAM_START, "data": dict(data or {})}))
        if isinstance(event, TaskStatusUpdateEvent):
            out += self._status(event)
        elif isinstance(event, TaskArtifactUpdateEvent):
            out += self._artifact(event)
        elif isinstance(event, A2AMessage):
            text = "".join(p.root.text for p in event.parts if isinstance(p.root, TextPart))
            out.append(Message(type=TEXT, props={"content": text}, message_id=event.message_id))
            out += self._stream_end("completed", None)
        return out

    def feed_line(self, line: str) -> list[Message]:
        """One SSE line: ``data: <JSON-RPC response>`` (or a bare JSON object).

        Blank lines, comments and ``event:``/``id:``/``retry:`` fields are skipped.

        Args:
            line: the line, without its line break.

        Raises:
            WireError: anything else, or data that is not strict JSON
                (``agent_stream.jsontext``).
        """
        payload = sse_payload(line)
        if payload is None:
            return []
        obj = jsontext.loads(payload, WireError)
        if not isinstance(obj, dict):
            raise WireError("an A2A event must be a JSON object")
        return self.feed(obj)

    def close(self) -> list[Message]:
        """The input ended; a stream with no final status is reported, not ended."""
        if self._started and not self.ended:
            self._warn(WarningCode.INCOMPLETE, "the A2A stream ended without a final status")
        return []

    # -- status -------------------------------------------------------------------------------
    def _stream_end(
        self, status: str, error: str | None, data: dict[str, Any] | None = None
    ) -> list[Message]:
        self.ended = True
        d = dict(data or {})
        d["status"] = status
        if error and status != "completed":
            d.setdefault("error", error)
        return [Message(type=EVENT, props={"event": STREAM_END, "data": d})]

    def _status(self, ev: TaskStatusUpdateEvent) -> list[Message]:
        meta = _meta(ev)
        message = ev.status.message
        text = "".join(
            p.root.text for p in (message.parts if message else []) if isinstance(p.root, TextPart)
        )
        if ev.final:
            data = meta.get("data") if meta.get("event") == STREAM_END else None
            data = data if isinstance(data, dict) else {}
            asks = self._asks(meta, ev.status.state, text)
            if data.get("status") == "incomplete":
                self.ended = True
                self._warn(
                    WarningCode.INCOMPLETE, "the A2A task failed as incomplete: the stream was cut"
                )
                return asks
            status = _STATUS.get(ev.status.state, "error")
            if ev.status.state == TaskState.input_required:
                text = ""  # the question, given back as user_input, is no error text
            return asks + self._stream_end(status, text or None, data)
        name = meta.get("event")
        if isinstance(name, str):
            ids = {
                k: meta[k]
                for k in ("thread_id", "block_id", "message_id")
                if isinstance(meta.get(k), str)
            }
            if name in LIFECYCLE_EVENTS:
                data = meta.get("data")
                return [Message(type=EVENT, props={"event": name, "data": dict(data or {})}, **ids)]
            props = meta.get("props")
            return [
                Message(
                    type=EVENT, props=props if isinstance(props, dict) else {"event": name}, **ids
                )
            ]
        if message is None:
            return []
        mmeta = _meta(message)
        type_ = _str(mmeta, "type") or LOADING
        props = mmeta.get("props")
        if not isinstance(props, dict):
            props = {"message": text}
        return [
            Message(
                type=type_,
                props=props,
                message_id=_str(mmeta, "message_id"),
                thread_id=_str(mmeta, "thread_id"),
                block_id=_str(mmeta, "block_id"),
            )
        ]

    @staticmethod
    def _asks(meta: dict[str, Any], state: TaskState, text: str) -> list[Message]:
        """The agent's questions of a final status: those its metadata lists, else (another
        server's ``input-required``) one carrying the status message's text."""
        listed = meta.get("asks")
        if isinstance(listed, list):
            return [
                Message(
                    type=USER_INPUT,
                    props=dict(a["props"]),
                    message_id=_str(a, "message_id"),
                    thread_id=_str(a, "thread_id"),
                    block_id=_str(a, "block_id"),
                )
                for a in listed
                if isinstance(a, dict) and isinstance(a.get("props"), dict)
            ]
        if state == TaskState.input_required and text:
            return [Message(type=USER_INPUT, props={"content": text})]
        return []

    # -- artifacts ----------------------------------------------------------------------------
    def _artifact(self, ev: TaskArtifactUpdateEvent) -> list[Message]:
        art = ev.artifact
        aid = art.artifact_id
        st = self._arts.get(aid)
        out: list[Message] = []
        if ev.append:
            if st is None:
                self._warn(
                    WarningCode.UNKNOWN_ARTIFACT,
                    f"append for artifact {aid!r} never created; dropped",
                )
                return out
            for p in art.parts:
                out += self._part(st, p, first=False)
        else:
            meta = _meta(art)
            first = art.parts[0].root if art.parts else None
            type_ = _str(meta, "type") or _guess(first)
            if st is None or st.type != type_:
                st = self._arts[aid] = _Art(
                    _str(meta, "message_id") or aid,
                    _str(meta, "thread_id"),
                    _str(meta, "block_id"),
                    type_,
                )
            props = meta.get("props")
            if isinstance(props, dict) and isinstance(first, FilePart):
                out.append(self._msg(st, props, delta=False))
            else:
                for i, p in enumerate(art.parts):
                    out += self._part(st, p, first=i == 0)
        if ev.last_chunk and _meta(art).get("status") in (None, "completed"):
            # a last chunk marked otherwise (a cut stream) closes the artifact, not the message
            out.append(
                lifecycle(
                    MESSAGE_END,
                    MessageEndData(message_id=st.mid, type=st.type, thread_id=st.tid),
                    thread_id=st.tid,
                    block_id=st.bid,
                )
            )
        return out

    def _msg(
        self, st: _Art, props: dict[str, Any], *, delta: bool, meta: dict[str, Any] | None = None
    ) -> Message:
        m = meta or {}
        return Message(
            type=st.type,
            props=props,
            message_id=st.mid,
            thread_id=st.tid,
            block_id=st.bid,
            delta=delta,
            delta_action=m.get("delta_action"),
            delta_path=m.get("delta_path"),
        )

    def _part(self, st: _Art, part: Part, *, first: bool) -> list[Message]:
        p = part.root
        if isinstance(p, TextPart):
            if first:  # a first (or replacing) TextPart sets the content
                return [self._msg(st, {"content": p.text}, delta=False)]
            return [self._msg(st, {"content": p.text}, delta=True)] if p.text else []
        if isinstance(p, DataPart):
            if first:
                return [self._msg(st, dict(p.data), delta=False)]
            return [self._msg(st, dict(p.data), delta=True, meta=_meta(p))]
        uri = getattr(p.file, "uri", None)
        if not isinstance(uri, str):
            self._warn(WarningCode.FILE_BYTES, "a file with inline bytes was not decoded")
            return []
        props: dict[str, Any] = {"url": uri}
        if p.file.name:
            props["alt"] = p.file.name
        return [self._msg(st, props, delta=False)]


def _guess(part: Any) -> str:
    if isinstance(part, DataPart):
        return "data"
    if isinstance(part, FilePart):
        mime = part.file.mime_type or ""
        major = mime.split("/", 1)[0]
        return major if major in ("image", "audio", "video") else "file"
    return TEXT
