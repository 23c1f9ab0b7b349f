"""The Vercel AI SDK UI message stream out (the protocol behind ``useChat``, v5+). Pure.

Messages become UI message chunks, sent as SSE ``data: <json>`` lines ending ``data: [DONE]``
(response header ``x-vercel-ai-ui-message-stream: v1``, see ``HEADERS``). Mapping:

- stream -> ``start`` (messageId ``msg-<request_id>``) ... ``finish`` (finishReason, usage in
  ``messageMetadata.usage``). status error -> ``error`` then ``finish`` with finishReason
  ``error``; cancelled -> ``abort`` (with a ``reason`` for ai 6); closed without stream_end ->
  ``error`` ("the stream ended before it was complete") and no ``finish``, with an
  ``incomplete`` warning: open parts are left as they were, not completed.
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
  ``tool-output-available`` (providerExecuted), or ``tool-output-error`` for a failed one.
- image, audio, video -> ``file`` (url, mediaType guessed from the url or format).
- citations -> sources: a ``citation`` Message, or an item of a text's ``props.citations`` (as
  the Anthropic source gives them), with an http(s) ``url`` (or ``source``) -> ``source-url``
  (``title`` when it has one); else one naming a document (``title``, ``document_title`` or
  ``document_index``) -> ``source-document`` (``mediaType`` its ``media_type``, else
  ``application/pdf`` for a ``page_location``, else ``text/plain``). ``sourceId`` is a hash of
  what it points at, and each source is sent once per stream. A citation Message naming no
  source stays a ``data-citation`` part.
- the first block naming a ``model`` (not inside a sub-agent) -> ``message-metadata``
  ``{"model"}``; the stream's usage stays in ``finish``'s ``messageMetadata.usage``, which the
  SDK merges into the same ``message.metadata``.
- approvals (``ai_version`` 6, the default): a ``user_input`` of kind ``approval`` whose
  ``call_id`` names a tool call of this stream -> ``tool-approval-request`` (``approvalId``
  :func:`approval_id` of ``reply_id`` or the message id, the call's ``toolCallId``) after that
  call's ``tool-input-available``; ``useChat`` shows the call awaiting the user's decision.
  ai 5 has no such chunk (its schema refuses it): with ``ai_version=5`` the pause stays a
  ``data-user_input`` part. A stream that continues a paused message (``approvals``: call id
  -> approved) answers each call's ``tool_result`` with ``tool-output-available``
  (``tool-output-error`` when it failed) when approved, ``tool-output-denied`` when refused
  (at the stream's end when no result came).
- error Message -> ``error`` (errorText; the stream goes on, but ``useChat`` reports it as the
  reply's error). Inside a sub-agent (an open block of type ``agent``, or a block nested in one)
  it fails only that sub-agent, which its caller may recover from: a ``data-error`` part (``id``
  the part id, ``data`` its props ``message``, ``code``...), kept among the message's parts.
- anything else (loading, action, user_input, custom types, other tool results) ->
  ``data-<type>`` with ``id`` the message's part id and ``data`` its current props, so every
  delta (structured ones included) is sent as the new whole value, which replaces the part;
  non-lifecycle events -> ``data-event``; thread_start/thread_end -> transient ``data-thread``.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
from collections.abc import Iterable, Mapping
from typing import Any

from agent_stream import merge
from agent_stream.adapters._subagents import SubAgents
from agent_stream.adapters._tracking import (
    Key,
    Parts,
    Tracked,
    TrackingEncoder,
    id_fields,
    props_after,
    scoped_id,
    set_shown,
    unique_id,
)
from agent_stream.adapters.framing import dumps, run_encoder
from agent_stream.errors import DeltaError, WarningCode
from agent_stream.events import EventView
from agent_stream.merge import APPEND, visible_change
from agent_stream.message import (
    AUDIO,
    BLOCK_END,
    BLOCK_START,
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
    USER_INPUT,
    VIDEO,
    Message,
)

__all__ = [
    "CONTENT_TYPE",
    "DONE",
    "HEADERS",
    "AISDKEncoder",
    "approval_id",
    "encode_messages",
    "frame_sse",
    "media_type",
]

HEADERS = {"x-vercel-ai-ui-message-stream": "v1"}
CONTENT_TYPE = "text/event-stream"
DONE = "[DONE]"
TOOL_RESULT = "tool_result"
CITATION = "citation"
VERSIONS = (5, 6)  # the AI SDK majors whose strict chunk schemas this encoder keeps to
INCOMPLETE_TEXT = "the stream ended before it was complete"
_FINISH = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content-filter",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
}
_TEXT, _REASONING, _TOOL, _FILE, _DATA = "text", "reasoning", "tool", "file", "data"
_MEDIA = {IMAGE: "image", AUDIO: "audio", VIDEO: "video"}
_SUBTYPE = {"mp3": "mpeg", "jpg": "jpeg", "mov": "quicktime"}  # formats named unlike subtypes
_SHOWN = {TEXT: "content", REFUSAL: "content", THINKING: "content"}  # the streamed string


_KINDS = {
    TEXT: _TEXT,
    REFUSAL: _TEXT,
    THINKING: _REASONING,
    TOOL_CALL: _TOOL,
    **dict.fromkeys(_MEDIA, _FILE),
}


def _kind(type_: str) -> str:
    """The UI part a message of this type becomes (a data part for any other type)."""
    return _KINDS.get(type_, _DATA)


def approval_id(scope: str, part_id: str) -> str:
    """The ``approvalId`` of the approval asked by a stream's ``user_input`` part.

    Args:
        scope: the stream's ``reply_id``, else its ``start`` messageId.
        part_id: the user_input message's part id.
    """
    return f"{scope}.{part_id}"


def _source(c: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``source-url`` or ``source-document`` chunk of one citation (no sourceId yet), or
    None when it points at nothing."""

    def s(k: str) -> str | None:
        v = c.get(k)
        return v if isinstance(v, str) and v.strip() else None

    title = s("title") or s("document_title")
    url = s("url") or s("source")
    if url is not None and url.startswith(("https://", "http://")):
        chunk: dict[str, Any] = {"type": "source-url", "url": url}
        if title is not None:
            chunk["title"] = title
        return chunk
    index = c.get("document_index")
    if title is None and isinstance(index, int) and not isinstance(index, bool):
        title = f"document {index}"
    if title is None:
        return None
    media = s("media_type") or s("mediaType")
    if media is None:
        media = "application/pdf" if c.get("type") == "page_location" else "text/plain"
    chunk = {"type": "source-document", "mediaType": media, "title": title}
    filename = s("filename")
    if filename is not None:
        chunk["filename"] = filename
    return chunk


def media_type(type_: str, props: Mapping[str, Any]) -> str:
    """The IANA media type of an image/audio/video Message: its format, its url, or ``type/*``.

    Args:
        type_: the Message type (``image``, ``audio``, ``video``).
        props: its props (``format``, ``url``).
    """
    major = _MEDIA.get(type_, "application")
    fmt = props.get("format")
    if isinstance(fmt, str) and fmt:
        return fmt if "/" in fmt else f"{major}/{_SUBTYPE.get(fmt, fmt)}"
    url = props.get("url")
    guessed = mimetypes.guess_type(url)[0] if isinstance(url, str) else None
    return guessed or f"{major}/*"


class AISDKEncoder(TrackingEncoder[Tracked, Any]):
    """Messages in, AI SDK UI message chunks out.

    Dicts, and ``DONE`` last; ``frame_sse`` makes them SSE text. ``close()`` ends a stream that
    had no stream_end as not completed: an ``error`` part, no ``finish``. The output depends
    only on the input.

    Args:
        message_id: the ``start`` chunk's ``messageId`` (None: ``msg-`` and stream_start's
            request_id, else ``msg-agent-stream``); a continued message's own id.
        ai_version: the AI SDK major the client runs (5 or 6): 5 gets no approval chunks.
        approvals: for a stream continuing a paused message: each call id the user decided on,
            and whether it was approved (ai 6 only).
        reply_id: what makes this stream's approval ids unique (None: the message id; a
            stream continuing a message needs its own).

    Raises:
        ValueError: ``ai_version`` is not 5 or 6.
    """

    INCOMPLETE_WARNING = (
        "the stream ended without stream_end; an AI SDK client gets an error part, not a finish"
    )

    def __init__(
        self,
        *,
        message_id: str | None = None,
        ai_version: int = 6,
        approvals: Mapping[str, bool] | None = None,
        reply_id: str | None = None,
    ) -> None:
        super().__init__()
        if ai_version not in VERSIONS:
            raise ValueError(f"ai_version must be one of {VERSIONS}, not {ai_version!r}")
        self.message_id = message_id
        self.ai_version = ai_version
        self.reply_id = reply_id
        # a continued message's decisions, call id -> approved; popped once answered
        self._decided = dict(approvals or {}) if ai_version >= 6 else {}
        self._asked: set[str] = set()  # user_input parts sent as approval requests
        self._sources: set[str] = set()
        self._model_sent = False
        self._calls: dict[str, Tracked] = {}  # tool call id on the wire -> its call
        self._pids: set[str] = set()
        self._blocks: set[str] = set()
        self._step = False
        self._last_error: str | None = None
        self._agents = SubAgents()

    def _error_msg(self, msg: Message, out: list[Any]) -> None:
        if self._agents.agent_of(msg.block_id) is not None:
            # A sub-agent's error fails that sub-agent, not the reply (its caller may go on):
            # a ``data-error`` part, which the SDK keeps among the message's parts, where an
            # ``error`` chunk would be reported as the whole reply's error.
            self._content(msg, out)
            return
        m = (msg.props or {}).get("message")
        self._error(out, m if isinstance(m, str) and m else "error")

    def _incomplete(self, out: list[Any], error: str | None) -> None:
        for st in list(self._table.open.values()):
            if st.kind == _TOOL and not st.opened and st.tool.args.size:
                self._tool_open(st, out)  # what the call had is shown, not completed
        out.append({"type": "error", "errorText": error or INCOMPLETE_TEXT})
        out.append(DONE)
        self.finished = True

    def _end_stream(self, out: list[Any], status: str, error: str | None) -> None:
        self._end(out, status, error, None, None)

    # -- the stream ---------------------------------------------------------------------------
    def _start(self, msg: Message | None, out: list[Any]) -> None:
        if self.message_id is None:
            ev = EventView(msg) if msg is not None and msg.event == STREAM_START else None
            rid = ev.request_id if ev is not None else None
            self.message_id = f"msg-{rid}" if rid else "msg-agent-stream"
        out.append({"type": "start", "messageId": self.message_id})

    def _end(
        self,
        out: list[Any],
        status: str,
        error: str | None,
        finish_reason: str | None,
        usage: dict[str, Any] | None,
    ) -> None:
        for st in list(self._table.open.values()):
            self._end_msg(st, out)
        for cid, approved in list(self._decided.items()):
            if not approved:  # refused, and the agent said nothing of it: still refused
                out.append({"type": "tool-output-denied", "toolCallId": cid})
        self._decided.clear()
        self._blocks.clear()
        if self._step:
            out.append({"type": "finish-step"})
            self._step = False
        if status == "cancelled":
            abort = {"type": "abort", "reason": error or "the stream was cancelled"}
            if self.ai_version < 6:  # ai 5's abort chunk has no reason
                del abort["reason"]
            out.append(abort)
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
        self._agents.see(ev)
        name = ev.name
        if name == STREAM_END:
            self._end(out, ev.end_status, ev.error, ev.finish_reason, ev.usage)
        elif name == BLOCK_START:
            bid = ev.block_id
            if bid is not None:
                self._model(ev, bid, out)
                self._blocks.add(bid)
                if not self._step and not any(
                    s.kind == _TOOL and s.opened for s in self._table.open.values()
                ):
                    out.append({"type": "start-step"})
                    self._step = True
        elif name == MESSAGE_START:
            new = self._table.started_by(ev)
            if new is not None and new[1]:
                self._new(new[0], new[1], ev.msg.block_id)
        elif name in (MESSAGE_END, BLOCK_END, THREAD_END):
            ended = self._table.ended_by(ev)
            for st in ended:
                self._end_msg(st, out)
            if name == BLOCK_END:
                self._blocks.discard(ev.block_id or "")
            if ended or name != MESSAGE_END:
                self._maybe_finish_step(out)
            if name == THREAD_END:
                self._thread(ev, out)
        elif name == THREAD_START:
            self._thread(ev, out)
        elif name not in LIFECYCLE_EVENTS:
            out.append({"type": "data-event", "data": merge.copy_json(ev.msg.props or {})})

    def _model(self, ev: EventView, bid: str, out: list[Any]) -> None:
        """``message-metadata`` naming the model, at the first block that names one (a
        sub-agent's model is not the reply's)."""
        model = ev.data.get("model")
        if self._model_sent or not isinstance(model, str) or not model:
            return
        if self._agents.agent_of(bid) is not None or ev.data.get("type") == "agent":
            return
        self._model_sent = True
        out.append({"type": "message-metadata", "messageMetadata": {"model": model}})

    def _thread(self, ev: EventView, out: list[Any]) -> None:
        out.append(
            {"type": "data-thread", "data": {"event": ev.name, **ev.data}, "transient": True}
        )

    def _maybe_finish_step(self, out: list[Any]) -> None:
        if (
            self._step
            and not self._blocks
            and not any(s.opened for s in self._table.open.values() if s.kind != _DATA)
        ):
            out.append({"type": "finish-step"})
            self._step = False

    # -- messages -----------------------------------------------------------------------------
    def _new(self, key: Key, type_: str, block_id: str | None) -> Tracked:
        return self._table.add(
            Tracked(
                key, type_, block_id, kind=_kind(type_), wid=unique_id(scoped_id(key), self._pids)
            )
        )

    def _same_item(self, st: Tracked, type_: str) -> bool:
        """A type change keeps a text or reasoning part whose kind stays."""
        return _kind(type_) == st.kind and st.kind in (_TEXT, _REASONING)

    def _keep_text(self, new: Tracked, text: str, out: list[Any]) -> None:
        self._text_set(new, text, out)

    def _keep_props(self, new: Tracked, props: dict[str, Any], out: list[Any]) -> None:
        if new.kind == _DATA:
            new.props = props
            self._data(new, out)

    def _chunk(self, st: Tracked, msg: Message, out: list[Any]) -> None:
        kind = st.kind
        if kind == _TEXT:
            cites = (msg.props or {}).get("citations")
            if isinstance(cites, list):
                for c in cites:
                    if isinstance(c, dict):
                        self._send_source(c, out)
        if kind in (_TEXT, _REASONING):
            ch = visible_change(msg, _SHOWN[st.type])
            if ch is None:
                return
            op, s = ch
            if op == APPEND:
                if s:
                    self._open_text(st, out)
                    st.text.append(s)
                    out.append({"type": f"{kind}-delta", "id": st.wid, "delta": s})
            else:
                self._text_set(st, s, out)
        elif kind == _TOOL:
            self._tool_chunk(st, msg, out)
        elif kind == _FILE:
            p = msg.props or {}
            url = p.get("url")
            if isinstance(url, str) and url and not msg.delta:
                out.append({"type": "file", "url": url, "mediaType": media_type(st.type, p)})
        elif st.wid in self._asked:
            return  # an approval asked: the tool part holds it, later changes are not sent
        elif self._update_props(st, msg):
            if st.type == TOOL_RESULT and self._tool_result(st, out):
                return
            if st.type == USER_INPUT and self._approval(st, out):
                return
            if st.type == CITATION and self._send_source(st.props or {}, out):
                return
            self._data(st, out)

    def _send_source(self, c: Mapping[str, Any], out: list[Any]) -> bool:
        """A citation as a source chunk, once per source; False when it points at nothing."""
        chunk = _source(c)
        if chunk is None:
            return False
        sid = "src-" + hashlib.sha256(dumps(chunk).encode()).hexdigest()[:16]
        if sid not in self._sources:
            self._sources.add(sid)
            out.append({"type": chunk.pop("type"), "sourceId": sid, **chunk})
        return True

    def _approval(self, st: Tracked, out: list[Any]) -> bool:
        """An approval of a call of this stream as ``tool-approval-request`` (ai 6 only)."""
        p = st.props or {}
        cid = p.get("call_id")
        target = self._calls.get(cid) if isinstance(cid, str) else None
        if self.ai_version < 6 or p.get("kind") != "approval" or target is None:
            return False
        if not target.done:
            self._end_msg(target, out)
        self._asked.add(st.wid)
        out.append(
            {
                "type": "tool-approval-request",
                "approvalId": approval_id(self.reply_id or self.message_id or "", st.wid),
                "toolCallId": target.tool.call_id,
            }
        )
        return True

    def _open_text(self, st: Tracked, out: list[Any]) -> None:
        if not st.opened:
            st.opened = True
            out.append({"type": f"{st.kind}-start", "id": st.wid})

    def _text_set(self, st: Tracked, s: str, out: list[Any]) -> None:
        send = set_shown(st.text, s, st.key, "an AI SDK client", self)
        if send:
            self._open_text(st, out)
            out.append({"type": f"{st.kind}-delta", "id": st.wid, "delta": send})

    def _update_props(self, st: Tracked, msg: Message) -> bool:
        try:
            st.props = props_after(st.props, msg)
        except DeltaError as exc:
            self._bad_delta(msg, exc)
            return False
        return True

    def _data(self, st: Tracked, out: list[Any]) -> None:
        out.append(
            {"type": f"data-{st.type}", "id": st.wid, "data": merge.copy_json(st.props or {})}
        )

    # -- tools --------------------------------------------------------------------------------
    def _tool_chunk(self, st: Tracked, msg: Message, out: list[Any]) -> None:
        call = st.tool
        if call.started:
            for k, v in id_fields(msg).items():
                cur = call.call_id if k == "id" else call.name
                if cur != v:
                    self._warn(
                        WarningCode.REWRITE,
                        f"tool call {k} {v!r} set after the call "
                        f"was sent as {cur!r}; an AI SDK client keeps {cur!r}",
                        msg=msg,
                    )
        rewrite = call.take(msg)
        if rewrite is not None:
            self._warn(
                WarningCode.REWRITE,
                "tool call arguments rewritten after they were "
                "sent; an AI SDK client gets the new input at the call's end",
                msg=msg,
            )
            call.force(rewrite)
        if not call.started:
            if call.name is not None:
                self._tool_open(st, out)
            return
        frag = call.unsent()
        if frag:
            out.append(
                {"type": "tool-input-delta", "toolCallId": call.call_id, "inputTextDelta": frag}
            )

    def _tool_open(self, st: Tracked, out: list[Any]) -> None:
        call = st.tool
        if call.name is None:
            call.name = "tool"
            self._warn(
                WarningCode.LATE_TOOL_NAME,
                "tool call ended without a name; sent as 'tool'",
                key=st.key,
            )
        if call.call_id is None:
            call.call_id = f"call_{st.wid}"
        elif call.call_id in self._calls:  # the client would merge two calls into one part
            self._warn(
                WarningCode.DUPLICATE_TOOL_ID,
                f"tool call id {call.call_id!r} used before; sent as '{call.call_id}~{st.wid}'",
                key=st.key,
            )
            call.call_id = f"{call.call_id}~{st.wid}"
        st.opened = True
        self._calls[call.call_id] = st
        args = call.start()
        out.append(
            {
                "type": "tool-input-start",
                "toolCallId": call.call_id,
                "toolName": call.name,
                "providerExecuted": True,
                "dynamic": True,
            }
        )
        if args:
            out.append(
                {"type": "tool-input-delta", "toolCallId": call.call_id, "inputTextDelta": args}
            )

    def _tool_result(self, st: Tracked, out: list[Any]) -> bool:
        p = st.props or {}
        cid = p.get("call_id")
        target = self._calls.get(cid) if isinstance(cid, str) else None
        if target is None:
            if not isinstance(cid, str) or cid not in self._decided:
                return False
            if not self._decided.pop(cid):  # the user refused it: whatever the agent says
                out.append({"type": "tool-output-denied", "toolCallId": cid})
                return True
        elif not target.done:
            self._end_msg(target, out)
        output = p["content"] if "content" in p else merge.copy_json(p)
        if p.get("is_error") is True:  # a failed tool: the part's error state, with its text
            text = output if isinstance(output, str) else dumps(output)
            out.append(
                {
                    "type": "tool-output-error",
                    "toolCallId": cid,
                    "errorText": text,
                    "providerExecuted": True,
                    "dynamic": True,
                }
            )
            return True
        out.append(
            {
                "type": "tool-output-available",
                "toolCallId": cid,
                "output": output,
                "providerExecuted": True,
                "dynamic": True,
            }
        )
        return True

    def _end_msg(self, st: Tracked, out: list[Any]) -> None:
        if not self._ending(st):
            return
        if st.kind == _TOOL:
            if not st.opened:
                self._tool_open(st, out)
            raw = st.tool.args.value()
            base = {
                "toolCallId": st.tool.call_id,
                "toolName": st.tool.name,
                "providerExecuted": True,
                "dynamic": True,
            }
            try:
                out.append(
                    {
                        "type": "tool-input-available",
                        **base,
                        "input": json.loads(raw) if raw.strip() else {},
                    }
                )
            except ValueError:
                out.append(
                    {
                        "type": "tool-input-error",
                        **base,
                        "input": raw,
                        "errorText": "the tool call's arguments are not JSON",
                    }
                )
        elif st.kind in (_TEXT, _REASONING):
            if st.opened:
                out.append({"type": f"{st.kind}-end", "id": st.wid})
            st.text = Parts()


def frame_sse(item: Any) -> str:
    """One chunk (or ``DONE``) as the SSE text the AI SDK reads.

    Args:
        item: the chunk, or ``DONE``.
    """
    return "data: " + (DONE if item == DONE else dumps(item)) + "\n\n"


def encode_messages(messages: Iterable[Message], **options: Any) -> list[Any]:
    """Encode a whole Message stream.

    Args:
        messages: the stream's Messages, in order.
        **options: ``AISDKEncoder``'s options.
    """
    return list(run_encoder(AISDKEncoder(**options), messages))
