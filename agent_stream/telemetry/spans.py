"""The spans: a reply's, its blocks', a question's; loaded only when tracing is on.

Responder: one span per reply (``invoke_agent {agent}``, kind SERVER), a child span per block the
responder writes (``chat`` for a model block, ``execute_tool`` for a tool block or tool call,
``invoke_agent`` for a relayed sub-agent) and per tool call — never per chunk. The parent of a
reply's span is the ``traceparent`` its question carried (checked; a malformed one starts a new
trace, with a warning). Blocks relayed from a sub-agent are that agent's own spans, not copied.

Asker: a span per question (kind CLIENT), child of whatever span is current (a block of the
reply being written, the gateway's request); its ``traceparent`` goes in the question's tags.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)

from agent_stream.telemetry.context import (
    TRACEPARENT,
    TRACESTATE,
    format_traceparent,
    parse_traceparent,
    parse_tracestate,
    trace_headers_of,
)
from agent_stream.telemetry.replies import ReplyObserver, ask_ended

__all__ = ["TracedReply", "asking", "incoming_context", "traceparent_of"]

LOG = logging.getLogger("agent_stream.telemetry")
_warned_at = [0.0, 0.0]  # malformed trace context, tracing failures

OP = "gen_ai.operation.name"
AGENT = "gen_ai.agent.name"
# The reply whose responder is running in this task: its questions can become its relay blocks.
_REPLY: contextvars.ContextVar[TracedReply | None] = contextvars.ContextVar(
    "agent_stream_reply", default=None
)


def _warn(what: str, value: str) -> None:
    """A malformed trace context (at most one line every 10 s: a peer may send many)."""
    now = time.monotonic()
    if now - _warned_at[0] >= 10.0:
        _warned_at[0] = now
        LOG.warning("malformed %s %r ignored: a new trace starts", what, value[:80])


def _warn_once(exc: Exception) -> None:
    now = time.monotonic()
    if now - _warned_at[1] >= 60.0:
        _warned_at[1] = now
        LOG.warning("tracing failed (the reply goes on): %s", exc, exc_info=exc)


def incoming_context(
    traceparent: str | None, tracestate: str | None, where: str = "traceparent"
) -> Any:
    """The OpenTelemetry Context to continue a remote trace in.

    Args:
        traceparent: the W3C ``traceparent`` received (None: none came).
        tracestate: the W3C ``tracestate`` received with it (None: none).
        where: what carried the header, named in the warning about a malformed one.

    Returns:
        The remote span's context when ``traceparent`` is well formed, else an empty one (a new
        trace).
    """
    if traceparent is None:
        return otel_context.Context()
    parsed = parse_traceparent(traceparent)
    if parsed is None:
        _warn(where, traceparent)
        return otel_context.Context()
    tid, sid, flags = parsed
    members = parse_tracestate(tracestate) if tracestate else None
    state = TraceState(members) if members else None
    remote = SpanContext(
        tid, sid, is_remote=True, trace_flags=TraceFlags(flags & 0x01), trace_state=state
    )
    return trace.set_span_in_context(NonRecordingSpan(remote))


def traceparent_of(span: Any) -> tuple[str, str | None]:
    """The W3C headers naming a span.

    Args:
        span: an OpenTelemetry span.

    Returns:
        (traceparent, tracestate), the tracestate None when the span has none.
    """
    sc = span.get_span_context()
    state = sc.trace_state.to_header() if sc.trace_state else None
    return format_traceparent(sc.trace_id, sc.span_id, int(sc.trace_flags)), state or None


def _messages(role: str, text: str) -> str:
    return json.dumps(
        [{"role": role, "parts": [{"type": "text", "content": text}]}], ensure_ascii=False
    )


class TracedReply(ReplyObserver):
    """A :class:`ReplyObserver` with the reply's span and its blocks' spans.

    Args:
        tracer: the OpenTelemetry Tracer the spans are made with.
        agent: the answering agent's name.
        peer: the address of the agent that asked.
        conversation: the conversation (session) id of the question.
        question: the ChatMessage being answered; its ``traceparent`` tag, if any, is the parent.
        capture: whether the question's and the answer's text are recorded on the span.
    """

    __slots__ = ("_asked", "_blocks", "_capture", "_relayed", "_tools", "_tracer", "span")

    def __init__(
        self, tracer: Any, agent: str, *, peer: str, conversation: str, question: Any, capture: bool
    ) -> None:
        super().__init__(agent)
        self._tracer = tracer
        self._capture = capture
        tp, ts = trace_headers_of(getattr(question, "content", ()))
        parent = incoming_context(tp, ts)
        attrs: dict[str, Any] = {
            OP: "invoke_agent",
            AGENT: agent,
            "gen_ai.conversation.id": conversation,
            "agent_stream.peer": peer,
        }
        if capture:
            text = "".join(
                getattr(i, "text", "")
                for i in getattr(question, "content", ())
                if getattr(i, "type", None) == "text"
            )
            attrs["gen_ai.input.messages"] = _messages("user", text)
        self.span = tracer.start_span(
            f"invoke_agent {agent}", context=parent, kind=SpanKind.SERVER, attributes=attrs
        )
        self._blocks: dict[str, tuple[Any, object, bool]] = {}  # id -> (span, token, owned)
        self._asked: dict[str, list[Any]] = {}  # peer -> open question spans (see asking)
        self._relayed: set[str] = set()  # blocks of relay blocks: the sub-agent's own spans
        self._tools: dict[str, Any] = {}  # tool call id -> span

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """The responder runs inside this: the reply's span is current."""
        token = otel_context.attach(trace.set_span_in_context(self.span))
        mine = _REPLY.set(self)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                _REPLY.reset(mine)
            with contextlib.suppress(Exception):
                otel_context.detach(token)

    def tap(self, msg: Any) -> None:
        """One Message the responder wrote: tool calls get spans of their own.

        Args:
            msg: the Message.
        """
        try:
            kind = msg.type
            if kind == "tool_call":
                self._tool_call(msg)
            elif kind == "tool_result":
                props = msg.props or {}
                span = self._tools.pop(str(props.get("call_id")), None)
                if span is not None:
                    if props.get("is_error"):
                        span.set_status(Status(StatusCode.ERROR))
                    span.end()
            ReplyObserver.tap(self, msg)
        except Exception as exc:  # tracing must never break the reply it watches
            _warn_once(exc)

    def event(self, msg: Any) -> None:
        """A lifecycle event: blocks get spans of their own, usage goes on the reply's span.

        Args:
            msg: the event Message.
        """
        props = msg.props or {}
        name = props.get("event")
        data = props.get("data")
        if not isinstance(data, dict):
            return
        if name == "block_start":
            self._block_start(data)
        elif name == "block_end":
            self._block_end(data)
        elif name == "stream_end":
            ReplyObserver.event(self, msg)

    def _block_start(self, data: dict[str, Any]) -> None:
        bid = str(data.get("block_id"))
        parent = data.get("parent_block_id")
        if parent is not None and (
            parent in self._relayed
            or (parent not in self._blocks and "agent" not in data and "agent_name" not in data)
        ):
            self._relayed.add(bid)  # a sub-agent's block, relayed: its own agent traces it
            return
        btype = str(data.get("type") or "block")
        label = data.get("label")
        attrs: dict[str, Any] = {"agent_stream.block.type": btype}
        if label:
            attrs["agent_stream.block.label"] = str(label)
        if "agent" in data or "agent_name" in data:
            self._relayed.add(bid)
            who = str(data.get("agent_name") or data.get("agent") or "agent")
            name = f"invoke_agent {who}"
            attrs.update({OP: "invoke_agent", AGENT: who})
            if data.get("agent"):
                attrs["agent_stream.peer"] = str(data["agent"])
            asked = self._asked.get(str(data.get("agent")))
            if asked:
                # The question this block relays the answer of: its span stands for the block,
                # so the sub-agent's spans (children of the question) sit under the block.
                question = asked.pop(0)
                question.update_name(name)
                question.set_attributes(attrs)
                token = otel_context.attach(trace.set_span_in_context(question))
                self._blocks[bid] = (question, token, False)
                return
        elif btype in ("llm", "model", "chat"):
            model = data.get("model")
            name = f"chat {model or label or btype}"
            attrs[OP] = "chat"
            if model:
                attrs["gen_ai.request.model"] = str(model)
        elif btype == "tool":
            name = f"execute_tool {label or 'tool'}"
            attrs.update({OP: "execute_tool", "gen_ai.tool.name": str(label or "tool")})
        else:
            name = f"{btype} {label}" if label else btype
        span = self._tracer.start_span(name, attributes=attrs)
        token = otel_context.attach(trace.set_span_in_context(span))
        self._blocks[bid] = (span, token, True)

    def _block_end(self, data: dict[str, Any]) -> None:
        bid = str(data.get("block_id"))
        entry = self._blocks.pop(bid, None)
        if entry is None:
            self._relayed.discard(bid)
            return
        span, token, owned = entry
        with contextlib.suppress(Exception):
            otel_context.detach(token)  # type: ignore[arg-type]
        if not span.is_recording():  # a question's span, ended with its reply
            return
        status = data.get("status")
        usage = data.get("usage")
        if isinstance(usage, dict):
            _usage(span, usage)
        relay = data.get("relay_status")
        if relay:
            span.set_attribute("agent_stream.relay_status", str(relay))
        if status not in (None, "completed"):
            span.set_status(Status(StatusCode.ERROR, str(status)))
        if owned:
            span.end()

    def _tool_call(self, msg: Any) -> None:
        props = msg.props or {}
        call = props.get("id")
        if not call or str(call) in self._tools or (msg.block_id in self._relayed):
            return
        name = str(props.get("name") or "tool")
        attrs: dict[str, Any] = {
            OP: "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": str(call),
        }
        if self._capture and isinstance(props.get("arguments"), str):
            attrs["gen_ai.tool.call.arguments"] = props["arguments"]
        parent = self._blocks.get(str(msg.block_id))
        ctx = trace.set_span_in_context(parent[0] if parent else self.span)
        self._tools[str(call)] = self._tracer.start_span(
            f"execute_tool {name}", context=ctx, attributes=attrs
        )

    def end(
        self,
        status: str,
        *,
        chat_messages: int,
        resends: int,
        keepalives: int,
        repairs: int,
        answer: Callable[[], str] | None = None,
    ) -> None:
        """The reply is over: its figures go to the metrics and its spans end.

        Args:
            status: how the reply ended (``completed``, ``error``, ``cancelled``...).
            chat_messages: the ChatMessages the reply took on the wire.
            resends: ChatMessages sent again, their delivery having failed or gone
                unacknowledged.
            keepalives: keepalive messages sent while the reply was quiet.
            repairs: the asker's repair requests served from the replay buffer.
            answer: returns the reply's whole text, called only when it is recorded
                (None: not recorded).
        """
        super().end(
            status,
            chat_messages=chat_messages,
            resends=resends,
            keepalives=keepalives,
            repairs=repairs,
            answer=answer,
        )
        try:
            figures = {
                "chat_messages": chat_messages,
                "resends": resends,
                "keepalives": keepalives,
                "gaps_repaired": repairs,
            }
            self._end_spans(status, figures, answer)
        except Exception as exc:
            _warn_once(exc)

    def _end_spans(
        self, status: str, figures: dict[str, int], answer: Callable[[], str] | None
    ) -> None:
        """End the reply's spans; ``figures`` go on its span as ``agent_stream.<name>``."""
        span = self.span
        for tool in self._tools.values():
            tool.end()
        for block, _token, owned in self._blocks.values():  # left open (not by the writer)
            if owned:
                block.end()
        self._tools.clear()
        self._blocks.clear()
        span.set_attribute("agent_stream.status", status)
        for name, value in figures.items():
            span.set_attribute(f"agent_stream.{name}", value)
        if self.first_text is not None:
            span.set_attribute(
                "agent_stream.time_to_first_text", round(self.first_text - self.started, 6)
            )
        if self.usage:
            _usage(span, self.usage)
        if self._capture and answer is not None:
            span.set_attribute("gen_ai.output.messages", _messages("assistant", answer()))
        if status != "completed":
            span.set_status(Status(StatusCode.ERROR, status))
        span.end()


def _usage(span: Any, usage: dict[str, Any]) -> None:
    for key, attr in (
        ("prompt_tokens", "gen_ai.usage.input_tokens"),
        ("input_tokens", "gen_ai.usage.input_tokens"),
        ("completion_tokens", "gen_ai.usage.output_tokens"),
        ("output_tokens", "gen_ai.usage.output_tokens"),
    ):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            span.set_attribute(attr, value)
    model = usage.get("model")
    if isinstance(model, str) and model:
        span.set_attribute("gen_ai.request.model", model)


def asking(tracer: Any, reply: Any, agent: str | None) -> None:
    """A question is about to be sent: its CLIENT span starts, a child of the current span.

    Its ``traceparent`` goes in the question's tags (a question without tags is left as it is);
    the span ends with the reply's delivery figures.

    Args:
        tracer: the OpenTelemetry Tracer the span is made with.
        reply: the :class:`agent_stream.uagents.Reply` of the question, not yet sent.
        agent: the asking agent's name (None: unnamed).
    """
    peer = str(reply.peer)
    attrs: dict[str, Any] = {
        OP: "invoke_agent",
        "agent_stream.peer": peer,
        "gen_ai.conversation.id": str(reply.conversation),
    }
    if agent:
        attrs["agent_stream.asker"] = agent
    span = tracer.start_span(f"invoke_agent {peer[:20]}", kind=SpanKind.CLIENT, attributes=attrs)
    tp, ts = traceparent_of(span)
    owner = _REPLY.get()
    if owner is not None:  # asked while answering: a relay block may stand on this span
        owner._asked.setdefault(peer, []).append(span)
    for item in reply.question.content:
        md = getattr(item, "metadata", None)
        if isinstance(md, dict) and "agent_stream" in md:
            md[TRACEPARENT] = tp
            if ts:
                md[TRACESTATE] = ts
            else:
                md.pop(TRACESTATE, None)
            break

    def done(_f: Any) -> None:
        try:
            if owner is not None:
                with contextlib.suppress(ValueError):
                    owner._asked.get(peer, []).remove(span)
            _ask_span_end(span, reply)
        finally:
            ask_ended(reply)

    reply.on_end(done)


def _ask_span_end(span: Any, reply: Any) -> None:
    status = str(reply.status or "completed")
    span.set_attribute("agent_stream.status", status)
    span.set_attribute("agent_stream.chat_messages", int(reply.chat_messages))
    span.set_attribute("agent_stream.resends", int(reply.question_resends))
    span.set_attribute("agent_stream.tagged", bool(reply.tagged))
    with contextlib.suppress(Exception):
        span.set_attribute("agent_stream.gaps_repaired", int(reply.gaps_repaired))
        span.set_attribute("agent_stream.repair_requests", int(reply.repair_requests))
        span.set_attribute("agent_stream.keepalives", int(reply.keepalives))
        span.set_attribute("agent_stream.duplicates", int(reply.duplicates))
    if reply.first_text_at is not None:
        span.set_attribute(
            "agent_stream.time_to_first_text", round(reply.first_text_at - reply.asked_at, 6)
        )
    with contextlib.suppress(Exception):
        usage = reply.transcript.usage
        if usage is not None:
            _usage(span, usage if isinstance(usage, dict) else usage.model_dump())
    if status != "completed":
        span.set_status(Status(StatusCode.ERROR, status))
    span.end()
