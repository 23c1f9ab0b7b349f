"""Property tests of TextChunker: lossless for any text, any split and any arrival times; chunk
sizes within bounds; nothing held longer than max_delay (+ block_grace, to keep markdown whole)
when poll is called at next_deadline. Each runs on the interpreted chunker and on the compiled one
(``implementation``). The markdown rules have their own: test_markdown_cuts."""

from __future__ import annotations

import re
from itertools import accumulate, pairwise
from typing import Any

import pytest
from chunk_corpus import CODE, PROSE
from chunker_impls import PURE
from chunker_options import options
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
TextChunker = PURE  # the build under test: set by ``_each_build``


@pytest.fixture(autouse=True)
def _each_build(implementation: type[PURE], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(globals(), "TextChunker", implementation)


no_ticks = st.characters(exclude_characters="`~", exclude_categories=("Cs",))


def texts(code: bool) -> st.SearchStrategy[str]:
    atoms = st.sampled_from(PROSE + CODE) if code else st.sampled_from(PROSE)
    free = st.text(max_size=4) if code else st.text(no_ticks, max_size=4)
    return st.lists(st.one_of(atoms, atoms, free), max_size=80).map("".join)


@st.composite
def streams(draw: st.DrawFn, code: bool = True) -> tuple[str, list[tuple[str, float]]]:
    """A text, split anywhere, each piece with a non-decreasing arrival time."""
    text = draw(texts(code))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=50)))
    bounds = [0, *cuts, len(text)]
    pieces = [text[a:b] for a, b in pairwise(bounds)]
    gap = st.sampled_from([0.0, 0.0, 0.001, 0.02, 0.05, 0.1, 0.3, 1.0]) | st.floats(0, 2)
    gaps = draw(st.lists(gap, min_size=len(pieces), max_size=len(pieces)))
    return text, list(zip(pieces, accumulate(gaps), strict=True))


@SETTINGS
@given(streams(), options(), st.data())
def test_lossless_for_any_split_and_arrival_times(
    stream: tuple[str, list[tuple[str, float]]], opts: dict[str, Any], data: st.DataObject
) -> None:
    text, deltas = stream
    ch = TextChunker(**opts)
    out: list[str] = []
    fed = 0
    for piece, t in deltas:
        if data.draw(st.booleans()):
            out += ch.poll(t)  # whether or not anything is due
        out += ch.feed(piece, t)
        fed += len(piece)
        assert ch.buffered == fed - sum(map(len, out))
    out += ch.flush()
    assert "".join(out) == text
    assert all(0 < len(c) <= opts["max_chars"] for c in out)
    assert ch.buffered == 0 and ch.next_deadline is None


@SETTINGS
@given(st.text(), st.lists(st.integers(1, 12), max_size=60))
def test_lossless_for_arbitrary_unicode(text: str, sizes: list[int]) -> None:
    ch = TextChunker(min_chars=5, max_chars=40)
    out: list[str] = []
    i = 0
    for n in [*sizes, len(text)]:
        out += ch.feed(text[i : i + n], 0.0)
        i += n
    out += ch.flush()
    assert "".join(out) == text
    assert all(0 < len(c) <= 40 for c in out)


@SETTINGS
@given(streams(), options(), st.data())
def test_short_chunks_only_when_something_forced_them(
    stream: tuple[str, list[tuple[str, float]]], opts: dict[str, Any], data: st.DataObject
) -> None:
    """Below min_chars only: the first chunk, the last (flush), or a call where the buffer
    overflowed max_chars or a deadline had passed."""
    _text, deltas = stream
    ch = TextChunker(**opts)
    arrival: list[float] = []
    released = 0

    def overdue(now: float) -> bool:  # the oldest character held has waited max_delay
        return released < len(arrival) and arrival[released] + opts["max_delay"] <= now

    for piece, t in deltas:
        if data.draw(st.booleans()):
            due = overdue(t)
            got = ch.poll(t)
            assert not got or due
            released += sum(map(len, got))
        due = overdue(t)
        overflow = ch.buffered + len(piece) > opts["max_chars"]
        arrival.extend([t] * len(piece))
        got = ch.feed(piece, t)
        for c in got:
            first = released == 0 and opts["first_chars"] is not None
            assert len(c) >= opts["min_chars"] or first or overflow or due, (c, got)
            released += len(c)


@SETTINGS
@given(streams(code=False), options())
def test_nothing_waits_longer_than_max_delay_and_block_grace_when_polled_on_time(
    stream: tuple[str, list[tuple[str, float]]], opts: dict[str, Any]
) -> None:
    text, deltas = stream
    ch = TextChunker(**opts)
    arrival: list[float] = []
    release: list[float] = []

    def take(chunks: list[str], now: float) -> None:
        for c in chunks:
            release.extend([now] * len(c))

    def poll_until(limit: float) -> None:
        for _ in range(len(text) + 2):
            d = ch.next_deadline
            if d is None or d > limit:
                return
            take(ch.poll(d), d)
            after = ch.next_deadline
            assert after is None or after > d  # never a deadline already in the past
        raise AssertionError("poll did not make progress")

    for piece, t in deltas:
        poll_until(t)
        arrival.extend([t] * len(piece))
        take(ch.feed(piece, t), t)
    poll_until(float("inf"))
    assert ch.buffered == 0, "polling alone releases everything (no code fence here)"
    assert len(release) == len(arrival) == len(text)
    bound = opts["max_delay"] + opts["block_grace"]  # (0: max_delay exactly, as before it)
    for i, (a, r) in enumerate(zip(arrival, release, strict=True)):
        assert r - a <= bound + 1e-9, (i, text[max(0, i - 10) : i + 10], a, r)


HEADINGS = re.compile(r"(?:[ \t]*#{1,6}(?:[ \t][^\n]*)?\n[ \t\n]*)*")


@SETTINGS
@given(streams(code=True), options())
def test_only_an_open_code_fence_holds_text_past_its_deadline(
    stream: tuple[str, list[tuple[str, float]]], opts: dict[str, Any]
) -> None:
    text, deltas = stream
    ch = TextChunker(**opts)
    fed = 0
    out: list[str] = []
    for piece, t in deltas:
        for _ in range(len(text) + 2):
            d = ch.next_deadline
            if d is None or d > t:
                break
            out += ch.poll(d)
            after = ch.next_deadline
            assert after is None or after > d
        out += ch.feed(piece, t)
        fed += len(piece)
        if ch.next_deadline is None and ch.buffered:
            held = text[len("".join(out)) : fed]
            held = HEADINGS.sub("", held)  # (the headings right before it wait with it)
            assert held.lstrip(" \t").startswith(("```", "~~~")), held
    out += ch.flush()
    assert "".join(out) == text
