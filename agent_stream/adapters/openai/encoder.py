"""Messages in, OpenAI ``chat.completion.chunk``s out: ``OpenAIEncoder``. Pure.

One ``id`` for the whole completion, ``role`` on the first chunk only, text as ``content``,
thinking and loading as ``reasoning_content``, exactly one chunk with ``finish_reason``, the
usage chunk when asked for and known, and an error object (``{"error": {...}}``) followed only
by ``[DONE]`` when the stream fails, or ends without stream_end (code ``incomplete``). An
``error`` Message fails the stream, except inside a sub-agent (a block of type ``agent``, or a
block nested in one, still open): that fails only the sub-agent, which its caller may recover
from, so it is a line ``✗ name → message`` in ``reasoning_content`` (name: the block's
agent_name) and the stream goes on to its own ending. The items
are the objects of :mod:`.chunks`; ``frame_sse`` makes each the ``data: ...`` event a client
reads.

Tool calls, by ``tool_calls``: ``"agent"`` (the default) -- the agent's own calls already ran,
so they are progress, not requests: each becomes a line ``⚙ name(arguments)`` in
``reasoning_content`` when its message ends, each ``tool_result`` a line ``✓ name → content``
(``✗`` for a failed one),
never ``tool_calls``, and the finish_reason is never ``tool_calls``. ``"client"`` -- calls for
the client to make: indexed ``tool_calls`` fragments, the first (index, id, type, name) only once
the name is known (a call that ends nameless is named ``tool``, with a warning), and
finish_reason ``tool_calls`` when a call came last. An id or name set after the first fragment
cannot be sent: it is warned about.

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
- Within a thread the client gets things in the order the stream produced them: before a
  message goes on, the earlier messages of its thread that came whole (one chunk, no
  message_start) end, and so do the agent's tool calls and results (their lines are written at
  their end); an ended tool line does not wait behind other threads' unfinished ones. So a tool
  call and its result sent before the answer show before it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from agent_stream.adapters._subagents import SubAgents
from agent_stream.adapters._tracking import (
    Key,
    Parts,
    Tracked,
    TrackingEncoder,
    keeps_props,
    props_after,
)
from agent_stream.adapters._tracking import set_shown as _set_shown
from agent_stream.adapters.framing import dumps, run_encoder
from agent_stream.adapters.openai.chunks import (
    DONE,
    FINISH_REASONS,
    Chunk,
    ErrorObject,
    Head,
    OpenAIItem,
    UsageChunk,
    created_from,
    known_usage,
)
from agent_stream.errors import DeltaError
from agent_stream.events import EventView
from agent_stream.merge import APPEND, visible_change
from agent_stream.message import (
    AUDIO,
    ERROR,
    IMAGE,
    LOADING,
    MESSAGE_START,
    REFUSAL,
    STREAM_END,
    STREAM_START,
    TEXT,
    THINKING,
    TOOL_CALL,
    VIDEO,
    Message,
)

__all__ = ["OpenAIEncoder", "encode_messages"]

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
# The one string of each type that the client is shown.
_SHOWN = {TEXT: "content", THINKING: "content", REFUSAL: "content", LOADING: "message"}
_MEDIA = frozenset((IMAGE, AUDIO, VIDEO))
_CLIENT = "an OpenAI client"
TOOL_RESULT = "tool_result"  # props: call_id, name, content
TOOL_POLICIES = ("agent", "client")
# With tool_calls="agent": the agent's tool calls and results are reasoning progress lines.
_AGENT_FIELDS = {**_FIELD_OF_TYPE, TOOL_CALL: _C_REASONING, TOOL_RESULT: _C_REASONING}
INCOMPLETE_TEXT = "the stream is incomplete: it ended before stream_end"


class _EMsg(Tracked):
    """What the encoder keeps of one message: its field, its queue place, its tool call's index;
    a tool result's props as ``data``."""

    __slots__ = ("data", "field", "index", "live", "progress")

    def __init__(
        self, key: Key, type_: str, block_id: str | None, field: str | None, progress: bool
    ) -> None:
        super().__init__(key, type_, block_id)
        self.field = field
        self.progress = progress  # a tool call or result shown as a line when it ends
        self.live = False
        self.index: int | None = None  # the tool call's index, once started
        self.data: dict[str, Any] = {}


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


class OpenAIEncoder(TrackingEncoder[_EMsg, OpenAIItem]):
    """Messages in, OpenAI wire items out (pure): chunks, the usage chunk, an error, ``DONE``.

    message_start and message_end are not required. ``close()`` sends what is still held, the
    finish chunk, the usage chunk (``include_usage``) and ``DONE`` unless the stream already
    ended; with any status but ``completed`` (``error``, ``cancelled``, ``lost``...) it sends an
    error object instead of the finish chunk. ``frame_sse`` turns each item into the SSE text an
    OpenAI client reads.

    The output depends only on the input.

    Args:
        model: the chunks' ``model``.
        completion_id: the chunks' ``id`` (None: ``chatcmpl-`` + stream_start's request_id).
        created: the chunks' ``created``, Unix seconds (None: the stream_start's, or first
            chunk's, timestamp, else 0).
        include_usage: send the usage chunk before ``DONE``.
        tool_calls: ``agent`` (the agent's own calls are reasoning lines) or ``client``
            (calls for the client to make, as ``tool_calls``); see the module doc.

    Raises:
        ValueError: an unknown ``tool_calls``.
    """

    INCOMPLETE_WARNING = (
        "the stream ended without stream_end; an OpenAI client gets an error "
        "object (code incomplete), not a finish_reason"
    )
    SETTLES = True

    def __init__(
        self,
        *,
        model: str = "agent-stream",
        completion_id: str | None = None,
        created: int | None = None,
        include_usage: bool = False,
        tool_calls: str = "agent",
    ) -> None:
        super().__init__()
        if tool_calls not in TOOL_POLICIES:
            raise ValueError(
                f"tool_calls must be one of {', '.join(TOOL_POLICIES)}, got {tool_calls!r}"
            )
        self.tool_calls = tool_calls
        self._fields = _AGENT_FIELDS if tool_calls == "agent" else _FIELD_OF_TYPE
        self.model = model
        self.completion_id = completion_id
        self.created = created
        self.include_usage = include_usage
        self._head: Head | None = None
        self._role_sent = False
        self._queues: dict[str, deque[_EMsg]] = {
            _C_CONTENT: deque(),
            _C_REASONING: deque(),
            _C_REFUSAL: deque(),
        }
        self._tools = 0
        self._last_content: str | None = None
        self._reasoning_last = ""  # the last character sent in reasoning_content
        self._agents = SubAgents()

    def _tracks(self, type_: str) -> bool:
        return type_ in self._fields

    def _waits(self, st: _EMsg) -> bool:
        return st.progress  # its line is written at its end

    def _error_msg(self, msg: Message, out: list[OpenAIItem]) -> None:
        p = msg.props or {}
        m, code = p.get("message"), p.get("code")
        agent = self._agents.agent_of(msg.block_id)
        if agent is None:
            self._fail(
                out,
                m if isinstance(m, str) and m else "error",
                code if isinstance(code, str) else None,
            )
            return
        # A sub-agent's error fails that sub-agent, not the reply (the caller may go on): a
        # progress line ``✗ name → message`` in reasoning_content, as a failed tool's result.
        st = self._new(self._table.anon_key(msg.thread_id), ERROR, msg.block_id)
        st.data = {"name": self._agents.name(agent), "message": m}
        self._settle(st, out)
        self._end_msg(st, out)

    def _incomplete(self, out: list[OpenAIItem], error: str | None) -> None:
        self._fail(out, error or INCOMPLETE_TEXT, "incomplete")

    def _end_stream(self, out: list[OpenAIItem], status: str, error: str | None) -> None:
        self._finish(out, status, error, None, None)

    # -- structure ----------------------------------------------------------------------------
    def _start(self, msg: Message | None, out: list[OpenAIItem]) -> None:
        ev = EventView(msg) if msg is not None and msg.event == STREAM_START else None
        if self.completion_id is None:
            rid = ev.request_id if ev is not None else None
            self.completion_id = f"chatcmpl-{rid}" if rid else "chatcmpl-agent-stream"
        if self.created is None:
            ts: Any = ev.timestamp if ev is not None else None
            if ts is None and msg is not None and msg.metadata is not None:
                ts = msg.metadata.timestamp
            self.created = created_from(ts) or 0
        self._head = Head(self.completion_id, self.created, self.model)

    def _event(self, ev: EventView, out: list[OpenAIItem]) -> None:
        self._agents.see(ev)
        name = ev.name
        if name == STREAM_END:
            self._finish(out, ev.end_status, ev.error, ev.finish_reason, ev.usage)
        elif name == MESSAGE_START:
            new = self._table.started_by(ev)
            if new is not None and new[1] in self._fields:
                self._new(new[0], new[1], ev.msg.block_id)
        else:
            for st in self._table.ended_by(ev):
                self._end_msg(st, out)

    def _new(self, key: Key, type_: str, block_id: str | None) -> _EMsg:
        if type_ == ERROR:  # a sub-agent's error: a progress line whatever the tool policy
            field: str | None = _C_REASONING
            progress = True
        else:
            field = self._fields.get(type_)
            progress = self.tool_calls == "agent" and type_ in (TOOL_CALL, TOOL_RESULT)
        st = self._table.add(_EMsg(key, type_, block_id, field, progress))
        q = self._queues.get(st.field) if st.field is not None else None
        if q is not None:
            q.append(st)
            st.live = len(q) == 1
        return st

    def _retype(self, st: _EMsg, msg: Message, out: list[OpenAIItem]) -> _EMsg | None:
        """The message changed type: it ends under its old field and goes on under the new."""
        old_value = st.text.value() if st.field != _C_TOOL and not st.progress else ""
        plain = (st.type, msg.type)
        if (
            st.field == self._fields.get(msg.type)
            and not _MEDIA.intersection(plain)
            and (self.tool_calls == "client" or not {TOOL_CALL, TOOL_RESULT} & set(plain))
        ):
            st.type = msg.type
            return st
        self._end_msg(st, out)
        self._table.forget(st)
        if self._fields.get(msg.type) is None:
            return None
        new = self._new(st.key, msg.type, st.block_id)
        if msg.props is None and old_value and new.field in self._queues:
            self._text_set(new, old_value, out)
        return new

    def _after_end(self, msg: Message) -> None:
        if msg.type not in _MEDIA:  # a media message ends with its one chunk: nothing to say
            super()._after_end(msg)

    def _end_msg(self, st: _EMsg, out: list[OpenAIItem]) -> None:
        if not self._ending(st):
            return
        if st.field == _C_TOOL:
            if st.index is None:
                st.tool.ensure_name(self, st.key)
                self._tool_start(st, out)
            return
        q = self._queues[st.field]  # type: ignore[index]
        if st.progress:
            self._text_set(st, self._progress_line(st), out)
            if q and q[0] is not st and self._may_pass(q, st):
                q.remove(st)  # its line goes now, before the later messages of its thread
                self._send(st, st.text.value(), out)
                st.text = Parts()
                return
        if not q or q[0] is not st:
            return  # held: sent whole when it reaches the head
        q.popleft()
        st.text = Parts()  # sent: nothing more to compare against
        while q:
            head = q[0]
            head.live = True
            s = head.text.value()
            if s:
                self._send(head, s, out)
            if not head.done:
                break
            q.popleft()
            head.text = Parts()

    @staticmethod
    def _may_pass(q: deque[_EMsg], st: _EMsg) -> bool:
        """Whether the ended tool line ``st`` may go before the messages ahead of it: only tool
        lines of other threads still running are, and they have shown nothing yet."""
        for h in q:
            if h is st:
                return True
            if not h.progress or h.done or h.thread_id == st.thread_id:
                return False
        return False

    # -- content ------------------------------------------------------------------------------
    def _chunk(self, st: _EMsg, msg: Message, out: list[OpenAIItem]) -> None:
        field = st.field
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
        if st.progress:
            self._progress_chunk(st, msg)
            return
        ch = visible_change(msg, _SHOWN[st.type])
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

    def _text_set(self, st: _EMsg, s: str, out: list[OpenAIItem]) -> None:
        if not st.live:
            st.text.set(s)
            return
        send = _set_shown(st.text, s, st.key, _CLIENT, self)
        if send is None:
            return
        self._send(st, send, out)

    def _send(self, st: _EMsg, s: str, out: list[OpenAIItem]) -> None:
        """Send text of ``st`` on its field; a progress line starts on a line of its own."""
        if st.progress and self._reasoning_last not in ("", "\n"):
            s = "\n" + s
        self._emit(out, {st.field: s})  # type: ignore[dict-item]

    # -- the agent's tools as progress ---------------------------------------------------------
    def _progress_chunk(self, st: _EMsg, msg: Message) -> None:
        if st.type == TOOL_CALL:
            st.tool.take(msg)  # nothing is sent before the end: any rewrite is exact
            return
        if keeps_props(msg):
            return
        try:
            st.data = props_after(st.data, msg)
        except DeltaError as exc:
            self._bad_delta(msg, exc, "tool result delta not applied")

    def _progress_line(self, st: _EMsg) -> str:
        """``⚙ name(arguments)`` for a tool call, ``✓ name → content`` for its result (``✗``
        when it failed), ``✗ name → message`` for a sub-agent's error."""
        if st.type == TOOL_CALL:
            st.tool.ensure_name(self, st.key)
            return f"⚙ {st.tool.name}({st.tool.args.value()})\n"
        name = st.data.get("name")
        if st.type == ERROR:
            m = st.data.get("message")
            return f"✗ {name} → {m if isinstance(m, str) and m else 'the sub-agent failed'}\n"
        content = st.data.get("content")
        shown = content if isinstance(content, str) else "" if content is None else dumps(content)
        mark = "✗" if st.data.get("is_error") is True else "✓"  # a failed result says so
        return f"{mark} {name if isinstance(name, str) and name else 'tool'} → {shown}\n"

    def _tool_chunk(self, st: _EMsg, msg: Message, out: list[OpenAIItem]) -> None:
        self._last_content = _C_TOOL
        tc = st.tool
        tc.take_append_only(msg, self, st.key, _CLIENT)
        if st.index is None:
            if tc.ready:  # never a nameless first fragment: hold until the name arrives
                self._tool_start(st, out)
            return
        frag = tc.unsent()
        if frag:
            self._emit(out, {"tool_calls": [{"index": st.index, "function": {"arguments": frag}}]})

    def _tool_start(self, st: _EMsg, out: list[OpenAIItem]) -> None:
        st.index = self._tools
        self._tools += 1
        tc = st.tool
        if tc.call_id is None:
            tc.call_id = (
                f"call_{st.key[1]}" if st.key[0] is None else f"call_{st.key[0]}_{st.key[1]}"
            )
        args = tc.start()
        self._emit(
            out,
            {
                "tool_calls": [
                    {
                        "index": st.index,
                        "id": tc.call_id,
                        "type": "function",
                        "function": {"name": tc.name or "", "arguments": args},
                    }
                ]
            },
        )

    # -- the end ------------------------------------------------------------------------------
    def _flush_all(self, out: list[OpenAIItem]) -> None:
        for st in self._table.open_where(lambda s: s.field == _C_TOOL):
            self._end_msg(st, out)
        for q in self._queues.values():
            while q:
                head = q[0]
                if head.progress and not head.done:
                    line = self._progress_line(head)
                    if head.live:
                        self._text_set(head, line, out)
                    else:
                        head.text.set(line)
                if not head.live:
                    s = head.text.value()
                    if s:
                        self._send(head, s, out)
                head.live = True
                head.done = True
                q.popleft()

    def _fail(self, out: list[OpenAIItem], text: str, code: str | None) -> None:
        self._flush_all(out)
        out.append(ErrorObject(text, code))
        out.append(DONE)
        self.finished = True

    def _finish(
        self,
        out: list[OpenAIItem],
        status: str,
        error: str | None,
        finish_reason: str | None,
        usage: dict[str, Any] | None,
    ) -> None:
        if status != "completed":  # error, cancelled, and any other end (lost...)
            text = error or (
                "the stream was cancelled"
                if status == "cancelled"
                else "the stream ended with an error"
            )
            self._fail(out, text, status)
            return
        self._flush_all(out)
        if finish_reason not in FINISH_REASONS or (
            self.tool_calls == "agent" and finish_reason in ("tool_calls", "function_call")
        ):
            finish_reason = "tool_calls" if self._last_content == _C_TOOL else "stop"
        self._emit(out, {}, finish_reason)
        u = known_usage(usage) if self.include_usage else None
        if u is not None:
            assert self._head is not None
            out.append(UsageChunk(self._head, u))
        out.append(DONE)
        self.finished = True

    def _emit(
        self, out: list[OpenAIItem], delta: dict[str, Any], finish: str | None = None
    ) -> None:
        r = delta.get(_C_REASONING)
        if r:
            self._reasoning_last = r[-1]
        if not self._role_sent:
            self._role_sent = True
            delta = {"role": "assistant", **delta}
        assert self._head is not None
        out.append(Chunk(self._head, delta, finish))


def encode_messages(messages: Iterable[Message], **options: Any) -> list[OpenAIItem]:
    """Encode a whole Message stream into wire items.

    Args:
        messages: the stream's Messages, in order.
        **options: ``OpenAIEncoder``'s options.
    """
    return list(run_encoder(OpenAIEncoder(**options), messages))
