"""LiveRenderer: sections, thread labels, dimmed reasoning, status lines, streamed text."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re

from agent_stream.message import Message, error, event, text, tool_result
from agent_stream.render import LiveRenderer, make_console
from agent_stream.sources.replay import ReplayModel, pick_reply
from agent_stream.writer import StreamWriter, collect


def render(messages: list[Message], color: bool = False) -> str:
    buf = io.StringIO()
    r = LiveRenderer(make_console(buf, color=color))
    for m in messages:
        r.feed(m)
    r.close("done")
    return buf.getvalue()


def replay() -> list[Message]:
    return asyncio.run(collect(lambda out: ReplayModel(rate=0)("stream", out)))


def test_plain_output_without_a_terminal() -> None:
    out = render(replay())
    assert "\x1b[" not in out
    lines = out.splitlines()
    assert lines[0].startswith("Thinking ─")
    assert any(line.startswith("[spec] read_spec ─") for line in lines)
    assert '[spec] ⚙ read_spec({"section": "StartStreamContent"})' in lines
    assert any(line.startswith("[benchmarks] ✓ fetch_benchmarks → ") for line in lines)
    assert "… Searching the docs…" in lines
    assert pick_reply("stream").answer in out  # text streamed whole, in order
    assert lines[-1] == "done"


def test_reasoning_is_dimmed_in_a_terminal() -> None:
    out = render(replay(), color=True)
    assert "\x1b[2;3mThe\x1b[0m" in out  # the reasoning's first token, dim italic
    assert "Let me search the docs" in re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert "\x1b[2;3m##" not in out  # the answer is not dimmed


def test_interleaved_text_of_two_threads_is_kept_apart() -> None:
    async def body(out: StreamWriter) -> None:
        async with (
            out.thread(label="a") as ta,
            out.thread(label="b") as tb,
            ta.message() as ma,
            tb.message() as mb,
        ):
            await ma.append("alpha one ")
            await mb.append("beta one ")
            await ma.append("alpha two")
            await mb.append("beta two")

    out = render(asyncio.run(collect(body)))
    assert "[a] alpha one \n[b] beta one \n[a] alpha two\n[b] beta two\n" in out


def test_errors_and_failed_replies_are_shown() -> None:
    async def body(out: StreamWriter) -> None:
        await out.send(text("Partial"))
        await out.send(error("it broke", code="E1"))
        raise RuntimeError("boom")

    msgs: list[Message] = []

    async def sink(m: Message) -> None:
        msgs.append(m)

    async def run() -> None:
        try:
            async with StreamWriter(sink) as w:
                await body(w)
        except RuntimeError:
            pass

    asyncio.run(run())
    out = render(msgs)
    assert "✗ Error (E1): it broke" in out
    assert "reply error: RuntimeError: boom" in out


def _tool_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if "⚙" in line]


def test_streamed_tool_arguments_show_as_one_line_once_complete() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm", label="Model") as b:
            async with b.message("tool_call", {"id": "c1", "name": "search", "arguments": ""}) as m:
                for frag in ('{"q"', ': "do', 'cs"', "}"):
                    await m.append(frag, path="arguments")
            await b.send(tool_result("c1", "search", "3 hits"))
            async with b.message("text") as t:
                await t.append("Found 3 hits.")

    msgs = asyncio.run(collect(body))
    out = render(msgs)
    assert _tool_lines(out) == ['⚙ search({"q": "docs"})']
    lines = out.splitlines()
    assert (
        lines.index('⚙ search({"q": "docs"})')
        < lines.index("✓ search → 3 hits")
        < lines.index("Found 3 hits.")
    )
    # shown as soon as the arguments are a whole object, before the call's message_end
    buf = io.StringIO()
    r = LiveRenderer(make_console(buf, color=False))
    last_frag = next(i for i, m in enumerate(msgs) if (m.props or {}).get("arguments") == "}")
    for m in msgs[: last_frag + 1]:
        r.feed(m)
    assert _tool_lines(buf.getvalue()) == ['⚙ search({"q": "docs"})']


def test_a_call_waits_for_its_name_and_a_cut_call_shows_at_the_end() -> None:
    late = [
        event("message_start", {"message_id": "M1", "type": "tool_call"}),
        Message(type="tool_call", message_id="M1", delta=True, props={"arguments": '{"n": 3}'}),
        Message(
            type="tool_call",
            message_id="M1",
            delta=True,
            delta_action="merge",
            props={"id": "c9", "name": "count"},
        ),
        Message(
            type="tool_call",
            message_id="M1",
            delta=True,
            delta_action="replace",
            delta_path="arguments.x",
            props={"arguments": {"x": 1}},
        ),  # cannot apply
        event("message_end", {"message_id": "M1"}),
        Message(type="tool_call", message_id="M2", delta=True, props={"arguments": '{"a"'}),
        Message(type="tool_call", props={"name": "whole", "arguments": "{}"}),
    ]
    assert _tool_lines(render(late)) == ['⚙ count({"n": 3})', "⚙ whole({})", '⚙ tool({"a")']


def test_calls_still_waiting_show_when_their_block_or_thread_ends() -> None:
    msgs = [
        event("block_start", {"block_id": "B1", "type": "llm"}, block_id="B1"),
        Message(
            type="tool_call",
            message_id="M1",
            block_id="B1",
            delta=True,
            props={"name": "f", "arguments": "[1,"},
        ),
        Message(
            type="tool_call", message_id="M1", block_id="B1", delta=True, props={"arguments": "2]"}
        ),
        event("block_end", {"block_id": "B1"}, block_id="B1"),
        event("thread_start", {"thread_id": "T1", "label": "w"}, thread_id="T1"),
        Message(
            type="tool_call",
            message_id="M1",
            thread_id="T1",
            delta=True,
            props={"name": "g", "arguments": "x"},
        ),
        event("thread_end", {"thread_id": "T1"}, thread_id="T1"),
        text("after", message_id="M9"),
    ]
    lines = render(msgs).splitlines()
    assert _tool_lines("\n".join(lines)) == ["⚙ f([1,2])", "[w] ⚙ g(x)"]
    assert lines.index("[w] ⚙ g(x)") < lines.index("after")


def test_a_failed_tool_result_is_shown_as_failed() -> None:
    async def body(w: StreamWriter) -> None:
        async with w.block("llm") as b:
            with contextlib.suppress(RuntimeError):
                async with b.tool("get_weather", {"city": "Paris"}) as t:
                    raise RuntimeError("the weather service is down")
            async with b.tool("get_time", {}) as t:
                t.result("noon")

    msgs = asyncio.run(collect(body))
    out = render(msgs)
    assert any(line.startswith("✗ get_weather → ") for line in out.splitlines()), out
    assert "✓ get_time → noon" in out.splitlines()
    from agent_stream.adapters import OpenAIEncoder, run_encoder

    wire = json.dumps(
        [item.data() for item in run_encoder(OpenAIEncoder(), msgs) if hasattr(item, "data")],
        ensure_ascii=False,
    )
    assert "✗ get_weather → " in wire and "✓ get_time → noon" in wire
