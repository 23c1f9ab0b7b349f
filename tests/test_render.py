"""LiveRenderer: sections, thread labels, dimmed reasoning, status lines, streamed text."""

from __future__ import annotations

import asyncio
import io
import re

from agent_stream.message import Message, error, text
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
        async with (out.thread(label="a") as ta, out.thread(label="b") as tb,
                    ta.message() as ma, tb.message() as mb):
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
