"""Live terminal rendering of a Message stream as markdown (``ask`` and ``demo`` on a terminal).

Text is drawn with ``rich``'s Markdown, wrapped to the terminal's width (headings, bold, lists,
tables and code blocks drawn, never a word cut at the edge) while it streams: each streaming
message's unfinished markdown block is redrawn in a :class:`rich.live.Live` region at the
bottom, and every finished block (up to a blank line outside a code fence) is printed once above
it, for good. Each thread's text is its own region and its finished blocks are printed whole,
under the thread's label and indented, so parallel threads never share a line. Reasoning is
dimmed; sections, status lines and errors are as in the plain
:class:`~agent_stream.render.LiveRenderer`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown, MarkdownElement, TableElement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from agent_stream.render import LiveRenderer, make_console

__all__ = ["MarkdownRenderer", "finished_blocks", "make_renderer", "newest_lines"]

Key = tuple[str | None, str | None]  # (thread_id, message_id)
_NO_SOURCE = object()


def finished_blocks(text: str) -> int:
    """How much of ``text`` is whole markdown blocks.

    Args:
        text: markdown, as much as has arrived.

    Returns:
        The offset of the end of the last blank line that is outside a code fence and follows
        some content (0: nothing is finished yet).
    """
    pos = cut = 0
    fence: str | None = None
    content = False
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break  # the line is still arriving
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            content = True
        elif not stripped:
            if content:
                cut = pos + len(line)
                content = False
        else:
            content = True
        pos += len(line)
    return cut


class _FoldingTable(TableElement):
    """rich's markdown table, whose cells fold a word too long for a narrow column instead of
    cutting it short with an ellipsis (nothing of the text is lost)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not hasattr(self, "header") or not hasattr(self, "body"):  # another rich: its own
            yield from super().__rich_console__(console, options)
            return
        table = Table(
            box=box.SIMPLE,
            pad_edge=False,
            style="markdown.table.border",
            show_edge=True,
            collapse_padding=True,
        )
        if self.header is not None and self.header.row is not None:
            for column in self.header.row.cells:
                heading = column.content.copy()
                heading.stylize("markdown.table.header")
                table.add_column(heading, overflow="fold")
        if self.body is not None:
            for row in self.body.rows:
                table.add_row(*(cell.content for cell in row.cells))
        yield table


class _Markdown(Markdown):
    """rich's Markdown with tables that keep all their text."""

    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "table_open": _FoldingTable,
    }


def newest_lines(text: str, limit: int) -> str:
    """The last lines of markdown, under the opening line of the code fence they are in, if any.

    So they still draw as code.

    Args:
        text: markdown.
        limit: how many lines to keep.
    """
    lines = text.split("\n")
    if len(lines) <= limit:
        return text
    cut = len(lines) - limit
    opener: str | None = None
    for line in lines[:cut]:
        stripped = line.strip()
        if opener is not None:
            if stripped.startswith(opener.strip()[:3]):
                opener = None
        elif stripped.startswith(("```", "~~~")):
            opener = line
    return "\n".join(([opener] if opener is not None else []) + lines[cut:])


@dataclass
class _Pending:
    """A message's text not yet printed for good."""

    thread_id: str | None
    style: str
    text: str = ""


class MarkdownRenderer(LiveRenderer):
    """Feed it Messages as they arrive; it draws them on a terminal as markdown, live.

    See the module doc. Call :meth:`close` at the end (it also stops the live region).

    Args:
        console: where to draw (None: :func:`~agent_stream.render.make_console`, stdout).
        reasoning: show the reasoning (dimmed).
        refresh_per_second: how often the live region is redrawn at most.
        auto_refresh: let the live region also redraw on its own timer, so that what arrived
            just before a pause in the stream shows.
    """

    def __init__(
        self,
        console: Console | None = None,
        *,
        reasoning: bool = True,
        refresh_per_second: float = 12.0,
        auto_refresh: bool = True,
    ) -> None:
        super().__init__(console, reasoning=reasoning)
        self._pending: dict[Key, _Pending] = {}
        self._live: Live | None = None
        self._interval = 1.0 / refresh_per_second
        # Live's own timer also draws what arrived just before a pause in the stream.
        self._auto = auto_refresh
        self._timer_rate = min(refresh_per_second, 12.0)
        self._drawn_at = 0.0
        self._source: object = _NO_SOURCE  # the thread whose output was printed last
        self._after_text = False  # the last thing printed was text (a blank line separates)

    # -- what is printed for good ---------------------------------------------------------------
    def _block(self, thread_id: str | None, text: str, style: str) -> RenderableType:
        body: RenderableType = _Markdown(text, style=style or "none", code_theme="ansi_dark")
        if thread_id is None:
            return body
        return Padding(body, (0, 0, 0, 2))

    def _print(self, thread_id: str | None, renderable: RenderableType, text: bool = False) -> None:
        self.console.print(renderable, soft_wrap=False, crop=False)
        self._source = thread_id
        self._after_text = text

    def _commit(self, key: Key, upto: int | None = None) -> None:
        """Print ``key``'s text up to ``upto`` (all of it by default) for good."""
        pending = self._pending.get(key)
        if pending is None:
            return
        cut = len(pending.text) if upto is None else upto
        done, pending.text = pending.text[:cut], pending.text[cut:]
        if upto is None:
            del self._pending[key]
        self._draw(force=True)  # the live region no longer shows what is printed below
        if not done.strip():
            return
        tid = pending.thread_id
        if self._after_text and self._source == tid:
            self.console.print()  # between two blocks of one thread's text
        elif tid is not None and self._source != tid:
            self._print(tid, self._prefix(tid))
        self._print(tid, self._block(tid, done.strip("\n"), pending.style), text=True)

    def _commit_thread(self, thread_id: str | None) -> None:
        for key in [k for k, p in self._pending.items() if p.thread_id == thread_id]:
            self._commit(key)

    # -- the live region ------------------------------------------------------------------------
    def _region(self) -> RenderableType:
        shown = [p for p in self._pending.values() if p.text.strip()]
        # The region must fit the screen, or the terminal scrolls what it cannot redraw: an
        # unfinished block taller than its share (a long code block) shows its newest lines.
        budget = max(3, (self.console.height - 4) // max(1, len(shown)) - 2)
        parts: list[RenderableType] = []
        for p in shown:
            if p.thread_id is not None:
                parts.append(self._prefix(p.thread_id))
            parts.append(
                self._block(p.thread_id, newest_lines(p.text.strip("\n"), budget), p.style)
            )
        return Group(*parts)

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._live is None:
            if not any(p.text.strip() for p in self._pending.values()):
                return
            self._live = Live(
                self._region(),
                console=self.console,
                auto_refresh=self._auto,
                refresh_per_second=self._timer_rate,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
                vertical_overflow="crop",
            )
            self._live.start()
            self._drawn_at = now
            return
        drawn = force or now - self._drawn_at >= self._interval
        self._live.update(self._region(), refresh=drawn)
        if drawn:
            self._drawn_at = now

    # -- the hooks of LiveRenderer --------------------------------------------------------------
    def _stream(self, key: Key, thread_id: str | None, content: str, style: str) -> None:
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = _Pending(thread_id, style)
        pending.text += content
        cut = finished_blocks(pending.text)
        if cut:
            self._commit(key, cut)
        else:
            self._draw()

    def _line(self, thread_id: str | None, body: str, style: str = "") -> None:
        self._commit_thread(thread_id)  # what the thread said before comes first
        t = self._prefix(thread_id)
        t.append(body, style=style)
        self._print(thread_id, t)

    def _newline(self) -> None:
        return None  # nothing is mid-line: text is printed in whole blocks

    def _rule(self, thread_id: str | None, title: Text) -> None:
        self._commit_thread(thread_id)
        self.console.rule(title, style="cyan", align="left")
        self._source = thread_id
        self._after_text = False

    def _message_done(self, key: Key) -> None:
        self._commit(key)

    def stop(self) -> None:
        """Print whatever is still pending and stop the live region (idempotent)."""
        self._show_calls()  # tool calls whose arguments never completed
        for key in list(self._pending):
            self._commit(key)
        if self._live is not None:
            self._live.stop()
            self._live = None

    def close(self, summary: str | None = None, *, ok: bool = True) -> None:
        """Print what is pending, stop the live region, then the summary line.

        Args:
            summary: the last line (None: none).
            ok: the summary in green, else in red.
        """
        self.stop()
        if summary:
            self.console.rule(style="green" if ok else "red")
            self.console.print(Text(summary, style="green" if ok else "bold red"))


def make_renderer(console: Console | None = None, *, reasoning: bool = True) -> LiveRenderer:
    """The renderer for a console: live markdown on a terminal, else plain appended text.

    A :class:`MarkdownRenderer` on a terminal, else a :class:`LiveRenderer`.

    Args:
        console: where to render (default: :func:`~agent_stream.render.make_console`, stdout).
        reasoning: show the reasoning (dimmed).
    """
    console = console or make_console()
    if console.is_terminal:
        return MarkdownRenderer(console, reasoning=reasoning)
    return LiveRenderer(console, reasoning=reasoning)
