"""The machines behind TextChunker, one by one: the delta buffer's offsets and arrival times, the
scanner's code regions and boundaries (the same however the text is split), and feed's shortcuts
against the plain feed."""

from __future__ import annotations

from itertools import accumulate
from random import Random
from typing import Any

from chunk_corpus import CODE, PROSE
from chunker_impls import compiled_module
from chunker_options import options
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_stream.chunking import scanner
from agent_stream.chunking.buffer import DeltaBuffer
from agent_stream.chunking.chunker import TextChunker  # its machines, by name
from agent_stream.chunking.scanner import (
    AFTER_BACKTICKS,
    AFTER_NEWLINE,
    AFTER_TERMINATOR,
    EVENT_CHARS,
    PARAGRAPH,
    SENTENCE,
    BoundaryScanner,
)
from agent_stream.chunking.sentences import MAY_FOLLOW_END, OPENERS, WHITESPACE

BUILDS = [m for m in (scanner, compiled_module("scanner")) if m is not None]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def filled(deltas: list[str], arrivals: list[float], start: int = 0) -> DeltaBuffer:
    buf = DeltaBuffer()
    buf.deltas.extend(deltas)
    buf.arrivals.extend(arrivals)
    buf.join()
    buf.start = start
    return buf


# --------------------------------------------------------------------- buffer


@SETTINGS
@given(st.lists(st.text("ab", max_size=3), min_size=1, max_size=12), st.data())
def test_delta_at_is_the_delta_holding_the_offset(deltas: list[str], data: st.DataObject) -> None:
    text = "".join(deltas)
    if not text:
        return
    buf = filled(deltas, [0.0] * len(deltas))
    ends = list(accumulate(map(len, deltas)))
    for offset in sorted(data.draw(st.lists(st.integers(0, len(text) - 1), max_size=5))):
        buf.start = offset  # offsets only move forward, as the buffer start does
        i = buf.delta_at(offset)
        assert ends[i] > offset and (i == 0 or ends[i - 1] <= offset)


@SETTINGS
@given(
    st.lists(
        st.tuples(st.text("ab", min_size=1, max_size=3), st.floats(0, 2)), min_size=1, max_size=12
    ),
    st.floats(0, 3),
    st.data(),
)
def test_overdue_end_is_the_end_of_the_last_delta_waited_long_enough(
    fed: list[tuple[str, float]], now: float, data: st.DataObject
) -> None:
    deltas = [d for d, _t in fed]
    arrivals = [t for _d, t in fed]  # in any order: the clock is the caller's
    start = data.draw(st.integers(0, len("".join(deltas)) - 1))
    buf = filled(deltas, arrivals, start)
    ends = list(accumulate(map(len, deltas)))
    first = next(i for i, e in enumerate(ends) if e > start)
    overdue = [ends[i] for i in range(first, len(deltas)) if arrivals[i] + 0.25 <= now]
    assert buf.overdue_end(now, 0.25) == (overdue[-1] if overdue else -1)


def test_join_keeps_only_a_little_released_text() -> None:
    buf = filled(["x" * 2000], [0.0], start=1900)
    buf.deltas.append("tail")
    buf.join()
    assert buf.text_start > 0 and buf.start - buf.text_start >= 64
    assert buf.text[buf.start - buf.text_start :] == "x" * 100 + "tail"


# --------------------------------------------------------------------- scanner


def scanned(pieces: list[str]) -> BoundaryScanner:
    """The scanner's state after the pieces arrive one by one, each looked at on arrival."""
    buf = DeltaBuffer()
    sc = BoundaryScanner(buf)
    for piece in pieces:
        buf.deltas.append(piece)
        buf.join()
        sc.scan(buf.end, False)
    return sc


def regions(sc: BoundaryScanner) -> list[tuple[int, int | None, bool]]:
    return [(r.start, r.end, r.fenced) for r in sc.regions]


def test_scanner_finds_sentence_and_paragraph_ends() -> None:
    sc = scanned(["Hello there. Next one.\n\nA new paragraph"])
    assert sc.candidates == [(12, 13, SENTENCE), (22, 24, PARAGRAPH)]


def test_scanner_notes_code_and_ignores_terminators_inside_it() -> None:
    sc = scanned(["Call `x.y(). Z` now.\n```py\nx = 1. Y\n```\nAfter"])
    assert regions(sc) == [(5, 15, False), (21, 40, True)]
    assert [kind for _q, _p, kind in sc.candidates] == [SENTENCE, PARAGRAPH]
    assert sc.fence is None and sc.code_ticks is None


def test_scanner_waits_where_the_next_characters_decide() -> None:
    sc = scanned(["It costs 3."])
    assert sc.waiting and sc.candidates == []
    sc = scanned(["It costs 3.", "14 today. Then"])
    assert not sc.waiting and [p for _q, p, _k in sc.candidates] == [21]


_ATOMS = [
    "Hi",
    " there",
    ".",
    " ",
    "\n",
    "\n\n",
    "`",
    "```",
    "~~~",
    "x.y",
    " Dr.",
    " Next",
    "3.14",
    "|",
    "- ",
    "1. ",
    "。",
    "」",
    "と",
    "!",
]


@SETTINGS
@given(st.lists(st.sampled_from(_ATOMS), max_size=40), st.data())
def test_scanning_piece_by_piece_finds_what_scanning_at_once_finds(
    atoms: list[str], data: st.DataObject
) -> None:
    """What feed's shortcuts rely on: the text may be looked at late, in any number of looks."""
    text = "".join(atoms)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=10)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    whole, split = scanned([text]), scanned(pieces)
    assert split.candidates == whole.candidates
    assert regions(split) == regions(whole)
    assert (split.scanned_to, split.line_start, split.fence, split.code_ticks) == (
        whole.scanned_to,
        whole.line_start,
        whole.fence,
        whole.code_ticks,
    )


# --------------------------------------------------------------------- feed's shortcuts


class PlainFeedChunker(TextChunker):
    """The reference for feed's two newer shortcuts (too little held for a chunk; the first delta
    after an empty buffer): feed as it was before them, which looks at the text on every delta
    that ends a sentence, breaks a line or opens code (at once, not at the next delta, while text
    is held to keep markdown whole)."""

    __slots__ = ()

    def feed(self, delta: str, now: float) -> list[str]:
        self._deltas.append(delta)
        self._arrivals.append(now)
        self._held += len(delta)
        sc = self._scanner
        if self._held > self._look_at or now >= self._deadline:
            if (
                sc.waiting
                and sc.waiting_for <= AFTER_NEWLINE
                and now < self._deadline
                and self._held <= self._max_chars
                and delta.isspace()
            ):
                return []
            return self._advance(now)
        m = self._trigger(delta)
        if m is None:
            return []
        if (
            m.end() == len(delta)
            and sc.fence is None
            and self._policy.held_at != self._buffer.start
        ):
            self._look_at = -1
            sc.waiting = True
            sc.waiting_for = AFTER_BACKTICKS if delta[-1] in "`~" else AFTER_TERMINATOR
            return []
        return self._advance(now)


@st.composite
def long_streams(draw: st.DrawFn) -> list[tuple[str, float]]:
    """Many small deltas (so that several chunks go by), with a clock that may stand still."""
    text = "".join(draw(st.lists(st.sampled_from(PROSE + CODE), min_size=20, max_size=150)))
    rnd = draw(st.randoms(use_true_random=False))
    out: list[tuple[str, float]] = []
    i, now = 0, 0.0
    while i < len(text):
        size = rnd.randint(1, 8)
        now += rnd.choice([0.0, 0.0, 0.01, 0.02, 0.1, 0.3])
        out.append((text[i : i + size], now))
        i += size
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(long_streams(), options(), st.randoms(use_true_random=False))
def test_feed_releases_what_the_plain_feed_releases(
    deltas: list[tuple[str, float]], opts: dict[str, Any], rnd: Random
) -> None:
    fast, plain = TextChunker(**opts), PlainFeedChunker(**opts)
    for piece, t in deltas:
        if rnd.random() < 0.1:
            assert fast.poll(t) == plain.poll(t)
        assert fast.feed(piece, t) == plain.feed(piece, t)
        assert (fast.buffered, fast.next_deadline) == (plain.buffered, plain.next_deadline)
    assert fast.flush() == plain.flush()


def test_a_sentence_end_confirmed_inside_one_delta_goes_at_once_around_min_chars() -> None:
    """The shortcut's edge: with fewer than min_chars held nothing can go, with min_chars it can."""
    for length in range(5, 15):
        deltas = ["a" * length, ". Y", "es and more"]
        fast, plain = (
            TextChunker(min_chars=10, first_chars=None),
            PlainFeedChunker(min_chars=10, first_chars=None),
        )
        got = [fast.feed(d, 0.0) for d in deltas]
        assert got == [plain.feed(d, 0.0) for d in deltas]
        sentence = "a" * length + ". "
        assert got[1] == ([sentence] if len(sentence) >= 10 else []), length


def test_feed_tests_each_character_of_a_short_token_against_the_event_characters() -> None:
    """feed spells EVENT_CHARS out (a literal is a C switch when compiled): the same set."""
    literals = [k for k in TextChunker.feed.__code__.co_consts if isinstance(k, str)]
    assert any(k == EVENT_CHARS for k in literals), literals


# Every character the scanner's stops depend on, and a few that do not.
_STOP_ALPHABET = sorted(
    set(EVENT_CHARS + "".join(MAY_FOLLOW_END) + OPENERS + WHITESPACE + "az,;0中é")
)


@settings(max_examples=1500, deadline=None)
@given(
    st.one_of(
        st.text(alphabet=st.sampled_from(_STOP_ALPHABET), max_size=16),
        # long texts: stops among runs of letters as long as the compiled search's sixteen
        # characters at a time
        st.lists(st.one_of(st.sampled_from(_STOP_ALPHABET), st.just("abcdefgh")), max_size=40).map(
            "".join
        ),
    ),
    st.data(),
)
def test_next_event_stops_where_the_scanner_regexes_match(s: str, data: st.DataObject) -> None:
    """Both builds' ``next_event`` (compiled: a loop in C) against the searches it stands for,
    in short texts of stops and in long ones where stops sit among runs of letters."""
    i = data.draw(st.integers(0, len(s)))
    n = data.draw(st.integers(i, len(s)))
    m = scanner._SCAN_EVENT.search(s, i, n)
    in_text = -1 if m is None else m.start()
    m = scanner._IN_CODE.search(s, i, n)
    in_code = -1 if m is None else m.start()
    for build in BUILDS:
        assert build.next_event(s, i, n, False) == in_text, build
        assert build.next_event(s, i, n, True) == in_code, build
