"""Markdown drawn live on a terminal: headings, bold, lists, tables and code drawn (no raw
``##``, ``**`` or pipes), wrapped at word boundaries at any width, reasoning dimmed, and
parallel threads never sharing a line.

The renderer writes to a Console that believes it is a terminal of a given width; what it wrote
(text, cursor moves, line erasures of the live region) is played on a small screen model, and
the screen left at the end is what a user would see.
"""

from __future__ import annotations

import asyncio
import io
import json
import re

import pytest
from rich.console import Console
from terminal_screen import screen

from agent_stream.message import Message
from agent_stream.render import LiveRenderer, make_console
from agent_stream.render_markdown import MarkdownRenderer, finished_blocks, make_renderer
from agent_stream.sources.replay import ReplayModel, pick_reply
from agent_stream.writer import StreamWriter, collect


def terminal(width: int, color: bool = False) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        height=50,
        force_terminal=True,
        color_system="standard" if color else None,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=True,
    )
    return console, buf


def draw(messages: list[Message], width: int, color: bool = False) -> tuple[list[str], str]:
    console, buf = terminal(width, color)
    r = make_renderer(console)
    assert isinstance(r, MarkdownRenderer)
    r._auto = False  # what is drawn depends on the Messages only, not on a timer
    for m in messages:
        r.feed(m)
    r.close("done")
    return screen(buf.getvalue()), buf.getvalue()


def replay() -> list[Message]:
    return asyncio.run(collect(lambda out: ReplayModel(rate=0)("stream", out)))


def words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z]{2,}", text))


@pytest.mark.parametrize("width", [40, 80])
def test_the_answer_is_drawn_as_markdown_and_wrapped_between_words(width: int) -> None:
    messages = replay()
    shown, _ = draw(messages, width)
    text = "\n".join(shown)
    assert all(len(line) <= width for line in shown)
    assert "##" not in text and "**" not in text
    assert not any(line.lstrip().startswith("|") for line in shown)  # a table, not pipes
    assert "Streaming agent output, in short" in shown  # the heading, alone on its line
    assert any("━" in line or "─" in line for line in shown)
    assert "async def respond(request, out):" in text  # the code block, drawn
    # Every word on the screen is a word of the stream: none is cut at the edge of the line
    # (a table column narrower than its longest word is the one place rich folds a word).
    said = words(json.dumps([m.to_dict() for m in messages], ensure_ascii=False)) | {"done"}
    head = next(i for i, ln in enumerate(shown) if "Approach" in ln)
    top = max(i for i in range(head) if not shown[i].strip())
    end = min(i for i in range(head, len(shown)) if not shown[i].strip())
    cut = words("\n".join(shown[:top] + shown[end:])) - said
    assert not cut, cut
    answer = pick_reply("stream").answer
    table = words("\n".join(ln for ln in answer.splitlines() if ln.startswith("|")))
    assert words(answer) - table - words(text) <= {"python"}  # (the code fence's language)
    drawn_table = "\n".join(shown[top:end])
    assert all(w[:6] in drawn_table for w in table)  # a long word folds; nothing is cut off


def test_reasoning_is_dimmed_and_the_answer_is_not() -> None:
    _, raw = draw(replay(), 80, color=True)
    assert re.search(r"\x1b\[[0-9;]*2[0-9;]*m[^\x1b]*The user wants", raw)
    assert not re.search(r"\x1b\[[0-9;]*\b2;3m[^\x1b]*Send the reply", raw)


def test_two_threads_streaming_at_once_never_share_a_line() -> None:
    alpha = (
        "## Alpha heading\n\nAlpha one alpha two alpha three alpha four alpha five alpha "
        "six alpha seven alpha eight.\n\n- alpha item\n"
    )
    beta = (
        "## Beta heading\n\nBeta one beta two beta three beta four beta five beta six "
        "beta seven beta eight.\n\n| beta | table |\n| --- | --- |\n| b1 | b2 |\n"
    )

    async def body(out: StreamWriter) -> None:
        async with (
            out.thread(label="alpha") as ta,
            out.thread(label="beta") as tb,
            ta.message() as ma,
            tb.message() as mb,
        ):
            a, b = re.findall(r"\S+\s*", alpha), re.findall(r"\S+\s*", beta)
            for i in range(max(len(a), len(b))):  # token by token, alternating
                if i < len(a):
                    await ma.append(a[i])
                if i < len(b):
                    await mb.append(b[i])

    messages = asyncio.run(collect(body))
    for width in (40, 80):
        shown, _ = draw(messages, width)
        for line in shown:
            low = line.lower()
            assert not ("alpha" in low and "beta" in low), line
        assert "  Alpha heading" in shown and "  Beta heading" in shown
        assert "[alpha]" in shown and "[beta]" in shown
        assert "#" not in "\n".join(shown) and "| beta" not in "\n".join(shown)


def test_a_pipe_or_file_gets_the_plain_renderer() -> None:
    plain = make_renderer(make_console(io.StringIO()))
    assert type(plain) is LiveRenderer
    console, _ = terminal(80)
    assert isinstance(make_renderer(console), MarkdownRenderer)


def test_finished_blocks_end_at_blank_lines_outside_code_fences() -> None:
    assert finished_blocks("# Title\n\nPara") == len("# Title\n\n")
    assert finished_blocks("no blank line yet\n") == 0
    fenced = "```py\nx = 1\n\ny = 2\n"
    assert finished_blocks(fenced) == 0  # the blank line is inside the fence
    assert finished_blocks(fenced + "```\n\nafter") == len(fenced + "```\n\n")
    assert finished_blocks("\n\n\nText") == 0  # leading blank lines finish nothing


def test_a_long_unfinished_code_block_shows_its_newest_lines_then_all_of_them() -> None:
    code = [f"value_{i} = compute({i})" for i in range(60)]

    async def body(out: StreamWriter) -> None:
        async with out.message() as m:
            await m.append("Here is the code:\n\n```python\n")
            for line in code:
                await m.append(line + "\n")
            await m.append("```\n\nDone.")

    messages = asyncio.run(collect(body))
    console, buf = terminal(60)
    console.height = 20
    r = MarkdownRenderer(console, refresh_per_second=1e9, auto_refresh=False)  # every delta
    for m in messages:
        r.feed(m)
        latest = [ln for ln in code if ln + "\n" in "".join(p.text for p in r._pending.values())]
        if latest and "```\n\n" not in "".join(p.text for p in r._pending.values()):
            region = [ln for ln in screen(buf.getvalue()) if ln.strip()]
            assert region[-1].strip() == latest[-1]  # the newest line is in sight
    r.close()
    shown = [ln.strip() for ln in screen(buf.getvalue())]
    assert [ln for ln in shown if ln.startswith("value_")] == code  # all of it, once, in order
    assert "Done." in shown and "```" not in "\n".join(shown)


def test_newest_lines_keep_the_code_fence_they_are_in() -> None:
    from agent_stream.render_markdown import newest_lines

    text = "intro\n\n```py\na\nb\nc\nd"
    assert newest_lines(text, 2) == "```py\nc\nd"
    assert newest_lines(text, 10) == text
    assert newest_lines("p1\np2\np3", 1) == "p3"
    assert newest_lines("```\nx\n```\nafter\nmore", 2) == "after\nmore"


def test_text_that_arrives_just_before_a_pause_is_drawn() -> None:
    import time

    async def body(out: StreamWriter) -> None:
        async with out.message() as m:
            await m.append("Hello")
            await m.append(" world, then a pause")

    messages = asyncio.run(collect(body))
    last = max(i for i, m in enumerate(messages) if m.type == "text")
    console, buf = terminal(60)
    r = MarkdownRenderer(console)  # at most 12 redraws a second, and Live's own timer
    try:
        for m in messages[: last + 1]:
            r.feed(m)  # the second delta lands inside the redraw interval
        time.sleep(0.5)  # the stream pauses (a slow model); nothing more is fed
        assert "Hello world, then a pause" in screen(buf.getvalue())
    finally:
        r.close()
