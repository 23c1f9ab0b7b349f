"""The live TextChunker against a frozen copy of it (``reference_chunker``), call by call.

The speed work on ``agent_stream.chunking`` must not change any output: for every call (``feed``,
``poll``, ``flush``) the chunks, then ``buffered`` and ``next_deadline``, must be identical, on
random streams (any options, arrival times, polls, several messages, unicode, code fences,
abbreviations, decimals, URLs, CJK) and on the bench's own stream shapes.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from itertools import accumulate, pairwise
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_chunker import TextChunker as Reference

from agent_stream.chunking import TextChunker

SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))

PROSE = [
    "Hello", " world", "The", " quick", " brown", " fox", " jumps", ".", "!", "?", "?!", ",", ";",
    ":", " ", "  ", "\n", "\n\n", "\t", "\r\n", " 3.14", " $29.99", " v1.2.3", " 1980.", " e.g.",
    " i.e.", " Dr.", " Mr.", " U.S.", " Ph.D.", " J. R. R.", " etc.", "...", "…", "one.Two",
    " https://example.com/a.b?x=1", " john.doe@example.com", '"', "'", ")", "(", "]", "**", "_",
    "# ", "## Title\n", "- ", "1. ", "10. ", "iv. ", "a. ", "| a | b |\n", "|---|---|\n", "> ",
    " Inc.", " No.", " Fig.", " 5", " approx.", " p.m.", " A", " a", " is", " It", "'s", "...",
    " fig. 3", "a.m. The", "ok.Then", "x.Y.", "!!", "?\"", ".)", ". ", ".\n", "\u2028", "\u00a0",
    "今天", "天气", "很好", "。", "！", "？", "，", "、", "“", "”", "「", "」", "……", "」と",
    "こんにちは", "です", "カタカナ", "ｺﾝﾆﾁﾊ｡", "한국어", " 문장.", "—", "–", " — ", "; ", ": ",
    "é", "e\u0301", "👍", "👍🏽", "👩\u200d👩\u200d👧", "🇫🇷", "\u3000", "x" * 30, "y" * 90,
]
# Where the sentence rules decide: a terminator and the word on either side of it.
RULES = [
    " Mr. Smith", " Dr. Chen", " Mrs. Jones", " No. 5", " No. The", " Inc. is", " Inc. The",
    " etc. and", " etc. The", " e.g. The", " i.e. it", " J. Doe", " J. R. R. Tolkien", " U.S. The",
    " U.S. market", " 3. Then", "\n1. Item", "\n a. Item", "\niv. Item", " a.m. Then", " p.m. it",
    " vs. them", " Fig. 3", " approx. 12.5 kg", " 1,200.50 units", " v1.2.3 is", " end. The",
    " end. the", " end! The", " end? the", " end.\nThe", " end.\n\nNext", " end.) The",
    ' end." The', " end.'' It", " Wait... what", " Wait… The", " one.Two", " ok.Then.", " x.Com is",
    " see example.com. Then", " at 98.6 degrees. It", "「分かった。」と言った。", "晴れです。明日",
    "很好！我们", " Hello!\u3000Next", " Ph.D. students", " St. Louis", " Ave. The", " Jan. 5",
]
CODE = ["`", "``", "`code.x()`", "```", "```py\n", "\n```\n", "```\n", "~~~\n", "\n~~~", "    ```\n",
        "`a. B`", "\n```", "````\n", "~~~~", " ``x`` ", "```\nx = 1.5. Y\n```\n"]


def texts() -> st.SearchStrategy[str]:
    atoms = st.sampled_from(PROSE + CODE)
    rules = st.sampled_from(RULES)
    free = st.text(max_size=4)
    return st.lists(st.one_of(atoms, atoms, rules, rules, free), max_size=120).map("".join)


@st.composite
def streams(draw: st.DrawFn) -> list[tuple[str, float]]:
    """A text, split anywhere, each piece with an arrival time (usually non-decreasing)."""
    text = draw(texts())
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=80)))
    pieces = [text[a:b] for a, b in pairwise([0, *cuts, len(text)])]
    gap = st.sampled_from([0.0, 0.0, 0.001, 0.02, 0.02, 0.05, 0.1, 0.3, 1.0]) | st.floats(0, 2)
    gaps = draw(st.lists(gap, min_size=len(pieces), max_size=len(pieces)))
    times = list(accumulate(gaps))
    if times and draw(st.integers(0, 9)) == 0:  # now and then, a clock that goes back
        i = draw(st.integers(0, len(times) - 1))
        times[i] = draw(st.floats(-1, times[-1] + 1))
    return list(zip(pieces, times, strict=True))


@st.composite
def options(draw: st.DrawFn) -> dict[str, Any]:
    lo = draw(st.integers(1, 60))
    hi = draw(st.integers(lo, lo + 300))
    first = draw(st.none() | st.integers(0, hi))
    delay = draw(st.sampled_from([0.05, 0.25, 0.25, 1.0]))
    return {"min_chars": lo, "max_chars": hi, "first_chars": first, "max_delay": delay}


def _state(ch: Any) -> tuple[int, float | None]:
    return ch.buffered, ch.next_deadline


class Pair:
    """Runs every call on both chunkers and checks they agree."""

    def __init__(self, **opts: Any) -> None:
        self.new = TextChunker(**opts)
        self.ref = Reference(**opts)
        self.calls: list[str] = []

    def _check(self, got: list[str], want: list[str], call: str) -> list[str]:
        self.calls.append(call)
        assert got == want, self.calls[-20:]
        assert _state(self.new) == _state(self.ref), self.calls[-20:]
        return got

    def feed(self, delta: str, now: float) -> list[str]:
        return self._check(self.new.feed(delta, now), self.ref.feed(delta, now),
                           f"feed({delta!r}, {now!r})")

    def poll(self, now: float) -> list[str]:
        return self._check(self.new.poll(now), self.ref.poll(now), f"poll({now!r})")

    def flush(self) -> list[str]:
        return self._check(self.new.flush(), self.ref.flush(), "flush()")


@settings(SETTINGS, max_examples=1500)
@given(st.lists(streams(), min_size=1, max_size=3), options(), st.data())
def test_same_output_call_by_call(
    messages: list[list[tuple[str, float]]], opts: dict[str, Any], data: st.DataObject
) -> None:
    pair = Pair(**opts)
    for deltas in messages:
        for piece, t in deltas:
            how = data.draw(st.integers(0, 5))
            if how == 0:
                pair.poll(t)  # whether or not anything is due
            elif how == 1:
                d = pair.ref.next_deadline
                if d is not None and d <= t:
                    pair.poll(d)  # on time
            pair.feed(piece, t)
        if data.draw(st.booleans()):
            d = pair.ref.next_deadline
            if d is not None and not math.isinf(d):
                pair.poll(d)
        pair.flush()


@SETTINGS
@given(st.text(), st.lists(st.integers(0, 12), max_size=80), options(),
       st.sampled_from([0.0, 0.001, 0.02, 0.1]))
def test_same_output_on_arbitrary_unicode(
    text: str, sizes: list[int], opts: dict[str, Any], step: float
) -> None:
    pair = Pair(**opts)
    i = 0
    now = 0.0
    for n in [*sizes, len(text)]:
        now += step
        pair.feed(text[i : i + n], now)
        i += n
    pair.flush()


def _bench() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_chunker.py"
    spec = importlib.util.spec_from_file_location("bench_chunker", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_chunker", mod)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("shape", ["prose", "dense", "markdown", "cjk", "giant"])
@pytest.mark.parametrize("step", [0.0, 0.02, 0.1])
@pytest.mark.parametrize("opts", [{}, {"min_chars": 10, "max_chars": 60, "first_chars": None},
                                  {"min_chars": 80, "max_chars": 120, "max_delay": 1.0}])
def test_same_output_on_the_bench_shapes(shape: str, step: float, opts: dict[str, Any]) -> None:
    bench = _bench()
    toks = bench.tokens(shape="markdown" if shape == "giant" else shape)
    stream = ["".join(toks)] if shape == "giant" else toks
    pair = Pair(**opts)
    now = 0.0
    for t in stream:
        now += step
        pair.feed(t, now)
    pair.flush()


CLAUSEY = st.text(st.sampled_from(list(",;:.…—–，、；：\"'”’)]」』） \n\tab。x")), max_size=40)


@SETTINGS
@given(CLAUSEY, st.integers(0, 45), st.integers(0, 45))
def test_same_clause_and_word_boundaries(s: str, a: int, z: int) -> None:
    from reference_chunker import sentences as old

    from agent_stream.chunking import sentences as new

    z = min(z, len(s))
    assert new.last_clause_boundary(s, a, z) == old.last_clause_boundary(s, a, z)
    assert new.last_word_boundary(s, a, z) == old.last_word_boundary(s, a, z)
