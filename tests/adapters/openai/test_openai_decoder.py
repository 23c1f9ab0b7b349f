"""OpenAIDecoder and OpenAISSEDecoder: chat.completion.chunk dicts and SSE text into Messages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream.adapters.openai import (
    OpenAIDecoder,
    OpenAISSEDecoder,
    decode_chunks,
    encode_messages,
)
from agent_stream.assemble import assemble
from agent_stream.errors import WireError
from agent_stream.message import ERROR, Message


def ch(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    c.update(extra)
    return c


def tc(
    index: int, id: str | None = None, name: str | None = None, args: str | None = None
) -> dict[str, Any]:
    f: dict[str, Any] = {}
    if name is not None:
        f["name"] = name
    if args is not None:
        f["arguments"] = args
    d: dict[str, Any] = {"index": index, "function": f}
    if id is not None:
        d["id"], d["type"] = id, "function"
    return d


def events(msgs: list[Message]) -> list[str]:
    return [m.event or m.type for m in msgs]


def test_kinds_switch_to_new_messages_with_start_end_and_chunk_counts() -> None:
    msgs = decode_chunks(
        [
            ch({"role": "assistant", "content": ""}),
            ch({"reasoning_content": "think "}),
            ch({"reasoning_content": "more"}),
            ch({"content": "Hel"}),
            ch({"content": "lo"}),
            ch({"refusal": "no"}),
            ch(finish="stop"),
            {
                "id": "chatcmpl-1",
                "choices": [],
                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
            },
        ]
    )
    assert events(msgs) == [
        "stream_start",
        "message_start",
        "thinking",
        "thinking",
        "message_end",
        "message_start",
        "text",
        "text",
        "message_end",
        "message_start",
        "refusal",
        "message_end",
        "stream_end",
    ]
    content = [m for m in msgs if not m.is_lifecycle]
    assert all(m.message_id for m in content)
    assert len({m.message_id for m in content}) == 3
    ends = [m.event_data for m in msgs if m.event == "message_end"]
    assert [(e["type"], e["chunk_count"], e["extra"]["content"]) for e in ends] == [
        ("thinking", 2, "think more"),
        ("text", 2, "Hello"),
        ("refusal", 1, "no"),
    ]
    end = msgs[-1].event_data
    assert end["finish_reason"] == "stop" and end["status"] == "completed"
    assert end["usage"] == {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    assert msgs[0].event_data["request_id"] == "chatcmpl-1"
    t = assemble(msgs)
    assert [(m.type, m.props.get("content"), m.status) for m in t.messages] == [
        ("thinking", "think more", "completed"),
        ("text", "Hello", "completed"),
        ("refusal", "no", "completed"),
    ]
    assert not t.warnings


def test_parallel_tool_calls_are_merged_by_index_into_full_arguments() -> None:
    msgs = decode_chunks(
        [
            ch({"tool_calls": [tc(0, "call_a", "get_weather", "")]}),
            ch({"tool_calls": [tc(0, args='{"city": ')]}),
            ch({"tool_calls": [tc(1, "call_b", "get_time", '{"tz"')]}),
            ch({"tool_calls": [tc(0, args='"Paris"}')]}),  # interleaved with index 1
            ch({"tool_calls": [tc(1, args=': "CET"}')]}),
            ch(finish="tool_calls"),
        ]
    )
    t = assemble(msgs)
    assert [m.props for m in t.messages] == [
        {"id": "call_a", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"id": "call_b", "name": "get_time", "arguments": '{"tz": "CET"}'},
    ]
    assert all(m.status == "completed" for m in t.messages)
    assert msgs[-1].event_data["finish_reason"] == "tool_calls"
    starts = [m.event_data for m in msgs if m.event == "message_start"]
    assert starts[0]["tool_call"] == {"id": "call_a", "name": "get_weather"}


def test_servers_reusing_index_zero_are_kept_apart_by_id() -> None:
    msgs = decode_chunks(
        [
            ch({"tool_calls": [tc(0, "call_a", "f", '{"x":')]}),
            ch({"tool_calls": [tc(0, args="1}")]}),
            ch({"tool_calls": [tc(0, "call_b", "g", '{"y":')]}),
            ch({"tool_calls": [tc(0, args="2}")]}),
            ch(finish="tool_calls"),
        ]
    )
    t = assemble(msgs)
    assert [(m.props["id"], m.props["arguments"]) for m in t.messages] == [
        ("call_a", '{"x":1}'),
        ("call_b", '{"y":2}'),
    ]


def test_servers_sending_the_id_on_every_fragment_give_one_call() -> None:
    t = assemble(
        decode_chunks(
            [
                ch({"tool_calls": [tc(0, "call_a", "f", '{"x"')]}),
                ch({"tool_calls": [tc(0, "call_a", "f", ": 1}")]}),
                ch(finish="tool_calls"),
            ]
        )
    )
    assert [m.props for m in t.messages] == [{"id": "call_a", "name": "f", "arguments": '{"x": 1}'}]


@pytest.mark.parametrize(
    "bad, says",
    [
        ([1, 2], "JSON object"),
        ({"choices": "x"}, "choices must be a list"),
        ({"choices": [{"index": 0, "delta": "x"}]}, "delta must be an object"),
        ({"choices": [{"index": 0, "delta": {"content": 5}}]}, "delta.content must be a string"),
        ({"choices": [{"index": 0, "delta": {"tool_calls": {}}}]}, "tool_calls must be a list"),
        ({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "a"}]}}]}, "index"),
        ({"choices": [{"index": 0, "delta": {}, "finish_reason": 3}]}, "finish_reason"),
        ({"choices": [], "usage": 7}, "usage must be an object"),
    ],
)
def test_malformed_chunks_raise_wire_error_and_keep_the_state(bad: Any, says: str) -> None:
    dec = OpenAIDecoder()
    out = dec.feed(ch({"content": "Hi"}))
    with pytest.raises(WireError, match=says):
        dec.feed(bad)
    out += dec.feed(ch({"content": " there"}, finish="stop"))
    out += dec.close()
    assert assemble(out).text() == "Hi there"


def test_a_cut_stream_ends_open_messages_with_error_and_says_so() -> None:
    dec = OpenAIDecoder()
    out = dec.feed(ch({"content": "Half an ans"}))
    out += dec.close()
    t = assemble(out)
    assert t.text() == "Half an ans"
    assert [m.status for m in t.messages if m.type == "text"] == ["error"]
    [err] = [m for m in out if m.type == ERROR]
    assert err.message_id and err.props["code"] == "incomplete"
    assert t.status == "error"
    assert out[-1].event_data["error"].startswith("the model stream ended")
    assert dec.close() == []


def test_done_without_finish_reason_is_complete() -> None:
    out = decode_chunks([ch({"content": "ok"})], done=True)
    assert assemble(out).status == "completed"


def test_an_error_chunk_ends_the_stream_with_a_readable_error() -> None:
    dec = OpenAIDecoder()
    out = dec.feed(ch({"content": "start"}))
    out += dec.feed({"error": {"message": "rate limited", "code": "rate_limit"}})
    out += dec.feed(ch({"content": "ignored"}))
    out += dec.close(done=True)
    t = assemble(out)
    assert t.text() == "start" and t.status == "error"
    [err] = [m for m in out if m.type == ERROR]
    assert err.props == {"message": "rate limited", "code": "rate_limit"}
    assert [w.code for w in dec.drain_warnings()] == ["after_end"]


def test_other_choices_are_ignored_with_one_warning() -> None:
    dec = OpenAIDecoder()
    two = {
        "choices": [
            {"index": 0, "delta": {"content": "a"}},
            {"index": 1, "delta": {"content": "b"}},
        ]
    }
    out = dec.feed(two) + dec.feed(two) + dec.close(done=True)
    assert assemble(out).text() == "aa"
    assert [w.code for w in dec.drain_warnings()] == ["other_choice"]


def test_reasoning_field_name_used_by_some_servers_is_accepted() -> None:
    t = assemble(decode_chunks([ch({"reasoning": "r"}), ch({"content": "c"}, "stop")]))
    assert [(m.type, m.props["content"]) for m in t.messages] == [("thinking", "r"), ("text", "c")]


def test_sse_lines_decode_and_bad_lines_raise() -> None:
    dec = OpenAISSEDecoder()
    out: list[Message] = []
    for line in [
        ": keep-alive",
        "event: message",
        "id: 1",
        "retry: 10",
        "",
        "data: " + json.dumps(ch({"content": "A"})),
        "data:" + json.dumps(ch({"content": "B"}, "stop")),
        json.dumps(ch({"content": ""})),
        "data: [DONE]",
    ]:
        out += dec.feed_line(line)
    with pytest.raises(WireError, match="not JSON"):
        OpenAISSEDecoder().feed_line("data: {oops")
    with pytest.raises(WireError, match="not an SSE line"):
        OpenAISSEDecoder().feed_line("hello there")
    assert dec.feed_line("data: " + json.dumps(ch({"content": "late"}))) == []
    out += dec.close()
    assert assemble(out).text() == "AB"
    assert [w.code for w in dec.drain_warnings()] == ["after_done"]


# -- round trip: chunks -> Messages -> chunks ----------------------------------------------------


def _accumulate(chunks: list[Any]) -> dict[str, Any]:
    view: dict[str, Any] = {"content": "", "reasoning": "", "refusal": "", "tools": []}
    slots: dict[int, dict[str, str]] = {}
    for c in chunks:
        if not isinstance(c, dict):
            continue
        for choice in c.get("choices") or []:
            d = choice["delta"]
            view["content"] += d.get("content") or ""
            view["reasoning"] += d.get("reasoning_content") or ""
            view["refusal"] += d.get("refusal") or ""
            for t in d.get("tool_calls") or []:
                s = slots.setdefault(t["index"], {"id": "", "name": "", "args": ""})
                s["id"] += t.get("id") or ""
                fn = t.get("function") or {}
                s["name"] += fn.get("name") or ""
                s["args"] += fn.get("arguments") or ""
    view["tools"] = [slots[i] for i in sorted(slots)]
    return view


_piece = st.text(alphabet='xyé {}":', min_size=1, max_size=5)
_kind = st.sampled_from(["reasoning_content", "content", "refusal", "tool"])


@settings(max_examples=60, deadline=None)
@given(plan=st.lists(st.tuples(_kind, _piece, st.booleans()), min_size=1, max_size=30))
def test_round_trip_keeps_text_reasoning_and_tool_calls(plan: list[Any]) -> None:
    chunks: list[dict[str, Any]] = []
    n_tools = 0
    last_tool = False
    for kind, piece, new_call in plan:
        if kind == "tool":
            if new_call or not last_tool:
                chunks.append(ch({"tool_calls": [tc(n_tools, f"call_{n_tools}", "fn", piece)]}))
                n_tools += 1
            else:  # arguments continue only right after their call (as servers send them)
                chunks.append(ch({"tool_calls": [tc(n_tools - 1, args=piece)]}))
        else:
            chunks.append(ch({kind: piece}))
        last_tool = kind == "tool"
    chunks.append(ch(finish="tool_calls" if n_tools else "stop"))
    msgs = decode_chunks(chunks)
    again = [i.data() for i in encode_messages(msgs, tool_calls="client")]
    assert _accumulate(again) == _accumulate(chunks)
    # and decoding our own output again gives the same messages
    t1, t2 = assemble(msgs), assemble(decode_chunks([c for c in again if c != "[DONE]"]))
    assert [(m.type, m.props, m.status) for m in t1.messages] == [
        (m.type, m.props, m.status) for m in t2.messages
    ]
    assert t1.stream_data["finish_reason"] == t2.stream_data["finish_reason"]
