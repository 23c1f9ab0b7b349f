"""OpenAIEncoder: every event it writes is read back by the official ``openai`` package.

Each test decodes the SSE text with ``openai._streaming.SSEDecoder`` and validates every chunk
with ``ChatCompletionChunk.model_validate``, then accumulates it the way a client does.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from openai._streaming import SSEDecoder
from openai.types.chat import ChatCompletionChunk
from strategies import any_message

from agent_stream.adapters.openai import OpenAIEncoder, cli_encode, encode_messages
from agent_stream.assemble import assemble
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
from agent_stream.writer import StreamWriter, collect

# -- a client ------------------------------------------------------------------------------------


def client_view(wire: list[str]) -> dict[str, Any]:
    """What an OpenAI client gets from this SSE text (and checks every rule on the way)."""
    events = list(SSEDecoder().iter_bytes(iter(["".join(wire).encode()])))
    view: dict[str, Any] = {"content": "", "reasoning": "", "refusal": "", "tools": {},
                            "finish": [], "roles": 0, "ids": set(), "error": None,
                            "usage": None, "chunks": 0}
    done = False
    for ev in events:
        assert not done, "nothing may follow [DONE]"
        if ev.data == "[DONE]":
            done = True
            continue
        assert view["error"] is None, "only [DONE] may follow an error"
        data = ev.json()
        if "error" in data:
            view["error"] = data["error"]
            continue
        c = ChatCompletionChunk.model_validate(data)
        assert c.object == "chat.completion.chunk"
        view["ids"].add(c.id)
        view["chunks"] += 1
        if c.usage is not None:
            assert c.choices == []
            view["usage"] = c.usage
        for ch in c.choices:
            d = ch.delta
            if d.role is not None:
                assert d.role == "assistant"
                assert view["chunks"] == 1, "role only on the first chunk"
                view["roles"] += 1
            view["content"] += d.content or ""
            view["refusal"] += d.refusal or ""
            view["reasoning"] += (d.model_extra or {}).get("reasoning_content") or ""
            for tc in d.tool_calls or []:
                slot = view["tools"].setdefault(tc.index, {"id": None, "name": "", "args": ""})
                if tc.id:
                    assert slot["id"] is None, "id on the first fragment only"
                    slot["id"] = tc.id
                    assert tc.type == "function"
                if tc.function is not None:
                    slot["name"] += tc.function.name or ""
                    slot["args"] += tc.function.arguments or ""
            if ch.finish_reason is not None:
                view["finish"].append(ch.finish_reason)
    assert done, "the stream ends with [DONE]"
    assert len(view["ids"]) <= 1, "one id for the whole completion"
    if view["error"] is None:
        assert len(view["finish"]) == 1, "exactly one finish_reason"
        assert view["roles"] == 1
    return view


def wire_of(msgs: list[Message], **kw: Any) -> list[str]:
    out = encode_messages(msgs, **kw)
    if not kw.get("as_dicts"):
        assert all(s.startswith("data: ") and s.endswith("\n\n") for s in out)
    return out


async def _reply(out: StreamWriter) -> None:
    async with out.block("llm", label="Answer") as b:
        async with b.message("thinking") as m:
            await m.append("Let me ")
            await m.append("check.")
        await b.send(tool_call(id="call_1", name="search", arguments='{"q": "weather"}'))

    async def one(th: Any) -> None:
        async with th.message("text") as m:
            for w in ("Weather: ", "sunny", ", 25°C. "):
                await m.append(w)
                await asyncio.sleep(0)

    async def two(th: Any) -> None:
        async with th.message("text") as m:
            for w in ("News: ", "all ", "quiet. "):
                await m.append(w)
                await asyncio.sleep(0)

    await out.parallel(one, two)
    async with out.message("text") as m:
        for i in range(50):
            await m.append(f"word{i} ")


def reply() -> list[Message]:
    return asyncio.run(collect(_reply, request_id="req-1"))


# -- tests ---------------------------------------------------------------------------------------


def test_a_hierarchical_reply_is_read_by_the_openai_package_as_the_transcript_says() -> None:
    msgs = reply()
    view = client_view(wire_of(msgs))
    t = assemble(msgs)
    assert view["content"] == t.text()
    assert view["content"].startswith("Weather: sunny, 25°C. News: all quiet. word0 ")
    assert view["reasoning"] == "Let me check."
    assert view["tools"] == {0: {"id": "call_1", "name": "search", "args": '{"q": "weather"}'}}
    assert view["ids"] == {"chatcmpl-req-1"}
    assert view["finish"] == ["stop"]


def test_concurrent_threads_are_sent_one_after_the_other_not_interleaved() -> None:
    # M3 and M4 interleave in the Message stream; the client gets M3 whole, then M4.
    msgs = reply()
    wire = wire_of(msgs, as_dicts=True)
    contents = [c["choices"][0]["delta"].get("content") for c in wire
                if isinstance(c, dict) and c.get("choices")]
    contents = [c for c in contents if c]
    assert contents[:4] == ["Weather: ", "sunny", ", 25°C. ", "News: all quiet. "]


def test_usage_chunk_comes_last_before_done_with_the_stream_end_usage() -> None:
    msgs = [text("Hi", message_id="M1"),
            event("stream_end", {"status": "completed",
                                 "usage": {"prompt_tokens": 3, "completion_tokens": 2,
                                           "total_tokens": 5}})]
    wire = wire_of(msgs, include_usage=True)
    view = client_view(wire)
    assert (view["usage"].prompt_tokens, view["usage"].total_tokens) == (3, 5)
    assert '"choices":[]' in wire[-2] and wire[-1] == "data: [DONE]\n\n"
    assert client_view(wire_of(msgs))["usage"] is None


def test_finish_reason_from_stream_end_else_tool_calls_after_a_tool_call_else_stop() -> None:
    end_length = event("stream_end", {"status": "completed", "finish_reason": "length"})
    assert client_view(wire_of([text("a", message_id="M1"), end_length]))["finish"] == [
        "length"]
    tool_last = [text("a", message_id="M1"), tool_call("c", "f", "{}", message_id="M2")]
    assert client_view(wire_of(tool_last))["finish"] == ["tool_calls"]
    text_last = [tool_call("c", "f", "{}", message_id="M1"), text("a", message_id="M2")]
    assert client_view(wire_of(text_last))["finish"] == ["stop"]
    odd = event("stream_end", {"status": "completed", "finish_reason": "end_turn"})
    assert client_view(wire_of([text("a"), odd]))["finish"] == ["stop"]


def test_an_error_message_is_sent_at_once_then_only_done() -> None:
    enc = OpenAIEncoder()
    first = enc.feed(text("partial", message_id="M1"))
    err = enc.feed(error("model overloaded", code="overloaded"))
    assert err[-1] == "data: [DONE]\n\n"
    assert enc.finished
    assert enc.feed(text("more", message_id="M2")) == [] and enc.close() == []
    view = client_view(first + err)
    assert view["content"] == "partial"
    assert view["error"] == {"message": "model overloaded", "code": "overloaded"}
    assert view["finish"] == []


def test_held_text_is_flushed_before_the_error_object() -> None:
    msgs = [text("A1 ", message_id="M1", thread_id="T1"),
            text("B1 ", message_id="M2", thread_id="T2"),
            error("boom")]
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
        Message(props={"content": "Hello, world"}, delta_path="content",
                delta_action="replace", **base),  # type: ignore[arg-type]
        # set that changes earlier text: a line break and the new text
        Message(props={"content": "Goodbye"}, delta_path="content", delta_action="set",
                **base),  # type: ignore[arg-type]
        # merge that carries content and extends it
        Message(props={"content": "Goodbye!", "mood": "ok"}, delta_action="merge",
                **base),  # type: ignore[arg-type]
        # merge and set elsewhere: nothing visible
        Message(props={"mood": "fine"}, delta_action="merge", **base),  # type: ignore[arg-type]
        Message(props={"meta": {"a": 1}}, delta_path="meta", delta_action="set",
                **base),  # type: ignore[arg-type]
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
    msgs = [Message(type="text", message_id="M1", delta=True, props={"content": "draft"}),
            Message(type="text", message_id="M1", delta=True, delta_action="replace",
                    props={"content": "final"})]
    assert client_view(wire_of(msgs))["content"] == "draft\nfinal"


def test_rewrites_of_a_held_message_are_exact() -> None:
    # M2 (thread T2) waits behind M1; its rewrite happens before it is sent: no line break.
    msgs = [text("one ", message_id="M1", thread_id="T1"),
            Message(type="text", message_id="M2", thread_id="T2", delta=True,
                    props={"content": "draft"}),
            Message(type="text", message_id="M2", thread_id="T2", delta=True,
                    delta_path="content", delta_action="replace", props={"content": "two"}),
            event("message_end", {"message_id": "M1", "thread_id": "T1"}, thread_id="T1",
                  message_id="M1")]
    view = client_view(wire_of(msgs))
    assert view["content"] == "one two" == assemble(msgs).text()


def test_media_become_markdown_links_and_actions_and_events_are_silent() -> None:
    msgs = [text("See:", message_id="M1"),
            image("https://x.test/a.png", alt="chart", message_id="M2"),
            audio("https://x.test/a.mp3", message_id="M3"),
            video("https://x.test/a.mp4", message_id="M4"),
            action("open_panel", {"id": 1}, message_id="M5"),
            event("progress", {"pct": 50}),
            Message(type="table", message_id="M6", props={"rows": []}),
            text("Done.", message_id="M7")]
    view = client_view(wire_of(msgs))
    assert view["content"] == ("See:\n\n![chart](https://x.test/a.png)\n\n"
                               "\n\n[audio](https://x.test/a.mp3)\n\n"
                               "\n\n[video](https://x.test/a.mp4)\n\nDone.")


def test_thinking_and_loading_are_reasoning_content_and_refusal_is_refusal() -> None:
    msgs = [thinking("hmm ", message_id="M1"),
            Message(type="loading", message_id="M2", props={"message": "Searching…"}),
            Message(type="refusal", message_id="M3", props={"content": "I can't."})]
    view = client_view(wire_of(msgs))
    assert view["reasoning"] == "hmm Searching…"
    assert view["refusal"] == "I can't."
    assert view["content"] == ""


def test_a_tool_call_streamed_in_deltas_starts_with_id_and_name_then_argument_fragments() -> None:
    base = dict(type="tool_call", message_id="M1", delta=True)
    msgs = [event("message_start", {"message_id": "M1", "type": "tool_call"}, message_id="M1"),
            Message(props={"name": "lookup"}, delta_path="name", delta_action="set",
                    **base),  # type: ignore[arg-type]
            Message(props={"arguments": '{"id":'}, delta_path="arguments",
                    **base),  # type: ignore[arg-type]
            Message(props={"arguments": " 7}"}, delta_path="arguments",
                    **base),  # type: ignore[arg-type]
            tool_call("c2", "other", "{}", message_id="M2")]
    wire = wire_of(msgs, as_dicts=True)
    frags = [c["choices"][0]["delta"]["tool_calls"][0] for c in wire
             if isinstance(c, dict) and c.get("choices") and
             "tool_calls" in c["choices"][0]["delta"]]
    assert frags[0] == {"index": 0, "id": "call_M1", "type": "function",
                        "function": {"name": "lookup", "arguments": '{"id":'}}
    assert frags[1] == {"index": 0, "function": {"arguments": " 7}"}}
    assert frags[2]["index"] == 1 and frags[2]["id"] == "c2"
    view = client_view(wire_of(msgs))
    assert view["tools"][0] == {"id": "call_M1", "name": "lookup", "args": '{"id": 7}'}
    assert view["finish"] == ["tool_calls"]


def test_a_type_change_from_text_to_thinking_moves_the_rest_to_reasoning() -> None:
    msgs = [Message(type="text", message_id="M1", delta=True, props={"content": "Let me"}),
            Message(type="thinking", message_id="M1", type_change=True),
            Message(type="thinking", message_id="M1", delta=True, props={"content": " see"}),
            text("Answer", message_id="M2")]
    view = client_view(wire_of(msgs))
    assert view["content"] == "Let meAnswer"
    assert view["reasoning"] == "Let me see"


def test_close_without_stream_end_finishes_once_and_is_idempotent() -> None:
    enc = OpenAIEncoder(completion_id="chatcmpl-x", created=5, model="m")
    wire = enc.feed(text("hi")) + enc.close()
    assert enc.close() == [] and enc.feed(text("late")) == []
    view = client_view(wire)
    assert view["content"] == "hi" and view["ids"] == {"chatcmpl-x"}
    empty = OpenAIEncoder().close()
    assert client_view(empty)["content"] == ""
    failed = client_view(OpenAIEncoder().close(status="error", error="gone"))
    assert failed["error"] == {"message": "gone", "code": "error"}


def test_spec_scenario_5_without_lifecycle_events_gives_the_transcript_text() -> None:
    msgs = [Message.from_dict(d) for d in (
        {"chunk_id": "C1", "message_id": "M1", "block_id": "B1", "thread_id": "T1",
         "type": "text", "props": {"content": "Weather: Sunny"}},
        {"chunk_id": "C2", "message_id": "M2", "block_id": "B1", "thread_id": "T2",
         "type": "text", "props": {"content": "News: ..."}},
        {"chunk_id": "C3", "message_id": "M1", "block_id": "B1", "thread_id": "T1",
         "type": "text", "delta": True, "props": {"content": ", 25°C"}},
        {"chunk_id": "C4", "message_id": "M3", "block_id": "B1", "thread_id": "T3",
         "type": "text", "props": {"content": "Summary..."}})]
    view = client_view(wire_of(msgs))
    assert view["content"] == assemble(msgs).text() == "Weather: Sunny, 25°CNews: ...Summary..."


def test_cli_encode_uses_model_and_include_usage() -> None:
    class Args:
        model = "my-model"
        include_usage = True

    wire = list(cli_encode([text("hi", message_id="M1")], Args()))
    assert '"model":"my-model"' in wire[0]
    assert client_view(wire)["usage"] is not None


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
            msgs.append(event("message_start", {"message_id": mid, "type": "text"},
                              message_id=mid, thread_id=tid))
        msgs.append(Message(type="text", message_id=mid, thread_id=tid, delta=True,
                            props={"content": word}))
        if end_now:
            ended.add(th)
            msgs.append(event("message_end", {"message_id": mid, "thread_id": tid},
                              message_id=mid, thread_id=tid))
    msgs.append(event("stream_end", {"status": "completed"}))
    view = client_view(wire_of(msgs))
    assert view["content"] == assemble(msgs).text()


# -- property: any valid Message stream gives a wire the openai package accepts ------------------

@settings(max_examples=150, deadline=None)
@given(msgs=st.lists(any_message(), max_size=20))
def test_any_message_stream_gives_a_wire_the_openai_package_accepts(msgs: list[Message]) -> None:
    client_view(wire_of(msgs, include_usage=True))
