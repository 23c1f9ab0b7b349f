"""OpenAI Chat Completions streaming, both ways. Pure: dicts and strings in, Messages out, and back.

Decoding (``OpenAIDecoder``): ``chat.completion.chunk`` dicts become Messages the way an LLM
provider writes them. ``delta.reasoning_content`` (or ``delta.reasoning``) is a ``thinking``
message, ``delta.content`` a ``text`` message, ``delta.refusal`` a ``refusal`` message and each
tool call a ``tool_call`` message with props ``{id, name, arguments}``. A new message starts
whenever the kind switches; tool-call fragments are merged by id when the server sends one (some
reuse index 0 for every call) and by index otherwise. Every message has message_start and
message_end (with its chunk count); finish_reason and usage go into stream_end's data.

Encoding (``OpenAIEncoder``): Messages become ``data: {chat.completion.chunk}`` events and a final
``data: [DONE]``. One ``id`` for the whole completion, ``role`` on the first chunk only, text as
``content``, thinking and loading as ``reasoning_content``, tool calls as indexed fragments,
exactly one chunk with ``finish_reason``, the usage chunk when asked for, and an error object
(``data: {"error": {...}}``) followed only by ``[DONE]`` when the stream fails.

An OpenAI client can only append, and it has one ``content`` string. So:

- Messages that would interleave on one field (two threads writing text at once) are sent one
  after the other, in order of first appearance: the first streams live, the others are held and
  sent whole when it ends. The client's ``content`` is then exactly the transcript's text.
- A replace/merge/set that changes a message's text: if the new text extends what the client
  already has of that message, the client receives the extension; otherwise it receives a line
  break and the new text in full (the client's text ends with the message's current text; what
  it already showed cannot be taken back). A message still held is sent in its final state, so
  rewrites there are exact. Changes to other props are not shown. A tool call's arguments can
  only grow; a rewrite that does not extend them is dropped with a warning.
- image, audio and video become markdown links in ``content``; action, custom types and events
  are silent.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from agent_stream.adapters._common import (
    APPEND,
    VISIBLE_FIELD,
    Parts,
    id_fields,
    opt,
    report_warnings,
    run_encoder,
    set_shown,
    sid,
    visible_change,
)
from agent_stream.errors import StreamWarning, WireError
from agent_stream.ids import IdGenerator
from agent_stream.message import (
    AUDIO,
    BLOCK_END,
    ERROR,
    EVENT,
    IMAGE,
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
    MessageEndData,
    MessageStartData,
    StreamEndData,
    StreamStartData,
    Usage,
    lifecycle,
)

__all__ = [
    "FINISH_REASONS",
    "OpenAIDecoder",
    "OpenAIEncoder",
    "OpenAISSEDecoder",
    "cli_decoder",
    "cli_encode",
    "decode_chunks",
    "encode_messages",
]

DONE = "[DONE]"
FINISH_REASONS = frozenset(("stop", "length", "tool_calls", "content_filter", "function_call"))

# ---------------------------------------------------------------------------------------------
# Decoding: chunk dicts -> Messages
# ---------------------------------------------------------------------------------------------

_REASONING, _CONTENT, _REFUSAL = "reasoning", "content", "refusal"
_TYPE_OF_KIND = {_REASONING: THINKING, _CONTENT: TEXT, _REFUSAL: REFUSAL}


class _DMsg:
    """A message the decoder has open."""

    __slots__ = ("call_id", "chunks", "closed", "index", "message_id", "name", "parts", "type")

    def __init__(self, message_id: str, type_: str) -> None:
        self.message_id = message_id
        self.type = type_
        self.chunks = 0
        self.parts: list[str] = []
        self.closed = False
        self.call_id: str | None = None
        self.name: str | None = None
        self.index: int | None = None


def _opt_str(d: Mapping[str, Any], key: str, where: str) -> str | None:
    v = d.get(key)
    if v is None or isinstance(v, str):
        return v
    raise WireError(f"{where}.{key} must be a string, got {type(v).__name__}")


class OpenAIDecoder:
    """``chat.completion.chunk`` dicts in, Messages out (pure; ids from an IdGenerator).

    ``feed(chunk)`` raises WireError for a chunk that is not a chat.completion.chunk and keeps its
    state. ``finish(done=...)`` ends the stream: when neither a finish_reason nor ``[DONE]``
    (``done=True``) was seen the stream was cut, so open messages end with status ``error``, an
    error Message says so and stream_end has status ``error``. ``fail(text, code)`` does the same
    for an error the caller saw (HTTP error, timeout). With ``stream_events=False`` no
    stream_start/stream_end are produced (a writer makes its own); finish_reason and usage are
    then read from the attributes.
    """

    def __init__(self, *, ids: IdGenerator | None = None, stream_events: bool = True) -> None:
        self.ids = ids or IdGenerator()
        self.stream_events = stream_events
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.model: str | None = None
        self.completion_id: str | None = None
        self.error: str | None = None
        self.finished = False
        self._started = False
        self._cur: _DMsg | None = None
        self._tools_by_id: dict[str, _DMsg] = {}
        self._tools_by_index: dict[int, _DMsg] = {}
        self._open_tools: list[_DMsg] = []
        self._warnings: list[StreamWarning] = []
        self._other_choices_warned = False

    # -- public -------------------------------------------------------------------------------
    def feed(self, chunk: Any) -> list[Message]:
        """Decode one chunk dict. WireError if it is malformed (nothing is emitted for it)."""
        if self.finished or self.error is not None:
            self._warnings.append(StreamWarning("after_end", "chunk after the stream ended; "
                                                "ignored"))
            return []
        if not isinstance(chunk, Mapping):
            raise WireError(f"a chunk must be a JSON object, got {type(chunk).__name__}")
        err = chunk.get("error")
        if err:
            text, code = _error_text(err)
            return self.fail(text, code)
        choices = chunk.get("choices")
        if choices is None:
            choices = []
        elif not isinstance(choices, list):
            raise WireError(f"choices must be a list, got {type(choices).__name__}")
        usage = chunk.get("usage")
        if usage is not None and not isinstance(usage, Mapping):
            raise WireError(f"usage must be an object, got {type(usage).__name__}")
        plan = [self._check_choice(c) for c in choices]  # validate everything before emitting
        out: list[Message] = []
        if not self._started:
            self._started = True
            cid = chunk.get("id")
            self.completion_id = cid if isinstance(cid, str) else None
            model = chunk.get("model")
            self.model = model if isinstance(model, str) else None
            if self.stream_events:
                extra: dict[str, Any] = {"model": self.model} if self.model else {}
                data = StreamStartData(request_id=self.completion_id, **extra)
                out.append(self._event(lifecycle(STREAM_START, data)))
        if usage is not None:
            self.usage = dict(usage)
        for item in plan:
            if item is None:
                continue
            reasoning, content, refusal, tool_calls, finish = item
            if reasoning:
                self._text(_REASONING, reasoning, out)
            if content:
                self._text(_CONTENT, content, out)
            if refusal:
                self._text(_REFUSAL, refusal, out)
            for tc in tool_calls:
                self._tool(tc, out)
            if finish is not None:
                self.finish_reason = finish
                self._close_all("completed", out)
        return out

    def finish(self, *, done: bool = False) -> list[Message]:
        """End the stream (idempotent): close what is open and emit stream_end."""
        if self.finished:
            return []
        out: list[Message] = []
        if self.error is None and self.finish_reason is None and not done:
            out += self.fail("the model stream ended before it finished (no finish_reason "
                             "and no [DONE])", "incomplete")
            if self.finished:
                return out
        self._close_all("completed" if self.error is None else "error", out)
        self.finished = True
        if self.stream_events:
            out.append(self._event(self._end_event()))
        return out

    def fail(self, text: str, code: str | None = None) -> list[Message]:
        """An error ends the stream: open messages end with status error, an error Message
        the user can read follows, and ``finish`` then reports status error. Nothing streamed
        before is taken back."""
        if self.finished:
            return []
        out: list[Message] = []
        if not self._started:
            self._started = True
            if self.stream_events:
                out.append(self._event(lifecycle(STREAM_START, StreamStartData())))
        self._close_all("error", out)
        if self.error is None:
            self.error = text
            props: dict[str, Any] = {"message": text}
            if code:
                props["code"] = code
            out.append(Message(type=ERROR, props=props, chunk_id=self.ids.chunk(),
                               message_id=self.ids.message()))
        return out

    def drain_warnings(self) -> list[StreamWarning]:
        w, self._warnings = self._warnings, []
        return w

    def end_data(self) -> StreamEndData:
        """stream_end's data as things stand (status, error, usage, finish_reason)."""
        usage = Usage(**self.usage) if self.usage else None
        return StreamEndData(request_id=self.completion_id,
                             status="error" if self.error is not None else "completed",
                             error=self.error, usage=usage, finish_reason=self.finish_reason)

    # -- internals ----------------------------------------------------------------------------
    def _end_event(self) -> Message:
        return lifecycle(STREAM_END, self.end_data())

    def _event(self, msg: Message) -> Message:
        msg.chunk_id = self.ids.chunk()
        return msg

    def _check_choice(self, choice: Any) -> tuple[Any, ...] | None:
        if not isinstance(choice, Mapping):
            raise WireError(f"a choice must be an object, got {type(choice).__name__}")
        index = choice.get("index", 0)
        if index != 0:
            if not isinstance(index, int):
                raise WireError(f"choices[].index must be an integer, got {index!r}")
            if not self._other_choices_warned:
                self._other_choices_warned = True
                self._warnings.append(StreamWarning(
                    "other_choice", f"choice {index} ignored: only choice 0 is decoded"))
            return None
        delta = choice.get("delta")
        if delta is None:
            delta = {}
        elif not isinstance(delta, Mapping):
            raise WireError(f"delta must be an object, got {type(delta).__name__}")
        reasoning = _opt_str(delta, "reasoning_content", "delta")
        if reasoning is None:
            r = delta.get("reasoning")
            reasoning = r if isinstance(r, str) else None
        content = _opt_str(delta, "content", "delta")
        refusal = _opt_str(delta, "refusal", "delta")
        tcs = delta.get("tool_calls")
        if tcs is None:
            tcs = []
        elif not isinstance(tcs, list):
            raise WireError(f"delta.tool_calls must be a list, got {type(tcs).__name__}")
        tool_calls = []
        for tc in tcs:
            if not isinstance(tc, Mapping):
                raise WireError(f"a tool call must be an object, got {type(tc).__name__}")
            idx = tc.get("index", 0)
            if not isinstance(idx, int) or isinstance(idx, bool):
                raise WireError(f"tool_calls[].index must be an integer, got {idx!r}")
            fn = tc.get("function")
            if fn is None:
                fn = {}
            elif not isinstance(fn, Mapping):
                raise WireError(f"tool_calls[].function must be an object, got "
                                f"{type(fn).__name__}")
            tool_calls.append((idx, _opt_str(tc, "id", "tool_calls[]"),
                               _opt_str(fn, "name", "tool_calls[].function"),
                               _opt_str(fn, "arguments", "tool_calls[].function")))
        finish = choice.get("finish_reason")
        if finish is not None and not isinstance(finish, str):
            raise WireError(f"finish_reason must be a string, got {type(finish).__name__}")
        return reasoning, content, refusal, tool_calls, finish

    def _open(self, type_: str, out: list[Message], tool_call: dict[str, Any] | None = None
              ) -> _DMsg:
        m = _DMsg(self.ids.message(), type_)
        out.append(self._event(lifecycle(
            MESSAGE_START, MessageStartData(message_id=m.message_id, type=type_,
                                            tool_call=tool_call),
            message_id=m.message_id)))
        return m

    def _close(self, m: _DMsg, status: str, out: list[Message]) -> None:
        if m.closed:
            return
        m.closed = True
        extra = {"content": "".join(m.parts)} if m.type != TOOL_CALL else None
        out.append(self._event(lifecycle(
            MESSAGE_END, MessageEndData(message_id=m.message_id, type=m.type,
                                        chunk_count=m.chunks, status=status, extra=extra),
            message_id=m.message_id)))

    def _close_all(self, status: str, out: list[Message]) -> None:
        if self._cur is not None:
            self._close(self._cur, status, out)
            self._cur = None
        for t in self._open_tools:
            self._close(t, status, out)
        self._open_tools = []

    def _text(self, kind: str, s: str, out: list[Message]) -> None:
        type_ = _TYPE_OF_KIND[kind]
        m = self._cur
        if m is None or m.type != type_:
            self._close_all("completed", out)
            m = self._cur = self._open(type_, out)
        m.chunks += 1
        m.parts.append(s)
        out.append(Message(type=type_, props={"content": s}, delta=True,
                           chunk_id=self.ids.chunk(), message_id=m.message_id))

    def _tool(self, tc: tuple[int, str | None, str | None, str | None],
              out: list[Message]) -> None:
        idx, call_id, name, args = tc
        t: _DMsg | None = None
        if call_id:
            t = self._tools_by_id.get(call_id)
        if t is None and not call_id:
            t = self._tools_by_index.get(idx)
        if t is not None and t.closed:
            self._warnings.append(StreamWarning(
                "late_fragment", f"tool call {t.call_id or idx} continued after it ended; "
                "its fragment starts a new tool_call message", message_id=t.message_id))
            t = None
        if t is None:
            if self._cur is not None:
                self._close(self._cur, "completed", out)
                self._cur = None
            prev = self._tools_by_index.get(idx)
            if prev is not None and not prev.closed:  # a server reusing the index: it is done
                self._close(prev, "completed", out)
                self._open_tools.remove(prev)
            t = self._open(TOOL_CALL, out, {"id": call_id, "name": name})
            t.call_id, t.name, t.index = call_id, name, idx
            if call_id:
                self._tools_by_id[call_id] = t
            self._tools_by_index[idx] = t
            self._open_tools.append(t)
            t.chunks += 1
            if args:
                t.parts.append(args)
            out.append(Message(type=TOOL_CALL, props={"id": call_id, "name": name,
                                                      "arguments": args or ""},
                               chunk_id=self.ids.chunk(), message_id=t.message_id))
            return
        self._tools_by_index[idx] = t
        if call_id and t.call_id is None:
            t.call_id = call_id
            self._tools_by_id[call_id] = t
            t.chunks += 1
            out.append(Message(type=TOOL_CALL, props={"id": call_id}, delta=True,
                               delta_path="id", delta_action="set",
                               chunk_id=self.ids.chunk(), message_id=t.message_id))
        if name and t.name is None:
            t.name = name
            t.chunks += 1
            out.append(Message(type=TOOL_CALL, props={"name": t.name}, delta=True,
                               delta_path="name", delta_action="set",
                               chunk_id=self.ids.chunk(), message_id=t.message_id))
        if args:
            t.chunks += 1
            t.parts.append(args)
            out.append(Message(type=TOOL_CALL, props={"arguments": args}, delta=True,
                               delta_path="arguments", delta_action="append",
                               chunk_id=self.ids.chunk(), message_id=t.message_id))


def _error_text(err: Any) -> tuple[str, str | None]:
    if isinstance(err, Mapping):
        msg = err.get("message")
        code = err.get("code") or err.get("type")
        return (msg if isinstance(msg, str) and msg else "the model server reported an error",
                str(code) if code is not None else None)
    return str(err), None


def decode_chunks(chunks: Iterable[Any], *, done: bool = True) -> list[Message]:
    """Decode a whole list of chunk dicts (stream_start ... stream_end)."""
    dec = OpenAIDecoder()
    out: list[Message] = []
    for c in chunks:
        out += dec.feed(c)
    out += dec.finish(done=done)
    return out


class OpenAISSEDecoder:
    """OpenAI SSE text, one line at a time, into Messages (``agent-stream decode --from openai``).

    ``data: {...}`` lines carry chunks, ``data: [DONE]`` ends the stream; blank lines, comments
    and ``event:``/``id:``/``retry:`` fields are skipped; a bare JSON object line is read as a
    chunk too. A data line that is not JSON, or not a chunk, raises WireError.
    """

    def __init__(self) -> None:
        self.decoder = OpenAIDecoder()
        self.done = False
        self._warnings: list[StreamWarning] = []

    def feed_line(self, line: str) -> list[Message]:
        s = line.strip()
        if not s or s.startswith(":"):
            return []
        if s.startswith("data:"):
            payload = s[5:].strip()
        elif s.startswith("{"):
            payload = s
        elif s.split(":", 1)[0] in ("event", "id", "retry"):
            return []
        else:
            raise WireError(f"not an SSE line: {s[:40]!r}")
        if payload == DONE:
            self.done = True
            return []
        if self.done:
            self._warnings.append(StreamWarning("after_done", "data after [DONE]; ignored"))
            return []
        try:
            chunk = json.loads(payload)
        except json.JSONDecodeError as exc:
            raise WireError(f"data is not JSON: {exc.msg} at column {exc.colno}") from None
        return self.decoder.feed(chunk)

    def finish(self) -> list[Message]:
        return self.decoder.finish(done=self.done)

    def drain_warnings(self) -> list[StreamWarning]:
        w, self._warnings = self._warnings, []
        return w + self.decoder.drain_warnings()


def cli_decoder(args: Any) -> OpenAISSEDecoder:
    """``agent-stream decode --from openai``."""
    return OpenAISSEDecoder()


# ---------------------------------------------------------------------------------------------
# Encoding: Messages -> chunks
# ---------------------------------------------------------------------------------------------

_C_CONTENT, _C_REASONING, _C_REFUSAL, _C_TOOL = "content", "reasoning_content", "refusal", "tool"
_FIELD_OF_TYPE = {
    TEXT: _C_CONTENT,
    THINKING: _C_REASONING,
    LOADING: _C_REASONING,
    REFUSAL: _C_REFUSAL,
    TOOL_CALL: _C_TOOL,
    IMAGE: _C_CONTENT,
    AUDIO: _C_CONTENT,
    VIDEO: _C_CONTENT,
}
_MEDIA = frozenset((IMAGE, AUDIO, VIDEO))


class _EMsg:
    """What the encoder keeps of one message."""

    __slots__ = ("args_sent", "block_id", "call_id", "done", "field", "index", "key", "live",
                 "name", "text", "thread_id", "type")

    def __init__(self, key: tuple[str | None, str], type_: str, field: str | None,
                 thread_id: str | None, block_id: str | None) -> None:
        self.key = key
        self.type = type_
        self.field = field
        self.thread_id = thread_id
        self.block_id = block_id
        self.text = Parts()
        self.live = False
        self.done = False
        self.index: int | None = None
        self.call_id: str | None = None
        self.name: str | None = None
        self.args_sent = 0


def _media_markdown(msg: Message) -> str:
    p = msg.props or {}
    url = p.get("url")
    if not isinstance(url, str) or not url:
        return ""
    if msg.type == IMAGE:
        alt = p.get("alt")
        return f"\n\n![{alt if isinstance(alt, str) else ''}]({url})\n\n"
    label = msg.type
    return f"\n\n[{label}]({url})\n\n"


def _created_from(ts: Any) -> int | None:
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or ts <= 0:
        return None
    if ts > 1e17:  # ns
        return int(ts // 1_000_000_000)
    if ts > 1e14:  # us
        return int(ts // 1_000_000)
    if ts > 1e11:  # ms
        return int(ts // 1000)
    return int(ts)


class OpenAIEncoder:
    """Messages in, OpenAI ``chat.completion.chunk`` SSE out (pure).

    ``feed(msg)`` and ``close()`` return SSE strings (``data: ...\\n\\n``), or with
    ``as_dicts=True`` the chunk dicts, error dicts and the string ``"[DONE]"``. message_start and
    message_end are not required. ``close()`` sends what is still held, the finish chunk, the
    usage chunk (``include_usage``) and ``[DONE]`` unless the stream already ended; with status
    ``error``/``cancelled`` it sends an error object instead of the finish chunk.

    ``completion_id`` defaults to ``chatcmpl-`` + stream_start's request_id; ``created`` to the
    stream_start (or first chunk) timestamp, else 0: the output depends only on the input.
    """

    def __init__(self, *, model: str = "agent-stream", completion_id: str | None = None,
                 created: int | None = None, include_usage: bool = False,
                 as_dicts: bool = False) -> None:
        self.model = model
        self.completion_id = completion_id
        self.created = created
        self.include_usage = include_usage
        self.as_dicts = as_dicts
        self.finished = False
        self._began = False
        self._role_sent = False
        self._msgs: dict[tuple[str | None, str], _EMsg] = {}
        self._open: dict[tuple[str | None, str], _EMsg] = {}  # not done yet
        self._queues: dict[str, deque[_EMsg]] = {
            _C_CONTENT: deque(), _C_REASONING: deque(), _C_REFUSAL: deque()}
        self._tools = 0
        self._last_content: str | None = None
        self._anon = 0
        self._prefix = ""
        self._warnings: list[StreamWarning] = []

    # -- public -------------------------------------------------------------------------------
    def feed(self, msg: Message) -> list[Any]:
        """Encode one Message; returns the SSE events (or dicts) to send now."""
        if self.finished:
            return []
        if not self._began:
            self._begin(msg)
        out: list[Any] = []
        t = msg.type
        if t == EVENT:
            name = msg.event
            if name == STREAM_END:
                data = msg.event_data
                status = data.get("status") or "completed"
                self._finish(out, status if isinstance(status, str) else "error",
                             data.get("error"), data.get("finish_reason"), data.get("usage"))
            elif name == MESSAGE_START:
                self._on_message_start(msg)
            elif name == MESSAGE_END:
                data = msg.event_data
                mid = sid(data, "message_id", msg.message_id)
                ended = self._msgs.get((sid(data, "thread_id", msg.thread_id), mid or ""))
                if ended is not None:
                    self._end_msg(ended, out)
            elif name == BLOCK_END:
                bid = sid(msg.event_data, "block_id", msg.block_id)
                self._end_where(out, lambda st: st.block_id == bid)
            elif name == THREAD_END:
                tid = sid(msg.event_data, "thread_id", msg.thread_id)
                self._end_where(out, lambda st: st.thread_id == tid)
            return out
        if t == ERROR:
            p = msg.props or {}
            m = p.get("message")
            code = p.get("code")
            self._fail(out, m if isinstance(m, str) and m else "error",
                       code if isinstance(code, str) else None)
            return out
        field = _FIELD_OF_TYPE.get(t)
        mid = msg.message_id
        if mid is None:
            if field is None:
                return out
            self._anon += 1
            st = self._new((msg.thread_id, f"#{self._anon}"), t, msg.thread_id, msg.block_id)
            self._chunk(st, msg, out)
            self._end_msg(st, out)
            return out
        key = (msg.thread_id, mid)
        found = self._msgs.get(key)
        if found is None:
            if field is None:
                return out
            st = self._new(key, t, msg.thread_id, msg.block_id)
        elif found.type != t:
            retyped = self._retype(found, msg, out)
            if retyped is None:
                return out
            st = retyped
        else:
            st = found
        if st.block_id is None:
            st.block_id = msg.block_id
        self._chunk(st, msg, out)
        return out

    def close(self, *, status: str = "completed", error: str | None = None) -> list[Any]:
        """End the completion unless it already ended (idempotent)."""
        if self.finished:
            return []
        if not self._began:
            self._begin(None)
        out: list[Any] = []
        self._finish(out, status, error, None, None)
        return out

    def drain_warnings(self) -> list[StreamWarning]:
        w, self._warnings = self._warnings, []
        return w

    # -- structure ----------------------------------------------------------------------------
    def _begin(self, msg: Message | None) -> None:
        self._began = True
        data = msg.event_data if msg is not None and msg.event == STREAM_START else {}
        if self.completion_id is None:
            rid = data.get("request_id")
            self.completion_id = f"chatcmpl-{rid}" if isinstance(rid, str) and rid else \
                "chatcmpl-agent-stream"
        if self.created is None:
            ts = data.get("timestamp")
            if ts is None and msg is not None and msg.metadata is not None:
                ts = msg.metadata.timestamp
            self.created = _created_from(ts) or 0
        head = {"id": self.completion_id, "object": "chat.completion.chunk",
                "created": self.created, "model": self.model}
        self._prefix = "data: " + json.dumps(head, ensure_ascii=False,
                                             separators=(",", ":"))[:-1] + \
            ',"choices":[{"index":0,"delta":'

    def _new(self, key: tuple[str | None, str], type_: str, thread_id: str | None,
             block_id: str | None) -> _EMsg:
        field = _FIELD_OF_TYPE.get(type_)
        st = _EMsg(key, type_, field, thread_id, block_id)
        self._msgs[key] = st
        self._open[key] = st
        q = self._queues.get(field) if field is not None else None
        if q is not None:
            q.append(st)
            st.live = len(q) == 1
        return st

    def _on_message_start(self, msg: Message) -> None:
        data = msg.event_data
        mid = sid(data, "message_id", msg.message_id)
        if not isinstance(mid, str):
            return
        key = (sid(data, "thread_id", msg.thread_id), mid)
        if key in self._msgs:
            return
        type_ = data.get("type")
        if isinstance(type_, str) and type_ in _FIELD_OF_TYPE:
            self._new(key, type_, key[0], msg.block_id)

    def _retype(self, st: _EMsg, msg: Message, out: list[Any]) -> _EMsg | None:
        """The message changed type: it ends under its old field and goes on under the new."""
        old_value = st.text.value() if st.field != _C_TOOL else ""
        if st.field == _FIELD_OF_TYPE.get(msg.type) and msg.type not in _MEDIA and \
                st.type not in _MEDIA:
            st.type = msg.type
            return st
        self._end_msg(st, out)
        del self._msgs[st.key]
        if _FIELD_OF_TYPE.get(msg.type) is None:
            return None
        new = self._new(st.key, msg.type, st.thread_id, st.block_id)
        if msg.props is None and old_value and new.field in self._queues:
            self._text_set(new, old_value, out)
        return new

    def _end_where(self, out: list[Any], pred: Any) -> None:
        for st in [s for s in self._open.values() if pred(s)]:
            self._end_msg(st, out)

    def _end_msg(self, st: _EMsg, out: list[Any]) -> None:
        if st.done:
            return
        st.done = True
        if self._open.get(st.key) is st:
            del self._open[st.key]
        if st.field == _C_TOOL:
            if st.index is None:
                self._tool_start(st, out)
            return
        q = self._queues[st.field]  # type: ignore[index]
        if not q or q[0] is not st:
            return  # held: sent whole when it reaches the head
        q.popleft()
        st.text = Parts()  # sent: nothing more to compare against
        while q:
            head = q[0]
            head.live = True
            s = head.text.value()
            if s:
                self._emit(out, {head.field: s})  # type: ignore[dict-item]
            if not head.done:
                break
            q.popleft()
            head.text = Parts()

    # -- content ------------------------------------------------------------------------------
    def _chunk(self, st: _EMsg, msg: Message, out: list[Any]) -> None:
        field = st.field
        if st.done:
            if st.type not in _MEDIA:
                self._warnings.append(StreamWarning(
                    "after_end", "chunk for a message that has ended; not sent",
                    chunk_id=msg.chunk_id, message_id=msg.message_id, thread_id=msg.thread_id))
            return
        if st.type in _MEDIA:
            md = _media_markdown(msg)
            self._last_content = _C_CONTENT
            if md:
                self._text_set(st, md, out)
                self._end_msg(st, out)
            return
        if field == _C_TOOL:
            self._tool_chunk(st, msg, out)
            return
        ch = visible_change(msg, VISIBLE_FIELD[st.type])
        if field != _C_REASONING:
            self._last_content = field
        if ch is None:
            return
        kind, s = ch
        if kind == APPEND:
            if not s:
                return
            st.text.append(s)
            if st.live:
                self._emit(out, {field: s})  # type: ignore[dict-item]
        else:
            self._text_set(st, s, out)

    def _text_set(self, st: _EMsg, s: str, out: list[Any]) -> None:
        if not st.live:
            st.text.set(s)
            return
        send = set_shown(st.text, s, st.key, "an OpenAI client", self._warnings)
        if send is None:
            return
        self._emit(out, {st.field: send})  # type: ignore[dict-item]

    def _tool_chunk(self, st: _EMsg, msg: Message, out: list[Any]) -> None:
        self._last_content = _C_TOOL
        ids = id_fields(msg)
        if "id" in ids and st.call_id is None:
            st.call_id = ids["id"]
        if "name" in ids and (st.name is None or st.index is None):
            st.name = ids["name"]
        ch = visible_change(msg, "arguments")
        if ch is not None:
            kind, s = ch
            if kind == APPEND:
                st.text.append(s)
            else:
                cur = st.text.value()
                if s.startswith(cur) or st.index is None or st.args_sent == 0:
                    st.text.set(s)
                else:
                    self._warnings.append(StreamWarning(
                        "rewrite", "tool call arguments rewritten after they were sent; an "
                        "OpenAI client keeps the earlier ones", message_id=st.key[1],
                        thread_id=st.key[0]))
        if st.index is None:
            if st.text.size or (st.name is not None and st.call_id is not None):
                self._tool_start(st, out)
            return
        if st.text.size > st.args_sent:
            frag = st.text.value()[st.args_sent:]
            st.args_sent = st.text.size
            self._emit(out, {"tool_calls": [{"index": st.index,
                                             "function": {"arguments": frag}}]})

    def _tool_start(self, st: _EMsg, out: list[Any]) -> None:
        st.index = self._tools
        self._tools += 1
        if st.call_id is None:
            st.call_id = f"call_{st.key[1]}" if st.key[0] is None else \
                f"call_{st.key[0]}_{st.key[1]}"
        args = st.text.value()
        st.args_sent = len(args)
        self._emit(out, {"tool_calls": [{"index": st.index, "id": st.call_id,
                                         "type": "function",
                                         "function": {"name": st.name or "", "arguments": args}}]})

    # -- the end ------------------------------------------------------------------------------
    def _flush_all(self, out: list[Any]) -> None:
        for st in list(self._open.values()):
            if st.field == _C_TOOL:
                self._end_msg(st, out)
        for q in self._queues.values():
            while q:
                head = q[0]
                if not head.live:
                    s = head.text.value()
                    if s:
                        self._emit(out, {head.field: s})  # type: ignore[dict-item]
                head.live = True
                head.done = True
                q.popleft()

    def _fail(self, out: list[Any], text: str, code: str | None) -> None:
        self._flush_all(out)
        err = {"error": {"message": text, "code": code}}
        out.append(err if self.as_dicts else
                   "data: " + json.dumps(err, ensure_ascii=False, separators=(",", ":")) + "\n\n")
        out.append(DONE if self.as_dicts else "data: [DONE]\n\n")
        self.finished = True

    def _finish(self, out: list[Any], status: str, error: Any, finish_reason: Any,
                usage: Any) -> None:
        if status in ("error", "cancelled"):
            text = error if isinstance(error, str) and error else (
                "the stream was cancelled" if status == "cancelled" else
                "the stream ended with an error")
            self._fail(out, text, status)
            return
        self._flush_all(out)
        if not (isinstance(finish_reason, str) and finish_reason in FINISH_REASONS):
            finish_reason = "tool_calls" if self._last_content == _C_TOOL else "stop"
        self._emit(out, {}, finish_reason)
        if self.include_usage:
            u = dict(usage) if isinstance(usage, Mapping) else {}
            for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
                if not isinstance(u.get(k), int):
                    u[k] = 0
            chunk: dict[str, Any] = {"id": self.completion_id, "object": "chat.completion.chunk",
                     "created": self.created, "model": self.model, "choices": [], "usage": u}
            out.append(chunk if self.as_dicts else
                       "data: " + json.dumps(chunk, ensure_ascii=False,
                                             separators=(",", ":")) + "\n\n")
        out.append(DONE if self.as_dicts else "data: [DONE]\n\n")
        self.finished = True

    def _emit(self, out: list[Any], delta: dict[str, Any], finish: str | None = None) -> None:
        if not self._role_sent:
            self._role_sent = True
            delta = {"role": "assistant", **delta}
        if self.as_dicts:
            out.append({"id": self.completion_id, "object": "chat.completion.chunk",
                        "created": self.created, "model": self.model,
                        "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": finish}]})
            return
        tail = ',"logprobs":null,"finish_reason":null}]}\n\n' if finish is None else \
            ',"logprobs":null,"finish_reason":' + json.dumps(finish) + "}]}\n\n"
        out.append(self._prefix + json.dumps(delta, ensure_ascii=False,
                                             separators=(",", ":")) + tail)


def encode_messages(messages: Iterable[Message], **options: Any) -> list[Any]:
    """Encode a whole Message stream (``OpenAIEncoder`` options)."""
    return list(run_encoder(OpenAIEncoder(**options), messages))


def cli_encode(messages: Iterable[Message], args: Any) -> Iterator[str]:
    """``agent-stream convert --to openai [--include-usage] [--model NAME]``."""
    enc = OpenAIEncoder(model=opt(args, "model") or "agent-stream",
                        include_usage=bool(opt(args, "include_usage", False)))
    yield from run_encoder(enc, messages)
    report_warnings(enc.drain_warnings())
