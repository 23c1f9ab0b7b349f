"""OpenAIEncoder: every event it writes is read back by the official ``openai`` package.

Each test decodes the SSE text with ``openai._streaming.SSEDecoder`` and validates every chunk
with ``ChatCompletionChunk.model_validate``, then accumulates it the way a client does.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from openai_fixtures import client_view, reply_messages
from strategies import any_message

from agent_stream.adapters.openai import OpenAIEncoder, encode_messages, frame_sse
from agent_stream.assemble import assemble
from agent_stream.commands.formats import encode_openai as cli_encode
from agent_stream.message import (
    Message,
    action,
    audio,
    error,
    event,
    image,
    text,
    thinking,
    tool_call,
    video,
)


def wire_of(msgs: list[Message], **kw: Any) -> list[str]:
    """The SSE text of the stream, each event checked to be one ``data:`` event."""
    out = [frame_sse(i) for i in encode_messages(msgs, **kw)]
    assert all(s.startswith("data: ") and s.endswith("\n\n") for s in out)
    return out


def dicts_of(msgs: list[Message], **kw: Any) -> list[Any]:
    """The JSON value of each item: chunk and error dicts, and the string ``[DONE]``."""
    return [i.data() for i in encode_messages(msgs, **kw)]


def sse_of(items: list[Any]) -> list[str]:
    return [frame_sse(i) for i in items]


def reply() -> list[Message]:
    return reply_messages()


# -- tests ---------------------------------------------------------------------------------------


def test_a_hierarchical_reply_is_read_by_the_openai_package_as_the_transcript_says() -> None:
    msgs = reply()
    view = client_view(wire_of(msgs))
    t = assemble(msgs)
    assert view["content"] == t.text()
    assert view["content"].startswith("Weather: sunny, 25°C. News: all quiet. word0 ")
    # the agent's own tool call is progress, not a request for the client
    assert view["reasoning"] == 'Let me check.\n⚙ search({"q": "weather"})\n'
    assert view["tools"] == {}
    assert view["ids"] == {"chatcmpl-req-1"}
    assert view["finish"] == ["stop"]


def test_with_tool_calls_client_the_agents_calls_are_tool_calls() -> None:
    view = client_view(wire_of(reply(), tool_calls="client"))
    assert view["reasoning"] == "Let me check."
    assert view["tools"] == {0: {"id": "call_1", "name": "search", "args": '{"q": "weather"}'}}
    assert view["finish"] == ["stop"]  # text came last


def test_concurrent_threads_are_sent_one_after_the_other_not_interleaved() -> None:
    # M3 and M4 interleave in the Message stream; the client gets M3 whole, then M4.
    msgs = reply()
    wire = dicts_of(msgs)
    contents = [
        c["choices"][0]["delta"].get("content")
        for c in wire
        if isinstance(c, dict) and c.get("choices")
    ]
    contents = [c for c in contents if c]
    assert contents[:4] == ["Weather: ", "sunny", ", 25°C. ", "News: all quiet. "]


def test_usage_chunk_comes_last_before_done_with_the_stream_end_usage() -> None:
    msgs = [
        text("Hi", message_id="M1"),
        event(
            "stream_end",
            {
                "status": "completed",
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
            },
        ),
    ]
    wire = wire_of(msgs, include_usage=True)
    view = client_view(wire)
    assert (view["usage"].prompt_tokens, view["usage"].total_tokens) == (3, 5)
    assert '"choices":[]' in wire[-2] and wire[-1] == "data: [DONE]\n\n"
    assert client_view(wire_of(msgs))["usage"] is None


def test_finish_reason_from_stream_end_else_tool_calls_after_a_tool_call_else_stop() -> None:
    end = event("stream_end", {"status": "completed"})
    end_length = event("stream_end", {"status": "completed", "finish_reason": "length"})
    assert client_view(wire_of([text("a", message_id="M1"), end_length]))["finish"] == ["length"]
    tool_last = [text("a", message_id="M1"), tool_call("c", "f", "{}", message_id="M2"), end]
    assert client_view(wire_of(tool_last, tool_calls="client"))["finish"] == ["tool_calls"]
    text_last = [tool_call("c", "f", "{}", message_id="M1"), text("a", message_id="M2"), end]
    assert client_view(wire_of(text_last, tool_calls="client"))["finish"] == ["stop"]
    odd = event("stream_end", {"status": "completed", "finish_reason": "end_turn"})
    assert client_view(wire_of([text("a"), odd]))["finish"] == ["stop"]


def test_agent_tools_never_finish_with_tool_calls() -> None:
    said = event("stream_end", {"status": "completed", "finish_reason": "tool_calls"})
    msgs = [text("a", message_id="M1"), tool_call("c", "f", "{}", message_id="M2"), said]
    view = client_view(wire_of(msgs))
    assert view["finish"] == ["stop"] and view["tools"] == {}
    assert client_view(wire_of(msgs, tool_calls="client"))["finish"] == ["tool_calls"]


def test_an_error_message_is_sent_at_once_then_only_done() -> None:
    enc = OpenAIEncoder()
    first = sse_of(enc.feed(text("partial", message_id="M1")))
    err = sse_of(enc.feed(error("model overloaded", code="overloaded")))
    assert err[-1] == "data: [DONE]\n\n"
    assert enc.finished
    assert enc.feed(text("more", message_id="M2")) == [] and enc.close() == []
    view = client_view(first + err)
    assert view["content"] == "partial"
    assert view["error"] == {"message": "model overloaded", "code": "overloaded"}
    assert view["finish"] == []


def test_held_text_is_flushed_before_the_error_object() -> None:
    msgs = [
        text("A1 ", message_id="M1", thread_id="T1"),
        text("B1 ", message_id="M2", thread_id="T2"),
        error("boom"),
    ]
    view = client_view(wire_of(msgs))
    assert view["content"] == "A1 B1 "
    assert view["error"]["message"] == "boom"


def test_stream_end_error_or_cancelled_without_an_error_message_sends_an_error_object() -> None:
    failed = event("stream_end", {"status": "error", "error": "RuntimeError: disk full"})
    view = client_view(wire_of([text("x", message_id="M1"), failed]))
    assert view["error"] == {"message": "RuntimeError: disk full", "code": "error"}
    cancelled = event("stream_end", {"status": "cancelled"})
    view = client_view(wire_of([cancelled]))
    assert view["error"] == {"message": "the stream was cancelled", "code": "cancelled"}


def test_rewrites_of_text_extend_or_restate_after_a_line_break() -> None:
    base = dict(message_id="M1", type="text", delta=True)
    msgs = [
        Message(props={"content": "Hello"}, **base),  # type: ignore[arg-type]
        # replace that extends: only the new tail goes out
        Message(
            props={"content": "Hello, world"}, delta_path="content", delta_action="replace", **base
        ),  # type: ignore[arg-type]
        # set that changes earlier text: a line break and the new text
        Message(props={"content": "Goodbye"}, delta_path="content", delta_action="set", **base),  # type: ignore[arg-type]
        # merge that carries content and extends it
        Message(props={"content": "Goodbye!", "mood": "ok"}, delta_action="merge", **base),  # type: ignore[arg-type]
        # merge and set elsewhere: nothing visible
        Message(props={"mood": "fine"}, delta_action="merge", **base),  # type: ignore[arg-type]
        Message(props={"meta": {"a": 1}}, delta_path="meta", delta_action="set", **base),  # type: ignore[arg-type]
        # append after a rewrite continues the current text
        Message(props={"content": " Bye."}, **base),  # type: ignore[arg-type]
    ]
    view = client_view(wire_of(msgs))
    assert view["content"] == "Hello, world\nGoodbye! Bye."
    t = assemble(msgs)
    assert view["content"].endswith(t.text())
    enc = OpenAIEncoder()
    for m in msgs:
        enc.feed(m)
    assert [w.code for w in enc.drain_warnings()] == ["rewrite"]


def test_a_replace_of_all_props_without_content_clears_the_text_for_the_client() -> None:
    msgs = [
        Message(type="text", message_id="M1", delta=True, props={"content": "draft"}),
        Message(
            type="text",
            message_id="M1",
            delta=True,
            delta_action="replace",
            props={"content": "final"},
        ),
    ]
    assert client_view(wire_of(msgs))["content"] == "draft\nfinal"


def test_rewrites_of_a_held_message_are_exact() -> None:
    # M2 (thread T2) waits behind M1; its rewrite happens before it is sent: no line break.
    msgs = [
        text("one ", message_id="M1", thread_id="T1"),
        Message(
            type="text", message_id="M2", thread_id="T2", delta=True, props={"content": "draft"}
        ),
        Message(
            type="text",
            message_id="M2",
            thread_id="T2",
            delta=True,
            delta_path="content",
            delta_action="replace",
            props={"content": "two"},
        ),
        event(
            "message_end", {"message_id": "M1", "thread_id": "T1"}, thread_id="T1", message_id="M1"
        ),
    ]
    view = client_view(wire_of(msgs))
    assert view["content"] == "one two" == assemble(msgs).text()


def test_media_become_markdown_links_and_actions_and_events_are_silent() -> None:
    msgs = [
        text("See:", message_id="M1"),
        image("https://x.test/a.png", alt="chart", message_id="M2"),
        audio("https://x.test/a.mp3", message_id="M3"),
        video("https://x.test/a.mp4", message_id="M4"),
        action("open_panel", {"id": 1}, message_id="M5"),
        event("progress", {"pct": 50}),
        Message(type="table", message_id="M6", props={"rows": []}),
        text("Done.", message_id="M7"),
    ]
    view = client_view(wire_of(msgs))
    assert view["content"] == (
        "See:\n\n![chart](https://x.test/a.png)\n\n"
        "\n\n[audio](https://x.test/a.mp3)\n\n"
        "\n\n[video](https://x.test/a.mp4)\n\nDone."
    )


def test_thinking_and_loading_are_reasoning_content_and_refusal_is_refusal() -> None:
    msgs = [
        thinking("hmm ", message_id="M1"),
        Message(type="loading", message_id="M2", props={"message": "Searching…"}),
        Message(type="refusal", message_id="M3", props={"content": "I can't."}),
    ]
    view = client_view(wire_of(msgs))
    assert view["reasoning"] == "hmm Searching…"
    assert view["refusal"] == "I can't."
    assert view["content"] == ""


def test_a_tool_call_streamed_in_deltas_starts_with_id_and_name_then_argument_fragments() -> None:
    base = dict(type="tool_call", message_id="M1", delta=True)
    msgs = [
        event("message_start", {"message_id": "M1", "type": "tool_call"}, message_id="M1"),
        Message(props={"name": "lookup"}, delta_path="name", delta_action="set", **base),  # type: ignore[arg-type]
        Message(props={"arguments": '{"id":'}, delta_path="arguments", **base),  # type: ignore[arg-type]
        Message(props={"arguments": " 7}"}, delta_path="arguments", **base),  # type: ignore[arg-type]
        tool_call("c2", "other", "{}", message_id="M2"),
        event("stream_end", {"status": "completed"}),
    ]
    wire = dicts_of(msgs, tool_calls="client")
    frags = [
        c["choices"][0]["delta"]["tool_calls"][0]
        for c in wire
        if isinstance(c, dict) and c.get("choices") and "tool_calls" in c["choices"][0]["delta"]
    ]
    assert frags[0] == {
        "index": 0,
        "id": "call_M1",
        "type": "function",
        "function": {"name": "lookup", "arguments": ""},
    }
    assert frags[1] == {"index": 0, "function": {"arguments": '{"id":'}}
    assert frags[2] == {"index": 0, "function": {"arguments": " 7}"}}
    assert frags[3]["index"] == 1 and frags[3]["id"] == "c2"
    view = client_view(wire_of(msgs, tool_calls="client"))
    assert view["tools"][0] == {"id": "call_M1", "name": "lookup", "args": '{"id": 7}'}
    assert view["finish"] == ["tool_calls"]


def test_a_type_change_from_text_to_thinking_moves_the_rest_to_reasoning() -> None:
    msgs = [
        Message(type="text", message_id="M1", delta=True, props={"content": "Let me"}),
        Message(type="thinking", message_id="M1", type_change=True),
        Message(type="thinking", message_id="M1", delta=True, props={"content": " see"}),
        text("Answer", message_id="M2"),
    ]
    view = client_view(wire_of(msgs))
    assert view["content"] == "Let meAnswer"
    assert view["reasoning"] == "Let me see"


def test_close_with_a_status_finishes_once_and_is_idempotent() -> None:
    enc = OpenAIEncoder(completion_id="chatcmpl-x", created=5, model="m")
    wire = sse_of(enc.feed(text("hi")) + enc.close(status="completed"))
    assert enc.close() == [] and enc.feed(text("late")) == []
    view = client_view(wire)
    assert view["content"] == "hi" and view["ids"] == {"chatcmpl-x"}
    assert view["finish"] == ["stop"] and view["error"] is None
    empty = sse_of(OpenAIEncoder().close(status="completed"))
    assert client_view(empty)["content"] == ""
    failed = client_view(sse_of(OpenAIEncoder().close(status="error", error="gone")))
    assert failed["error"] == {"message": "gone", "code": "error"}


def test_spec_scenario_5_without_lifecycle_events_gives_the_transcript_text() -> None:
    msgs = [
        Message.from_dict(d)
        for d in (
            {
                "chunk_id": "C1",
                "message_id": "M1",
                "block_id": "B1",
                "thread_id": "T1",
                "type": "text",
                "props": {"content": "Weather: Sunny"},
            },
            {
                "chunk_id": "C2",
                "message_id": "M2",
                "block_id": "B1",
                "thread_id": "T2",
                "type": "text",
                "props": {"content": "News: ..."},
            },
            {
                "chunk_id": "C3",
                "message_id": "M1",
                "block_id": "B1",
                "thread_id": "T1",
                "type": "text",
                "delta": True,
                "props": {"content": ", 25°C"},
            },
            {
                "chunk_id": "C4",
                "message_id": "M3",
                "block_id": "B1",
                "thread_id": "T3",
                "type": "text",
                "props": {"content": "Summary..."},
            },
        )
    ]
    view = client_view(wire_of(msgs))
    assert view["content"] == assemble(msgs).text() == "Weather: Sunny, 25°CNews: ...Summary..."


def test_cli_encode_uses_model_include_usage_and_tool_calls() -> None:
    class Args:
        model = "my-model"
        include_usage = True
        tool_calls = "client"

    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    msgs = [
        tool_call("c1", "f", "{}", message_id="M1"),
        event("stream_end", {"status": "completed", "usage": usage}),
    ]
    wire = list(cli_encode(msgs, Args()))
    assert '"model":"my-model"' in wire[0]
    view = client_view(wire)
    assert view["usage"] is not None and view["tools"][0]["name"] == "f"
    Args.tool_calls = "agent"
    assert client_view(list(cli_encode(msgs, Args())))["tools"] == {}


# -- property: interleaved threads -> the client's text is the transcript's text -----------------

_words = st.text(alphabet="ab é\n", min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(plan=st.lists(st.tuples(st.integers(0, 3), _words, st.booleans()), max_size=40))
def test_client_text_equals_transcript_text_for_any_interleaving(plan: list[Any]) -> None:
    msgs: list[Message] = [event("stream_start", {})]
    ended: set[int] = set()
    started: set[int] = set()
    for th, word, end_now in plan:
        if th in ended:
            continue
        tid, mid = f"T{th}", f"M{th}"
        if th not in started:
            started.add(th)
            msgs.append(
                event(
                    "message_start",
                    {"message_id": mid, "type": "text"},
                    message_id=mid,
                    thread_id=tid,
                )
            )
        msgs.append(
            Message(type="text", message_id=mid, thread_id=tid, delta=True, props={"content": word})
        )
        if end_now:
            ended.add(th)
            msgs.append(
                event(
                    "message_end",
                    {"message_id": mid, "thread_id": tid},
                    message_id=mid,
                    thread_id=tid,
                )
            )
    msgs.append(event("stream_end", {"status": "completed"}))
    view = client_view(wire_of(msgs))
    assert view["content"] == assemble(msgs).text()


# -- property: any valid Message stream gives a wire the openai package accepts ------------------


@settings(max_examples=150, deadline=None)
@given(msgs=st.lists(any_message(), max_size=20))
def test_any_message_stream_gives_a_wire_the_openai_package_accepts(msgs: list[Message]) -> None:
    client_view(wire_of(msgs, include_usage=True))
