"""The author's tool API: tool_result, progress lines, and ``scope.tool(...)`` as a context
manager that sends the call, its progress and its result, and ends as error when the body
raises."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import agent_stream
from agent_stream import StreamError, StreamWriter, assemble, tool_result
from agent_stream.adapters.aisdk import encode_messages
from agent_stream.message import Message, type_errors, typed_props
from agent_stream.writer import collect


def _content(msgs: list[Message]) -> list[tuple[str, dict[str, Any]]]:
    """The content Messages (no lifecycle events): (type, props)."""
    return [(m.type, m.props or {}) for m in msgs if not m.is_lifecycle]


def _ends(msgs: list[Message], event: str) -> list[str]:
    return [m.event_data.get("status", "") for m in msgs if m.event == event]


def test_tool_result_is_a_built_in_type_with_typed_props() -> None:
    msg = tool_result("call_1", "get_weather", {"temp": 21}, message_id="M9")
    assert json.loads(msg.to_json()) == {
        "type": "tool_result",
        "message_id": "M9",
        "props": {"call_id": "call_1", "name": "get_weather", "content": {"temp": 21}},
    }
    assert "tool_result" in agent_stream.message.BUILTIN_TYPES
    props = typed_props(msg)
    assert props is not None and props.to_props()["call_id"] == "call_1"
    failed = tool_result("c", "t", "boom", is_error=True)
    assert failed.props == {"call_id": "c", "name": "t", "content": "boom", "is_error": True}
    assert tool_result("c", "t").props == {"call_id": "c", "name": "t"}  # no content, no flag


def test_progress_is_a_loading_line() -> None:
    assert agent_stream.progress("Searching…").to_dict() == {
        "type": "loading",
        "props": {"message": "Searching…"},
    }
    assert agent_stream.progress("Done", done=True, block_id="B2").props == {
        "message": "Done",
        "done": True,
    }


def test_tool_result_fields_of_the_wrong_json_type_are_reported() -> None:
    bad = Message.from_dict(
        {"type": "tool_result", "props": {"call_id": 7, "name": "t", "is_error": "yes"}}
    )
    problems = " ".join(type_errors(bad))
    assert "call_id" in problems and "is_error" in problems


async def test_a_tool_scope_sends_the_call_its_progress_and_its_result_in_order() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm", label="Answer") as b:
            async with b.tool("get_weather", {"city": "Paris"}, call_id="call_7") as t:
                await t.progress("Looking up Paris…")
                await t.progress("Reading the forecast…")
                t.result({"temp": 21, "sky": "sunny"})
            await b.text("Sunny, 21°C.")

    msgs = await collect(body)
    content = _content(msgs)
    assert content[0] == (
        "tool_call",
        {"id": "call_7", "name": "get_weather", "arguments": '{"city": "Paris"}'},
    )
    assert [t for t, _ in content] == [
        "tool_call",
        "loading",
        "loading",
        "loading",
        "tool_result",
        "text",
    ]
    assert content[-2] == (
        "tool_result",
        {"call_id": "call_7", "name": "get_weather", "content": {"temp": 21, "sky": "sunny"}},
    )
    assert _ends(msgs, "block_end") == ["completed"]
    transcript = assemble(msgs)
    [call, line, result, answer] = transcript.messages
    assert line.type == "loading"
    assert line.props == {"message": "Reading the forecast…", "done": True}
    assert line.status == "completed"
    assert {call.block_id, line.block_id, result.block_id, answer.block_id} == {"B1"}
    assert result.props["call_id"] == call.props["id"]


async def test_a_body_that_raises_ends_the_progress_as_error_and_sends_a_failed_result() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("tool", label="Weather") as b, b.tool("get_weather") as t:
            await t.progress("Looking up…")
            raise ValueError("the weather service is down")

    with pytest.raises(ValueError, match="service is down"):
        await collect(body)

    sink: list[Message] = []

    async def keep(m: Message) -> None:
        sink.append(m)

    tool = None
    with pytest.raises(ValueError):
        async with StreamWriter(keep) as out, out.block("tool") as b, b.tool("get_weather") as tool:
            await tool.progress("Looking up…")
            raise ValueError("the weather service is down")
    assert tool is not None and tool.status == "error"
    [result] = [m for m in sink if m.type == "tool_result"]
    assert result.props == {
        "call_id": tool.call_id,
        "name": "get_weather",
        "content": "ValueError: the weather service is down",
        "is_error": True,
    }
    assert tool.call_id.startswith("call_")
    assert _ends(sink, "message_end") == ["error"]  # the progress line
    assert _ends(sink, "block_end") == ["error"]
    assert _ends(sink, "stream_end") == ["error"]
    assert assemble(sink).messages[1].props == {"message": "Looking up…"}  # never done


async def test_a_caught_tool_failure_lets_the_stream_go_on() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            with pytest.raises(KeyError):
                async with b.tool("lookup", '{"k": 1}'):
                    raise KeyError("k")
            await b.text("I could not look it up.")

    msgs = await collect(body)
    assert [t for t, _ in _content(msgs)] == ["tool_call", "tool_result", "text"]
    assert _content(msgs)[1][1]["is_error"] is True
    assert _content(msgs)[0][1]["arguments"] == '{"k": 1}'
    assert _ends(msgs, "stream_end") == ["completed"]


async def test_a_cancelled_tool_ends_cancelled() -> None:
    sink: list[Message] = []
    started = asyncio.Event()

    async def keep(m: Message) -> None:
        sink.append(m)

    async def run() -> None:
        async with StreamWriter(keep) as out, out.tool("slow") as t:
            await t.progress("waiting…")
            started.set()
            await asyncio.sleep(30)

    task = asyncio.ensure_future(run())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [result] = [m for m in sink if m.type == "tool_result"]
    assert result.props is not None and result.props["content"] == "cancelled"
    assert _ends(sink, "message_end") == ["cancelled"]
    assert _ends(sink, "stream_end") == ["cancelled"]


async def test_a_tool_without_a_result_still_closes_the_call() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.tool("ping"):
            pass

    content = _content(await collect(body))
    assert content[0][1]["arguments"] == ""
    assert content[1][0] == "tool_result" and "content" not in content[1][1]


async def test_the_result_reaches_an_ai_sdk_client_as_the_call_output() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm") as b, b.tool("add", {"a": 1, "b": 2}, call_id="c1") as t:
            t.result(3)

    parts = encode_messages(await collect(body))
    outputs = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool-output-available"]
    assert [(p["toolCallId"], p["output"]) for p in outputs] == [("c1", 3)]


async def test_a_progress_line_alone() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.progress("Searching the docs…") as p:
            assert p.message_id is not None
            await p.update("Reading 3 pages…")

    msgs = await collect(body)
    [line] = assemble(msgs).messages
    assert line.type == "loading"
    assert line.props == {"message": "Reading 3 pages…", "done": True}
    assert line.status == "completed"


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.tool(""),
        lambda s: s.tool(None),
        lambda s: s.tool("t", ["not", "a", "mapping"]),
        lambda s: s.tool("t", {"x": object()}),
        lambda s: s.tool("t", {"x": float("nan")}),
        lambda s: s.tool("t", call_id=""),
        lambda s: s.progress(42),
    ],
)
async def test_bad_tool_and_progress_arguments_are_refused_before_anything_is_sent(
    call: Any,
) -> None:
    sink: list[Message] = []

    async def keep(m: Message) -> None:
        sink.append(m)

    async with StreamWriter(keep) as out:
        with pytest.raises(StreamError):
            call(out)
    assert _content(sink) == []


async def test_a_result_that_is_not_json_is_refused() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.tool("t") as t:
            with pytest.raises(StreamError, match="JSON"):
                t.result({1, 2})
            with pytest.raises(StreamError):
                await t.progress(None)  # type: ignore[arg-type]
            t.result("fine")

    content = _content(await collect(body))
    assert content[-1] == (
        "tool_result",
        {"call_id": content[0][1]["id"], "name": "t", "content": "fine"},
    )
