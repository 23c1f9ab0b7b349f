"""Chunks that read well one by one: no cut breaks a table row, a heading, a list item's first line
or a code fence, and a heading goes with what follows it, even when ``max_delay`` forces cuts.

Where the markdown is, is read by a CommonMark parser (markdown-it-py, tables enabled) from the
whole text; each chunk is also parsed on its own. A cut *breaks* the markdown when it falls:

- strictly inside a table row, a heading line or a list item's first line (after the line's
  start, up to and including its newline: only a cut at a line start leaves it whole);
- inside a fenced code block other than at a line end (a fence's opening line is never split;
  a cut just before the closing fence line's newline is a line end);
- right after a heading line (only blanks between it and the cut) with more text after the cut.

Every chunk parsed on its own shows the same headings, table rows (cell by cell), list items and
fences (info string, whole lines of content) as the whole text does at those lines, and no chunk
but the last ends with a heading.

The rules give way only to ``max_chars`` (a row, heading or line longer than a chunk) and, after
``block_grace`` seconds past ``max_delay``, to the time bound; both are checked: with everything
fitting and an infinite ``block_grace`` no cut breaks the markdown at all, however late tokens
come; otherwise every cut that does was forced by one of the two.

Each test runs on the interpreted chunker and on the compiled one (``implementation``).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from random import Random
from typing import Any

import pytest
from chunker_impls import PURE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from agent_stream.errors import ChunkerConfigError

TextChunker = PURE  # the build under test: set by ``_each_build``

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(autouse=True)
def _each_build(implementation: type[PURE], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(globals(), "TextChunker", implementation)


# --------------------------------------------------------------------- the oracle

_MD = MarkdownIt("commonmark").enable("table")


def _cells(tokens: list[Token], i: int) -> tuple[str, ...]:
    """The cells' text of the row opened at tokens[i]."""
    out: list[str] = []
    while tokens[i].type != "tr_close":
        if tokens[i].type == "inline":
            out.append(tokens[i].content)
        i += 1
    return tuple(out)


@dataclass
class Blocks:
    """What markdown-it-py finds in a text, by line number."""

    headings: dict[int, str] = field(default_factory=dict)  # line: its text
    rows: dict[int, tuple[str, ...]] = field(default_factory=dict)  # line: its cells
    table_lines: set[int] = field(default_factory=set)  # header, delimiter and body rows
    items: set[int] = field(default_factory=set)  # a list item's first line
    fences: dict[int, tuple[str, str, int]] = field(default_factory=dict)  # (info, content, end)
    last_heading: bool = False  # the last block is a heading


def parse(text: str) -> Blocks:
    tokens = _MD.parse(text)
    found = Blocks()
    for i, t in enumerate(tokens):
        if t.map is None:
            continue
        a, z = t.map
        if t.type == "heading_open":
            found.headings[a] = tokens[i + 1].content
        elif t.type == "table_open":
            found.table_lines.update(range(a, z))
        elif t.type == "tr_open":
            found.rows[a] = _cells(tokens, i)
        elif t.type == "list_item_open":
            found.items.add(a)
        elif t.type == "fence":
            found.fences[a] = (t.info, t.content, z)
    blocks = [t for t in tokens if t.level == 0 and t.nesting != -1]
    found.last_heading = bool(blocks) and blocks[-1].type == "heading_open"
    return found


class Doc:
    """A text, its lines and its markdown: where a cut breaks it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.blocks = parse(text)
        self.in_fence: dict[int, int] = {}  # a code line, or a closing fence line: its opening
        for a, (_info, _content, z) in self.blocks.fences.items():
            for line in range(a + 1, z):
                self.in_fence[line] = a

    def line_of(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def newline(self, line: int) -> int:
        """Where the line's newline is (the text's end for a last line without one)."""
        nl = self.text.find("\n", self.starts[line])
        return len(self.text) if nl < 0 else nl

    def broken(self, c: int) -> str | None:
        """What a cut at offset ``c`` breaks, or None."""
        found = self.breaks(c)
        return None if found is None else found[0]

    def breaks(self, c: int) -> tuple[str, int] | None:
        """What a cut at offset ``c`` breaks and the line that starts it, or None."""
        text, b = self.text, self.blocks
        if text[c - 1] != "\n":  # inside a line
            line = self.line_of(c - 1)
            if line in b.table_lines:
                return "inside a table row", line
            if line in b.headings:
                return "inside a heading", line
            if line in b.items:
                return "inside a list item's first line", line
            if line in b.fences:
                return "inside a fence's opening line", line
            if line in self.in_fence:
                end = b.fences[self.in_fence[line]][2]
                if line < end - 1 or c < self.newline(line):
                    return "inside a code line", line
        j = c
        while j > 0 and text[j - 1] in " \t\r\n":
            j -= 1
        if j < c and j > 0 and self.line_of(j - 1) in b.headings and text[c:].strip():
            return "right after a heading", self.line_of(j - 1)
        return None

    def unit_end(self, line: int) -> int:
        """The end of what a cut must not split, starting at a line: the line; for a heading,
        up to the end of the next line with text on it, or of the code fence it opens (a fence
        that fits a chunk, as far as it has come, is not cut inside: the heading gives way)."""
        end = self.newline(line) + 1
        if line in self.blocks.headings:
            nxt = line + 1
            while nxt < len(self.starts) and not self.text[
                self.starts[nxt] : self.newline(nxt)
            ].strip(" \t\r"):
                nxt += 1
            if nxt < len(self.starts):
                end = self.newline(nxt) + 1
                if nxt in self.blocks.fences:
                    z = self.blocks.fences[nxt][2]
                    end = self.starts[z] if z < len(self.starts) else len(self.text)
        return min(end, len(self.text))

    def standalone_faults(self, chunk: str, at: int, last: bool) -> list[str]:
        """What ``chunk`` (at offset ``at``) parsed on its own shows otherwise than the text."""
        faults: list[str] = []
        alone = parse(chunk)
        first = self.line_of(at)
        skip = 0 if at == self.starts[first] else 1  # a first line begun earlier: not whole
        b = self.blocks
        for line, heading in alone.headings.items():
            if line >= skip and first + line in b.headings and b.headings[first + line] != heading:
                faults.append(f"heading {heading!r}")
        for line, cells in alone.rows.items():
            if line >= skip and first + line in b.rows and b.rows[first + line] != cells:
                faults.append(f"row {cells!r}")
        for line in alone.items:
            doc_line = first + line
            if line >= skip and doc_line in b.items:
                whole = self.text[self.starts[doc_line] : self.newline(doc_line)]
                if whole not in chunk:
                    faults.append(f"list item {whole!r}")
        for line, (info, content, _end) in alone.fences.items():
            if line >= skip and first + line in b.fences:
                doc_info, doc_content, _z = b.fences[first + line]
                whole_lines = content == doc_content or (
                    doc_content.startswith(content) and content.endswith("\n")
                )
                if info != doc_info or not (whole_lines or not content):
                    faults.append(f"fence {info!r} {content!r}")
        if not last and alone.last_heading:
            line = max(alone.headings)
            if line >= skip and first + line in b.headings:
                faults.append(f"ends with the heading {alone.headings[line]!r}")
        return faults


# --------------------------------------------------------------------- markdown to feed

_WORDS = [
    "the",
    "model",
    "agent",
    "streams",
    "tokens",
    "fast",
    "client",
    "renders",
    "each",
    "chunk",
    "table",
    "Dr.",
    "3.14",
    "e.g.",
    "v1.2.3",
    "2,143,623",
    "18.8x",
    "**bold**",
    "`code.x()`",
    "U.S.",
    "blingfire",
    "stream2sentence",
    "ours",
    "今天",
]
_CODE_LINES = [
    "import asyncio",
    "x = 1. y = 2.",
    "# a comment, not a heading",
    "- not a list item",
    "| not | a row |",
    "    return None",
    "print('Done. Next.')",
    "",
]

_word = st.sampled_from(_WORDS)


@st.composite
def _sentence(draw: st.DrawFn, max_words: int = 10) -> str:
    words = draw(st.lists(_word, min_size=1, max_size=max_words))
    words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words) + draw(st.sampled_from([".", ".", "!", "?", ":", ""]))


@st.composite
def _paragraph(draw: st.DrawFn) -> str:
    sents = draw(st.lists(_sentence(), min_size=1, max_size=4))
    joins = draw(st.lists(st.sampled_from([" ", " ", "\n"]), min_size=len(sents) - 1, max_size=3))
    out = sents[0]
    for s, j in zip(sents[1:], joins, strict=False):
        out += j + s
    return out


@st.composite
def _heading(draw: st.DrawFn) -> str:
    level = draw(st.integers(1, 3))
    return "#" * level + " " + draw(_sentence(max_words=5))


@st.composite
def _table(draw: st.DrawFn) -> str:
    cols = draw(st.integers(2, 4))
    cell = st.lists(_word, min_size=1, max_size=2).map(" ".join)
    head = draw(st.lists(cell, min_size=cols, max_size=cols))
    rows = draw(st.lists(st.lists(cell, min_size=cols, max_size=cols), min_size=1, max_size=6))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * cols]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


@st.composite
def _list(draw: st.DrawFn) -> str:
    ordered = draw(st.booleans())
    n = draw(st.integers(1, 5))
    lines: list[str] = []
    for i in range(1, n + 1):
        marker = f"{i}. " if ordered else draw(st.sampled_from(["- ", "* ", "+ "]))
        lines.append(marker + draw(_sentence()) + draw(st.sampled_from(["", " " + "more words."])))
        if draw(st.integers(0, 3)) == 0:  # a nested list
            indent = " " * len(marker)
            lines += [indent + "- " + draw(_sentence(max_words=6)) for _ in range(2)]
        elif draw(st.integers(0, 4)) == 0:  # a continuation line
            lines.append(" " * len(marker) + draw(_sentence(max_words=6)))
    return "\n".join(lines)


@st.composite
def _fence(draw: st.DrawFn) -> str:
    ticks = draw(st.sampled_from(["```", "~~~"]))
    info = draw(st.sampled_from(["", "python", "sh"]))
    body = draw(st.lists(st.sampled_from(_CODE_LINES), min_size=1, max_size=8))
    return "\n".join([ticks + info, *body, ticks])


@st.composite
def documents(draw: st.DrawFn) -> str:
    """Markdown as a model writes it: blocks between blank lines; a heading is followed by a
    paragraph, a list, a table or a code fence (now and then on the very next line)."""
    out: list[str] = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["heading", "paragraph", "table", "list", "fence"]))
        if kind == "heading":
            after = draw(st.one_of(_paragraph(), _list(), _table(), _fence()))
            out.append(draw(_heading()) + draw(st.sampled_from(["\n\n", "\n\n", "\n"])) + after)
        else:
            block = {"paragraph": _paragraph, "table": _table, "list": _list, "fence": _fence}
            out.append(draw(block[kind]()))
    return "\n\n".join(out) + draw(st.sampled_from(["", "\n"]))


# BPE-like tokens: a word with its leading space, digits, punctuation, whitespace runs.
_TOKEN = re.compile(r" ?[^\W\d_]+| ?\d{1,3}| ?(?:[^\s\w]|_)+|\s+", re.S)
# Seconds between two tokens: mostly a 50 token/s model, now and then a long stall.
_GAPS = [0.0, 0.02, 0.02, 0.02, 0.02, 0.02, 0.05, 0.3, 1.0, 3.0]


def stream(text: str, rnd: Random) -> list[tuple[str, float]]:
    """The text as tokens (some split further, some merged), each with its arrival time."""
    pieces: list[str] = []
    for tok in _TOKEN.findall(text):
        if len(tok) > 3 and rnd.random() < 0.2:
            cut = rnd.randint(1, len(tok) - 1)
            pieces += [tok[:cut], tok[cut:]]
        elif pieces and rnd.random() < 0.1:
            pieces[-1] += tok
        else:
            pieces.append(tok)
    assert "".join(pieces) == text
    times = accumulate(rnd.choice(_GAPS) for _ in pieces)
    return list(zip(pieces, times, strict=True))


@dataclass
class Released:
    chunk: str
    start: int  # its offset in the text
    now: float  # when it was released (inf: by flush)


def run(opts: dict[str, Any], deltas: list[tuple[str, float]]) -> list[Released]:
    """Feed the deltas, polling at every deadline before each arrives; then flush."""
    ch = TextChunker(**opts)
    out: list[Released] = []
    at = 0

    def take(chunks: list[str], now: float) -> None:
        nonlocal at
        for c in chunks:
            out.append(Released(c, at, now))
            at += len(c)

    def poll_until(limit: float) -> None:
        for _ in range(10_000):
            d = ch.next_deadline
            if d is None or d > limit:
                return
            take(ch.poll(d), d)
            after = ch.next_deadline
            assert after is None or after > d  # never a deadline already in the past
        raise AssertionError("poll made no progress")

    for piece, t in deltas:
        poll_until(t)
        take(ch.feed(piece, t), t)
    poll_until(deltas[-1][1] + 10.0 if deltas else 0.0)
    take(ch.flush(), math.inf)
    return out


def arrivals(deltas: list[tuple[str, float]]) -> list[float]:
    return [t for piece, t in deltas for _ in piece]


def check(doc: Doc, got: list[Released], forced_ok: Any) -> None:
    """Lossless; every cut either keeps the markdown whole or ``forced_ok(released, cut)``;
    every chunk parsed on its own agrees with the text."""
    assert "".join(r.chunk for r in got) == doc.text
    for i, r in enumerate(got):
        assert r.chunk
        last = i == len(got) - 1
        c = r.start + len(r.chunk)
        if not last:
            why = doc.broken(c)
            if why is not None and not forced_ok(r, c):
                ctx = f"{doc.text[max(0, c - 40) : c]!r} | {doc.text[c : c + 20]!r}"
                raise AssertionError(f"a cut {why}: {ctx}")
        faults = doc.standalone_faults(r.chunk, r.start, last)
        if faults and not forced_ok(r, c):
            raise AssertionError(f"chunk {r.chunk!r} on its own: {faults}")


# --------------------------------------------------------------------- the properties


@SETTINGS
@given(documents(), st.randoms(use_true_random=False), st.data())
def test_no_cut_breaks_the_markdown_when_it_fits_and_may_wait(
    text: str, rnd: Random, data: st.DataObject
) -> None:
    """Infinite ``block_grace`` and every row, heading (with what follows it) and fitting fence
    shorter than ``max_chars``: however late tokens come, no cut breaks anything; tables and
    lists longer than a chunk split at row and line ends."""
    hi = data.draw(st.integers(400, 1000))
    opts = {
        "min_chars": data.draw(st.integers(1, 60)),
        "max_chars": hi,
        "max_delay": data.draw(st.sampled_from([0.05, 0.25, 1.0])),
        "first_chars": data.draw(st.none() | st.integers(0, 60)),
        "block_grace": math.inf,
    }
    doc = Doc(text)
    got = run(opts, stream(text, rnd))
    check(doc, got, lambda r, c: False)
    assert all(len(r.chunk) <= hi for r in got)


@SETTINGS
@given(documents(), st.randoms(use_true_random=False), st.data())
def test_only_max_chars_or_the_grace_running_out_break_the_markdown(
    text: str, rnd: Random, data: st.DataObject
) -> None:
    """Small chunks, any ``block_grace``: a cut that breaks the markdown is made only when the
    chunk starts something longer than ``max_chars`` (a row, a line, a heading and the line
    after it) or when its first character had waited ``max_delay + block_grace``."""
    lo = data.draw(st.integers(1, 60))
    opts = {
        "min_chars": lo,
        "max_chars": data.draw(st.integers(max(lo, 30), 200)),
        "max_delay": data.draw(st.sampled_from([0.05, 0.25, 1.0])),
        "first_chars": data.draw(st.none() | st.integers(0, 30)),
        "block_grace": data.draw(st.sampled_from([0.0, 0.1, 1.0, math.inf])),
    }
    doc = Doc(text)
    deltas = stream(text, rnd)
    arrival = arrivals(deltas)
    wait = opts["max_delay"] + opts["block_grace"]

    def forced(r: Released, c: int) -> bool:
        line = doc.line_of(r.start)
        unit_end = doc.unit_end(line)
        too_long = doc.starts[line] == r.start and unit_end - r.start > opts["max_chars"]
        late = arrival[r.start] + wait <= r.now + 1e-9
        # a line cut once (forced) is no longer whole: what is left of it is cut like text
        found = doc.breaks(c)
        cut_before = found is not None and doc.starts[found[1]] < r.start
        return too_long or late or cut_before

    got = run(opts, deltas)
    check(doc, got, forced)
    assert all(len(r.chunk) <= opts["max_chars"] for r in got)


@settings(SETTINGS, max_examples=60)
@given(documents(), st.randoms(use_true_random=False), st.sampled_from([0.0, 0.1, 1.0]))
def test_nothing_waits_longer_than_max_delay_and_block_grace(
    text: str, rnd: Random, grace: float
) -> None:
    """With the default sizes and no code fence still open, the time bound holds: max_delay,
    plus block_grace for text held to keep the markdown whole."""
    text = re.sub(r"(?m)^(```|~~~).*\n?", "", text)  # (an open fence may wait past both)
    deltas = stream(text, rnd)
    arrival = arrivals(deltas)
    got = run({"max_delay": 0.25, "block_grace": grace}, deltas)
    assert "".join(r.chunk for r in got) == text
    assert all(r.now != math.inf for r in got)  # polling alone released everything
    late = [r for r in got if r.now - arrival[r.start] > 0.25 + grace + 1e-9]
    assert not late, late[:1]


# --------------------------------------------------------------------- the cases of the issue


def feed_timed(ch: PURE, deltas: list[tuple[str, float]]) -> list[tuple[float, str]]:
    """(time, chunk) for each chunk, feeding and polling at every deadline as a pump does."""
    out: list[tuple[float, str]] = []
    for piece, t in deltas:
        while (d := ch.next_deadline) is not None and d <= t:
            out += [(d, c) for c in ch.poll(d)]
        out += [(t, c) for c in ch.feed(piece, t)]
    while (d := ch.next_deadline) is not None:
        out += [(d, c) for c in ch.poll(d)]
    out += [(math.inf, c) for c in ch.flush()]
    return out


def tokens_every(
    text: str, step: float, stalls: dict[str, float] | None = None
) -> list[tuple[str, float]]:
    """BPE-like tokens of ``text``, one each ``step`` seconds; a token in ``stalls`` arrives
    that many seconds late (and so does all that follows it)."""
    out: list[tuple[str, float]] = []
    now = 0.0
    for tok in _TOKEN.findall(text):
        now += step + (stalls or {}).get(tok, 0.0)
        out.append((tok, now))
    assert "".join(tok for tok, _t in out) == text
    return out


BENCH_TABLE = (
    "Throughput:\n\n"
    "| runner | tokens/s | ratio |\n"
    "|---|---|---|\n"
    "| ours | 2,143,623 | 18.8x |\n"
    "| blingfire | 114,022 | 1.0x |\n"
    "| stream2sentence | 9,729 | 0.1x |\n"
    "\n"
    "That is all.\n"
)


def test_a_table_whose_rows_arrive_slowly_is_cut_at_row_ends() -> None:
    """The issue's case: '| ours | 2,143,623 | 18.8x ' then '|\\n| blingfire | ...'. Each row
    takes longer than max_delay to arrive; no chunk ends inside one."""
    deltas = tokens_every(BENCH_TABLE, 0.04)
    got = feed_timed(TextChunker(max_delay=0.25, first_chars=None), deltas)
    chunks = [c for _t, c in got]
    assert "".join(chunks) == BENCH_TABLE
    doc = Doc(BENCH_TABLE)
    cuts = list(accumulate(map(len, chunks)))[:-1]
    assert [doc.broken(c) for c in cuts] == [None] * len(cuts), chunks
    assert len(chunks) > 3  # the time bound did cut: at the row ends
    assert any(c.endswith("| ours | 2,143,623 | 18.8x |\n") for c in chunks), chunks


def test_a_stall_inside_a_table_row_waits_for_the_row_end() -> None:
    ch = TextChunker(max_delay=0.25, first_chars=None)  # block_grace 1.0
    assert ch.feed("| ours | 2,143,623 | 18.8x ", 0.0) == []
    assert ch.next_deadline == 0.25
    assert ch.poll(0.25) == []  # held: it would cut the row
    assert ch.next_deadline == 1.25  # for block_grace more
    assert ch.feed("|\n| blingfire", 0.5) == ["| ours | 2,143,623 | 18.8x |\n"]
    assert ch.flush() == ["| blingfire"]


def test_a_row_that_stalls_past_the_grace_is_cut_as_before() -> None:
    ch = TextChunker(max_delay=0.25, first_chars=None, block_grace=0.5)
    ch.feed("| ours | 2,143,623 | 18.8x ", 0.0)
    assert ch.poll(0.25) == [] and ch.next_deadline == 0.75
    assert ch.poll(0.75) == ["| ours | 2,143,623 | 18.8x "]
    # block_grace=0: never past max_delay, but a row end after the due text is preferred to a
    # cut that releases more (before the markdown rules: "|\n| cell one | cell ")
    ch = TextChunker(max_delay=0.25, first_chars=None, block_grace=0)
    ch.feed("| a | b |\n| ours | 2,143,623 |", 0.0)
    assert ch.poll(0.25) == ["| a | b |\n| ours | 2,143,623 |"]
    ch = TextChunker(max_delay=0.25, first_chars=None, block_grace=0)
    ch.feed("|", 0.0)
    ch.feed("\n| cell one | cell", 0.2)
    ch.feed(" two", 0.2)
    assert ch.poll(0.25) == ["|\n"]


def test_an_infinite_grace_holds_a_row_until_it_ends_like_an_open_fence() -> None:
    ch = TextChunker(max_delay=0.25, first_chars=None, block_grace=math.inf)
    ch.feed("Intro.\n| ours | 2,143,623 | 18.8x ", 0.0)
    assert ch.poll(0.25) == ["Intro.\n"]
    assert ch.next_deadline is None  # only the row's end releases it
    assert ch.poll(100.0) == []
    assert ch.feed("|\n", 100.0) == ["| ours | 2,143,623 | 18.8x |\n"]


def test_a_list_item_first_line_is_not_cut_by_time() -> None:
    text = (
        "Steps:\n\n"
        "- **Model**: The fast model streams the tokens while the client renders each one.\n"
        "- **Client**: It shows each chunk as it comes.\n"
    )
    deltas = tokens_every(text, 0.03)
    got = feed_timed(TextChunker(max_delay=0.25, first_chars=None), deltas)
    chunks = [c for _t, c in got]
    assert "".join(chunks) == text
    assert (
        "- **Model**: The fast model streams the tokens while the client renders each one.\n"
        in chunks
    )
    doc = Doc(text)
    assert all(doc.broken(c) is None for c in accumulate(map(len, chunks[:-1])))
    # the time bound is real: with no grace the first line is cut (at its best boundary)
    hurried = feed_timed(TextChunker(max_delay=0.25, first_chars=None, block_grace=0), deltas)
    cuts = accumulate(len(c) for _t, c in hurried[:-1])
    assert "inside a list item's first line" in {doc.broken(c) for c in cuts}


def test_a_list_item_sentence_end_does_not_end_a_chunk() -> None:
    ch = TextChunker(min_chars=1, first_chars=None)
    out = ch.feed("1. Open the lid. Then pour the tea.\n2. Drink", 0.0)
    assert out == ["1. Open the lid. Then pour the tea.\n"]  # not "1. Open the lid. "


def test_a_heading_goes_with_what_follows_it() -> None:
    ch = TextChunker(max_delay=0.25, first_chars=None)
    assert ch.feed("Some text before it.\n\n## Results\n\n", 0.0) == []
    assert ch.poll(0.25) == ["Some text before it.\n\n"]  # not the heading, alone
    assert ch.next_deadline == 1.25
    # it is overdue: it goes as soon as a word follows it
    assert ch.feed("The", 0.6) == []
    assert ch.feed(" numbers", 0.62) == ["## Results\n\nThe "]


def test_a_heading_then_a_paragraph_under_time_pressure() -> None:
    text = "## Results\n\nThe numbers came in late and the model kept writing about them slowly.\n"
    deltas = tokens_every(text, 0.02, stalls={"\n\n": 0.6, " late": 0.5})
    chunks = [c for _t, c in feed_timed(TextChunker(max_delay=0.25, first_chars=None), deltas)]
    assert "".join(chunks) == text
    assert chunks[0].startswith("## Results\n\nThe")  # the heading with the text after it
    doc = Doc(text)
    assert all(doc.broken(c) is None for c in accumulate(map(len, chunks[:-1])))


def test_a_heading_waits_with_the_open_code_fence_after_it() -> None:
    ch = TextChunker(max_delay=0.25, first_chars=None)
    assert ch.feed("Intro text.\n\n## Example\n\n```py\nx = 1\n", 0.0) == []
    assert ch.poll(0.25) == ["Intro text.\n\n"]
    assert ch.next_deadline is None  # like the open fence: nothing goes before it closes
    assert ch.poll(10.0) == []
    assert ch.feed("```\n", 10.0) == ["## Example\n\n```py\nx = 1\n```\n"]
    # a fence that outgrows max_chars is cut at a line end, the heading still before it
    ch = TextChunker(min_chars=5, max_chars=40, max_delay=0.25, first_chars=None)
    ch.feed("## Example\n\n```py\nx = 1\n", 0.0)
    assert ch.poll(0.25) == [] and ch.next_deadline is None
    got = ch.feed("y = 2\nz = 3\nw = 4\nv = 5\nu = 6\nt = 7\n", 1.0)
    assert got[0] == "## Example\n\n```py\nx = 1\ny = 2\nz = 3\n"
    # but a fence that fits a chunk is not cut to keep a heading with it: the heading gives way
    ch = TextChunker(min_chars=5, max_chars=40, max_delay=0.25, first_chars=None)
    ch.feed("## Example\n\n```py\nx = 1\n", 0.0)
    assert ch.feed("y = 2\nz = 3\nw = 4\n", 1.0) == ["## Example\n\n"]


def test_a_heading_is_not_the_end_of_a_sentence_chunk() -> None:
    text = "## What is it?\n\nA chunker. It cuts text.\n"
    got = TextChunker(min_chars=1, first_chars=None).feed(text, 0.0)
    assert got == ["## What is it?\n\nA chunker. "]


def test_the_first_chunk_comes_early_but_not_inside_a_heading() -> None:
    ch = TextChunker(first_chars=5)
    assert ch.feed("# A long title for the answer\n\nThe answer", 0.0) == [
        "# A long title for the answer\n\nThe "
    ]


def test_a_table_longer_than_max_chars_splits_at_row_ends() -> None:
    rows = "".join(f"| row {i} | value {i}.5 | more text |\n" for i in range(12))
    text = "| a | b | c |\n|---|---|---|\n" + rows
    for step in (0.0, 0.05):
        got = feed_timed(
            TextChunker(min_chars=10, max_chars=100, max_delay=0.25), tokens_every(text, step)
        )
        chunks = [c for _t, c in got]
        assert "".join(chunks) == text
        assert all(c.endswith("\n") for c in chunks), chunks
        assert max(map(len, chunks)) <= 100


def test_a_code_block_longer_than_max_chars_splits_at_line_ends_even_under_time() -> None:
    code = "```python\n" + "".join(f"value_{i} = compute({i}, timeout=1.5)\n" for i in range(10))
    text = code + "```\n\nDone.\n"
    got = feed_timed(
        TextChunker(min_chars=10, max_chars=120, max_delay=0.25, first_chars=None),
        tokens_every(text, 0.03),
    )
    chunks = [c for _t, c in got]
    assert "".join(chunks) == text
    doc = Doc(text)
    assert [doc.broken(c) for c in accumulate(map(len, chunks[:-1]))] == [None] * (len(chunks) - 1)
    assert chunks[0].startswith("```python\n")


def test_an_overlong_row_is_cut_inside_only_when_it_must() -> None:
    row = "| " + " | ".join(f"cell {i}" for i in range(30)) + " |\n"
    got = TextChunker(min_chars=5, max_chars=50, first_chars=None).feed(row + "After.", 0.0)
    assert all(len(c) <= 50 for c in got)  # max_chars wins over the row


# --------------------------------------------------------------------- the option


def test_block_grace_default_repr_and_property() -> None:
    ch = TextChunker()
    assert ch.block_grace == 1.0
    assert "block_grace=1.0" in repr(ch)
    assert TextChunker(block_grace=0).block_grace == 0.0
    assert TextChunker(block_grace=math.inf).block_grace == math.inf


@pytest.mark.parametrize("bad", [-0.1, float("nan"), "1", True, None])
def test_a_bad_block_grace_is_refused(bad: object) -> None:
    with pytest.raises(ChunkerConfigError, match="block_grace"):
        TextChunker(block_grace=bad)  # type: ignore[arg-type]
