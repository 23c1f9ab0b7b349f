"""Every wire presents a thread's messages in the order the stream produced them: an agent that
sends a tool call and its result, then its answer, in one block (the README's way), reaches
OpenAI and AG-UI clients as call, result, answer; not answer first."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream.adapters.routing import writer_for
from agent_stream.message import Message, text, thinking, tool_call


def _result(call_id: str, content: str) -> Message:
    return Message(
        type="tool_result", props={"call_id": call_id, "name": "get_weather", "content": content}
    )


async def _agent(out: Any) -> None:
    async with out.block("llm", label="Answer") as b:
        await b.send(thinking("Checking the weather."))
        await b.send(tool_call(id="call_1", name="get_weather", arguments='{"city":"Paris"}'))
        await b.send(_result("call_1", "sunny"))
        await b.text("It is sunny in Paris. ")
        await b.send(tool_call(id="call_2", name="get_weather", arguments='{"city":"Lyon"}'))
        await b.send(_result("call_2", "rain"))
        await b.text("Rain in Lyon.")


def _wire(accept: str) -> list[dict[str, Any]]:
    parts: list[str] = []

    async def main() -> None:
        async with writer_for(accept, parts.append) as out:
            await _agent(out)

    asyncio.run(main())
    items = []
    for line in "".join(parts).splitlines():
        if line.startswith("data: {"):
            items.append(json.loads(line[6:]))
    return items


def _segments(items: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """OpenAI deltas as the client reads them: (field, text) runs, in arrival order."""
    segs: list[tuple[str, str]] = []
    for it in items:
        for ch in it.get("choices", []):
            for field in ("reasoning_content", "content"):
                s = ch["delta"].get(field)
                if not s:
                    continue
                if segs and segs[-1][0] == field:
                    segs[-1] = (field, segs[-1][1] + s)
                else:
                    segs.append((field, s))
    return segs


def test_openai_tool_lines_come_before_the_answer_that_follows_them() -> None:
    segs = _segments(_wire("standard"))
    assert segs == [
        (
            "reasoning_content",
            'Checking the weather.\n⚙ get_weather({"city":"Paris"})\n✓ get_weather → sunny\n',
        ),
        ("content", "It is sunny in Paris. "),
        ("reasoning_content", '⚙ get_weather({"city":"Lyon"})\n✓ get_weather → rain\n'),
        ("content", "Rain in Lyon."),
    ]


def test_agui_tool_call_ends_and_its_result_come_before_the_next_text() -> None:
    kinds = [(e["type"], e.get("toolCallId") or e.get("messageId") or "") for e in _wire("agui")]
    seq = [k for k in kinds if k[0].startswith(("TOOL_CALL", "TEXT_MESSAGE_START"))]
    assert seq == [
        ("TOOL_CALL_START", "call_1"),
        ("TOOL_CALL_ARGS", "call_1"),
        ("TOOL_CALL_END", "call_1"),
        ("TOOL_CALL_RESULT", "call_1"),
        ("TEXT_MESSAGE_START", seq[4][1]),
        ("TOOL_CALL_START", "call_2"),
        ("TOOL_CALL_ARGS", "call_2"),
        ("TOOL_CALL_END", "call_2"),
        ("TOOL_CALL_RESULT", "call_2"),
        ("TEXT_MESSAGE_START", seq[9][1]),
    ]


def test_aisdk_and_native_order_unchanged() -> None:
    items = _wire("aisdk")
    order = [
        i["type"]
        for i in items
        if i["type"]
        in ("reasoning-start", "tool-input-start", "tool-output-available", "text-start")
    ]
    assert order == [
        "reasoning-start",
        "tool-input-start",
        "tool-output-available",
        "text-start",
        "tool-input-start",
        "tool-output-available",
        "text-start",
    ]


def test_text_interleaved_with_a_second_thread_keeps_each_threads_order() -> None:
    """Two threads: each thread's tool line precedes its own answer on the OpenAI wire."""
    parts: list[str] = []

    async def worker(t: Any, city: str) -> None:
        await t.send(tool_call(id=f"c_{city}", name="get_weather", arguments=city))
        await t.send(text(f"{city} done. "))

    async def main() -> None:
        async with writer_for("standard", parts.append) as out:
            await out.parallel(lambda t: worker(t, "Paris"), lambda t: worker(t, "Lyon"))

    asyncio.run(main())
    items = [json.loads(ln[6:]) for ln in "".join(parts).splitlines() if ln.startswith("data: {")]
    seq: list[str] = []
    for it in items:
        for ch in it.get("choices", []):
            for field in ("reasoning_content", "content"):
                if ch["delta"].get(field):
                    seq.append(ch["delta"][field])
    for city in ("Paris", "Lyon"):
        line = next(i for i, s in enumerate(seq) if f"get_weather({city})" in s)
        answer = next(i for i, s in enumerate(seq) if f"{city} done." in s)
        assert line < answer, seq


def test_a_tool_line_is_not_held_behind_another_threads_unfinished_tool_line() -> None:
    """T2's result line waits for its end; T1's result, ended by T1's answer, goes first."""
    from agent_stream.adapters.openai import encode_messages

    def ev(name: str, tid: str | None = None, **data: Any) -> Message:
        return Message(type="event", props={"event": name, "data": data}, thread_id=tid)

    def res(tid: str, sky: str) -> Message:
        return Message(
            type="tool_result",
            message_id="M2",
            thread_id=tid,
            props={"call_id": f"c{tid}", "name": "w", "content": sky},
        )

    msgs = [
        ev("stream_start"),
        tool_call(id="cT1", name="w", arguments="P", message_id="M1", thread_id="T1"),
        tool_call(id="cT2", name="w", arguments="L", message_id="M1", thread_id="T2"),
        res("T2", "rain"),
        res("T1", "sunny"),
        text("Paris: sunny.", message_id="M3", thread_id="T1"),
        ev("stream_end", status="completed"),
    ]
    seq = [
        c.delta.get("content") or c.delta.get("reasoning_content")
        for c in encode_messages(msgs)
        if getattr(c, "delta", None)
    ]
    assert seq.index("✓ w → sunny\n") < seq.index("Paris: sunny."), seq


def test_chat_peer_gets_buffered_text_before_the_tool_call_written_after_it() -> None:
    """The chat chunker holds an unfinished sentence; a later message of the same thread sends
    it first (before, the tool call's metadata went ahead of it)."""
    from agent_stream.adapters.chat.lines import ChatLines, ChatStream, frame_jsonl
    from agent_stream.assemble import assemble

    enc = ChatStream()
    msgs = [
        Message(type="event", props={"event": "stream_start", "data": {}}),
        Message(type="text", message_id="M1", delta=True, props={"content": "Let me check"}),
        tool_call(id="c1", name="get_weather", arguments="{}", message_id="M2"),
        Message(type="event", props={"event": "stream_end", "data": {"status": "completed"}}),
    ]
    lines = [frame_jsonl(c) for m in msgs for c in enc.feed(m)] + [
        frame_jsonl(c) for c in enc.close(status="completed")
    ]
    dec = ChatLines()
    back = [m for ln in lines for m in dec.feed_line(ln)] + dec.close()
    assert [m.type for m in assemble(back).messages] == ["text", "tool_call"]


# -- property: any single-thread mix of whole messages keeps its order on OpenAI and AG-UI -------

_KINDS = st.lists(st.sampled_from(["text", "thinking", "call", "result"]), min_size=1, max_size=12)


def _stream(kinds: list[str], explicit: list[bool]) -> list[Message]:
    from agent_stream.writer import collect

    async def body(out: Any) -> None:
        async with out.block("llm") as b:
            for i, (k, ex) in enumerate(zip(kinds, explicit, strict=False)):
                if k in ("text", "thinking") and ex:  # streamed, with its own end
                    async with b.message(k) as m:
                        await m.append(f"<{k}{i}")
                        await m.append(">")
                elif k in ("text", "thinking"):
                    await b.send(Message(type=k, props={"content": f"<{k}{i}>"}))
                elif k == "call":
                    await b.send(tool_call(id=f"c{i}", name=f"f{i}", arguments="{}"))
                else:
                    await b.send(
                        Message(
                            type="tool_result",
                            props={"call_id": f"c{i}", "name": f"r{i}", "content": "ok"},
                        )
                    )

    return asyncio.run(collect(body))


@settings(max_examples=60, deadline=None)
@given(kinds=_KINDS, explicit=st.lists(st.booleans(), min_size=12, max_size=12))
def test_any_mix_of_messages_in_one_thread_keeps_its_order(
    kinds: list[str], explicit: list[bool]
) -> None:
    from agent_stream.adapters.agui import encode_messages as agui
    from agent_stream.adapters.openai import encode_messages as openai

    msgs = _stream(kinds, explicit)
    want = [
        f"<{k}{i}>" if k in ("text", "thinking") else f"f{i}(" if k == "call" else f"r{i} →"
        for i, k in enumerate(kinds)
    ]
    pieces = [
        c.delta.get("content") or c.delta.get("reasoning_content") or ""
        for c in openai(msgs)
        if getattr(c, "delta", None)
    ]
    joined = "".join(pieces)
    at = [joined.find(w) for w in want]
    assert -1 not in at and at == sorted(at), (kinds, pieces)
    keys: list[str] = []
    texts = {}
    for e in agui(msgs):
        t = e.type.value if hasattr(e.type, "value") else str(e.type)
        if t in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"):
            texts[e.message_id] = texts.get(e.message_id, "") + e.delta
        if t in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
            keys.append(e.message_id)
        elif t == "TOOL_CALL_END":
            keys.append(e.tool_call_id)
        elif t == "TOOL_CALL_RESULT":
            keys.append("r" + e.tool_call_id)
    got = [texts.get(k, k) for k in keys]
    want_agui = [
        f"<{k}{i}>" if k in ("text", "thinking") else f"c{i}" if k == "call" else f"rc{i}"
        for i, k in enumerate(kinds)
    ]
    assert got == want_agui, (kinds, got)
