"""ChannelsEncoder: multi-channel JSONL, its channel policy, and a client rebuilding from it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agent_stream import merge
from agent_stream.adapters.channels import (
    CHANNELS,
    ChannelsEncoder,
    encode_messages,
    frame_jsonl,
    parse_channels,
)
from agent_stream.assemble import assemble
from agent_stream.commands.formats import encode_channels as cli_encode
from agent_stream.errors import UsageError, WarningCode, WireError
from agent_stream.message import Message, error, event, loading, text, tool_call
from agent_stream.writer import StreamWriter, collect


def lines(msgs: list[Message], **kw: Any) -> list[dict[str, Any]]:
    out = []
    for line in (frame_jsonl(e) for e in encode_messages(msgs, **kw)):
        assert line.endswith("\n") and line.count("\n") == 1
        obj = json.loads(line)
        assert set(obj) == {"channel", "type", "data"}
        assert obj["channel"] in CHANNELS
        out.append(obj)
    return out


class Client:
    """Keeps one buffer per (channel, thread_id, message_id), as the spec asks."""

    def __init__(self) -> None:
        self.text: dict[tuple[str, Any, Any], str] = {}
        self.ended: dict[tuple[str, Any, Any], str] = {}
        self.tools: dict[str, dict[str, Any]] = {}
        self.structured: dict[Any, dict[str, Any]] = {}
        self.errors: list[dict[str, Any]] = []
        self.final: dict[str, Any] | None = None

    def feed(self, ev: dict[str, Any]) -> None:
        c, t, d = ev["channel"], ev["type"], ev["data"]
        key = (c, d.get("thread_id"), d.get("message_id"))
        assert self.final is None, "nothing after stream.end"
        assert (
            key not in self.ended
            or (t == "message.end" and d["status"] == "retyped")
            or c in ("status", "error")
        ), f"{t} after message.end for {key}"
        if t.endswith(".delta") and c in ("text", "reasoning"):
            self.text[key] = self.text.get(key, "") + d["content"]
        elif t.endswith(".snapshot"):
            self.text[key] = d["content"]
        elif t == "message.end":
            self.ended[key] = d["status"]
        elif t == "tool_call.started":
            self.tools[d["tool_call_id"]] = {"name": d["name"], "args": "", "done": None}
        elif t == "tool_call.arguments.delta":
            self.tools[d["tool_call_id"]]["args"] += d["delta"]
        elif t == "tool_call.completed":
            self.tools[d["tool_call_id"]]["done"] = d["arguments"]
        elif t == "structured":
            cur = self.structured.get(d["message_id"], {})
            if d.get("delta"):
                cur = merge.apply(cur, d["action"], d.get("path"), d["props"])
            else:
                cur = merge.copy_json(d["props"])
            self.structured[d["message_id"]] = cur
        elif t == "error":
            self.errors.append(d)
        elif t == "stream.end":
            self.final = d


def client_of(events: list[dict[str, Any]]) -> Client:
    c = Client()
    for e in events:
        c.feed(e)
    assert c.final is not None and events[-1]["type"] == "stream.end"
    return c


async def _reply(out: StreamWriter) -> None:
    async with out.block("llm", label="Answer") as b:
        async with b.message("thinking") as m:
            await m.append("secret ")
            await m.append("plan")
        async with b.message("tool_call", props={"id": "call_1", "name": "search"}) as m:
            await m.append('{"q":', path="arguments")
            await m.append(' "x"}', path="arguments")

    async def one(th: Any) -> None:
        async with th.message("text") as m:
            for w in ("one ", "two "):
                await m.append(w)
                await asyncio.sleep(0)

    async def two(th: Any) -> None:
        async with th.message("text") as m:
            for w in ("uno ", "dos "):
                await m.append(w)
                await asyncio.sleep(0)

    await out.parallel(one, two)
    async with out.message("table") as m:
        await m.replace({"rows": []})
        await m.append([{"a": 1}], path="rows")
        await m.set(2, path="rows.0.a")
    await out.send(loading("Saving"))


def reply() -> list[Message]:
    return asyncio.run(collect(_reply))


def test_default_policy_drops_reasoning_and_a_client_rebuilds_the_rest() -> None:
    msgs = reply()
    events = lines(msgs)
    assert not [e for e in events if e["channel"] == "reasoning"]
    c = client_of(events)
    t = assemble(msgs)
    texts = {
        (m.thread_id, m.message_id): m.props["content"] for m in t.messages if m.type == "text"
    }
    assert {(k[1], k[2]): v for k, v in c.text.items() if k[0] == "text"} == texts
    assert c.tools == {"call_1": {"name": "search", "args": '{"q": "x"}', "done": '{"q": "x"}'}}
    [table] = [m for m in t.messages if m.type == "table"]
    assert table.props == {"rows": [{"a": 2}]}
    assert c.structured == {table.message_id: table.props}
    statuses = [e["data"] for e in events if e["type"] == "status"]
    assert statuses and statuses[0]["message"] == "Saving"
    assert c.final["status"] == "completed"
    assert all(s == "completed" for s in c.ended.values())


def test_a_named_channel_list_is_all_the_recipient_gets_plus_errors_and_the_end() -> None:
    msgs = [*reply()[:-1], error("disk full", code="E1"), event("stream_end", {"status": "error"})]
    events = lines(msgs, channels="text")
    assert {e["channel"] for e in events} == {"text", "error", "status"}
    assert [e["type"] for e in events if e["channel"] == "status"] == ["stream.end"]
    assert [e["data"]["message"] for e in events if e["channel"] == "error"] == ["disk full"]
    with_reasoning = lines(reply(), channels=["reasoning"])
    c = client_of(with_reasoning)
    assert list(c.text.values()) == ["secret plan"]
    assert list(c.ended.values()) == ["completed"]


def test_rewrites_are_snapshots_so_the_client_text_is_exact() -> None:
    msgs = [
        Message(type="text", message_id="M1", delta=True, props={"content": "draft"}),
        Message(
            type="text",
            message_id="M1",
            delta=True,
            delta_path="content",
            delta_action="replace",
            props={"content": "final"},
        ),
        Message(type="text", message_id="M1", delta=True, props={"content": "!"}),
    ]
    events = lines(msgs)
    assert [e["type"] for e in events] == [
        "message.delta",
        "message.snapshot",
        "message.delta",
        "message.end",
        "stream.end",
    ]
    assert client_of(events).text == {("text", None, "M1"): "final!"}


def test_a_type_change_moves_the_message_to_its_new_channel() -> None:
    msgs = [
        Message(type="text", message_id="M1", delta=True, props={"content": "Let me"}),
        Message(type="thinking", message_id="M1", type_change=True),
        Message(type="thinking", message_id="M1", delta=True, props={"content": " see"}),
    ]
    events = lines(msgs, channels="text,reasoning")
    assert [(e["channel"], e["type"]) for e in events] == [
        ("text", "message.delta"),
        ("text", "message.end"),
        ("reasoning", "thinking.snapshot"),
        ("reasoning", "thinking.delta"),
        ("reasoning", "message.end"),
        ("status", "stream.end"),
    ]
    assert events[1]["data"]["status"] == "retyped" and events[1]["data"]["type"] == "thinking"
    assert client_of(events).text[("reasoning", None, "M1")] == "Let me see"


def test_close_ends_open_messages_then_sends_stream_end_once() -> None:
    enc = ChannelsEncoder()
    out = enc.feed(text("hi", message_id="M1")) + enc.feed(
        tool_call("c", "f", "{}", message_id="M2")
    )
    out += enc.close(status="error", error="lost")
    assert enc.close() == [] and enc.feed(text("x")) == []
    assert [(e["channel"], e["type"]) for e in out] == [
        ("text", "message.snapshot"),
        ("tool", "tool_call.started"),
        ("tool", "tool_call.arguments.delta"),
        ("text", "message.end"),
        ("tool", "message.end"),
        ("status", "stream.end"),
    ]
    assert out[-1]["data"] == {"status": "error", "error": "lost"}
    assert out[3]["data"]["status"] == "error"


def test_a_whole_message_without_message_id_has_no_message_end() -> None:
    events = lines([text("hello"), tool_call("c9", "f", '{"a":1}')])
    assert [(e["channel"], e["type"]) for e in events] == [
        ("text", "message.snapshot"),
        ("tool", "tool_call.started"),
        ("tool", "tool_call.arguments.delta"),
        ("tool", "tool_call.completed"),
        ("status", "stream.end"),
    ]


def test_unknown_channels_are_refused() -> None:
    with pytest.raises(WireError, match="unknown channel"):
        parse_channels("text,secret")
    assert parse_channels(" text , tool ") == {"text", "tool"}

    class Args:
        channels = "nope"

    with pytest.raises(UsageError, match="--channels: unknown channel"):
        list(cli_encode([], Args()))


def test_hidden_reasoning_revealed_by_a_type_change_arrives_whole() -> None:
    msgs = [
        Message(type="thinking", message_id="M1", delta=True, props={"content": "It is "}),
        Message(type="text", message_id="M1", type_change=True),
        Message(type="text", message_id="M1", delta=True, props={"content": "42."}),
    ]
    events = lines(msgs)
    assert [(e["channel"], e["type"]) for e in events] == [
        ("text", "message.snapshot"),
        ("text", "message.delta"),
        ("text", "message.end"),
        ("status", "stream.end"),
    ]
    assert client_of(events).text == {("text", None, "M1"): "It is 42."}


# -- tools and endings (issue 12) -----------------------------------------------------------------


def _run(msgs: list[Message]) -> tuple[list[dict[str, Any]], list[str]]:
    enc = ChannelsEncoder("text,tool,status")
    events = [e for m in msgs for e in enc.feed(m)] + enc.close()
    return events, [w.code for w in enc.drain_warnings()]


def test_a_message_of_another_type_after_its_end_sends_nothing_on_any_channel() -> None:
    # Found by the property test below: a tool result ended by its block, then a tool call
    # and a tool result with the same ids. Both come after the message's end: warned, not sent
    # (they reopened it on the tool channel, and the structured one spoke after its end).
    ids = {"message_id": "M1", "thread_id": "T1"}
    enc = ChannelsEncoder("text,tool,structured")
    msgs = [
        Message(type="tool_result", props={}, **ids),
        event("block_end"),
        Message(type="tool_call", props={"id": "c", "name": "late"}, **ids),
        Message(type="tool_result", props={"content": "late"}, **ids),
    ]
    events = [e for m in msgs for e in enc.feed(m)] + enc.close()
    ended = next(i for i, e in enumerate(events) if e["type"] == "message.end")
    assert [e for e in events[ended + 1 :] if e["data"].get("message_id") == "M1"] == []
    assert [w.code for w in enc.drain_warnings()].count(WarningCode.AFTER_END) == 2


def test_tool_call_started_waits_for_the_name_and_completed_carries_a_later_one() -> None:
    base: dict[str, Any] = {"type": "tool_call", "message_id": "M1", "delta": True}
    msgs = [
        Message(props={"arguments": '{"n":'}, **base),
        Message(props={"id": "call_c", "name": "count"}, delta_action="merge", **base),
        Message(props={"arguments": " 3}"}, **base),
        Message(props={"name": "count_to"}, delta_path="name", delta_action="set", **base),
        event("stream_end", {}),
    ]
    events, codes = _run(msgs)
    tool = [(e["type"], e["data"]) for e in events if e["channel"] == "tool"]
    assert tool[0] == (
        "tool_call.started",
        {"message_id": "M1", "tool_call_id": "call_c", "name": "count"},
    )
    assert tool[1][1]["delta"] == '{"n":' and tool[2][1]["delta"] == " 3}"
    assert tool[3][0] == "tool_call.completed" and tool[3][1]["name"] == "count_to"
    assert codes == []  # the late name is carried by tool_call.completed


def test_a_nameless_call_is_named_tool_and_a_late_id_is_warned_about() -> None:
    events, codes = _run(
        [
            Message(type="tool_call", message_id="M1", delta=True, props={"arguments": "{}"}),
            event("stream_end", {}),
        ]
    )
    assert client_of(events).tools == {"call_M1": {"name": "tool", "args": "{}", "done": "{}"}}
    assert codes == ["late_tool_name"]
    _, codes = _run(
        [
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
    )
    assert codes == ["late_tool_id"]


def test_a_stream_without_stream_end_ends_incomplete() -> None:
    events, codes = _run(
        [text("Starting", message_id="M1"), tool_call("call_a", "lookup", '{"a":', message_id="M2")]
    )
    c = client_of(events)
    assert c.final is not None and c.final["status"] == "incomplete" and c.final["error"]
    assert c.ended == {("text", None, "M1"): "incomplete", ("tool", None, "M2"): "incomplete"}
    assert c.tools["call_a"]["done"] is None  # never completed: its arguments were cut
    assert codes == ["incomplete"]


# -- property: any valid Message stream gives well-formed channel events -------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from strategies import any_message, tool_message  # noqa: E402


@settings(max_examples=150, deadline=None)
@given(
    msgs=st.lists(st.one_of(any_message(), tool_message()), max_size=20),
    chosen=st.sets(st.sampled_from(CHANNELS)),
)
def test_any_message_stream_gives_well_formed_events_within_the_policy(
    msgs: list[Message], chosen: set[str]
) -> None:
    events = lines(msgs, channels=sorted(chosen))
    assert sum(e["type"] == "stream.end" for e in events) == 1
    allowed = chosen | {"error"}
    for e in events[:-1]:
        assert e["channel"] in allowed
    errors_in = sum(
        m.type == "error"
        for m in msgs[: next((i for i, m in enumerate(msgs) if m.event == "stream_end"), len(msgs))]
    )
    assert sum(e["channel"] == "error" for e in events) == errors_in
    ended: set[tuple[str, Any, Any]] = set()
    for e in events:
        d = e["data"]
        key = (e["channel"], d.get("thread_id"), d.get("message_id"))
        if d.get("message_id") and e["channel"] not in ("status", "error"):
            assert key not in ended, f"{e} after message.end"
        if e["type"] == "message.end" and d["status"] != "retyped":  # a retyped one may return
            ended.add(key)
