"""The compiled TextChunker (``agent_stream.chunking._speedups``) against the pure one, call by call.

The compiled twin (FAST) must behave exactly like ``agent_stream.chunking.chunker.TextChunker``
(PURE): after every ``feed``, ``poll`` and ``flush`` the chunks returned (and their types), then
``next_deadline`` and ``buffered``, must be the same, and each message's chunks must concatenate to
its deltas. The scripts are random (Hypothesis: options, deltas rich in the characters the rules
look at, clocks that repeat, creep, jump and go back, polls at, just before and just after
``next_deadline``), the bench's stream shapes and the example table of ``test_chunker``. Bad
options must raise the same ``ChunkerConfigError`` with the same message; arguments of the wrong
type must fail with the same exception type (or be accepted alike).

Skipped while the compiled chunker is not built (``test_speedups_build`` fails when it is
required). ``AGENT_STREAM_DIFF_SELF=1`` runs PURE against itself, to check these tests.
"""

from __future__ import annotations

import importlib.util
import math
import multiprocessing
import operator
import sys
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from chunker_impls import FAST, NOT_BUILT, PURE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_stream.errors import ChunkerConfigError

if FAST is None:
    pytest.skip(NOT_BUILT, allow_module_level=True)

try:
    import numpy
except ImportError:  # a bench extra: the cases that use it are left out
    numpy = None

SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))

OPTION_NAMES = ("min_chars", "max_chars", "max_delay", "first_chars")


# --------------------------------------------------------------------- the driver


def _short(value: object, most: int = 200) -> str:
    r = repr(value)
    return r if len(r) <= most else f"{r[:most]}...<{len(r)} chars>"


def _signature(args: tuple[Any, ...], opts: dict[str, Any]) -> str:
    return ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in opts.items())])


def _config(ch: Any) -> tuple[object, ...]:
    """What a chunker says about its options, with the types of the values."""
    values = [getattr(ch, name) for name in OPTION_NAMES]
    return (repr(ch), *values, *(type(v) for v in values), ch.next_deadline, ch.buffered)


def _same_time(got: object, want: object) -> bool:
    """``next_deadline``s agree: both None, or equal floats (both NaN counts as equal)."""
    if got is None or want is None:
        return got is want
    return (
        isinstance(got, float)
        and isinstance(want, float)
        and (got == want or (math.isnan(got) and math.isnan(want)))
    )


class Twin:
    """A PURE and a FAST chunker made alike and called alike; every call must agree.

    Checked after each call: the chunks (a list, equal, the same types), ``next_deadline`` and
    ``buffered``; and that the chunks continue the message's deltas (lossless): at ``flush`` all
    that was fed has been released. A failure prints the calls, PURE's answers, to replay.
    """

    def __init__(self, *args: Any, **opts: Any) -> None:
        self.lines = [f"ch = TextChunker({_signature(args, opts)})"]
        self.pure = PURE(*args, **opts)
        try:
            self.fast = FAST(*args, **opts)
        except Exception as exc:
            raise AssertionError(f"FAST and PURE differ: FAST raised {exc!r}\n{self.replay()}"
                                 ) from exc
        self.max_delay = self.pure.max_delay
        self.text = ""  # the deltas of the current message, fed so far
        self.released = 0  # how much of it the chunks hold
        if _config(self.fast) != _config(self.pure):
            self._differ(f"options: FAST {_config(self.fast)} != PURE {_config(self.pure)}")

    def feed(self, delta: str, now: float) -> list[str]:
        return self._call("feed", delta, now)

    def poll(self, now: float) -> list[str]:
        return self._call("poll", now)

    def flush(self) -> list[str]:
        return self._call("flush")

    def when(self, step: object, clock: float) -> float:
        """The time a step of a script means, from the clock (see ``STEPS``)."""
        if isinstance(step, tuple):  # ("at", t): that very time
            return step[1]
        if step == "delay":
            return clock + (self.max_delay if math.isfinite(self.max_delay) else 1.0)
        if isinstance(step, str):  # at (or a hair before or after) the deadline
            d = self.pure.next_deadline
            if d is None:
                return clock
            if step == "due-":
                return math.nextafter(d, -math.inf)
            return math.nextafter(d, math.inf) if step == "due+" else d
        return clock + step

    def play(self, ops: list[tuple[Any, ...]], clock: float = 0.0) -> float:
        """Run a script: ("feed", delta, step), ("poll", step), ("flush",)."""
        for op in ops:
            if op[0] == "flush":
                self.flush()
                continue
            clock = self.when(op[-1], clock)
            if op[0] == "feed":
                self.feed(op[1], clock)
            else:
                self.poll(clock)
        return clock

    def drain(self, clock: float, most: int = 8) -> float:
        """Poll at each ``next_deadline`` (at most ``most`` times), as an event loop would."""
        for _ in range(most):
            d = self.pure.next_deadline
            if d is None or math.isnan(d):
                break
            clock = d
            self.poll(clock)
        return clock

    def replay(self, most: int = 60) -> str:
        lines = self.lines[-most:]
        head = [] if len(self.lines) <= most else [
            self.lines[0], f"# ... {len(self.lines) - most - 1} calls left out"]
        return "\n".join(["replay (the results are PURE's):", *head, *lines])

    def _differ(self, what: str) -> None:
        raise AssertionError(f"FAST and PURE differ: {what}\n{self.replay()}")

    def _call(self, name: str, *args: Any) -> list[str]:
        want = getattr(self.pure, name)(*args)
        self.lines.append(f"ch.{name}({', '.join(map(_short, args))})  # -> {_short(want)}")
        try:
            got = getattr(self.fast, name)(*args)
        except Exception as exc:
            raise AssertionError(f"FAST and PURE differ: FAST raised {exc!r}\n{self.replay()}"
                                 ) from exc
        if type(got) is not list or got != want or list(map(type, got)) != list(map(type, want)):
            self._differ(f"chunks: FAST {_short(got, 2000)}")
        if not _same_time(self.fast.next_deadline, self.pure.next_deadline):
            self._differ(f"next_deadline: FAST {self.fast.next_deadline!r} != PURE "
                         f"{self.pure.next_deadline!r}")
        fb, pb = self.fast.buffered, self.pure.buffered
        if type(fb) is not int or fb != pb:
            self._differ(f"buffered: FAST {fb!r} != PURE {pb!r}")
        if name == "feed":
            self.text += args[0]
        for c in want:  # lossless: the chunks continue the deltas
            if not self.text.startswith(c, self.released):
                self._differ(f"chunk {c!r} is not the text fed at {self.released}")
            self.released += len(c)
        if name == "flush":
            if self.released != len(self.text):
                self._differ(f"flush left {len(self.text) - self.released} characters out")
            self.text = ""
            self.released = 0
        return got


# --------------------------------------------------------------------- what scripts are made of

TERMINATORS = ".!?…‼⁇⁈⁉؟।॥。！？｡"
CLOSERS = "\"'”’»›)]}」』）】〕〉》〗〙〛*_"
OPENERS = "\"'“‘«‹([{「『（【〔〈《*_"
SPACES = [
    " ", " ", "  ", "\t", "\n", "\n", "\n\n", "\r\n", "\r", " \n", "\n \n", "\n\t", "\u2003",
    "\u3000", "\u00a0", "\u202f", "\u2028", "\u2029", "\x0b", "\x0c", "\x85", "\x1c", "\u200b",
    "\ufeff", "\u1680",
]
WORDS = [
    " the", " The", "Hello", " world", " it", " It", " a", " A", " I", " x", " API", "iPhone",
    " naïve", " Straße", " é", " É", " σ", " Σ", " ß", " ǅ", " ª", " ⅰ", " \u212a", "w\u212a",
    " \u0130", " ﬁ", "one", "Two", "two", "ok", "Then", " and", " said", " Ｄｒ", "'s",
]
NUMBERS = [
    "3.14", " $29.99", " v1.2.3", " 1,200.50", " 98.6", " 1980", "3.", "14", " 5", " ٣", " ３",
    " ²", " ½", "0", " 12.5%",
]
ABBREVIATIONS = [
    " Dr.", " Mr.", " Mrs.", " e.g.", " i.e.", " etc.", " U.S.", " Inc.", " Ph.D.", " p.m.",
    " a.m.", " vs.", " No.", " Fig.", " approx.", " St.", " Jan.", " J. R.", " J.", " w\u212a.",
    " \u212a.", " co.", " Co.", " al.", " cf.", "Mt.", " Ｄｒ.", " \u0130nc.",
]
URLS = [
    " https://example.com/a.b?x=1", " www.example.org.", " john.doe@example.com",
    " example.com.", " a.b.c", "x.Y.", "one.Two", "ok.Then.", " ok.Then ", " it.The,",
    "(go.Now) ", " is.It. ", " no.Way!",
]
MARKDOWN = [
    "\n1. ", "\na. ", "\niv. ", "\n10. ", "\n  1. ", "\n1.2. ", "\nA. ", "\nMCM. ", "\n٣. ",
    "\n- ", "\n* ", "\n> ", "\n# ", "\n## Title\n", "\n| a | b |", "| a. B | c. D |\n",
    "\n  | x. Y |\n", "|---|---|\n", "**", "__", "\n  | It ended. Then |\n",
    "\n\t| Done! Next |\n", "\n| Wait? The |",
]
CODE = [
    "`", "``", "```", "`code.x()`", "``a`b``", " `a. B` ", "\n```\n", "\n```py\n", "```\n",
    "\n~~~\n", "~~~", "\n````\n", "\n   ```\n", "\n    ```\n", "\n\t~~~\n", "\n```x```\n",
    "\n``` \n", "~", "~~", "\n```", "````", "\n~~~~", "\n```\u3000\n", "\n~~~\x0c\n",
    "\n```\xa0\n", "\n" + "`" * 20, "\n```" + " " * 20, "\n" + "~" * 30 + "\n",
]
CJK = [
    "今天天气很好", "我们", "去公园", "，", "、", "；", "：", "「", "」", "『", "』", "（", "）",
    "“", "”", "と言った", "って", "こんにちは", "ｺﾝﾆﾁﾊ", "한국어", " 문장.", "圆周率是3.14",
    "Python 3.11", "……", "——",
]
CLAUSES = [",", ", ", ";", "; ", ":", ": ", " — ", "—", " – ", "–", "...", ".."]
GRAPHEMES = [
    "e\u0301", "\u0301", "\u20dd", "\u0903", "\u200d", "\ufe0f", "\ufe0e", "👍", "👍🏽", "🏿",
    "👩\u200d👩\u200d👧", "❤️", "#️⃣", "🇫🇷",
    "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", "\U000e0067",
]
# What C code may mishandle: NUL, lone surrogates, non-characters, the widest code points.
ODD = ["\x00", "\ud800", "\udfff", "\ud83d", "\uffff", "\U0010ffff", "\x7f"]
# A word longer than any max_chars: these, repeated 20 to 260 times.
LONG_UNITS = [
    "x", "é", "中", "9", "-", "👍", "e\u0301", "\u212a", ".", "`", "~", "a.", "。", " ", "👍🏽",
    "🇫🇷", "🏴\U000e0067\U000e007f", "\r\n", "a\u200db", "x\ufe0f",
]
# Where the sentence rules decide: a word, a terminator run, closers, whitespace, what follows.
END_WORDS = [
    "", " end", " Dr", " wk", " w\u212a", " etc", " e.g", " U.S", " Inc", " No", " vs", " J", " 3",
    " 1980", "\n1", "\niv", "\n  a", " ok", "今天", "」", " approx", " Ph.D", " (see", ' "Yes',
    " \u212a", " Ｄｒ", " St", "\n| a", "\n  | end",
]
END_RUNS = [*TERMINATORS, ".", ".", ".", "?!", "...", "。", "!!", ".."]
END_CLOSERS = ["", "", "", *CLOSERS, "”」", "')", "」』", "**"]
END_SPACES = [
    "", " ", " ", "  ", "\n", "\n\n", "\r\n", "\t", "\u3000", "\x0b", "\xa0", "\u2003",
    " \n", "\x85",
]
FOLLOWERS = [
    "The", "the", "5", "今天", "(A", '"The', "É", "é", "ǅ", "\u212a", "Ｄ", "ª", "—", "と", "っ",
    "「", "*", "`", "1.", "- ", "", "Then", "then", "I", "ⅰ", "٣", ",", "x.",
]
SENTENCE_ENDS = st.tuples(*map(st.sampled_from, (END_WORDS, END_RUNS, END_CLOSERS, END_SPACES,
                                                  FOLLOWERS))).map("".join)


def atoms() -> st.SearchStrategy[str]:
    tricky = st.sampled_from(list(TERMINATORS + CLOSERS + OPENERS))
    return st.one_of(
        st.sampled_from(WORDS), st.sampled_from(WORDS),
        st.sampled_from(SPACES), st.sampled_from(SPACES),
        tricky, tricky, tricky,
        SENTENCE_ENDS, SENTENCE_ENDS, SENTENCE_ENDS,
        st.sampled_from(ABBREVIATIONS + NUMBERS + URLS),
        st.sampled_from(ABBREVIATIONS + NUMBERS + URLS),
        st.sampled_from(MARKDOWN + CODE),
        st.sampled_from(CJK + CLAUSES),
        st.sampled_from(GRAPHEMES + ODD),
        st.text(max_size=3),
        st.builds(operator.mul, st.sampled_from(LONG_UNITS), st.integers(20, 260)),
    )


def texts(least: int = 0, most: int = 50) -> st.SearchStrategy[str]:
    return st.lists(atoms(), min_size=least, max_size=most).map("".join)


# A step of the clock: seconds after the previous call (0: the same time, < 0: back in time),
# "delay": max_delay later, "due": at next_deadline, "due-"/"due+": a hair before/after it.
STEPS = st.sampled_from([
    0.0, 0.0, 0.0, 1e-9, 0.001, 0.02, 0.02, 0.02, 0.05, 0.3, 1.0, 5.0, -0.001, -0.5,
    "delay", "due", "due", "due-", "due+",
])
DELAYS = [5e-324, 1e-9, 0.001, 0.02, 0.05, 0.25, 0.25, 1.0, math.inf]


@st.composite
def options(draw: st.DrawFn) -> dict[str, Any]:
    lo = draw(st.integers(1, 60))
    hi = draw(st.integers(lo, 200))
    first = draw(st.none() | st.integers(0, hi))
    return {"min_chars": lo, "max_chars": hi, "max_delay": draw(st.sampled_from(DELAYS)),
            "first_chars": first}


@st.composite
def message(draw: st.DrawFn, max_chars: int, steps: st.SearchStrategy[object],
            text: st.SearchStrategy[str], most_deltas: int) -> list[tuple[Any, ...]]:
    """One message: its text cut into deltas (mostly 0-12 characters, now and then up to
    3 * max_chars), each fed at a step of the clock, maybe after a poll; the rest of the text in
    one delta or in deltas of one size; polls at the deadline after the last one; then flush."""
    s = draw(text)
    small = st.integers(0, 12)
    size = st.one_of(small, small, small, small, small, small,
                     st.integers(13, max(13, 3 * max_chars)))
    polls = st.one_of(st.none(), st.none(), st.none(), steps)
    plan = draw(st.lists(st.tuples(size, steps, polls), max_size=most_deltas))
    ops: list[tuple[Any, ...]] = []
    i = 0
    for n, step, poll in plan:
        if poll is not None:
            ops.append(("poll", poll))
        ops.append(("feed", s[i : i + n], step))
        i += n
    if i < len(s):  # the rest: in one delta, or in deltas of one size at one step
        n = draw(st.sampled_from([len(s), 1, 2, 3, 5, 8, 13]))
        step = draw(steps)
        ops += [("feed", s[j : j + n], step) for j in range(i, len(s), n)]
    ops += [("poll", "due")] * draw(st.integers(0, 3))
    ops.append(("flush",))
    return ops


@st.composite
def scripts(draw: st.DrawFn, steps: st.SearchStrategy[object] = STEPS,
            text: st.SearchStrategy[str] | None = None, most_deltas: int = 60,
            most_messages: int = 3) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    """Options, and one to ``most_messages`` messages."""
    opts = draw(options())
    one = message(opts["max_chars"], steps, texts() if text is None else text, most_deltas)
    msgs = draw(st.lists(one, min_size=1, max_size=most_messages))
    return opts, [op for m in msgs for op in m]


# --------------------------------------------------------------------- random scripts


@settings(SETTINGS, max_examples=800)
@given(scripts())
def test_same_calls_on_random_scripts(script: tuple[dict[str, Any], list[tuple[Any, ...]]]
                                      ) -> None:
    opts, ops = script
    Twin(**opts).play(ops)


@settings(SETTINGS, max_examples=150)
@given(scripts(text=texts(100, 400), most_deltas=400, most_messages=1))
def test_same_calls_on_long_messages(script: tuple[dict[str, Any], list[tuple[Any, ...]]]
                                     ) -> None:
    """Messages of about 1,000 to 10,000 characters, up to thousands of deltas: text released
    long ago is trimmed, old deltas are forgotten, the scanner looks ahead in windows."""
    opts, ops = script
    Twin(**opts).play(ops)


ANY_CHAR = st.characters(exclude_categories=()) | st.sampled_from(ODD)


@settings(SETTINGS, max_examples=400)
@given(scripts(text=st.text(ANY_CHAR, max_size=300)))
def test_same_calls_on_arbitrary_unicode(script: tuple[dict[str, Any], list[tuple[Any, ...]]]
                                         ) -> None:
    opts, ops = script
    Twin(**opts).play(ops)


# Times of another kind: not a number, infinities, huge, negative, and the types PURE accepts
# (int, bool, a Fraction a float holds exactly, a float subclass).
ODD_TIMES = st.one_of(
    st.just(math.nan),
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -1e300, -0.0, 5e-324, 2.0**53]),
    st.integers(-10**6, 10**6),
    st.booleans(),
    st.builds(Fraction, st.integers(-10**6, 10**6), st.sampled_from([1, 2, 4, 1024])),
    *([st.floats(-1e6, 1e6).map(numpy.float64)] if numpy is not None else []),
).map(lambda t: ("at", t))


@settings(SETTINGS, max_examples=300)
@given(scripts(steps=STEPS | ODD_TIMES))
def test_same_calls_with_odd_clocks(script: tuple[dict[str, Any], list[tuple[Any, ...]]]
                                    ) -> None:
    opts, ops = script
    Twin(**opts).play(ops)


# --------------------------------------------------------------------- the bench's streams


def _bench() -> ModuleType:
    if "bench_chunker" in sys.modules:
        return sys.modules["bench_chunker"]
    path = Path(__file__).resolve().parents[2] / "bench" / "bench_chunker.py"
    spec = importlib.util.spec_from_file_location("bench_chunker", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_chunker"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("options", [{}, {"min_chars": 10, "max_chars": 60, "first_chars": None,
                                          "max_delay": 0.05}], ids=["defaults", "small"])
@pytest.mark.parametrize("clock", ["one now", "20 ms a token", "20 ms a token, polled"])
@pytest.mark.parametrize("shape", ["prose", "dense", "markdown", "cjk", "giant"])
def test_same_calls_on_the_bench_streams(shape: str, clock: str, options: dict[str, Any]
                                         ) -> None:
    bench = _bench()
    toks = bench.tokens(shape="markdown" if shape == "giant" else shape)
    stream = ["".join(toks)] if shape == "giant" else toks
    step = 0.0 if clock == "one now" else bench.CLOCK_STEP
    polled = clock.endswith("polled")
    twin = Twin(**options)
    now = 0.0
    for tok in stream:
        now += step
        if polled:
            d = twin.pure.next_deadline
            if d is not None and d <= now:
                twin.poll(d)
        twin.feed(tok, now)
    if polled:
        twin.drain(now)
    twin.flush()


def _feed_in_pieces(twin: Twin, text: str, size: int, step: float, now: float = 0.0) -> float:
    """Feed ``text`` in deltas of ``size`` characters, ``step`` seconds apart, polling at each
    deadline that passes; then poll until nothing is due, and flush."""
    for i in range(0, len(text), size):
        now += step
        d = twin.pure.next_deadline
        if d is not None and d <= now:
            twin.poll(d)
        twin.feed(text[i : i + size], now)
    now = twin.drain(now)
    twin.flush()
    return now


def test_same_calls_on_every_sentence_end_pattern() -> None:
    """Every word before a terminator run, closers, whitespace and what follows, of a table: the
    sentence rules' whole surface, not left to chance."""
    runs = [".", "!", "?", "。", "...", "?!"]
    closers = ["", '"', "」", ")"]
    spaces = ["", " ", "\n", "\u3000", "\xa0"]
    for word in END_WORDS:
        text = " ".join(f"{word}{r}{c}{sp}{f}" for r in runs for c in closers for sp in spaces
                        for f in FOLLOWERS)
        for opts, size, step in (({"min_chars": 1, "first_chars": None}, len(text), 0.0),
                                 ({"min_chars": 10, "max_chars": 40, "max_delay": 0.05}, 5, 0.02)):
            _feed_in_pieces(Twin(**opts), text, size, step)


def _long_lines(seed: int) -> str:
    """Markdown whose lines run far past max_chars (and past the context kept before the
    unreleased text): table rows, list items and paragraphs full of sentence ends, long words
    before abbreviations, fences with long lines."""
    import random

    r = random.Random(seed)
    cells = ["It ended. Then", "Done! Next", "Wait? The", "v1.2. Ok", "e.g. this", "Dr. Who",
             "x", "approx. 3.5", "No. 5", "end.\u3000Next", "「はい。」と", "J. R. R. Tolkien"]
    words = ["supercalifragilistic", "approx", "etc", "Inc", "U.S", "Ph.D", "wk", "internationally",
             "e.g", "vs", "abcdefghijklmnopqrstuvwxyz" * 3]
    out = []
    while sum(map(len, out)) < 12_000:
        kind = r.random()
        if kind < 0.3:
            out.append("| " + " | ".join(r.choice(cells) for _ in range(r.randint(4, 30))) + " |\n")
        elif kind < 0.5:
            out.append(f"{r.randint(1, 99)}. " + " ".join(r.choice(cells) for _ in range(20)) + "\n")
        elif kind < 0.8:
            out.append(" ".join(r.choice(words) + r.choice([".", ". ", " ", ".\n"])
                                for _ in range(r.randint(10, 60))) + "\n\n")
        else:
            out.append("```\n" + "x = 1. Y " * r.randint(5, 40) + "\n```\n")
    return "".join(out)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_calls_on_long_lines_after_trims(seed: int) -> None:
    text = _long_lines(seed)
    for opts in ({"min_chars": 5, "max_chars": 20, "first_chars": None},
                 {"min_chars": 30, "max_chars": 70, "max_delay": 0.05},
                 {"min_chars": 100, "max_chars": 150, "first_chars": 0}):
        for size, step in ((len(text), 0.0), (1, 0.0), (4, 0.02), (9, 0.003)):
            _feed_in_pieces(Twin(**opts), text, size, step)


NAN, INF = math.nan, math.inf
# Scripts with times given (("at", t)): the clock stalls, goes back, is not a number, infinite.
CLOCK_CASES: dict[str, list[tuple[Any, ...]]] = {
    "not a number among the later arrivals": [
        ("feed", "Some words", ("at", 0.0)), ("feed", " and", ("at", 0.1)),
        ("feed", "xxxxxxxx", ("at", NAN)), ("feed", "yyyy", ("at", 0.2)),
        ("poll", ("at", 0.25)), ("poll", ("at", 0.5)), ("flush",)],
    "not a number first": [
        ("feed", "Some words", ("at", NAN)), ("feed", " and more. Then", ("at", 0.1)),
        ("poll", ("at", 0.35)), ("poll", ("at", NAN)), ("feed", " it", ("at", 5.0)),
        ("flush",)],
    "back in time": [
        ("feed", "Some words", ("at", 1.0)), ("feed", " and", ("at", 0.5)),
        ("feed", " more words", ("at", 1.1)), ("poll", ("at", 0.9)), ("poll", ("at", 1.25)),
        ("poll", ("at", 1.3)), ("poll", ("at", 1.6)), ("flush",)],
    "out of order, then due": [
        ("feed", "One", ("at", 0.0)), ("feed", " two", ("at", 0.3)), ("feed", " three", ("at", 0.1)),
        ("feed", " four", ("at", 0.2)), ("poll", ("at", 0.4)), ("poll", ("at", 0.6)), ("flush",)],
    "exactly at the deadline": [
        ("feed", "Hello", ("at", 0.0)), ("feed", " world", ("at", 0.01)),
        ("feed", ".", ("at", 0.02)), ("poll", "due-"), ("poll", "due"), ("feed", " Next", "due"),
        ("poll", "due+"), ("flush",)],
    "infinite times": [
        ("feed", "Hello there", ("at", -INF)), ("feed", " again", ("at", 0.0)),
        ("poll", ("at", INF)), ("feed", "x", ("at", INF)), ("feed", " y.", ("at", -INF)),
        ("poll", ("at", NAN)), ("flush",)],
    "one time for all": [("feed", "Hello. There. More", ("at", 7.0)), ("poll", ("at", 7.0)),
                         ("feed", " and more. Yes", ("at", 7.0)), ("poll", ("at", 7.25)),
                         ("flush",)],
}


@pytest.mark.parametrize("max_delay", [0.25, 5e-324, INF])
@pytest.mark.parametrize("ops", list(CLOCK_CASES.values()), ids=list(CLOCK_CASES))
def test_same_calls_on_clock_cases(ops: list[tuple[Any, ...]], max_delay: float) -> None:
    Twin(min_chars=5, max_chars=100, first_chars=None, max_delay=max_delay).play(ops)
    Twin(min_chars=1, max_chars=8, first_chars=2, max_delay=max_delay).play(ops)


def test_the_example_table_of_test_chunker_split_every_way() -> None:
    from test_chunker import _TOKEN, CUT, TABLE

    for marked, extra in TABLE:
        text = marked.replace(CUT, "")
        for opts in ({"min_chars": 1, "first_chars": None, **extra}, {},
                     {"min_chars": 5, "max_chars": 20, "max_delay": 0.05}):
            for pieces in ([text], list(text), _TOKEN.findall(text)):
                for step in (0.0, 0.1):
                    twin = Twin(**opts)
                    now = 0.0
                    for p in pieces:
                        now += step
                        twin.feed(p, now)
                    twin.drain(now)
                    twin.flush()


def test_two_chunkers_interleaved_keep_apart() -> None:
    bench = _bench()
    a, b = bench.tokens(shape="dense"), bench.tokens(shape="cjk")
    one = Twin(min_chars=20, max_chars=80, first_chars=5)
    two = Twin(min_chars=5, max_chars=30, max_delay=0.1, first_chars=None)
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        one.feed(x, i * 0.02)
        two.feed(y, i * 0.03)
        if i % 500 == 499:
            one.flush()
            two.poll(i * 0.03 + 0.1)
    one.flush()
    two.flush()


EXTREME = [
    {"min_chars": 1, "max_chars": 1, "first_chars": 0},
    {"min_chars": 1, "max_chars": 1, "first_chars": None},
    {"min_chars": 1, "max_chars": 2, "first_chars": 2, "max_delay": 1e-9},
    {"min_chars": 1, "max_chars": sys.maxsize},
    {"min_chars": sys.maxsize, "max_chars": sys.maxsize, "first_chars": None},
    {"max_chars": sys.maxsize, "first_chars": sys.maxsize},
    {"min_chars": 2**31, "max_chars": 2**32, "first_chars": 2**31 + 1},
    {"max_chars": 2**62},
    {"max_delay": 5e-324},
    {"max_delay": math.inf},
    {"max_delay": 1e300},
    {"max_delay": 1},
    {"max_delay": Fraction(1, 3)},
]


def _in_a_child(run: Callable[[], None], timeout: float = 15.0) -> None:
    """``run()`` in a forked process: compiled code looping forever (a size that overflows a
    C integer) then fails the test, where in this process nothing could interrupt it."""
    if "fork" not in multiprocessing.get_all_start_methods():
        run()
        return
    ctx = multiprocessing.get_context("fork")
    reader, writer = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            run()
        except BaseException as exc:
            writer.send(f"{type(exc).__name__}: {exc}")
        else:
            writer.send(None)

    proc = ctx.Process(target=child, daemon=True)
    proc.start()
    try:
        if not reader.poll(timeout):
            pytest.fail(f"no answer within {timeout:.0f} s (stuck in compiled code?)")
        failure = reader.recv()
    finally:
        proc.kill()
        proc.join()
    if failure is not None:
        pytest.fail(failure, pytrace=False)


@pytest.mark.parametrize("options", EXTREME, ids=[_signature((), o) for o in EXTREME])
def test_same_calls_with_extreme_options(options: dict[str, Any]) -> None:
    bench = _bench()

    def run() -> None:
        for shape in ("dense", "markdown"):
            toks = bench.tokens(600, shape=shape)
            for stream in (toks, ["".join(toks)]):
                twin = Twin(**options)
                now = 0.0
                for tok in stream:
                    now += 0.02
                    d = twin.pure.next_deadline
                    if d is not None and d <= now:
                        twin.poll(d)
                    twin.feed(tok, now)
                twin.drain(now)
                twin.flush()

    _in_a_child(run)


BEYOND = [{"max_chars": 10**30}, {"min_chars": 2**64, "max_chars": 2**65},
          {"max_chars": 10**30, "first_chars": 10**20}, {"max_chars": 2**63}]


@pytest.mark.parametrize("options", BEYOND, ids=[_signature((), o) for o in BEYOND])
def test_same_calls_with_sizes_beyond_a_machine_word(options: dict[str, Any]) -> None:
    """PURE takes any int size: a max_chars or min_chars of 2**63 or more must work the same."""
    toks = _bench().tokens(300, shape="markdown")

    def run() -> None:
        twin = Twin(**options)
        for i, tok in enumerate(toks):
            twin.feed(tok, i * 0.02)
        twin.drain(len(toks) * 0.02)
        twin.flush()

    _in_a_child(run)


# --------------------------------------------------------------------- options


def _outcome(make: Callable[[], Any]) -> tuple[object, ...]:
    """What constructing a chunker gives: its options as it reports them, or the error."""
    try:
        ch = make()
    except Exception as exc:
        return (type(exc), str(exc))
    return _config(ch)


BAD_OPTIONS: list[dict[str, Any]] = [
    {"min_chars": 0}, {"min_chars": -1}, {"min_chars": 1.5}, {"min_chars": 10.0},
    {"min_chars": True}, {"min_chars": False}, {"min_chars": "10"}, {"min_chars": None},
    {"min_chars": -10**30}, {"min_chars": Fraction(10)}, {"min_chars": Decimal(10)},
    {"max_chars": 0}, {"max_chars": -5}, {"max_chars": True}, {"max_chars": "400"},
    {"max_chars": None}, {"max_chars": 2.0**70}, {"max_chars": 400.0},
    {"min_chars": 50, "max_chars": 10}, {"min_chars": 401}, {"min_chars": 2**70},
    {"max_delay": 0}, {"max_delay": 0.0}, {"max_delay": -0.0}, {"max_delay": -1.0},
    {"max_delay": -1}, {"max_delay": math.nan}, {"max_delay": -math.inf}, {"max_delay": "1"},
    {"max_delay": None}, {"max_delay": True}, {"max_delay": False}, {"max_delay": 1j},
    {"max_delay": Decimal("1")}, {"max_delay": 10**400}, {"max_delay": -10**400},
    {"max_delay": Fraction(1, 10**400)}, {"max_delay": [1]}, {"max_delay": b"1"},
    {"first_chars": -1}, {"first_chars": 500}, {"first_chars": True}, {"first_chars": False},
    {"first_chars": 1.0}, {"first_chars": "5"}, {"first_chars": -10**30},
    {"max_chars": 10, "first_chars": 11}, {"min_chars": 5, "max_chars": 5, "first_chars": 6},
    # more than one bad: the same one is named
    {"min_chars": 0, "max_chars": 0, "max_delay": 0, "first_chars": -1},
    {"max_chars": 0, "max_delay": 0}, {"max_delay": 0, "first_chars": -1},
    {"min_chars": 50, "max_chars": 10, "max_delay": math.nan},
    *([{"min_chars": numpy.int64(5)}, {"first_chars": numpy.int64(5)},
       {"max_delay": numpy.float64(math.nan)}] if numpy is not None else []),
]


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=[_signature((), o) for o in BAD_OPTIONS])
def test_bad_options_raise_the_same_config_error(options: dict[str, Any]) -> None:
    want = _outcome(lambda: PURE(**options))
    assert want[0] is ChunkerConfigError, want  # the table is of options PURE rejects
    assert _outcome(lambda: FAST(**options)) == want


GOOD_OPTIONS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    ((10, 100, 1, 5), {}),
    ((10,), {"first_chars": None}),
    ((), {"max_delay": 1}), ((), {"max_delay": 0.1}), ((), {"max_delay": 1 / 3}),
    ((), {"max_delay": Fraction(1, 4)}), ((), {"max_delay": Fraction(1, 3)}),
    ((), {"max_delay": math.inf}), ((), {"max_delay": 5e-324}), ((), {"max_delay": 1e300}),
    ((), {"max_delay": 10**300}), ((), {"max_delay": 2.5e-7}),
    ((), {"first_chars": None}), ((), {"first_chars": 0}), ((), {"first_chars": 400}),
    ((), {"min_chars": 1, "max_chars": 1, "first_chars": 1}),
    ((), {"min_chars": 400, "max_chars": 400}),
    ((), {"min_chars": sys.maxsize, "max_chars": sys.maxsize, "first_chars": sys.maxsize}),
    ((), {"max_chars": 2**31, "first_chars": 2**31 - 1}),
    *([((), {"max_delay": numpy.float64(0.5)})] if numpy is not None else []),
]


@pytest.mark.parametrize(("args", "options"), GOOD_OPTIONS,
                         ids=[_signature(a, o) for a, o in GOOD_OPTIONS])
def test_good_options_are_reported_alike(args: tuple[Any, ...], options: dict[str, Any]) -> None:
    want = _outcome(lambda: PURE(*args, **options))
    assert want[0] not in (ChunkerConfigError, TypeError), want
    assert _outcome(lambda: FAST(*args, **options)) == want


OPTION_VALUES = st.one_of(
    st.integers(-3, 450), st.integers(-3, 450), st.integers(-3, 30),
    st.booleans(), st.none(), st.floats(), st.floats(0, 5),
    st.sampled_from([
        "1", "", b"1", 1j, [1], -10**30, 2**63 - 1, 2**31, Fraction(1, 3), Fraction(1, 10**400),
        Fraction(3, 2), Decimal("1"), 10**400, 5e-324, math.inf, -math.inf, math.nan,
    ]),
)


@settings(SETTINGS, max_examples=500)
@given(st.fixed_dictionaries({}, optional=dict.fromkeys(OPTION_NAMES, OPTION_VALUES)),
       st.booleans())
def test_any_options_give_the_same_chunker_or_error(options: dict[str, Any], positional: bool
                                                    ) -> None:
    args: tuple[Any, ...] = ()
    if positional and len(options) == len(OPTION_NAMES):
        args = tuple(options[name] for name in OPTION_NAMES)
        options = {}
    want = _outcome(lambda: PURE(*args, **options))
    assert _outcome(lambda: FAST(*args, **options)) == want


# --------------------------------------------------------------------- arguments


def _raised(call: Callable[[], object]) -> type[BaseException] | None:
    try:
        call()
    except Exception as exc:
        return type(exc)
    return None


def _both(setup: list[tuple[str, float]], call: Callable[[Any], object]
          ) -> tuple[type[BaseException] | None, type[BaseException] | None]:
    """The exception types ``call`` raises on a PURE and a FAST chunker fed ``setup`` first."""
    kinds = []
    for cls in (PURE, FAST):
        ch = cls()
        for delta, now in setup:
            ch.feed(delta, now)
        kinds.append(_raised(lambda ch=ch: call(ch)))
    return kinds[0], kinds[1]


CONTEXTS: dict[str, list[tuple[str, float]]] = {
    "fresh": [],
    "mid-sentence": [("Hello there", 0.0)],
    "after a terminator": [("Hello there.", 0.0)],
    "in a fence": [("```\nx = 1\n", 0.0)],
    "after a flush": [("Hi. There", 0.0)],
}
NOT_STR = [None, b"ab", b"", 5, 0, 1.5, bytearray(b"a")]


@pytest.mark.parametrize("delta", NOT_STR, ids=repr)
@pytest.mark.parametrize("context", list(CONTEXTS))
def test_a_delta_that_is_not_a_str_raises_the_same_type_error(context: str, delta: object
                                                               ) -> None:
    setup = CONTEXTS[context]
    if context == "after a flush":
        def call(ch: Any) -> object:
            ch.flush()
            return ch.feed(delta, 0.0)
    else:
        def call(ch: Any) -> object:
            return ch.feed(delta, 0.0)
    assert _both(setup, call) == (TypeError, TypeError)


NOT_A_TIME = [None, "0", 1j, [0]]
# (fed first, then the call) where PURE computes with ``now``.
TIME_CALLS: list[tuple[str, list[tuple[str, float]], Callable[[Any, Any], object]]] = [
    ("feed, fresh", [], lambda ch, t: ch.feed("Hi", t)),
    ("feed, mid-sentence", [("Hello", 0.0)], lambda ch, t: ch.feed(" there.", t)),
    ("feed, after a sentence", [("Hello. X", 0.0)], lambda ch, t: ch.feed("y", t)),
    ("poll, fresh", [], lambda ch, t: ch.poll(t)),
    ("poll, mid-sentence", [("Hello", 0.0)], lambda ch, t: ch.poll(t)),
]


@pytest.mark.parametrize("now", NOT_A_TIME, ids=repr)
@pytest.mark.parametrize(("setup", "call"), [c[1:] for c in TIME_CALLS],
                         ids=[c[0] for c in TIME_CALLS])
def test_a_time_that_is_not_a_number_raises_the_same_type_error(
    setup: list[tuple[str, float]], call: Callable[[Any, Any], object], now: object
) -> None:
    assert _both(setup, lambda ch: call(ch, now)) == (TypeError, TypeError)


TIMES_PURE_TAKES: list[Callable[[float], object]] = [
    round, lambda t: int(t * 50), bool, lambda t: Fraction(round(t * 1024), 1024),
    *([numpy.float64] if numpy is not None else []),
]


@pytest.mark.parametrize("kind", TIMES_PURE_TAKES, ids=["round", "int", "bool", "Fraction",
                                                        "numpy.float64"][: len(TIMES_PURE_TAKES)])
def test_times_of_other_number_types_are_taken_alike(kind: Callable[[float], object]) -> None:
    toks = _bench().tokens(400, shape="dense")
    twin = Twin(min_chars=10, max_chars=60, max_delay=0.05)
    for i, tok in enumerate(toks):
        twin.feed(tok, kind(i * 0.02))
        if i % 7 == 0:
            twin.poll(kind(i * 0.02 + 0.01))
    twin.flush()


class Text(str):
    """A str subclass: PURE takes it as a delta."""


def test_a_str_subclass_is_taken_alike() -> None:
    twin = Twin(min_chars=5, max_chars=40, first_chars=None)
    for i, tok in enumerate(_bench().tokens(600, shape="markdown")):
        twin.feed(Text(tok), i * 0.02)
    twin.flush()


def test_keyword_arguments_are_taken_alike() -> None:
    twin = Twin(max_delay=0.5, first_chars=None, min_chars=5, max_chars=50)
    for ch in (twin.pure, twin.fast):
        assert ch.feed(delta="Hello there. How", now=0.0) == ["Hello there. "]
        assert ch.poll(now=1.0) == ["How"]
        assert ch.feed(now=2.0, delta="") == []


BAD_CALLS: list[tuple[str, Callable[[Any], object]]] = [
    ("feed()", lambda ch: ch.feed()),
    ("feed(delta)", lambda ch: ch.feed("a")),
    ("feed(delta, now, extra)", lambda ch: ch.feed("a", 0.0, 1)),
    ("feed(text=)", lambda ch: ch.feed(text="a", now=0.0)),
    ("poll()", lambda ch: ch.poll()),
    ("poll(now, extra)", lambda ch: ch.poll(0.0, 1)),
    ("flush(extra)", lambda ch: ch.flush(1)),
    ("flush(now=)", lambda ch: ch.flush(now=0.0)),
    *((f"set {name}", lambda ch, name=name: setattr(ch, name, 1))
      for name in (*OPTION_NAMES, "next_deadline", "buffered")),
    *((f"del {name}", lambda ch, name=name: delattr(ch, name))
      for name in (*OPTION_NAMES, "next_deadline", "buffered")),
    ("set an unknown attribute", lambda ch: setattr(ch, "colour", "red")),
]


@pytest.mark.parametrize("call", [c[1] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_calls_raise_the_same_error(call: Callable[[Any], object]) -> None:
    pure, fast = _both([("Hello", 0.0)], call)
    assert pure is not None
    assert fast is pure


@pytest.mark.parametrize(("args", "options"), [((1, 2, 3, 4, 5), {}), ((), {"colour": 1}),
                                               ((10,), {"min_chars": 10})])
def test_bad_constructor_calls_raise_the_same_error(args: tuple[Any, ...],
                                                    options: dict[str, Any]) -> None:
    pure = _raised(lambda: PURE(*args, **options))
    assert pure is TypeError
    assert _raised(lambda: FAST(*args, **options)) is pure
