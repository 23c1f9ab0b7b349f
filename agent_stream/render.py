"""Live terminal rendering of a Message stream with ``rich`` (used by ``ask`` and ``demo``).

Blocks are sections (a rule with the block's label), threads are labelled (``[label]`` before each
of their lines), reasoning is dimmed, tool calls, progress and tool results are status lines, and
text is printed as it streams. Output is appended, never redrawn: the form for a pipe or a file
(then without colours). On a terminal, ``ask`` and ``demo`` draw markdown instead
(:mod:`agent_stream.render_markdown`, which builds on this class's event handling).
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from agent_stream.events import EventView
from agent_stream.message import (
    BLOCK_END,
    BLOCK_START,
    EVENT,
    MESSAGE_END,
    MESSAGE_START,
    STREAM_END,
    THREAD_END,
    THREAD_START,
    Message,
)

__all__ = ["LiveRenderer", "make_console"]

_STREAMED = {"text": "", "thinking": "dim italic", "refusal": "red"}


def make_console(file: TextIO | None = None, *, color: bool | None = None) -> Console:
    """A Console for live output: no markup or highlighting of content; lines are wrapped
    between words on a terminal and left whole in a pipe or a file."""
    console = Console(file=file or sys.stdout, highlight=False, soft_wrap=True, emoji=False,
                      markup=False, force_terminal=color, no_color=color is False)
    console.soft_wrap = not console.is_terminal
    return console


class LiveRenderer:
    """Feed it Messages as they arrive; it prints them as they stream (plain text, appended:
    the form for a pipe or a file)."""

    def __init__(self, console: Console | None = None, *, reasoning: bool = True) -> None:
        self.console = console or make_console()
        self.reasoning = reasoning
        self._threads: dict[str, str] = {}
        self._blocks: dict[str, str] = {}  # block titles, a relayed block's with its parent's
        self._types: dict[tuple[str | None, str | None], str] = {}
        self._cursor: tuple[str | None, str | None] | None = None  # message mid-line
        self._at_line_start = True

    # -- output primitives ----------------------------------------------------------------------
    def _write(self, text: Text) -> None:
        self.console.print(text, end="")
        self.console.file.flush()
        if text.plain:
            self._at_line_start = text.plain.endswith("\n")

    def _newline(self) -> None:
        if not self._at_line_start:
            self._write(Text("\n"))
        self._cursor = None

    def _prefix(self, thread_id: str | None) -> Text:
        if thread_id is None:
            return Text()
        label = self._threads.get(thread_id) or thread_id
        return Text(f"[{label}] ", style="bold magenta")

    def _line(self, thread_id: str | None, body: str, style: str = "") -> None:
        self._newline()
        t = self._prefix(thread_id)
        t.append(body, style=style)
        t.append("\n")
        self._write(t)

    # -- feeding --------------------------------------------------------------------------------
    def feed(self, msg: Message) -> None:
        """Render one Message."""
        name = msg.event
        if msg.type == EVENT and name is not None:
            self._event(name, msg)
            return
        key = (msg.thread_id, msg.message_id)
        mtype = msg.type
        if msg.type_change:
            self._types[key] = mtype
        else:
            mtype = self._types.get(key, mtype) if msg.delta else mtype
            self._types[key] = mtype
        props = msg.props or {}
        if mtype in _STREAMED:
            if mtype == "thinking" and not self.reasoning:
                return
            content = props.get("content")
            if isinstance(content, str) and content:
                self._stream(key, msg.thread_id, content, _STREAMED[mtype])
            return
        if mtype == "loading":
            if msg.delta:
                return  # progress updates ("done") are shown by the tool result
            self._line(msg.thread_id, f"… {props.get('message', '')}", "dim")
        elif mtype == "tool_call":
            args = props.get("arguments") or ""
            self._line(msg.thread_id, f"⚙ {props.get('name') or 'tool'}({args})", "yellow")
        elif mtype == "tool_result":
            self._line(msg.thread_id,
                       f"✓ {props.get('name') or 'tool'} → {props.get('content', '')}", "green")
        elif mtype == "error":
            code = props.get("code")
            head = f"✗ Error ({code})" if code else "✗ Error"
            self._line(msg.thread_id, f"{head}: {props.get('message', '')}", "bold red")
        elif mtype in ("image", "audio", "video"):
            self._line(msg.thread_id, f"[{mtype}] {props.get('url', '')}", "cyan")
        elif mtype == "action":
            self._line(msg.thread_id, f"→ action {props.get('name', '')}", "dim")
        elif not msg.delta:
            self._line(msg.thread_id, f"{mtype}: {_short(props)}", "dim")

    def _stream(self, key: tuple[str | None, str | None], thread_id: str | None, content: str,
                style: str) -> None:
        if self._cursor != key:
            self._newline()
            self._write(self._prefix(thread_id))
            self._cursor = key
        self._write(Text(content, style=style))

    def _rule(self, thread_id: str | None, title: Text) -> None:
        """A block's section: a rule with its title."""
        self.console.rule(title, style="cyan", align="left")
        self._at_line_start = True

    def _message_done(self, key: tuple[str | None, str | None]) -> None:
        """A streamed message ended: its line ends."""
        if self._cursor == key:
            self._newline()

    def _event(self, name: str, msg: Message) -> None:
        ev = EventView(msg)
        tid = msg.thread_id or ev.thread_id
        if name == THREAD_START:
            if tid:
                parent = self._threads.get(str(ev.data.get("parent_thread_id")))
                label = ev.label or tid
                self._threads[tid] = f"{parent} › {label}" if parent else label
        elif name == BLOCK_START:
            self._newline()
            label = ev.label or ev.type or "block"
            parent = self._blocks.get(str(ev.data.get("parent_block_id")))
            if parent:  # a relayed sub-agent's block: under its agent's section
                label = f"{parent} › {label}"
            if ev.block_id:
                self._blocks[ev.block_id] = label
            title = self._prefix(tid)
            title.append(label, style="bold cyan")
            self._rule(tid, title)
        elif name == MESSAGE_START:
            self._types[(tid, ev.message_id)] = ev.type or "text"
        elif name == MESSAGE_END:
            status = ev.status
            mid = ev.message_id
            mtype = self._types.get((tid, mid), ev.type)
            if mtype == "thinking" and not self.reasoning:
                return
            self._message_done((tid, mid))
            if status not in (None, "completed"):
                self._line(tid, f"({mtype or 'message'} {status})", "red")
        elif name in (BLOCK_END, THREAD_END):
            status = ev.status
            if status not in (None, "completed"):
                what = "block" if name == BLOCK_END else "thread"
                self._line(tid, f"({what} {status})", "red")
        elif name == STREAM_END:
            self._newline()
            status = ev.status or "completed"
            if status != "completed":
                err = ev.error
                self._line(None, f"reply {status}" + (f": {err}" if err else ""), "bold red")

    def stop(self) -> None:
        """Stop drawing (before an error is printed); nothing to do for appended text."""
        return None

    def close(self, summary: str | None = None, *, ok: bool = True) -> None:
        """End the output (a summary line in green, or red when not ``ok``)."""
        self._newline()
        if summary:
            self.console.rule(style="green" if ok else "red")
            self._write(Text(summary + "\n", style="green" if ok else "bold red"))


def _short(props: dict[str, Any], limit: int = 120) -> str:
    s = json.dumps(props, ensure_ascii=False, separators=(",", ":"))
    return s if len(s) <= limit else s[: limit - 1] + "…"
