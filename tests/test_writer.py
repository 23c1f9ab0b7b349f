"""The author API: ids, lifecycle events, deltas on paths, threads, and guaranteed ends."""

from __future__ import annotations

import asyncio

import pytest

from agent_stream.assemble import assemble
from agent_stream.message import Message, tool_call
from agent_stream.writer import StreamWriter, ThreadScope


class Sink:
    def __init__(self) -> None:
        self.items: list[Message] = []

    async def __call__(self, m: Message) -> None:
        self.items.append(m)

    def events(self) -> list[tuple[str, str]]:
        return [(m.event, m.event_data.get("status", "")) for m in self.items if m.event]


async def test_issue_example_produces_the_hierarchy() -> None:
    sink = Sink()

    async def get_weather(t: ThreadScope) -> str:
        async with t.message("text") as m:
            await m.append("Weather: Sunny")
            await asyncio.sleep(0)
            await m.append(", 25°C")
        return "sunny"

    async def get_news(t: ThreadScope) -> str:
        await t.text("News: quiet")
        return "quiet"

    async with StreamWriter(sink) as out:
        async with out.block("llm", label="Answer") as b:
            async with b.message("thinking") as m:
                await m.append("Let me")
                await m.append(" see")
            await b.send(tool_call(id="call_1", name="search", arguments='{"q":"x"}'))
        weather, news = await out.parallel(get_weather, get_news)

    assert (weather, news) == ("sunny", "quiet")
    chunk_ids = [m.chunk_id for m in sink.items]
    assert all(chunk_ids) and len(set(chunk_ids)) == len(chunk_ids)
    t = assemble(sink.items)
    assert t.status == "completed"
    thinking = t.get(None, "M1")
    assert thinking is not None and thinking.content == "Let me see" and thinking.block_id == "B1"
    assert t.get(None, "M2").props["name"] == "search"  # type: ignore[union-attr]
    w = next(m for m in t.messages if m.thread_id and m.content.startswith("Weather"))
    assert w.content == "Weather: Sunny, 25°C" and w.status == "completed"
    assert {th.thread_id for th in t.threads} == {"T1", "T2"}
    assert all(m.status == "completed" for m in t.messages)
    b1 = t.block("B1")
    assert b1 is not None and b1.message_count == 2 and b1.status == "completed"
    ends = [m.event_data for m in sink.items if m.event == "message_end"]
    assert {"message_id": "M1", "chunk_count": 2}.items() <= ends[0].items()
    assert ends[0]["extra"] == {"content": "Let me see"}


async def test_block_spanning_threads_like_scenario_5() -> None:
    sink = Sink()

    async def one(t: ThreadScope) -> None:
        await t.text("a")

    async with StreamWriter(sink) as out, out.block("mixed") as b:
        await b.parallel(one, one, one)
    t = assemble(sink.items)
    [blk] = t.blocks
    assert blk.thread_ids == ["T1", "T2", "T3"] and blk.message_count == 3
    end = next(m for m in sink.items if m.event == "block_end")
    assert end.event_data["message_count"] == 3


async def test_path_deltas_and_type_change_assemble() -> None:
    sink = Sink()
    async with StreamWriter(sink) as out:
        async with out.message("table", props={"columns": ["a"], "rows": []}) as m:
            await m.append([{"a": 1}], path="rows")
            await m.append({"a": 2}, path="rows")
            await m.set(10, path="rows.1.a")
            await m.merge({"title": "T"})
            await m.replace("x", path="note")
        async with out.message("text") as m2:
            await m2.append("Let me think...")
            await m2.change_type("thinking")
    t = assemble(sink.items)
    assert t.get(None, "M1").props == {  # type: ignore[union-attr]
        "columns": ["a"],
        "rows": [{"a": 1}, {"a": 10}],
        "title": "T",
        "note": "x",
    }
    m2s = t.get(None, "M2")
    assert m2s is not None and m2s.type == "thinking" and m2s.content == "Let me think..."
    assert all(m.status == "completed" for m in t.messages)


async def test_error_in_body_ends_everything_with_error_and_propagates() -> None:
    sink = Sink()
    with pytest.raises(RuntimeError, match="boom"):
        async with StreamWriter(sink) as out, out.block("llm") as b, b.message() as m:
            await m.append("partial")
            raise RuntimeError("boom")
    assert sink.events() == [
        ("stream_start", ""),
        ("block_start", ""),
        ("message_start", ""),
        ("message_end", "error"),
        ("block_end", "error"),
        ("stream_end", "error"),
    ]
    t = assemble(sink.items)
    assert t.messages[0].status == "error" and t.messages[0].content == "partial"
    assert "boom" in t.stream_data["error"]


async def test_cancellation_ends_everything_with_cancelled() -> None:
    sink = Sink()
    started = asyncio.Event()

    async def body() -> None:
        async with StreamWriter(sink) as out, out.message() as m:
            await m.append("x")
            started.set()
            await asyncio.sleep(10)

    task = asyncio.create_task(body())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [s for _, s in sink.events()][-2:] == ["cancelled", "cancelled"]


async def test_parallel_failure_cancels_siblings_and_ends_their_threads() -> None:
    sink = Sink()

    async def slow(t: ThreadScope) -> None:
        async with t.message() as m:
            await m.append("slow")
            await asyncio.sleep(10)

    async def bad(t: ThreadScope) -> None:
        await asyncio.sleep(0)
        raise ValueError("bad tool")

    with pytest.raises(ValueError, match="bad tool"):
        async with StreamWriter(sink) as out:
            await out.parallel(slow, bad)
    statuses = {
        m.event_data["thread_id"]: m.event_data["status"]
        for m in sink.items
        if m.event == "thread_end"
    }
    assert statuses == {"T1": "cancelled", "T2": "error"}
    assert assemble(sink.items).status == "error"


async def test_threads_interleave_and_keep_their_own_ids() -> None:
    sink = Sink()

    async def writer(t: ThreadScope) -> None:
        async with t.message() as m:
            for i in range(5):
                await m.append(f"{t.thread_id}-{i} ")
                await asyncio.sleep(0)

    async with StreamWriter(sink) as out:
        await out.parallel(writer, writer)
    deltas = [m.thread_id for m in sink.items if m.delta]
    assert deltas != sorted(deltas)  # interleaved
    t = assemble(sink.items)
    for m in t.messages:
        assert m.content == "".join(f"{m.thread_id}-{i} " for i in range(5))


async def test_sending_after_message_end_is_an_error() -> None:
    sink = Sink()
    async with StreamWriter(sink) as out:
        async with out.message() as m:
            await m.append("a")
        with pytest.raises(Exception, match="has ended"):
            await m.append("b")


async def test_fail_ends_a_normally_returning_stream_with_error() -> None:
    sink = Sink()
    async with StreamWriter(sink) as out:
        await out.send(Message(type="error", props={"message": "model down"}))
        out.fail("model down")
    end = sink.items[-1]
    assert end.event == "stream_end"
    assert end.event_data["status"] == "error" and end.event_data["error"] == "model down"


async def test_text_deltas_are_whole_validated_messages_and_bad_ones_are_refused() -> None:
    """append's text chunks (copied from a validated prototype, for speed) are the Messages
    validation gives: same fields, same fields set, independent of each other."""
    sink = Sink()
    async with StreamWriter(sink, stamp=True) as out:
        async with out.block("llm") as b, b.message("text") as m:
            await m.append("Hel")
            await m.append("lo")
            await m.change_type("thinking")
            await m.append(" there")
            with pytest.raises(Exception, match="takes a string"):
                await m.append(3)
        async with out.message("") as bad:
            with pytest.raises(Exception, match="type"):
                await bad.append("x")
    deltas = [x for x in sink.items if x.delta and x.delta_path is None]
    assert [(x.type, x.props) for x in deltas] == [
        ("text", {"content": "Hel"}),
        ("text", {"content": "lo"}),
        ("thinking", {"content": " there"}),
    ]
    for x in deltas:
        again = Message.model_validate(x.model_dump(exclude_unset=True), strict=True)
        assert again == x and again.model_fields_set == x.model_fields_set
        assert x.block_id == "B1" and x.message_id == "M1" and x.chunk_id
        assert x.metadata is not None and x.metadata.sequence
    t = assemble(sink.items)
    assert t.get(None, "M1").content == "Hello there"  # type: ignore[union-attr]
    deltas[0].props["content"] = "changed"  # type: ignore[index]
    assert deltas[1].props == {"content": "lo"} and len({x.chunk_id for x in deltas}) == 3
