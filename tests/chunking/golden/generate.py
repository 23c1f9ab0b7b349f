"""Writes the golden corpus of the chunker: recorded (deltas, clock) scripts and what
``TextChunker`` answers to every call of them, and the clause and word boundaries of short texts.

Run once, from the interpreted modules (``AGENT_STREAM_PURE_PYTHON`` is set here), when a change
to the chunker's rules is meant to change its chunks: ``python tests/chunking/golden/generate.py``;
then read the diff of the JSON files. ``test_chunker_golden`` replays every script on the
interpreted and on the compiled build and wants the same answers, call by call.

Files (JSON, one script a line):

- ``random.json``: seeded random streams of prose, sentence rules, code, CJK and unicode, split
  anywhere, with arrival times (now and then a clock that goes back), polls (on time and not) and
  several messages, under random options;
- ``bench.json``: the token streams of ``bench/bench_chunker.py``, each shape under a few options
  and clock steps, polls on time (default options on every shape);
- ``boundaries.json``: ``last_clause_boundary`` and ``last_word_boundary`` on short texts.

A script is ``{"name": ..., "options": {...}, "calls": [...], "expect": [...]}``: a call is
``[delta, now]`` (feed), ``[now]`` (poll) or ``[]`` (flush); its answer is ``[buffered,
next_deadline, *chunks]``.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
from itertools import accumulate, pairwise
from pathlib import Path
from typing import Any

os.environ["AGENT_STREAM_PURE_PYTHON"] = "1"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(ROOT), str(HERE.parent), str(ROOT / "bench")]

from chunk_corpus import CODE, PROSE  # noqa: E402

from agent_stream.chunking import sentences  # noqa: E402
from agent_stream.chunking.chunker import TextChunker  # noqa: E402

SEED = 20261201
SCRIPTS = 150
# Where the sentence rules decide: a terminator and the word on either side of it.
RULES = [
    " Mr. Smith",
    " Dr. Chen",
    " Mrs. Jones",
    " No. 5",
    " No. The",
    " Inc. is",
    " Inc. The",
    " etc. and",
    " etc. The",
    " e.g. The",
    " i.e. it",
    " J. Doe",
    " J. R. R. Tolkien",
    " U.S. The",
    " U.S. market",
    " 3. Then",
    "\n1. Item",
    "\n a. Item",
    "\niv. Item",
    " a.m. Then",
    " p.m. it",
    " vs. them",
    " Fig. 3",
    " approx. 12.5 kg",
    " 1,200.50 units",
    " v1.2.3 is",
    " end. The",
    " end. the",
    " end! The",
    " end? the",
    " end.\nThe",
    " end.\n\nNext",
    " end.) The",
    ' end." The',
    " end.'' It",
    " Wait... what",
    " Wait… The",
    " one.Two",
    " ok.Then.",
    " x.Com is",
    " see example.com. Then",
    " at 98.6 degrees. It",
    "「分かった。」と言った。",
    "晴れです。明日",
    "很好！我们",
    " Hello!\u3000Next",
    " Ph.D. students",
    " St. Louis",
    " Ave. The",
    " Jan. 5",
]
MORE_CODE = ["`a. B`", "\n```", "````\n", "~~~~", " ``x`` ", "```\nx = 1.5. Y\n```\n"]
# Single characters of every kind the rules look at, and a few they never should.
ODD = list("abcXYZ019 .!?…‼⁇⁈⁉؟।॥。！？｡\n\t\r\"'”’»›)]}」』）*_([{「『（【“‘«‹,;:—–，、；：")
ODD += [
    "\u00a0",
    "\u2028",
    "\u3000",
    "\u200d",
    "\u0301",
    "\ufe0f",
    "\U0001f3fd",
    "\U000e0067",
    "\ud7ff",
    "\U0010fffd",
    "x" * 70,
    "y" * 150,
]
GAPS = [0.0, 0.0, 0.001, 0.02, 0.02, 0.05, 0.1, 0.3, 1.0]


def _text(r: random.Random) -> str:
    atoms = PROSE + CODE + MORE_CODE
    parts = []
    for _ in range(r.randint(0, 100)):
        k = r.random()
        if k < 0.4:
            parts.append(r.choice(atoms))
        elif k < 0.75:
            parts.append(r.choice(RULES))
        else:
            parts.append("".join(r.choice(ODD) for _ in range(r.randint(1, 4))))
    return "".join(parts)


def _options(r: random.Random) -> dict[str, Any]:
    lo = r.randint(1, 60)
    hi = r.randint(lo, lo + 300)
    first = None if r.random() < 0.3 else r.randint(0, hi)
    return {
        "min_chars": lo,
        "max_chars": hi,
        "first_chars": first,
        "max_delay": r.choice([0.05, 0.25, 0.25, 1.0]),
    }


class Recorder:
    """Runs calls on a TextChunker and notes each with its answer."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.chunker = TextChunker(**options)
        self.calls: list[list[Any]] = []
        self.expect: list[list[Any]] = []

    def _note(self, call: list[Any], chunks: list[str]) -> None:
        ch = self.chunker
        self.calls.append(call)
        self.expect.append([ch.buffered, ch.next_deadline, *chunks])

    def feed(self, delta: str, now: float) -> None:
        self._note([delta, now], self.chunker.feed(delta, now))

    def poll(self, now: float) -> None:
        self._note([now], self.chunker.poll(now))

    def flush(self) -> None:
        self._note([], self.chunker.flush())

    def script(self, name: str) -> dict[str, Any]:
        return {"name": name, "options": self.options, "calls": self.calls, "expect": self.expect}


def random_script(r: random.Random, n: int) -> dict[str, Any]:
    rec = Recorder(_options(r))
    for _ in range(r.randint(1, 3)):  # messages
        text = _text(r)
        cuts = sorted(r.randint(0, len(text)) for _ in range(r.randint(0, 80)))
        pieces = [text[a:b] for a, b in pairwise([0, *cuts, len(text)])]
        times = list(
            accumulate(r.choice(GAPS) if r.random() < 0.8 else r.uniform(0, 2) for _ in pieces)
        )
        if r.random() < 0.1:  # a clock that goes back
            i = r.randrange(len(times))
            times[i] = r.uniform(-1, times[-1] + 1)
        for piece, t in zip(pieces, times, strict=True):
            how = r.randint(0, 5)
            if how == 0:
                rec.poll(t)  # whether or not anything is due
            elif how == 1:
                d = rec.chunker.next_deadline
                if d is not None and d <= t:
                    rec.poll(d)  # on time
            rec.feed(piece, t)
        if r.random() < 0.5:
            d = rec.chunker.next_deadline
            if d is not None and not math.isinf(d):
                rec.poll(d)
        rec.flush()
    return rec.script(f"random {n}")


def bench_scripts() -> list[dict[str, Any]]:
    import bench_chunker

    out = []
    for shape in ("prose", "dense", "markdown", "cjk", "giant"):
        toks = bench_chunker.tokens(shape="markdown" if shape == "giant" else shape)
        stream = ["".join(toks)] if shape == "giant" else toks
        runs: list[tuple[float, dict[str, Any]]] = [(0.02, {})]
        if shape in ("markdown", "giant"):
            runs.append((0.1, {"min_chars": 10, "max_chars": 60, "first_chars": None}))
        for step, options in runs:
            rec = Recorder(options)
            for i, t in enumerate(stream, 1):
                now = i * step
                d = rec.chunker.next_deadline
                if step and d is not None and d < now:
                    rec.poll(d)
                rec.feed(t, now)
            rec.flush()
            out.append(rec.script(f"bench {shape} step {step} {options}"))
    return out


def boundaries(r: random.Random) -> list[list[Any]]:
    chars = list(",;:.…—–，、；：\"'”’)]」』） \n\tab。x")
    rows = []
    for _ in range(3000):
        s = "".join(r.choice(chars) for _ in range(r.randint(0, 40)))
        a, z = r.randint(0, 45), min(r.randint(0, 45), len(s))
        rows.append(
            [
                s,
                a,
                z,
                sentences.last_clause_boundary(s, a, z),
                sentences.last_word_boundary(s, a, z),
            ]
        )
    return rows


def _write(name: str, rows: list[Any]) -> None:
    lines = [json.dumps(row, ensure_ascii=False, separators=(",", ":")) for row in rows]
    (HERE / name).write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")


def main() -> None:
    r = random.Random(SEED)
    _write("random.json", [random_script(r, n) for n in range(SCRIPTS)])
    _write("bench.json", bench_scripts())
    _write("boundaries.json", boundaries(r))


if __name__ == "__main__":
    main()
