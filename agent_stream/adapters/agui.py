"""AG-UI out: Messages become events of the ``ag-ui-protocol`` package (``ag_ui.core``). Pure.

Mapping:

- stream -> RUN_STARTED (``protocolVersion`` ``1.0``) ... RUN_FINISHED (outcome ``success``);
  RUN_ERROR when the stream ends with status error or an
  ``error`` Message arrives (nothing follows a RUN_ERROR), or ends without stream_end (code
  ``incomplete``, with a warning); a cancelled stream -> RUN_FINISHED with outcome
  ``cancelled``. Usage goes into RUN_FINISHED's ``usage`` when the stream had it.
- ``user_input`` (the reply asks its asker: an approval, a question): a completed run that asked
  ends paused, RUN_FINISHED with outcome ``interrupt`` and one Interrupt per question
  (:mod:`agent_stream.adapters.agui_interrupts`: id, reason, message, the tool call it belongs
  to, a response schema for a form); ``interrupts`` lists them after the run.
- block -> STEP_STARTED/STEP_FINISHED (step name: the block's label, else its type; made unique
  among open steps with the block id).
- a block of type ``agent`` (a relayed sub-agent, a framework's sub-agent, subgraph or handoff)
  is also a sub-agent: SUBAGENT_STARTED before its step (``subagentRunId`` the block id, ``name``
  its ``agent_name``, else label, else ``agent``; ``description`` its label when that differs;
  ``parentSubagentRunId`` the nearest agent block it is nested in), and after its step
  SUBAGENT_FINISHED when it ends completed, else SUBAGENT_ERROR (code ``cancelled``, or its
  ``relay_status``, else ``error``). An ``error`` Message inside an agent block (or a block
  nested in one) is that sub-agent's SUBAGENT_ERROR, not the run's end: the caller may go on.
  Sub-agents still open when the run ends end with it (finished, or failed with its error).
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
- everything else (loading, image, audio, video, action, card, non-lifecycle events,
  thread_start/thread_end) -> CUSTOM with ``name`` the type (or event name) and ``value`` the
  Message JSON (or the event data).

Ordering, as AG-UI clients enforce it: RUN_STARTED first (sent before anything else even when the
stream has no stream_start), no CONTENT/ARGS without START, no second START for an open id,
nothing after RUN_ERROR, and every message, tool call, reasoning span and step is closed before
RUN_FINISHED/RUN_ERROR. Concurrent threads interleave freely: every open item has its own id.
A message closes at its message_end, at the end of its block or thread, or at the run's end;
and, so a thread's events keep the stream's order, before a later message of its thread goes on
when it came whole (one chunk, no message_start) or is a tool call or result (TOOL_CALL_END,
TOOL_CALL_RESULT). A result first closes its call.

Text rewrites (replace/merge/set changing the text) follow the OpenAI rule: the extension when
the new text extends the old, else a line break and the new text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

try:
    from ag_ui.core import (
        PROTOCOL_VERSION,
        ActivityDeltaEvent,
        ActivitySnapshotEvent,
        BaseEvent,
        CustomEvent,
        Interrupt,
        ReasoningEndEvent,
        ReasoningMessageContentEvent,
        ReasoningMessageEndEvent,
        ReasoningMessageStartEvent,
        ReasoningStartEvent,
        RunErrorEvent,
        RunFinishedCancelledOutcome,
        RunFinishedEvent,
        RunFinishedInterruptOutcome,
        RunFinishedSuccessOutcome,
        RunStartedEvent,
        StepFinishedEvent,
        StepStartedEvent,
        SubagentErrorEvent,
        SubagentFinishedEvent,
        SubagentStartedEvent,
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

    raise MissingDependency(
        "the AG-UI format needs the 'ag-ui-protocol' package: pip install 'agent-stream[agui]'"
    ) from _exc

from agent_stream import merge
from agent_stream.adapters._subagents import AGENT_BLOCK, SubAgents
from agent_stream.adapters._tracking import (
    Key,
    Parts,
    Tracked,
    TrackingEncoder,
    keeps_props,
    props_after,
    unique_id,
)
from agent_stream.adapters._tracking import set_shown as _set_shown
from agent_stream.adapters.agui_interrupts import interrupt_of
from agent_stream.adapters.framing import run_encoder
from agent_stream.adapters.jsonpatch import json_patch
from agent_stream.errors import DeltaError
from agent_stream.events import EventView
from agent_stream.merge import APPEND, visible_change
from agent_stream.message import (
    BLOCK_END,
    BLOCK_START,
    BUILTIN_TYPES,
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
    Message,
)

__all__ = ["AGUIEncoder", "encode_messages", "frame_sse", "json_patch"]

_TEXT, _REASONING, _TOOL, _ACTIVITY, _CUSTOM = "text", "reasoning", "tool", "activity", "custom"
_ASK = "ask"
_RESULT = "result"
TOOL_RESULT = "tool_result"  # props: call_id, name, content
INCOMPLETE_TEXT = "the stream is incomplete: it ended before stream_end"


_KINDS = {
    TEXT: _TEXT,
    REFUSAL: _TEXT,
    THINKING: _REASONING,
    TOOL_CALL: _TOOL,
    TOOL_RESULT: _RESULT,
    USER_INPUT: _ASK,
}


def _kind(type_: str) -> str:
    """What a message of this type becomes: its own kind, else CUSTOM (other built-in types) or
    an activity (custom types)."""
    return _KINDS.get(type_) or (_CUSTOM if type_ in BUILTIN_TYPES else _ACTIVITY)


# -- the encoder --------------------------------------------------------------------------------
_FRAMER = EventEncoder()
_CLIENT = "an AG-UI client"


def frame_sse(event: BaseEvent) -> str:
    """One event as the SSE text AG-UI clients read (``ag_ui.encoder.EventEncoder``).

    Args:
        event: the AG-UI event.
    """
    return _FRAMER.encode(event)


class AGUIEncoder(TrackingEncoder[Tracked, BaseEvent]):
    """Messages in, AG-UI events out (``ag_ui.core`` models; ``frame_sse`` gives their SSE).

    ``close()`` closes everything still open and sends RUN_FINISHED (or RUN_ERROR for status
    error, or without a status: code ``incomplete``) unless the run already ended.
    ``interrupts``: the questions the run asked (its RUN_FINISHED's interrupts once it ended
    completed), in order.

    Args:
        thread_id: AG-UI's conversation id.
        run_id: the run's id (None: stream_start's request_id, else ``run-1``).
    """

    INCOMPLETE_WARNING = (
        "the stream ended without stream_end; an AG-UI client gets RUN_ERROR "
        "(code incomplete), not RUN_FINISHED"
    )
    SETTLES = True

    def __init__(self, *, thread_id: str = "agent-stream", run_id: str | None = None) -> None:
        super().__init__()
        self.thread_id = thread_id
        self.run_id = run_id
        self._ids: set[str] = set()
        self._steps: dict[str, str] = {}  # block_id -> step name, while open
        self._blocks = SubAgents()  # each block's parent, the agent blocks open
        self._agents: dict[str, str] = {}  # agent block_id -> its subagentRunId, every one
        self._failed: set[str] = set()  # open agent blocks whose SUBAGENT_ERROR went out
        self._run_ids: set[str] = set()  # subagentRunIds used (one per invocation, never reused)
        self.interrupts: list[Interrupt] = []
        self._interrupt_ids: set[str] = set()
        self._call_ids: dict[str, str] = {}  # a tool call's own id -> its id on the wire

    def _error_msg(self, msg: Message, out: list[BaseEvent]) -> None:
        p = msg.props or {}
        text, code = p.get("message"), p.get("code")
        text = text if isinstance(text, str) and text else None
        code = code if isinstance(code, str) and code else None
        agent = self._blocks.agent_of(msg.block_id)
        if agent is None:
            self._end_run(out, "error", text, code, None)
        elif agent in self._failed:  # a second error of a failed sub-agent: still shown
            out.append(CustomEvent(name=msg.type, value=msg.to_dict()))
        else:
            self._failed.add(agent)
            out.append(
                SubagentErrorEvent(
                    subagent_run_id=self._agents[agent],
                    message=text or "the sub-agent failed",
                    code=code or "error",
                )
            )

    def _incomplete(self, out: list[BaseEvent], error: str | None) -> None:
        self._end_run(out, "error", error or INCOMPLETE_TEXT, "incomplete", None)

    def _end_stream(self, out: list[BaseEvent], status: str, error: str | None) -> None:
        self._end_run(out, status, error, None, None)

    # -- run and structure --------------------------------------------------------------------
    def _start(self, msg: Message | None, out: list[BaseEvent]) -> None:
        if self.run_id is None:
            rid = (
                EventView(msg).request_id if msg is not None and msg.event == STREAM_START else None
            )
            self.run_id = rid or "run-1"
        out.append(
            RunStartedEvent(
                thread_id=self.thread_id, run_id=self.run_id, protocol_version=PROTOCOL_VERSION
            )
        )

    def _end_run(
        self,
        out: list[BaseEvent],
        status: str,
        error: str | None,
        code: str | None,
        usage: dict[str, Any] | None,
    ) -> None:
        for st in list(self._table.open.values()):
            self._end_msg(st, out)
        for name in self._steps.values():
            out.append(StepFinishedEvent(step_name=name))
        self._steps.clear()
        for bid in reversed(self._blocks.opened):
            self._end_subagent(bid, status, error, code, out)
        self.finished = True
        tokens = _usage(usage)
        if status not in ("completed", "cancelled"):  # error, and any other end (lost...)
            out.append(
                RunErrorEvent(
                    message=error or "the stream ended with an error",
                    code=code or status,
                    usage=tokens,
                )
            )
        elif status == "cancelled":
            out.append(
                RunFinishedEvent(
                    thread_id=self.thread_id,
                    run_id=self.run_id or "run-1",
                    outcome=RunFinishedCancelledOutcome(),
                    usage=tokens,
                )
            )
        else:
            out.append(
                RunFinishedEvent(
                    thread_id=self.thread_id,
                    run_id=self.run_id or "run-1",
                    outcome=RunFinishedInterruptOutcome(interrupts=list(self.interrupts))
                    if self.interrupts
                    else RunFinishedSuccessOutcome(),
                    usage=tokens,
                )
            )

    def _event(self, ev: EventView, out: list[BaseEvent]) -> None:
        name = ev.name
        if name == STREAM_START:
            return
        if name == STREAM_END:
            self._end_run(out, ev.end_status, ev.error, None, ev.usage)
        elif name == BLOCK_START:
            bid = ev.block_id
            if bid is not None and bid not in self._steps:
                was_open = self._blocks.is_open(bid)
                self._blocks.see(ev)
                if ev.type == AGENT_BLOCK and not was_open:
                    self._start_subagent(bid, ev, out)
                step = ev.label or ev.type or bid
                if step in self._steps.values():
                    step = f"{step} ({bid})"
                self._steps[bid] = step
                out.append(StepStartedEvent(step_name=step))
        elif name == MESSAGE_START:
            new = self._table.started_by(ev)
            if new is not None:
                st = self._new(new[0], new[1], ev.msg.block_id)
                self._settle(st, out)
                self._open_msg(st, out)
        elif name in (MESSAGE_END, BLOCK_END, THREAD_END):
            for st in self._table.ended_by(ev):
                self._end_msg(st, out)
            bid = ev.block_id
            ended = self._steps.pop(bid, None) if name == BLOCK_END and bid is not None else None
            if ended is not None:
                out.append(StepFinishedEvent(step_name=ended))
            if name == BLOCK_END and bid is not None and self._blocks.is_open(bid):
                status = ev.end_status
                self._end_subagent(
                    bid, status, ev.error, _data_str(ev, "relay_status") or status, out
                )
            if name == THREAD_END:
                out.append(CustomEvent(name=name, value=dict(ev.data)))
        elif name == THREAD_START:
            out.append(CustomEvent(name=name, value=dict(ev.data)))
        elif name not in LIFECYCLE_EVENTS:
            props = ev.msg.props or {}
            out.append(CustomEvent(name=name or "event", value=props.get("data", props)))

    # -- sub-agents ---------------------------------------------------------------------------
    def _start_subagent(self, bid: str, ev: EventView, out: list[BaseEvent]) -> None:
        parent = self._agent_above(bid)
        rid = unique_id(bid, self._run_ids)
        self._agents[bid] = rid
        self._failed.discard(bid)
        label = ev.label
        name = self._blocks.name(bid)
        out.append(
            SubagentStartedEvent(
                subagent_run_id=rid,
                name=name,
                description=label if label and label != name else None,
                parent_subagent_run_id=parent,
            )
        )

    def _end_subagent(
        self, bid: str, status: str, error: str | None, code: str | None, out: list[BaseEvent]
    ) -> None:
        """The agent block ``bid`` ended with ``status``: SUBAGENT_FINISHED or SUBAGENT_ERROR
        (nothing more when its error was sent already)."""
        self._blocks.end(bid)
        rid = self._agents[bid]
        if bid in self._failed:
            self._failed.discard(bid)
        elif status == "completed":
            out.append(SubagentFinishedEvent(subagent_run_id=rid))
        else:
            text = error or (
                "the sub-agent was cancelled"
                if status == "cancelled"
                else "the sub-agent failed"
                if status == "error"
                else f"the sub-agent ended {status}"
            )
            out.append(SubagentErrorEvent(subagent_run_id=rid, message=text, code=code or status))

    def _agent_above(self, bid: str) -> str | None:
        """The subagentRunId of the nearest agent block ``bid`` is nested in, if any."""
        above = (b for b in self._blocks.ancestors(bid) if b != bid and b in self._agents)
        up = next(above, None)
        return None if up is None else self._agents[up]

    # -- messages -----------------------------------------------------------------------------
    def _new(self, key: Key, type_: str, block_id: str | None) -> Tracked:
        aid = key[1]
        if aid in self._ids:
            aid = f"{key[0]}.{key[1]}" if key[0] else f"{key[1]}~"
            n = 1
            while aid in self._ids:
                n += 1
                aid = f"{key[0] or ''}.{key[1]}~{n}"
        self._ids.add(aid)
        return self._table.add(
            Tracked(key, type_, block_id, kind=_kind(type_), wid=aid), is_open=False
        )

    def _open_msg(self, st: Tracked, out: list[BaseEvent]) -> None:
        if st.opened or st.done:
            return
        kind = st.kind
        if kind == _TEXT:
            out.append(TextMessageStartEvent(message_id=st.wid, role="assistant"))
        elif kind == _REASONING:
            out.append(ReasoningStartEvent(message_id=st.wid))
            out.append(ReasoningMessageStartEvent(message_id=st.wid))
        elif kind == _TOOL:
            tc = st.tool
            if not tc.ready:
                self._table.open[st.key] = st  # START waits for the name
                return
            own = tc.call_id
            if tc.call_id is None:
                tc.call_id = f"call_{st.wid}"
            open_ids = {
                s.tool.call_id
                for s in self._table.open_where(lambda s: s.kind == _TOOL and s.opened)
                if s.tool.call_id is not None
            }
            if tc.call_id in open_ids:  # two open calls of one id (two threads'): AG-UI needs two
                tc.call_id = unique_id(tc.call_id, open_ids)
            if own is not None:
                self._call_ids[own] = tc.call_id
            out.append(
                ToolCallStartEvent(tool_call_id=tc.call_id, tool_call_name=tc.name or "tool")
            )
            args = tc.start()
            if args:
                out.append(ToolCallArgsEvent(tool_call_id=tc.call_id, delta=args))
        else:
            return  # activities and custom events have nothing to open
        st.opened = True
        self._table.open[st.key] = st

    def _end_msg(self, st: Tracked, out: list[BaseEvent]) -> None:
        if st.done:
            return
        if st.kind == _TOOL and not st.opened:
            st.tool.ensure_name(self, st.key)
            self._open_msg(st, out)
        elif st.kind == _RESULT:
            self._result(st, out)
        elif st.kind == _ASK:
            self._ask(st)
        st.done = True
        st.text = Parts()
        self._table.open.pop(st.key, None)
        if not st.opened:
            return
        kind = st.kind
        if kind == _TEXT:
            out.append(TextMessageEndEvent(message_id=st.wid))
        elif kind == _REASONING:
            out.append(ReasoningMessageEndEvent(message_id=st.wid))
            out.append(ReasoningEndEvent(message_id=st.wid))
        elif kind == _TOOL:
            out.append(ToolCallEndEvent(tool_call_id=st.tool.call_id or f"call_{st.wid}"))

    def _waits(self, st: Tracked) -> bool:
        return st.kind in (_TOOL, _RESULT)  # TOOL_CALL_END and TOOL_CALL_RESULT come at the end

    def _same_item(self, st: Tracked, type_: str) -> bool:
        """A type change within a kind goes on (activities excepted: their type is named)."""
        return _kind(type_) == st.kind and st.kind != _ACTIVITY

    def _keep_text(self, new: Tracked, text: str, out: list[BaseEvent]) -> None:
        self._open_msg(new, out)
        self._text_set(new, text, out)

    def _keep_props(self, new: Tracked, props: dict[str, Any], out: list[BaseEvent]) -> None:
        if new.kind == _ACTIVITY:
            new.props = props
            out.append(
                ActivitySnapshotEvent(
                    message_id=new.wid, activity_type=new.type, content=merge.copy_json(props)
                )
            )

    def _chunk(self, st: Tracked, msg: Message, out: list[BaseEvent]) -> None:
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
                    out.append(
                        TextMessageContentEvent(message_id=st.wid, delta=s)
                        if kind == _TEXT
                        else ReasoningMessageContentEvent(message_id=st.wid, delta=s)
                    )
            else:
                self._text_set(st, s, out)
        elif kind == _TOOL:
            self._tool_chunk(st, msg, out)
        elif kind in (_RESULT, _ASK):
            self._result_chunk(st, msg)
        elif kind == _ACTIVITY:
            self._activity(st, msg, out)
        else:
            out.append(CustomEvent(name=st.type, value=msg.to_dict()))

    def _text_set(self, st: Tracked, s: str, out: list[BaseEvent]) -> None:
        send = _set_shown(st.text, s, st.key, _CLIENT, self)
        if send is None:
            return
        out.append(
            TextMessageContentEvent(message_id=st.wid, delta=send)
            if st.kind == _TEXT
            else ReasoningMessageContentEvent(message_id=st.wid, delta=send)
        )

    def _tool_chunk(self, st: Tracked, msg: Message, out: list[BaseEvent]) -> None:
        tc = st.tool
        tc.take_append_only(msg, self, st.key, _CLIENT)
        if not st.opened:
            if tc.ready:
                self._open_msg(st, out)
            else:
                self._table.open[st.key] = st
            return
        frag = tc.unsent()
        if frag:
            out.append(ToolCallArgsEvent(tool_call_id=tc.call_id or f"call_{st.wid}", delta=frag))

    def _result_chunk(self, st: Tracked, msg: Message) -> None:
        """A tool result's (or a question's) props, kept until its message ends."""
        self._table.open[st.key] = st
        if keeps_props(msg):
            return
        try:
            st.props = props_after(st.props, msg)
        except DeltaError as exc:
            self._bad_delta(msg, exc)

    def _result(self, st: Tracked, out: list[BaseEvent]) -> None:
        props = st.props or {}
        call_id = props.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            out.append(CustomEvent(name=st.type, value=props))
            return
        for call in self._table.open_where(lambda s: s.kind == _TOOL and s.tool.call_id == call_id):
            self._end_msg(call, out)  # the call is over: its END comes before its result
        content = props.get("content")
        text = (
            content
            if isinstance(content, str)
            else ""
            if content is None
            else json.dumps(content, ensure_ascii=False, separators=(",", ":"))
        )
        out.append(
            ToolCallResultEvent(message_id=st.wid, tool_call_id=call_id, content=text, role="tool")
        )

    def _ask(self, st: Tracked) -> None:
        """A question to the asker, whole: one more interrupt of the run."""
        props = st.props or {}
        card = props.get("card")
        card_id = card.get("card_id") if isinstance(card, dict) else None
        base = card_id if isinstance(card_id, str) and card_id else st.key[1] or "interrupt"
        call = props.get("call_id")
        agent = self._blocks.agent_of(st.block_id)
        self.interrupts.append(
            interrupt_of(
                props,
                unique_id(base, self._interrupt_ids),
                tool_call_id=self._call_ids.get(call) if isinstance(call, str) else None,
                subagent_run_id=self._agents.get(agent) if agent is not None else None,
            )
        )

    def _activity(self, st: Tracked, msg: Message, out: list[BaseEvent]) -> None:
        chunk_props = msg.props or {}
        action = msg.delta_action or "append"
        whole = not msg.delta or (msg.delta_path is None and action in ("replace", "set"))
        if st.props is None or whole:
            if whole:
                st.props = merge.copy_json(chunk_props)
            else:
                try:
                    st.props = merge.apply({}, action, msg.delta_path, chunk_props)
                except DeltaError as exc:
                    self._bad_delta(msg, exc)
                    return
            out.append(
                ActivitySnapshotEvent(
                    message_id=st.wid, activity_type=st.type, content=merge.copy_json(st.props)
                )
            )
            return
        try:
            ops = json_patch(st.props, action, msg.delta_path, chunk_props)
            st.props = merge.apply(st.props, action, msg.delta_path, chunk_props)
        except DeltaError as exc:
            self._bad_delta(msg, exc)
            return
        if ops is None:
            out.append(
                ActivitySnapshotEvent(
                    message_id=st.wid, activity_type=st.type, content=merge.copy_json(st.props)
                )
            )
        elif ops:
            out.append(ActivityDeltaEvent(message_id=st.wid, activity_type=st.type, patch=ops))  # type: ignore[arg-type]


def _data_str(ev: EventView, key: str) -> str | None:
    """A non-empty string of the event's data (block_start's ``agent_name``...), else None."""
    v = ev.data.get(key)
    return v if isinstance(v, str) and v else None


def _usage(usage: dict[str, Any] | None) -> list[TokenUsage] | None:
    if usage is None:
        return None
    vals: dict[str, Any] = {}
    for src, dst in (
        ("prompt_tokens", "input_tokens"),
        ("completion_tokens", "output_tokens"),
        ("total_tokens", "total_tokens"),
    ):
        v = usage.get(src)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            vals[dst] = v
    return [TokenUsage(**vals)] if vals else None


def encode_messages(messages: Iterable[Message], **options: Any) -> list[BaseEvent]:
    """Encode a whole Message stream into events.

    Args:
        messages: the stream's Messages, in order.
        **options: ``AGUIEncoder``'s options.
    """
    return list(run_encoder(AGUIEncoder(**options), messages))
