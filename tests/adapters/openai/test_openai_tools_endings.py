"""The OpenAI wire's tool policy, late tool names and ids, and truthful endings (issue 12).

Every wire is read back with the ``openai`` package (``client_view`` validates each chunk)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_fixtures import client_view
from strategies import any_message, tool_message

from agent_stream.adapters.openai import OpenAIEncoder, encode_messages, frame_sse
from agent_stream.message import Message, event, text, thinking, tool_call

END = event("stream_end", {"status": "completed"})
USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def run(msgs: list[Message], **kw: Any) -> tuple[dict[str, Any], list[str]]:
    """The client's view of the wire, and the encoder's warning codes."""
    enc = OpenAIEncoder(**kw)
    items = [i for m in msgs for i in enc.feed(m)] + enc.close()
    return client_view([frame_sse(i) for i in items]), [w.code for w in enc.drain_warnings()]


def late_named() -> list[Message]:
    """Arguments first, then the id and name together (as the conformance corpus has it)."""
    base: dict[str, Any] = {"type": "tool_call", "message_id": "M1", "delta": True}
    return [
        event("message_start", {"message_id": "M1", "type": "tool_call"}, message_id="M1"),
        Message(props={"arguments": '{"n":'}, **base),
        Message(props={"arguments": " 3}"}, **base),
        Message(props={"id": "call_count", "name": "count"}, delta_action="merge", **base),
        event("message_end", {"message_id": "M1"}, message_id="M1"),
        text("Counted.", message_id="M2"),
        END,
    ]


def result(call_id: str, name: str, content: Any, mid: str) -> Message:
    return Message(
        type="tool_result",
        message_id=mid,
        props={"call_id": call_id, "name": name, "content": content},
    )


# -- the tool policy ----------------------------------------------------------------------------


def test_agent_tool_calls_and_results_are_progress_lines_in_reasoning() -> None:
    msgs = [
        thinking("Looking it up.", message_id="M0"),
        tool_call("call_w", "get_weather", '{"city":"Paris"}', message_id="M1"),
        result("call_w", "get_weather", "18°C, clear", "M2"),
        result("call_x", "stats", {"n": 2}, "M3"),
        text("It is 18°C.", message_id="M4"),
        END,
    ]
    view, codes = run(msgs)
    assert view["reasoning"] == (
        'Looking it up.\n⚙ get_weather({"city":"Paris"})\n'
        '✓ get_weather → 18°C, clear\n✓ stats → {"n":2}\n'
    )
    assert view["tools"] == {} and view["finish"] == ["stop"] and codes == []
    assert view["content"] == "It is 18°C."


def test_a_progress_line_waits_for_its_calls_end_so_a_rewrite_is_exact() -> None:
    base: dict[str, Any] = {
        "type": "tool_call",
        "message_id": "M1",
        "delta": True,
        "delta_path": "arguments",
    }
    msgs = [
        tool_call(None, "f", '{"a": 1}', message_id="M1"),
        Message(props={"arguments": '{"b": 2}'}, delta_action="replace", **base),
        END,
    ]
    view, codes = run(msgs)
    assert view["reasoning"] == '⚙ f({"b": 2})\n' and codes == []


def test_client_policy_keeps_tool_calls_and_an_unknown_policy_is_refused() -> None:
    view, _ = run([tool_call("c1", "f", "{}", message_id="M1"), END], tool_calls="client")
    assert view["tools"] == {0: {"id": "c1", "name": "f", "args": "{}"}}
    assert view["finish"] == ["tool_calls"] and view["reasoning"] == ""
    with pytest.raises(ValueError, match="tool_calls"):
        OpenAIEncoder(tool_calls="server")


# -- late names and ids -------------------------------------------------------------------------


def test_no_tool_call_fragment_goes_out_before_the_name_and_the_late_id_is_carried() -> None:
    items = encode_messages(late_named(), tool_calls="client")
    frags = [tc for i in items if hasattr(i, "delta") for tc in i.delta.get("tool_calls", [])]  # type: ignore[union-attr]
    assert frags[0] == {
        "index": 0,
        "id": "call_count",
        "type": "function",
        "function": {"name": "count", "arguments": '{"n": 3}'},
    }
    assert len(frags) == 1
    view, codes = run(late_named(), tool_calls="client")
    assert view["tools"] == {0: {"id": "call_count", "name": "count", "args": '{"n": 3}'}}
    assert view["content"] == "Counted." and codes == []


def test_late_names_in_the_agent_policy_name_the_progress_line() -> None:
    view, codes = run(late_named())
    assert view["reasoning"] == '⚙ count({"n": 3})\n' and codes == []


def test_a_call_that_ends_nameless_is_sent_as_tool_with_a_warning() -> None:
    nameless = [
        Message(type="tool_call", message_id="M1", delta=True, props={"arguments": "{}"}),
        END,
    ]
    view, codes = run(nameless, tool_calls="client")
    assert view["tools"][0]["name"] == "tool" and codes == ["late_tool_name"]
    view, codes = run(nameless)
    assert view["reasoning"] == "⚙ tool({})\n" and codes == ["late_tool_name"]


def test_an_id_or_name_changed_after_the_first_fragment_is_warned_about() -> None:
    msgs = [
        tool_call(None, "f", '{"a":', message_id="M1"),
        Message(
            type="tool_call",
            message_id="M1",
            delta=True,
            delta_path="id",
            delta_action="set",
            props={"id": "call_real"},
        ),
        Message(
            type="tool_call",
            message_id="M1",
            delta=True,
            delta_path="name",
            delta_action="set",
            props={"name": "g"},
        ),
        END,
    ]
    view, codes = run(msgs, tool_calls="client")
    assert view["tools"][0]["id"] == "call_M1" and view["tools"][0]["name"] == "f"
    assert codes == ["late_tool_id", "late_tool_name"]


# -- truthful endings ---------------------------------------------------------------------------


def test_a_stream_closed_without_stream_end_is_an_incomplete_error_not_a_finish() -> None:
    cut = [
        text("Starting the ans", message_id="M1"),
        tool_call("call_a", "lookup", '{"a":', message_id="M2"),
    ]
    for policy in ("agent", "client"):
        view, codes = run(cut, tool_calls=policy, include_usage=True)
        assert view["error"]["code"] == "incomplete" and "incomplete" in view["error"]["message"]
        assert view["finish"] == [] and view["usage"] is None
        assert view["content"] == "Starting the ans" and codes == ["incomplete"]


def test_usage_is_sent_only_when_known_and_never_as_invented_zeros() -> None:
    view, _ = run([text("a", message_id="M1"), END], include_usage=True)
    assert view["usage"] is None
    with_usage = event("stream_end", {"status": "completed", "usage": USAGE})
    view, _ = run([text("a", message_id="M1"), with_usage], include_usage=True)
    assert (view["usage"].prompt_tokens, view["usage"].total_tokens) == (3, 5)
    partial = event(
        "stream_end", {"status": "completed", "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    )
    view, _ = run([text("a", message_id="M1"), partial], include_usage=True)
    assert view["usage"].total_tokens == 5
    only_total = event("stream_end", {"status": "completed", "usage": {"total_tokens": 5}})
    view, _ = run([text("a", message_id="M1"), only_total], include_usage=True)
    assert view["usage"] is None


@settings(max_examples=100, deadline=None)
@given(
    msgs=st.lists(st.one_of(any_message(), tool_message()), max_size=20),
    policy=st.sampled_from(["agent", "client"]),
)
def test_any_stream_in_either_policy_is_accepted_and_never_names_a_call_empty(
    msgs: list[Message], policy: str
) -> None:
    view, _ = run(msgs, tool_calls=policy, include_usage=True)
    assert all(t["name"] for t in view["tools"].values())
    if policy == "agent":
        assert view["tools"] == {} and "tool_calls" not in view["finish"]
