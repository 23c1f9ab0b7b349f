"""AGUIEncoder: every event validated by ``ag_ui.core``'s models, ordering checked as AG-UI
clients check it, and every JSON Patch applied strictly to the content the client holds."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from ag_ui.core import Event, EventType
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter
from relay_fixtures import FakeReply, replay_stream_async
from strategies import any_message, tool_message

from agent_stream.adapters.agui import (
    INCOMPLETE_TEXT,
    AGUIEncoder,
    encode_messages,
    frame_sse,
    json_patch,
)
from agent_stream.assemble import Assembler, assemble
from agent_stream.commands.formats import encode_agui as cli_encode
from agent_stream.errors import DeltaError
from agent_stream.events import EventView
from agent_stream.message import Message, error, event, image, loading, text, tool_call
from agent_stream.relay import RelayError
from agent_stream.writer import StreamWriter, collect

EVENT = TypeAdapter(Event)


class Verifier:
    """The ordering rules AG-UI clients enforce (verify.ts), plus: nothing open at RUN_ERROR."""

    def __init__(self) -> None:
        self.started = self.ended = False
        self.open: dict[str, set[str]] = {
            "text": set(),
            "tool": set(),
            "step": set(),
            "rspan": set(),
            "rmsg": set(),
            "subagent": set(),
        }
        self.subagents_done: set[str] = set()

    def check(self, e: Any) -> None:
        t = e.type
        assert not self.ended, f"{t} after the run ended"
        if not self.started:
            assert t == EventType.RUN_STARTED, "the first event must be RUN_STARTED"
            self.started = True
            return
        assert t != EventType.RUN_STARTED, "a second RUN_STARTED while the run is active"
        pairs = {
            EventType.TEXT_MESSAGE_START: ("text", "message_id", True),
            EventType.TEXT_MESSAGE_CONTENT: ("text", "message_id", None),
            EventType.TEXT_MESSAGE_END: ("text", "message_id", False),
            EventType.TOOL_CALL_START: ("tool", "tool_call_id", True),
            EventType.TOOL_CALL_ARGS: ("tool", "tool_call_id", None),
            EventType.TOOL_CALL_END: ("tool", "tool_call_id", False),
            EventType.STEP_STARTED: ("step", "step_name", True),
            EventType.STEP_FINISHED: ("step", "step_name", False),
            EventType.REASONING_START: ("rspan", "message_id", True),
            EventType.REASONING_END: ("rspan", "message_id", False),
            EventType.REASONING_MESSAGE_START: ("rmsg", "message_id", True),
            EventType.REASONING_MESSAGE_CONTENT: ("rmsg", "message_id", None),
            EventType.REASONING_MESSAGE_END: ("rmsg", "message_id", False),
        }
        if t == EventType.SUBAGENT_STARTED:
            rid, parent = e.subagent_run_id, e.parent_subagent_run_id
            assert rid not in self.open["subagent"] | self.subagents_done, f"{rid} reused"
            assert parent is None or parent in self.open["subagent"] | self.subagents_done
            self.open["subagent"].add(rid)
        elif t in (EventType.SUBAGENT_FINISHED, EventType.SUBAGENT_ERROR):
            assert e.subagent_run_id in self.open["subagent"], f"{t} of no open subagent"
            self.open["subagent"].discard(e.subagent_run_id)
            self.subagents_done.add(e.subagent_run_id)
        elif t in pairs:
            kind, attr, opens = pairs[t]
            key = getattr(e, attr)
            if opens is True:
                assert key not in self.open[kind], f"{t} for an id already open: {key}"
                self.open[kind].add(key)
            else:
                assert key in self.open[kind], f"{t} without a START: {key}"
                if opens is False:
                    self.open[kind].discard(key)
        elif t in (EventType.RUN_FINISHED, EventType.RUN_ERROR):
            still = {k: v for k, v in self.open.items() if v}
            assert not still, f"{t} while open: {still}"
            self.ended = True


def sse_text(msgs: list[Message], **kw: Any) -> list[str]:
    """The SSE text a client receives for ``msgs``."""
    return [frame_sse(e) for e in encode_messages(msgs, **kw)]


def parse(wire: list[str]) -> list[Any]:
    """SSE text -> validated ag_ui events, checked in order."""
    events = []
    v = Verifier()
    for item in wire:
        assert item.startswith("data: ") and item.endswith("\n\n")
        e = EVENT.validate_json(item[6:-2])
        v.check(e)
        events.append(e)
    assert v.ended, "the run ends"
    return events


def apply_patch(doc: Any, ops: list[Any]) -> Any:
    """RFC 6902 add/replace/remove, strict: replace/remove need the target, add its parent."""
    for op in ops:
        o = op if isinstance(op, dict) else op.model_dump()
        parts = [p.replace("~1", "/").replace("~0", "~") for p in o["path"].split("/")[1:]]
        if not parts:
            assert o["op"] == "replace"
            doc = o["value"]
            continue
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1]
        if isinstance(parent, list):
            if o["op"] == "add":
                idx = len(parent) if last == "-" else int(last)
                assert idx <= len(parent)
                parent.insert(idx, o["value"])
            else:
                assert int(last) < len(parent), f"{o['op']} on a missing index {o['path']}"
                if o["op"] == "replace":
                    parent[int(last)] = o["value"]
                else:
                    del parent[int(last)]
        else:
            assert isinstance(parent, dict), f"path through a non-container: {o['path']}"
            if o["op"] in ("replace", "remove"):
                assert last in parent, f"{o['op']} on a missing path {o['path']}"
            if o["op"] == "remove":
                del parent[last]
            else:
                parent[last] = o["value"]
    return doc


def client_state(events: list[Any]) -> dict[str, Any]:
    """What a client builds: text and reasoning per id, tool calls, activities, customs."""
    s: dict[str, Any] = {
        "text": {},
        "reasoning": {},
        "tools": {},
        "activity": {},
        "custom": [],
        "steps": [],
        "results": {},
        "end": None,
    }
    for e in events:
        t = e.type
        if t == EventType.TEXT_MESSAGE_START:
            s["text"][e.message_id] = ""
        elif t == EventType.TEXT_MESSAGE_CONTENT:
            s["text"][e.message_id] += e.delta
        elif t == EventType.REASONING_MESSAGE_START:
            s["reasoning"][e.message_id] = ""
        elif t == EventType.REASONING_MESSAGE_CONTENT:
            s["reasoning"][e.message_id] += e.delta
        elif t == EventType.TOOL_CALL_START:
            s["tools"][e.tool_call_id] = {"name": e.tool_call_name, "args": ""}
        elif t == EventType.TOOL_CALL_ARGS:
            s["tools"][e.tool_call_id]["args"] += e.delta
        elif t == EventType.ACTIVITY_SNAPSHOT:
            s["activity"][e.message_id] = (e.activity_type, json.loads(json.dumps(e.content)))
        elif t == EventType.ACTIVITY_DELTA:
            kind, doc = s["activity"][e.message_id]
            s["activity"][e.message_id] = (kind, apply_patch(doc, e.patch))
        elif t == EventType.CUSTOM:
            s["custom"].append((e.name, e.value))
        elif t == EventType.TOOL_CALL_RESULT:
            s["results"][e.tool_call_id] = (e.content, e.role)
        elif t == EventType.STEP_STARTED:
            s["steps"].append(e.step_name)
        elif t in (EventType.RUN_FINISHED, EventType.RUN_ERROR):
            s["end"] = e
    return s


async def _reply(out: StreamWriter) -> None:
    async with out.block("llm", label="Answer") as b:
        async with b.message("thinking") as m:
            await m.append("Plan: ")
            await m.append("look it up.")
        await b.send(tool_call(id="call_1", name="search", arguments='{"q": "x"}'))

    async def one(th: Any) -> None:
        async with th.block("agent", label="Worker") as b, b.message("text") as m:
            for w in ("alpha ", "beta "):
                await m.append(w)
                await asyncio.sleep(0)

    async def two(th: Any) -> None:
        async with th.block("agent", label="Worker") as b, b.message("text") as m:
            for w in ("gamma ", "delta "):
                await m.append(w)
                await asyncio.sleep(0)

    await out.parallel(one, two)
    async with out.message("table") as m:
        await m.replace({"columns": ["city"], "rows": []})
        await m.append([{"city": "Paris"}], path="rows")
        await m.append({"city": "Lyon"}, path="rows")
        await m.set("Lille", path="rows.1.city")
        await m.set({"n": 2}, path="meta.stats")
        await m.merge({"title": "Cities"})
    await out.send(loading("Saving…"))


def test_a_hierarchical_reply_is_valid_ag_ui_and_the_client_rebuilds_the_transcript() -> None:
    msgs = asyncio.run(collect(_reply, request_id="req-9"))
    events = parse(sse_text(msgs))
    assert events[0].run_id == "req-9"
    s = client_state(events)
    t = assemble(msgs)
    texts = {m.message_id: m.props["content"] for m in t.messages if m.type == "text"}
    assert s["text"] == texts
    assert list(s["reasoning"].values()) == ["Plan: look it up."]
    assert s["tools"] == {"call_1": {"name": "search", "args": '{"q": "x"}'}}
    [table] = [m for m in t.messages if m.type == "table"]
    assert s["activity"] == {table.message_id: ("table", table.props)}
    assert s["steps"] == ["Answer", "Worker", "Worker (B3)"]
    assert [v["props"] for name, v in s["custom"] if name == "loading"] == [{"message": "Saving…"}]
    assert s["end"].type == EventType.RUN_FINISHED


def test_patches_never_replace_a_missing_path() -> None:
    ops = json_patch({"a": {}}, "set", "a.b.c", {"a": {"b": {"c": 1}}})
    assert ops == [{"op": "add", "path": "/a/b", "value": {"c": 1}}]
    ops = json_patch({"rows": [1]}, "append", "rows", {"rows": [2, 3]})
    assert ops == [
        {"op": "add", "path": "/rows/-", "value": 2},
        {"op": "add", "path": "/rows/-", "value": 3},
    ]
    ops = json_patch({"s": "ab"}, "append", "s", {"s": "c"})
    assert ops == [{"op": "replace", "path": "/s", "value": "abc"}]
    ops = json_patch({"o": {"x": 1}}, "merge", "o", {"o": {"x": 2, "y": 3}})
    assert ops == [
        {"op": "replace", "path": "/o/x", "value": 2},
        {"op": "add", "path": "/o/y", "value": 3},
    ]
    assert json_patch({"a": 1}, "replace", None, {"b": 2}) is None
    assert json_patch({"a/b": {"~": 1}}, "set", "a/b.~", {"a/b": {"~": 2}}) == [
        {"op": "replace", "path": "/a~1b/~0", "value": 2}
    ]


def test_an_error_message_closes_everything_then_run_error_and_nothing_after() -> None:
    enc = AGUIEncoder()
    wire: list[str] = []
    for m in [
        event("stream_start", {"request_id": "r"}),
        event("block_start", {"block_id": "B1", "type": "llm"}, block_id="B1"),
        # three threads: each message still open when the error comes (within one
        # thread a later message would end the earlier whole ones first)
        text("partial", message_id="M1", block_id="B1", thread_id="T1"),
        tool_call("c1", "f", '{"a"', message_id="M2", block_id="B1", thread_id="T2"),
        Message(type="thinking", message_id="M3", delta=True, props={"content": "x"}),
        error("tool failed", code="E42"),
    ]:
        wire += [frame_sse(e) for e in enc.feed(m)]
    assert enc.feed(text("late", message_id="M9")) == [] and enc.close() == []
    events = parse(wire)
    end = events[-1]
    assert end.type == EventType.RUN_ERROR and end.message == "tool failed" and end.code == "E42"
    assert [e.type for e in events[-6:-1]] == [
        EventType.TEXT_MESSAGE_END,
        EventType.TOOL_CALL_END,
        EventType.REASONING_MESSAGE_END,
        EventType.REASONING_END,
        EventType.STEP_FINISHED,
    ]


@pytest.mark.parametrize(
    "data, kind",
    [
        ({"status": "error", "error": "boom"}, EventType.RUN_ERROR),
        ({"status": "cancelled"}, EventType.RUN_FINISHED),
        (
            {
                "status": "completed",
                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
            },
            EventType.RUN_FINISHED,
        ),
    ],
)
def test_stream_end_status_picks_the_final_event(data: dict[str, Any], kind: Any) -> None:
    events = parse(sse_text([text("a", message_id="M1"), event("stream_end", data)]))
    end = events[-1]
    assert end.type == kind
    if data["status"] == "error":
        assert end.message == "boom"
    elif data["status"] == "cancelled":
        assert end.outcome.type == "cancelled"
    else:
        assert end.usage[0].input_tokens == 1 and end.usage[0].total_tokens == 3


def test_a_stream_without_any_lifecycle_events_is_still_well_ordered() -> None:
    msgs = [
        Message.from_dict(d)
        for d in (
            {"message_id": "M1", "thread_id": "T1", "type": "text", "props": {"content": "A"}},
            {"message_id": "M1", "thread_id": "T2", "type": "text", "props": {"content": "B"}},
            {
                "message_id": "M1",
                "thread_id": "T1",
                "type": "text",
                "delta": True,
                "props": {"content": "a"},
            },
            {
                "message_id": "M2",
                "type": "tool_call",
                "delta": True,
                "props": {"arguments": "{}"},
                "delta_path": "arguments",
            },
            {"message_id": "M3", "type": "thinking", "props": {"content": "t"}},
        )
    ]
    events = parse(sse_text(msgs))
    s = client_state(events)
    # the same message_id in two threads gets two AG-UI ids
    assert sorted(s["text"].values()) == ["Aa", "B"] and len(s["text"]) == 2
    assert s["tools"] == {"call_M2": {"name": "tool", "args": "{}"}}


def test_other_types_and_custom_events_become_custom_events() -> None:
    msgs = [
        image("https://x.test/i.png", alt="i", message_id="M1"),
        event("progress", {"pct": 10}),
        event("thread_start", {"thread_id": "T1"}, thread_id="T1"),
    ]
    s = client_state(parse(sse_text(msgs)))
    assert [name for name, _ in s["custom"]] == ["image", "progress", "thread_start"]
    assert s["custom"][0][1]["props"]["url"] == "https://x.test/i.png"
    assert s["custom"][1][1] == {"pct": 10}


def test_a_bad_delta_on_an_activity_is_dropped_with_a_warning() -> None:
    enc = AGUIEncoder()
    out = enc.feed(Message(type="chart", message_id="M1", props={"points": [1]}))
    out += enc.feed(
        Message(
            type="chart",
            message_id="M1",
            delta=True,
            delta_path="points.9",
            delta_action="set",
            props={"points": [None] * 9 + [5]},
        )
    )
    out += enc.close(status="completed")
    assert [e.type for e in out][-2:] == [EventType.ACTIVITY_SNAPSHOT, EventType.RUN_FINISHED]
    assert [w.code for w in enc.drain_warnings()] == ["bad_delta"]


@pytest.mark.parametrize(
    ("props", "delta"),
    [
        ({"message": ""}, {"message": 0}),  # a number onto a string
        ({"o": {"x": 1}}, {"o": [2]}),  # a list onto an object
        ({"o": {"x": 1}}, {"o": "s"}),
    ],
)
def test_an_append_of_the_wrong_kind_on_an_activity_is_dropped_with_a_warning(
    props: dict[str, Any], delta: dict[str, Any]
) -> None:
    enc = AGUIEncoder()
    out = enc.feed(Message(type="table", message_id="M1", props=props))
    out += enc.feed(Message(type="table", message_id="M1", delta=True, props=delta))
    out += enc.close(status="completed")
    assert [e.type for e in out][-2:] == [EventType.ACTIVITY_SNAPSHOT, EventType.RUN_FINISHED]
    assert [w.code for w in enc.drain_warnings()] == ["bad_delta"]


def test_two_open_tool_calls_of_one_id_get_two_ids() -> None:
    """Two threads' tool calls open at once under one call id: the second is told apart."""
    msgs = [
        Message(type="tool_call", props={"id": "c1", "name": "a"}, message_id="M1"),
        Message(type="tool_call", props={"id": "c1", "name": "b"}, message_id="M1", thread_id="T1"),
    ]
    events = parse(sse_text(msgs))
    starts = [e.tool_call_id for e in events if e.type == EventType.TOOL_CALL_START]
    assert starts == ["c1", "c1~2"]
    ends = [e.tool_call_id for e in events if e.type == EventType.TOOL_CALL_END]
    assert sorted(ends) == ["c1", "c1~2"]


def test_cli_encode_writes_sse() -> None:
    wire = list(cli_encode([text("hi", message_id="M1"), event("stream_end", {})], None))
    assert [e.type for e in parse(wire)] == [
        EventType.RUN_STARTED,
        EventType.TEXT_MESSAGE_START,
        EventType.TEXT_MESSAGE_CONTENT,
        EventType.TEXT_MESSAGE_END,
        EventType.RUN_FINISHED,
    ]


# -- tools and endings (issue 12) -----------------------------------------------------------------


def _encode(msgs: list[Message]) -> tuple[dict[str, Any], list[str]]:
    enc = AGUIEncoder()
    events = [e for m in msgs for e in enc.feed(m)] + enc.close()
    return client_state(parse([frame_sse(e) for e in events])), [
        w.code for w in enc.drain_warnings()
    ]


def test_tool_call_start_waits_for_the_name_and_carries_the_id_that_came_with_it() -> None:
    base: dict[str, Any] = {"type": "tool_call", "message_id": "M1", "delta": True}
    msgs = [
        event("message_start", {"message_id": "M1", "type": "tool_call"}, message_id="M1"),
        Message(props={"arguments": '{"n":'}, **base),
        Message(props={"arguments": " 3}"}, **base),
        Message(props={"id": "call_count", "name": "count"}, delta_action="merge", **base),
        event("message_end", {"message_id": "M1"}, message_id="M1"),
        event("stream_end", {}),
    ]
    s, codes = _encode(msgs)
    assert s["tools"] == {"call_count": {"name": "count", "args": '{"n": 3}'}} and codes == []


def test_a_nameless_call_is_named_tool_and_a_late_id_is_warned_about() -> None:
    nameless = [
        Message(type="tool_call", message_id="M1", delta=True, props={"arguments": "{}"}),
        event("stream_end", {}),
    ]
    s, codes = _encode(nameless)
    assert s["tools"] == {"call_M1": {"name": "tool", "args": "{}"}}
    assert codes == ["late_tool_name"]
    late_id = [
        tool_call(None, "f", "{}", message_id="M1"),
        Message(
            type="tool_call",
            message_id="M1",
            delta=True,
            delta_path="id",
            delta_action="set",
            props={"id": "call_real"},
        ),
        event("stream_end", {}),
    ]
    s, codes = _encode(late_id)
    assert list(s["tools"]) == ["call_M1"] and codes == ["late_tool_id"]


def test_tool_results_become_tool_call_result_events() -> None:
    msgs = [
        tool_call("call_w", "get_weather", '{"city":"Paris"}', message_id="M1"),
        Message(
            type="tool_result",
            message_id="M2",
            props={"call_id": "call_w", "name": "get_weather", "content": "18°C"},
        ),
        Message(
            type="tool_result",
            message_id="M2",
            delta=True,
            delta_path="content",
            props={"content": ", clear"},
        ),
        Message(
            type="tool_result", message_id="M3", props={"call_id": "call_x", "content": {"n": 2}}
        ),
        Message(type="tool_result", message_id="M4", props={"content": "orphan"}),
        event("stream_end", {}),
    ]
    s, codes = _encode(msgs)
    assert s["results"] == {"call_w": ("18°C, clear", "tool"), "call_x": ('{"n":2}', "tool")}
    assert [name for name, _ in s["custom"]] == ["tool_result"] and codes == []


def test_a_stream_without_stream_end_ends_with_run_error_incomplete() -> None:
    cut = [
        text("Starting the ans", message_id="M1"),
        tool_call("call_a", "lookup", '{"a":', message_id="M2"),
    ]
    s, codes = _encode(cut)
    assert s["end"].type == EventType.RUN_ERROR and s["end"].code == "incomplete"
    assert s["tools"] == {"call_a": {"name": "lookup", "args": '{"a":'}}
    assert codes == ["incomplete"]
    s, _ = _encode([text("a", message_id="M1"), event("stream_end", {})])
    assert s["end"].type == EventType.RUN_FINISHED and s["end"].usage is None


# -- property: any sequence of structured deltas -> patches that apply, to the same props --------

_key = st.sampled_from(["a", "b", "rows", "0", "x/y"])
_leaf = st.one_of(st.integers(0, 9), st.text(alphabet="pq", max_size=2), st.none())
_value = st.recursive(
    _leaf,
    lambda c: st.one_of(st.lists(c, max_size=2), st.dictionaries(_key, c, max_size=2)),
    max_leaves=4,
)
_path = st.one_of(
    st.none(),
    st.lists(st.one_of(_key, st.sampled_from(["0", "1"])), min_size=1, max_size=3).map(".".join),
)
_delta = st.tuples(st.sampled_from(["append", "replace", "merge", "set"]), _path, _value)


@settings(max_examples=80, deadline=None)
@given(first=st.dictionaries(_key, _value, max_size=3), deltas=st.lists(_delta, max_size=8))
def test_activity_patches_apply_strictly_and_match_the_assembled_props(
    first: dict[str, Any], deltas: list[Any]
) -> None:
    from agent_stream.merge import value_at

    msgs = [Message(type="widget", message_id="M1", props=first)]
    for action, path, value in deltas:
        if path is None:
            if not isinstance(value, dict):
                continue
            props = value
        else:
            try:
                props = value_at(path, value)
            except DeltaError:
                continue
        msgs.append(
            Message(
                type="widget",
                message_id="M1",
                delta=True,
                delta_path=path,
                delta_action=action,
                props=props,
            )
        )
    # the assembler is the reference; chunks it rejects are dropped by the encoder too
    kept: list[Message] = []
    asm = Assembler()
    for m in msgs:
        try:
            asm.feed(m)
        except DeltaError:
            continue
        kept.append(m)
    ref = asm.transcript
    s = client_state(parse(sse_text(kept)))
    [st_] = ref.messages
    assert s["activity"]["M1"] == ("widget", st_.props)


# -- property: any valid Message stream gives valid, well-ordered AG-UI --------------------------


@settings(max_examples=150, deadline=None)
@given(msgs=st.lists(st.one_of(any_message(), tool_message()), max_size=20))
def test_any_message_stream_gives_valid_well_ordered_ag_ui(msgs: list[Message]) -> None:
    client_state(parse(sse_text(msgs)))


# -- sub-agents: agent blocks are also SUBAGENT_* events ----------------------------------------


def _subagent_events(events: list[Any]) -> list[tuple[str, ...]]:
    """(type, run id, name or message/code, parent) of every SUBAGENT_* event."""
    out: list[tuple[str, ...]] = []
    for e in events:
        if e.type == EventType.SUBAGENT_STARTED:
            out.append(("started", e.subagent_run_id, e.name, e.parent_subagent_run_id or ""))
        elif e.type == EventType.SUBAGENT_FINISHED:
            out.append(("finished", e.subagent_run_id))
        elif e.type == EventType.SUBAGENT_ERROR:
            out.append(("error", e.subagent_run_id, e.message, e.code or ""))
    return out


def _retyped(msgs: list[Message], new: str) -> list[Message]:
    """The stream with its agent blocks' block_start typed ``new`` (not a sub-agent)."""
    out = []
    for m in msgs:
        data = (m.props or {}).get("data")
        if m.event == "block_start" and isinstance(data, dict) and data.get("type") == "agent":
            m = m.model_copy(update={"props": {**m.props, "data": {**data, "type": new}}})
        out.append(m)
    return out


def test_nested_relayed_sub_agents_are_subagent_events_and_the_rest_is_unchanged() -> None:
    async def run() -> list[Message]:
        inner = await replay_stream_async("weather in Paris")

        async def planner(out: StreamWriter) -> None:
            await out.send(text("Planning.", message_id="P1"))
            await out.relay(FakeReply(inner), name="Weather")

        middle = await collect(planner)

        async def caller(out: StreamWriter) -> None:
            await out.relay(FakeReply(middle), name="Planner", label="Trip planner")
            await out.send(text("All done.", message_id="X"))

        return await collect(caller, request_id="nest")

    msgs = asyncio.run(run())
    events = parse(sse_text(msgs))
    subs = _subagent_events(events)
    relay_ids = [
        EventView(m).block_id
        for m in msgs
        if m.event == "block_start" and EventView(m).type == "agent"
    ]
    outer, weather = relay_ids[0], relay_ids[1]
    assert subs[0] == ("started", outer, "Planner", "")
    assert ("started", weather, "Weather", outer) in subs
    assert subs[-1] == ("finished", outer) and ("finished", weather) in subs
    started = next(e for e in events if e.type == EventType.SUBAGENT_STARTED)
    assert started.description == "Trip planner"
    # nothing else changes: the same stream without agent blocks gives the same other events
    others = [e for e in events if not e.type.startswith("SUBAGENT_")]
    assert others == encode_messages(_retyped(msgs, "task"))
    assert client_state(events)["end"].type == EventType.RUN_FINISHED


def test_a_failed_sub_agent_is_subagent_error_and_the_run_goes_on() -> None:
    failing = [
        event("stream_start", {"request_id": "s"}),
        text("Looking", message_id="M1"),
        error("the weather service is down", code="upstream"),
        event("stream_end", {"status": "error", "error": "the weather service is down"}),
    ]

    async def caller(out: StreamWriter) -> None:
        try:
            await out.relay(FakeReply(failing), name="Weather")
        except RelayError:
            await out.send(text("Falling back.", message_id="F"))

        async def lost() -> FakeReply:
            raise ConnectionError("no route to the agent")

        with pytest.raises(RelayError):
            await out.relay(lost(), name="Lost", agent="agent1qlost")

    msgs = asyncio.run(collect(caller))
    events = parse(sse_text(msgs))
    subs = _subagent_events(events)
    assert [s[0] for s in subs] == ["started", "error", "started", "error"]
    assert subs[1][2:] == ("the weather service is down", "upstream")
    assert subs[3][2:] == ("no route to the agent", "undelivered")
    s = client_state(events)
    assert "Falling back." in s["text"].values()
    assert s["end"].type == EventType.RUN_FINISHED  # the caller recovered: no RUN_ERROR


def _agent_start(bid: str, **data: Any) -> Message:
    return event("block_start", {"block_id": bid, "type": "agent", **data}, block_id=bid)


def test_sub_agent_endings_and_odd_block_data() -> None:
    msgs = [
        event("stream_start", {"request_id": "r"}),
        _agent_start("A", agent_name=7, label="Searcher"),  # a non-string name: the label
        _agent_start("B", parent_block_id="A"),  # no name, no label: "agent"
        event(
            "block_start", {"block_id": "L", "type": "llm", "parent_block_id": "B"}, block_id="L"
        ),
        _agent_start("C", parent_block_id="L", agent_name="Deep"),  # nearest agent: B
        event("block_end", {"block_id": "C", "status": "cancelled"}, block_id="C"),
        event("block_end", {"block_id": "L"}, block_id="L"),
        event(
            "block_end",
            {
                "block_id": "B",
                "status": "error",
                "relay_status": "timeout",
                "error": "no reply in 30 s",
            },
            block_id="B",
        ),
        event("block_end", {"block_id": "A"}, block_id="A"),
        _agent_start("A", parent_block_id="A"),  # an id used again, its own parent
        _agent_start("D", parent_block_id="nowhere", agent_name=""),
        text("cut", message_id="M1", block_id="D"),
    ]
    events = parse(sse_text(msgs))
    assert _subagent_events(events) == [
        ("started", "A", "Searcher", ""),
        ("started", "B", "agent", "A"),
        ("started", "C", "Deep", "B"),
        ("error", "C", "the sub-agent was cancelled", "cancelled"),
        ("error", "B", "no reply in 30 s", "timeout"),
        ("finished", "A"),
        ("started", "A~2", "agent", ""),
        ("started", "D", "agent", ""),
        # the stream was cut: what is open fails with the run (innermost first)
        ("error", "D", INCOMPLETE_TEXT, "incomplete"),
        ("error", "A~2", INCOMPLETE_TEXT, "incomplete"),
    ]
    assert events[-1].type == EventType.RUN_ERROR


def test_an_error_inside_a_nested_block_fails_its_agent_once_then_is_shown() -> None:
    msgs = [
        _agent_start("A", agent_name="Outer"),
        _agent_start("B", parent_block_id="A"),
        event(
            "block_start", {"block_id": "L", "type": "llm", "parent_block_id": "B"}, block_id="L"
        ),
        error("model refused", block_id="L"),
        error("again", block_id="L"),
        event("block_end", {"block_id": "L", "status": "error"}, block_id="L"),
        event("block_end", {"block_id": "B", "status": "error"}, block_id="B"),
        event("stream_end", {"status": "completed"}),
    ]
    events = parse(sse_text(msgs))
    assert _subagent_events(events) == [
        ("started", "A", "Outer", ""),
        ("started", "B", "agent", "A"),
        ("error", "B", "model refused", "error"),
        ("finished", "A"),
    ]
    assert [e.value["props"]["message"] for e in events if e.type == EventType.CUSTOM] == ["again"]
    assert events[-1].type == EventType.RUN_FINISHED
    # outside any agent block an error still ends the run
    events = parse(sse_text([_agent_start("A"), error("boom")]))
    assert [e.type for e in events[-3:]] == [
        EventType.STEP_FINISHED,
        EventType.SUBAGENT_ERROR,
        EventType.RUN_ERROR,
    ]


@st.composite
def agent_event(draw: Any) -> Message:
    """A block_start/block_end of an agent block, or an error in a block: odd data included."""
    bid = draw(st.sampled_from(["B1", "B2", "B3"]))
    kind = draw(st.sampled_from(["start", "end", "error"]))
    if kind == "error":
        return error("failed", block_id=draw(st.sampled_from([None, "B1", "B2", "B3"])))
    if kind == "start":
        data = {
            "block_id": bid,
            "type": "agent",
            "parent_block_id": draw(st.sampled_from([None, "B1", "B2", "B3", 5])),
            "agent_name": draw(st.sampled_from([None, "", "Helper", 3])),
        }
        return event("block_start", data, block_id=bid)
    return event(
        "block_end",
        {
            "block_id": bid,
            "status": draw(st.sampled_from(["completed", "error", "cancelled", "odd", None])),
        },
        block_id=bid,
    )


@settings(max_examples=150, deadline=None)
@given(msgs=st.lists(st.one_of(any_message(), agent_event()), max_size=20))
def test_any_stream_with_agent_blocks_gives_valid_well_ordered_ag_ui(msgs: list[Message]) -> None:
    events = parse(sse_text(msgs))
    assert (
        sum(e.type == EventType.SUBAGENT_STARTED for e in events)
        == sum(e.type in (EventType.SUBAGENT_FINISHED, EventType.SUBAGENT_ERROR) for e in events)
        or events[-1].type == EventType.RUN_ERROR
    )


def test_a_langgraph_subgraph_in_a_subgraph_is_a_nested_subagent_with_its_text_inside() -> None:
    pytest.importorskip("langgraph")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langgraph.graph import START, MessagesState, StateGraph

    from agent_stream.sources import responder_for

    model = GenericFakeChatModel(messages=iter(["It is sunny in Paris"]))

    async def helper(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    def graph(node: str, inner: Any) -> Any:
        g = StateGraph(MessagesState)
        g.add_node(node, inner)
        g.add_edge(START, node)
        return g.compile()

    app = graph("planner", graph("weather", graph("helper", helper)))

    class Request:
        text, history, session = "Weather?", (), None

    msgs = asyncio.run(collect(lambda out: responder_for(app)(Request(), out)))
    events = parse(sse_text(msgs))
    subs = _subagent_events(events)
    planner, weather = subs[0][1], subs[1][1]
    assert subs[:2] == [
        ("started", planner, "planner", ""),
        ("started", weather, "weather", planner),
    ]
    assert subs[2:] == [("finished", weather), ("finished", planner)]
    types = [e.type for e in events]
    inside = types[
        types.index(
            EventType.SUBAGENT_STARTED, types.index(EventType.SUBAGENT_STARTED) + 1
        ) : types.index(EventType.SUBAGENT_FINISHED)
    ]
    text_of = "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert text_of == "It is sunny in Paris" and EventType.TEXT_MESSAGE_CONTENT in inside
    assert events[-1].type == EventType.RUN_FINISHED
