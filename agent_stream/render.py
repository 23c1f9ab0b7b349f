"""Live terminal rendering of a Message stream with ``rich`` (used by ``ask`` and ``demo``).

Blocks are sections (a rule with the block's label), threads are labelled (``[label]`` before each
of their lines), reasoning is dimmed, tool calls, progress and tool results are status lines, and
text is printed as it streams. A tool call whose arguments stream is one line, printed once they
are complete (a JSON object, its name known) or when the call ends (its message, block, thread
or the stream ends, or its result arrives), whichever comes first. Output is appended, never
redrawn: the form for a pipe or a file (then without colours). On a terminal, ``ask`` and
``demo`` draw markdown instead (:mod:`agent_stream.render_markdown`, which builds on this
class's event handling).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from agent_stream import merge
from agent_stream.errors import DeltaError
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
    card_texts,
)

__all__ = ["LiveRenderer", "make_console"]

_STREAMED = {"text": "", "thinking": "dim italic", "refusal": "red"}
Key = tuple[str | None, str | None]  # (thread_id, message_id)


class _Call:
    """A tool call not shown yet: its props so far, thread and block."""

    __slots__ = ("block_id", "props", "thread_id")

    def __init__(self, props: dict[str, Any], thread_id: str | None, block_id: str | None) -> None:
        self.props = props
        self.thread_id = thread_id
        self.block_id = block_id


def make_console(file: TextIO | None = None, *, color: bool | None = None) -> Console:
    """A Console for live output: no markup or highlighting of content.

    Lines are wrapped between words on a terminal and left whole in a pipe or a file.

    Args:
        file: where to write (None: stdout).
        color: force colours on (True) or off (False); None: colours on a terminal only.
    """
    console = Console(
        file=file or sys.stdout,
        highlight=False,
        soft_wrap=True,
        emoji=False,
        markup=False,
        force_terminal=color,
        no_color=color is False,
    )
    console.soft_wrap = not console.is_terminal
    return console


class LiveRenderer:
    """Feed it Messages as they arrive; it prints them as they stream.

    Plain text, appended: the form for a pipe or a file.

    Args:
        console: where to print (None: :func:`make_console`, stdout).
        reasoning: show the reasoning (dimmed).
    """

    def __init__(self, console: Console | None = None, *, reasoning: bool = True) -> None:
        self.console = console or make_console()
        self.reasoning = reasoning
        self._threads: dict[str, str] = {}
        self._blocks: dict[str, str] = {}  # block titles, a relayed block's with its parent's
        self._types: dict[Key, str] = {}
        self._cursor: Key | None = None  # message mid-line
        self._at_line_start = True
        self._started: set[Key] = set()  # messages between message_start and message_end
        self._calls: dict[Key, _Call] = {}  # tool calls whose line waits for them to complete
        self._shown: set[Key] = set()  # tool calls whose line is out

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
        """Render one Message.

        Args:
            msg: the next Message of the stream.
        """
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
            self._tool_chunk(key, msg, props)
        elif mtype == "tool_result":
            call_id = props.get("call_id")
            if isinstance(call_id, str) and call_id:  # its call's line comes first
                self._show_calls(lambda c: c.props.get("id") == call_id)
            failed = props.get("is_error") is True
            self._line(
                msg.thread_id,
                f"{'✗' if failed else '✓'} {props.get('name') or 'tool'} → "
                f"{props.get('content', '')}",
                "red" if failed else "green",
            )
        elif mtype == "error":
            code = props.get("code")
            head = f"✗ Error ({code})" if code else "✗ Error"
            self._line(msg.thread_id, f"{head}: {props.get('message', '')}", "bold red")
        elif mtype in ("image", "audio", "video"):
            self._line(msg.thread_id, f"[{mtype}] {props.get('url', '')}", "cyan")
        elif mtype == "action":
            self._line(msg.thread_id, f"→ action {props.get('name', '')}", "dim")
        elif mtype == "user_input" and not msg.delta and isinstance(props.get("content"), str):
            self._line(msg.thread_id, f"? {props['content']}", "bold yellow")
            card = props.get("card")
            if isinstance(card, dict):
                for line in card_lines(card)[1:]:  # its question is the line above
                    self._line(msg.thread_id, line, "yellow")
        elif mtype == "card" and not msg.delta:
            for n, line in enumerate(card_lines(props)):
                self._line(msg.thread_id, line, "bold yellow" if n == 0 else "yellow")
        elif not msg.delta:
            self._line(msg.thread_id, f"{mtype}: {_short(props)}", "dim")

    def _tool_chunk(self, key: Key, msg: Message, props: dict[str, Any]) -> None:
        """Keep a tool call's chunk; show its line once the call is complete."""
        if msg.message_id is None:  # a whole call on its own
            self._call_line(_Call(props, msg.thread_id, msg.block_id))
            return
        if key in self._shown:
            return  # its line is out: later chunks change nothing shown
        call = self._calls.get(key)
        if call is None or not msg.delta:
            new: dict[str, Any] = merge.copy_json(props)
        else:
            try:
                new = merge.apply(call.props, msg.delta_action or "append", msg.delta_path, props)
            except DeltaError:
                return
        self._calls[key] = _Call(
            new, msg.thread_id, msg.block_id or (call.block_id if call is not None else None)
        )
        whole = not msg.delta and key not in self._started
        if whole or (new.get("name") and _json_object(new.get("arguments"))):
            self._show_calls(lambda c: c is self._calls.get(key))

    def _show_calls(self, which: Callable[[_Call], bool] | None = None) -> None:
        """Show the waiting tool calls ``which(call)`` selects (all when None), in order."""
        for key, call in list(self._calls.items()):
            if which is None or which(call):
                del self._calls[key]
                self._shown.add(key)
                self._call_line(call)

    def _call_line(self, call: _Call) -> None:
        p = call.props
        args = p.get("arguments") or ""
        self._line(call.thread_id, f"⚙ {p.get('name') or 'tool'}({args})", "yellow")

    def _stream(self, key: Key, thread_id: str | None, content: str, style: str) -> None:
        if self._cursor != key:
            self._newline()
            self._write(self._prefix(thread_id))
            self._cursor = key
        self._write(Text(content, style=style))

    def _rule(self, thread_id: str | None, title: Text) -> None:
        """A block's section: a rule with its title."""
        self.console.rule(title, style="cyan", align="left")
        self._at_line_start = True

    def _message_done(self, key: Key) -> None:
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
            self._started.add((tid, ev.message_id))
        elif name == MESSAGE_END:
            status = ev.status
            mid = ev.message_id
            self._started.discard((tid, mid))
            if (tid, mid) in self._calls:
                self._show_calls(lambda c: c is self._calls.get((tid, mid)))
            mtype = self._types.get((tid, mid), ev.type)
            if mtype == "thinking" and not self.reasoning:
                return
            self._message_done((tid, mid))
            if status not in (None, "completed"):
                self._line(tid, f"({mtype or 'message'} {status})", "red")
        elif name in (BLOCK_END, THREAD_END):
            if name == BLOCK_END:
                bid = ev.block_id
                self._show_calls(lambda c: c.block_id == bid)
            else:
                self._show_calls(lambda c: c.thread_id == tid)
            status = ev.status
            if status not in (None, "completed"):
                what = "block" if name == BLOCK_END else "thread"
                self._line(tid, f"({what} {status})", "red")
        elif name == STREAM_END:
            self._show_calls()
            self._newline()
            status = ev.status or "completed"
            if status != "completed":
                err = ev.error
                self._line(None, f"reply {status}" + (f": {err}" if err else ""), "bold red")

    def stop(self) -> None:
        """Stop drawing (before an error is printed); nothing to do for appended text."""
        return None

    def close(self, summary: str | None = None, *, ok: bool = True) -> None:
        """End the output, with a summary line.

        Args:
            summary: the last line (None: none).
            ok: the summary in green, else in red.
        """
        self._show_calls()  # a cut stream's calls: shown as far as they came
        self._newline()
        if summary:
            self.console.rule(style="green" if ok else "red")
            self._write(Text(summary + "\n", style="green" if ok else "bold red"))


def card_lines(card: dict[str, Any]) -> list[str]:
    """An interactive card as terminal lines: its title, rows, then its choices numbered (the
    number a person types to choose), a form's fields, or a custom card's texts.

    Args:
        card: a ``card`` Message's props (``kind``, ``payload``), or a question's ``card``.
    """
    kind = card.get("kind")
    p = card.get("payload") if isinstance(card.get("payload"), dict) else {}
    assert isinstance(p, dict)
    lines = [f"▣ {p.get('title') or kind or 'card'}"]
    if p.get("subtitle"):
        lines.append(f"  {p['subtitle']}")
    for row in p.get("summary_rows") or ():
        if isinstance(row, dict):
            lines.append(f"  {row.get('label', '')}: {row.get('value', '')}")
    for n, (label, _selection) in enumerate(card_choices(card), 1):
        lines.append(f"  [{n}] {label}")
    for field in p.get("fields") or ():
        if isinstance(field, dict):
            required = " (required)" if field.get("required") else ""
            lines.append(f"  - {field.get('label', field.get('name', ''))}{required}")
    if kind == "custom":
        lines.extend(f"  {t}" for t in card_texts(p.get("root")))
    return lines


def card_choices(card: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A card's buttons in order, (label, selection): what a person chooses between.

    Args:
        card: a ``card`` Message's props, or a question's ``card``.
    """
    p = card.get("payload") if isinstance(card.get("payload"), dict) else {}
    assert isinstance(p, dict)
    ctas: list[Any] = []
    if card.get("kind") == "review":
        ctas = [p.get("approve_cta"), p.get("reject_cta")]
    elif card.get("kind") == "carousel":
        for item in p.get("items") or ():
            if isinstance(item, dict) and isinstance(item.get("primary_cta"), dict):
                cta = dict(item["primary_cta"])
                cta["label"] = f"{item.get('title', '')}: {cta.get('label', '')}"
                ctas.append(cta)
    elif card.get("kind") == "detail":
        ctas = list(p.get("ctas") or ())
    return [
        (str(c.get("label", "")), dict(c.get("selection") or {}))
        for c in ctas
        if isinstance(c, dict)
    ]


def _json_object(args: Any) -> bool:
    """Whether tool-call arguments are complete: a whole JSON object."""
    if not isinstance(args, str) or not args.rstrip().endswith("}"):
        return False
    try:
        return isinstance(json.loads(args), dict)
    except ValueError:
        return False


def _short(props: dict[str, Any], limit: int = 120) -> str:
    s = json.dumps(props, ensure_ascii=False, separators=(",", ":"))
    return s if len(s) <= limit else s[: limit - 1] + "…"
