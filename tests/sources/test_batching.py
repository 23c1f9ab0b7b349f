"""A backlog of text deltas goes out as one chunk; text never waits for the framework's next
event; held text goes out before anything sent after it; cancelling still reaches the stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from source_helpers import request, run

from agent_stream.message import MESSAGE_END, Message, tool_result
from agent_stream.sources.anthropic import responder
from agent_stream.writer import StreamWriter, collect


def start() -> list[dict[str, Any]]:
    return [
        {
            "type": "message_start",
            "message": {"id": "m1", "model": "claude-test", "usage": {"input_tokens": 3}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]


def delta(text: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }


END: list[dict[str, Any]] = [
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
    {"type": "message_stop"},
]


def text_chunks(msgs: list[Message]) -> list[str]:
    return [
        m.props["content"]
        for m in msgs
        if m.type == "text" and m.delta and m.props and m.delta_path is None
    ]


async def test_a_backlog_of_deltas_is_one_chunk() -> None:
    words = [f"w{i} " for i in range(200)]

    async def backlog(req: Any) -> AsyncIterator[dict[str, Any]]:
        for ev in [*start(), *(delta(w) for w in words), *END]:
            yield ev  # never waits: every event is at hand

    msgs, t = await run(responder(backlog), request("q"))
    assert text_chunks(msgs) == ["".join(words)]
    assert t.text() == "".join(words)
    [end] = [m for m in msgs if m.event == MESSAGE_END]
    assert end.event_data["extra"]["content"] == "".join(words)
    assert end.event_data["chunk_count"] == 1


async def test_text_goes_out_before_the_stream_waits() -> None:
    seen = asyncio.Event()
    got: list[Message] = []

    async def sink(m: Message) -> None:
        got.append(m)
        if m.type == "text" and m.delta:
            seen.set()

    async def waits(req: Any) -> AsyncIterator[dict[str, Any]]:
        for ev in [*start(), delta("a"), delta("b"), delta("c")]:
            yield ev
        # the model pauses: what came so far must reach the peer without the next event
        await asyncio.wait_for(seen.wait(), 5)
        for ev in [delta("d"), delta("e"), *END]:
            yield ev

    async with StreamWriter(sink) as out:
        await responder(waits)(request("q"), out)
    # what came after the wait goes out at once; then a backlog again
    assert text_chunks(got) == ["abc", "d", "e"]


async def test_held_text_goes_out_before_whatever_follows() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            async with b.message("text") as first, b.message("thinking") as other:
                assert first.hold("a") and first.hold("b")
                assert not other.hold("x")  # another message holds text: append it instead
                assert not first.hold(1)  # type: ignore[arg-type]
                assert out.holds_text
                await other.append("x")  # the held text is older: it goes first
                assert first.hold("c")
                await b.send(tool_result("call_1", "f", "r"))
                assert first.hold("d")
                await first.change_type("refusal")  # held text keeps the type it was held as
                assert first.hold("e")
            assert not first.hold("f")  # ended

    msgs = await collect(body)
    shown = [
        (m.type, m.props.get("content") if m.props else None)
        for m in msgs
        if m.event is None and not m.type_change
    ]
    assert shown == [
        ("text", "ab"),
        ("thinking", "x"),
        ("text", "c"),
        ("tool_result", "r"),
        ("text", "d"),
        ("refusal", "e"),
    ]
    first_id = next(m.message_id for m in msgs if m.type == "text" and m.delta)
    [first_end] = [m for m in msgs if m.event == MESSAGE_END and m.message_id == first_id]
    assert first_end.event_data["chunk_count"] == 5  # ab, c, d, the type change, e
    # "d" went out before the type change, which starts the content over
    assert first_end.event_data["extra"]["content"] == "e"


async def test_cancel_while_the_stream_waits_reaches_it() -> None:
    seen = asyncio.Event()
    inside: list[str] = []

    async def sink(m: Message) -> None:
        if m.type == "text" and m.delta:
            seen.set()

    async def waits(req: Any) -> AsyncIterator[dict[str, Any]]:
        try:
            for ev in [*start(), delta("a"), delta("b")]:
                yield ev
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            inside.append("cancelled")
            raise
        finally:
            inside.append("closed")

    got: list[Message] = []

    async def keep(m: Message) -> None:
        got.append(m)
        await sink(m)

    async def reply() -> None:
        async with StreamWriter(keep) as out:
            await responder(waits)(request("q"), out)

    task = asyncio.create_task(reply())
    await asyncio.wait_for(seen.wait(), 5)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert inside == ["cancelled", "closed"]
    assert text_chunks(got) == ["ab"]
    assert got[-1].event_data["status"] == "cancelled"


async def test_cancel_while_held_text_is_sent_reaches_the_stream() -> None:
    sending = asyncio.Event()
    inside: list[str] = []

    async def slow_sink(m: Message) -> None:
        if m.type == "text" and m.delta and not sending.is_set():
            sending.set()
            await asyncio.sleep(30)  # a peer that does not take the text

    async def waits(req: Any) -> AsyncIterator[dict[str, Any]]:
        try:
            for ev in [*start(), delta("a"), delta("b")]:
                yield ev
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            inside.append("cancelled")
            raise
        finally:
            inside.append("closed")

    async def reply() -> None:
        async with StreamWriter(slow_sink) as out:
            await responder(waits)(request("q"), out)

    task = asyncio.create_task(reply())
    await asyncio.wait_for(sending.wait(), 5)
    task.cancel()
    await asyncio.wait_for(asyncio.gather(task, return_exceptions=True), 5)
    assert task.cancelled()
    assert inside == ["cancelled", "closed"]  # the stream's own wait was cancelled, not left


MIXED: list[dict[str, Any]] = [
    {"type": "message_start", "message": {"model": "claude-test", "usage": {"input_tokens": 3}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
    *(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": w},
        }
        for w in ("let ", "me ", "see")
    ),
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "signature_delta", "signature": "s1"},
    },
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text"}},
    delta("Paris ") | {"index": 1},
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {
            "type": "citations_delta",
            "citation": {"cited_text": "p", "type": "char_location"},
        },
    },
    delta("is ") | {"index": 1},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": ""}},
    delta("sunny") | {"index": 1},
    {"type": "content_block_stop", "index": 1},
    delta("late") | {"index": 1},  # after its block stopped: not held into the ended message
    *END,
]


async def test_held_and_unheld_transcripts_are_the_same() -> None:
    from agent_stream.assemble import assemble

    async def backlog(req: Any) -> AsyncIterator[dict[str, Any]]:
        for ev in MIXED:
            yield ev

    async def one_by_one(req: Any) -> AsyncIterator[dict[str, Any]]:
        for ev in MIXED:
            await asyncio.sleep(0)  # every event after a wait: nothing is held
            yield ev

    held, t1 = await run(responder(backlog), request("q"))
    plain, t2 = await run(responder(one_by_one), request("q"))
    assert len(text_chunks(held)) < len(text_chunks(plain))

    def shown(msgs: list[Message]) -> list[tuple[str, Any]]:
        return [(m.type, m.props) for m in assemble(msgs).messages]

    assert shown(held) == shown(plain)
    assert t1.text() == t2.text()
    thinking = [m for m in t1.messages if m.type == "thinking"]
    assert thinking[0].props["content"] == "let me see"
    assert thinking[0].props["metadata"] == {"signature": "s1"}


async def test_a_sink_failing_on_held_text_fails_the_reply_and_closes_the_stream() -> None:
    inside: list[str] = []
    failed: list[bool] = []
    got: list[Message] = []

    async def sink(m: Message) -> None:
        if m.type == "text" and m.delta and not failed:
            failed.append(True)
            raise ConnectionError("the peer went away")
        got.append(m)

    async def waits(req: Any) -> AsyncIterator[dict[str, Any]]:
        try:
            for ev in [*start(), delta("a"), delta("b")]:
                yield ev
            await asyncio.sleep(30)
        finally:
            inside.append("closed")

    async with StreamWriter(sink) as out:
        await asyncio.wait_for(responder(waits)(request("q"), out), 5)
    assert inside == ["closed"]
    assert [m.props["message"] for m in got if m.type == "error" and m.props] == [
        "ConnectionError: the peer went away"
    ]
    assert got[-1].event_data["status"] == "error"
