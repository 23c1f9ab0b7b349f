"""TextChunker throughput against the peers that do the same job, on several stream shapes.

Each shape is a deterministic, recorded-like token stream of about 4,000 BPE-sized deltas:

- ``prose``: plain paragraphs, longish sentences, few numbers;
- ``dense``: short sentences packed with abbreviations, decimals, versions, money and URLs;
- ``markdown``: a chat answer with headings, bullet and numbered lists, a table and code fences;
- ``cjk``: Chinese and Japanese, one or two characters a token;
- ``giant``: the markdown answer as one single delta (its tokens counted as if streamed).

Each goes through:

- agent_stream.TextChunker.feed (every token, then flush), twice: all tokens at one ``now`` (as
  ``agent-stream chunk`` does) and with a clock per token, ``now`` advancing 20 ms a token (a
  50 token/s model, so max_delay cuts happen inside feed). That is the compiled build when it
  was made (``agent_stream.chunking.IMPLEMENTATION``: the chunker's own modules compiled by
  Cython); the interpreted modules, which give the same chunks, are measured with a clock too
  (column ``interpreted``);
- stream2sentence.generate_sentences (RealtimeTTS's splitter) on a prefix of the stream: it is
  slow, so it gets fewer tokens and is normalised to tokens/s;
- a LiveKit-agents-style loop: append each token to a buffer, re-run
  blingfire.text_to_sentences over the buffer, emit all sentences but the last (merging those
  shorter than 20 characters), keep the last;
- a floor: a ``feed`` that only keeps the delta and its time, what the calls alone cost;
- a check floor: that, plus what any streaming chunker does with every delta at the least (count
  what is held, compare it and the time with a threshold, search the delta for a character that
  may end a sentence or a line, in C). It never cuts: it bounds the rate of a pure-Python chunker
  from above, whatever its cuts cost.

On ``giant`` every runner gets one delta (stream2sentence the first 400 tokens' text). Times are
the thread's CPU time, the best of several interleaved runs (other processes on the machine do
not count against a run).

The target, on every shape: with a clock per token, at least 10x the fastest peer and at least
1,000,000 tokens/s. Peers are bench-only extras (``pip install stream2sentence blingfire``); a
missing one is skipped. Run: python bench/bench_chunker.py [shape ...]
"""

from __future__ import annotations

import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_stream.chunking import IMPLEMENTATION, TextChunker
from agent_stream.chunking.chunker import TextChunker as InterpretedTextChunker
from agent_stream.chunking.sentences import TERMINATORS

SEED = 20240601
TARGET_TOKENS = 4000
CLOCK_STEP = 0.02  # seconds a token: a 50 token/s model
TARGET_RATE = 1_000_000  # tokens/s, with a clock per token
TARGET_RATIO = 10.0  # times the fastest peer, with a clock per token

_NOUNS = [
    "model",
    "agent",
    "stream",
    "token",
    "buffer",
    "message",
    "client",
    "server",
    "request",
    "response",
    "latency",
    "budget",
    "queue",
    "worker",
    "protocol",
    "envelope",
    "handler",
    "session",
    "cache",
    "index",
    "record",
    "field",
    "value",
    "channel",
    "network",
    "packet",
    "user",
    "browser",
    "reader",
    "window",
    "thread",
    "block",
    "chunk",
    "peer",
    "schema",
]
_VERBS = [
    "sends",
    "receives",
    "buffers",
    "splits",
    "merges",
    "returns",
    "keeps",
    "drops",
    "checks",
    "reads",
    "writes",
    "streams",
    "handles",
    "parses",
    "renders",
    "signs",
    "verifies",
    "retries",
    "measures",
]
_ADJS = [
    "small",
    "large",
    "fast",
    "slow",
    "simple",
    "robust",
    "typical",
    "recent",
    "remote",
    "local",
    "stable",
    "final",
    "first",
    "partial",
    "complete",
    "natural",
    "separate",
    "single",
]
_LINKS = ("however", "in practice", "for example", "as a result", "by default", "in short")
_EXTRAS = (
    "about 3.5% of the time",
    "in 2023",
    "at $29.99 a month",
    "with version 1.2.3",
    "for roughly 1,200 requests",
    "e.g. the first one",
    "as Dr. Chen noted",
    "in the U.S. market",
    "(see https://example.com/docs/v2.html)",
    "within 250 ms",
    "at 98.6 degrees",
    "using `stream.flush()`",
)
# Dense prose: short sentences, each with abbreviations, decimals, versions, money or URLs.
_DENSE = (
    "Dr. Chen paid $29.99 at 5 p.m.",
    "See https://example.com/v2.1/docs.html now",
    "It rose 3.5% vs. 2.1% in the U.S. market",
    "Mr. Smith, Ph.D., shipped v1.2.3",
    "Read Fig. 3 and Vol. 2, e.g. p. 14",
    "Mail j.doe@example.org about No. 5",
    "It weighs approx. 12.5 kg, i.e. a lot",
    "Apples, pears, etc. cost $0.99",
    "J. R. R. Tolkien wrote it in 1954",
    "Apple Inc. sold 1,200.50 units",
    "Use api.example.com/v1 at 98.6 degrees",
    "St. Louis is 3.14 hrs. away",
)
_CJK = (
    "今天天气很好",
    "我们去公园散步",
    "模型把文本分成小块",
    "流式输出需要低延迟",
    "这个缓冲区保存了每个增量",
    "服务器在收到请求后立即回复",
    "东京は晴れです",
    "明日は雨が降るでしょう",
    "彼は「分かった」と言った",
    "カタカナのテキストも含まれます",
    "数据以每秒五十个词元的速度到达",
)


class _Writer:
    """Builds one markdown chat answer from a seeded random generator."""

    def __init__(self, rng: random.Random, extras: float = 0.45) -> None:
        self.rng = rng
        self.extras = extras

    def sentence(self) -> str:
        r = self.rng
        words = [
            r.choice(_ADJS),
            r.choice(_NOUNS),
            r.choice(_VERBS),
            "the",
            r.choice(_ADJS),
            r.choice(_NOUNS),
        ]
        if r.random() < 0.5:
            words += [
                r.choice(("and", "while", "because", "so")),
                "the",
                r.choice(_NOUNS),
                r.choice(_VERBS),
                r.choice(("it", "them", "each one")),
            ]
        if r.random() < self.extras:
            words.append(r.choice(_EXTRAS))
        if r.random() < 0.25:
            words.insert(0, r.choice(_LINKS).capitalize() + ",")
            words[1] = "the " + words[1]
        else:
            words[0] = "The " + words[0]
        text = " ".join(words)
        return text + r.choice((".", ".", ".", ".", "!", "?"))

    def paragraph(self) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(2, 6)))

    def bullets(self) -> str:
        r = self.rng
        return "\n".join(
            f"- **{r.choice(_NOUNS).capitalize()}**: {self.sentence()}"
            for _ in range(r.randint(3, 6))
        )

    def numbered(self) -> str:
        return "\n".join(f"{i}. {self.sentence()}" for i in range(1, self.rng.randint(3, 6)))

    def table(self) -> str:
        r = self.rng
        rows = ["| Setting | Default | Meaning |", "| --- | --- | --- |"]
        rows += [
            f"| `{r.choice(_NOUNS)}_{r.choice(_NOUNS)}` | {r.randint(1, 999)}.{r.randint(0, 9)}"
            f" | {r.choice(_ADJS)} {r.choice(_NOUNS)} |"
            for _ in range(r.randint(3, 6))
        ]
        return "\n".join(rows)

    def code(self) -> str:
        r = self.rng
        lines = ["```python", "import asyncio", "", f"async def {r.choice(_VERBS)}(stream):"]
        for _ in range(r.randint(4, 10)):
            lines.append(
                f"    {r.choice(_NOUNS)} = await stream.{r.choice(_VERBS)}("
                f"{r.randint(1, 99)}, timeout={r.randint(1, 9)}.5)"
            )
        lines += ["    return None", "```"]
        return "\n".join(lines)

    def fill(self, min_chars: int, block: Callable[[], str]) -> str:
        """Blocks separated by blank lines until there are at least ``min_chars``."""
        parts: list[str] = []
        size = 0
        while size < min_chars:
            parts.append(block())
            size += len(parts[-1]) + 2
        return "\n\n".join(parts)

    def block(self) -> str:
        r = self.rng
        kind = r.random()
        if kind < 0.12:
            return f"## {r.choice(_ADJS).capitalize()} {r.choice(_NOUNS)}s"
        if kind < 0.55:
            return self.paragraph()
        if kind < 0.7:
            return self.bullets()
        if kind < 0.8:
            return self.numbered()
        if kind < 0.9:
            return self.table()
        return self.code()

    def dense_paragraph(self) -> str:
        r = self.rng
        return " ".join(
            r.choice(_DENSE) + r.choice((".", ".", ".", "!", "?")) for _ in range(r.randint(3, 8))
        )

    def cjk_paragraph(self) -> str:
        r = self.rng
        sents = [
            "，".join(r.choice(_CJK) for _ in range(r.randint(1, 3))) + r.choice("。。。！？")
            for _ in range(r.randint(3, 8))
        ]
        return "".join(sents)


# GPT-2-style pre-tokenisation: a word with its leading space, numbers in runs of up to three
# digits, punctuation runs, whitespace; long words are then cut into BPE-sized pieces.
_PRE = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d{1,3}| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]+")


def _tokenise(text: str, rng: random.Random, n_tokens: int) -> list[str]:
    out: list[str] = []
    for piece in _PRE.findall(text):
        if _CJK_RUN.fullmatch(piece):  # CJK: one or two characters a token
            while piece:
                cut = rng.randint(1, 2)
                out.append(piece[:cut])
                piece = piece[cut:]
            continue
        while len(piece) > 7:  # split long words the way BPE vocabularies do
            cut = rng.randint(3, 6)
            out.append(piece[:cut])
            piece = piece[cut:]
        out.append(piece)
    assert "".join(out) == text
    return out[:n_tokens]


def tokens(n_tokens: int = TARGET_TOKENS, seed: int = SEED, shape: str = "markdown") -> list[str]:
    """A deterministic token stream of about ``n_tokens`` BPE-sized deltas of one shape."""
    rng = random.Random(seed)
    writer = _Writer(rng)
    if shape == "prose":
        writer.extras = 0.0
        text = writer.fill(n_tokens * 5, writer.paragraph)
    elif shape == "dense":
        text = writer.fill(n_tokens * 4, writer.dense_paragraph)
    elif shape == "cjk":
        text = writer.fill(n_tokens * 2, writer.cjk_paragraph)
    else:
        text = writer.fill(n_tokens * 4, writer.block)
    return _tokenise(text, rng, n_tokens)


class CallFloor:
    """What any chunker's ``feed`` costs here at the least: keep the delta and its time."""

    __slots__ = ("arrivals", "deltas")

    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.arrivals: list[float] = []

    def feed(self, delta: str, now: float) -> list[str]:
        self.deltas.append(delta)
        self.arrivals.append(now)
        return []

    def flush(self) -> list[str]:
        return ["".join(self.deltas)]


class CheckFloor:
    """``CallFloor`` plus the least a chunker checks in every delta (see ``TextChunker.feed``)."""

    __slots__ = ("arrivals", "deadline", "deltas", "held", "look_at", "trigger")

    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.arrivals: list[float] = []
        self.held = 0
        self.look_at = 1 << 62
        self.deadline = float("inf")
        self.trigger = re.compile("[" + re.escape(TERMINATORS) + "\n`~]").search

    def feed(self, delta: str, now: float) -> list[str]:
        self.deltas.append(delta)
        self.arrivals.append(now)
        held = self.held + len(delta)
        self.held = held
        if held > self.look_at or now >= self.deadline:
            return ["never"]
        if self.trigger(delta) is None:
            return []
        return []

    def flush(self) -> list[str]:
        return ["".join(self.deltas)]


def run_agent_stream(
    toks: list[str],
    step: float,
    make: Callable[[], Any] = TextChunker,
) -> list[str]:
    ch = make()
    feed = ch.feed
    out: list[str] = []
    now = 0.0
    for t in toks:
        now += step
        got = feed(t, now)
        if got:
            out += got
    out += ch.flush()
    return out


def run_stream2sentence(toks: list[str]) -> list[str]:
    from stream2sentence import generate_sentences

    return list(generate_sentences(iter(toks)))


def run_livekit_style(toks: list[str]) -> list[str]:
    from blingfire import text_to_sentences

    out: list[str] = []
    buf = ""
    pending = ""
    for t in toks:
        buf += t
        sents = text_to_sentences(buf).split("\n")
        if len(sents) > 1:
            for s in sents[:-1]:
                pending = f"{pending} {s}" if pending else s
                if len(pending) >= 20:
                    out.append(pending)
                    pending = ""
            buf = sents[-1]
    rest = f"{pending} {buf}".strip()
    if rest:
        out.append(rest)
    return out


# (label, module to import, runner, tokens it gets at most)
PEERS: list[tuple[str, str, Callable[[list[str]], list[str]], int]] = [
    ("stream2sentence", "stream2sentence", run_stream2sentence, 400),
    ("blingfire re-scan", "blingfire", run_livekit_style, TARGET_TOKENS),
]
SHAPES = ("prose", "dense", "markdown", "cjk", "giant")
ROUNDS = 8  # every runner runs this many times, interleaved; the fastest run counts


def _sizes(chunks: list[str]) -> str:
    lens = sorted(len(c) for c in chunks)
    if not lens:
        return "no chunks"
    return f"{len(lens)} chunks, median {statistics.median(lens):.0f} chars, max {lens[-1]}"


def measure(
    shape: str,
    peers: list[tuple[str, Callable[[list[str]], list[str]], int]],
) -> dict[str, float]:
    """tokens/s of agent_stream (one `now`, clock per token) and of each peer on one shape.

    Time is the thread's CPU time (other processes on the machine do not count against a run);
    the runners take turns, ``ROUNDS`` times, and each keeps its fastest run.
    """
    toks = tokens(shape="markdown" if shape == "giant" else shape)
    text = "".join(toks)
    stream = [text] if shape == "giant" else toks  # the giant delta: all the tokens at once
    runners: list[tuple[str, Callable[[], list[str]], int, int]] = []
    ours = 10 if shape == "giant" else 4  # our runs are short: several make one timing
    for label, step in (("one now", 0.0), ("clock", CLOCK_STEP)):
        chunks = run_agent_stream(stream, step)
        assert "".join(chunks) == text, "lossless"
        if step:
            print(
                f"  {shape}: {len(toks):,} tokens, {len(text):,} chars; agent_stream with a "
                f"clock: {_sizes(chunks)}"
            )
        runners.append((label, partial(run_agent_stream, stream, step), len(toks), ours))
    interpreted = run_agent_stream(stream, CLOCK_STEP, InterpretedTextChunker)
    assert interpreted == run_agent_stream(stream, CLOCK_STEP), "both builds cut alike"
    runners.append(
        (
            "interpreted",
            partial(run_agent_stream, stream, CLOCK_STEP, InterpretedTextChunker),
            len(toks),
            ours,
        )
    )
    runners.append(
        ("floor", lambda: run_agent_stream(stream, CLOCK_STEP, CallFloor), len(toks), ours)
    )
    runners.append(
        ("check floor", lambda: run_agent_stream(stream, CLOCK_STEP, CheckFloor), len(toks), ours)
    )
    for label, fn, most in peers:
        # the giant delta: the first ``most`` tokens' text as one delta
        sub = ["".join(toks[:most])] if shape == "giant" else stream[:most]
        fn(["Warm up. ", "The tokenizer loads."])  # stream2sentence loads its model on first use
        runners.append((label, partial(fn, sub), min(most, len(toks)), 1))
    best = {label: float("inf") for label, *_ in runners}
    for _ in range(ROUNDS):
        for label, run, _n, times in runners:
            t0 = time.thread_time()
            for _ in range(times):
                run()
            best[label] = min(best[label], (time.thread_time() - t0) / times)
    return {label: n / best[label] for label, _run, n, _times in runners}


def main(argv: list[str]) -> int:
    shapes = argv or list(SHAPES)
    peers = []
    for label, module, fn, most in PEERS:
        try:
            __import__(module)
        except ImportError as exc:  # not installed, or a dependency of it is missing
            print(f"{label}: skipped ({exc})")
            continue
        peers.append((label, fn, most))
    print(
        f"streams (seed {SEED}), agent_stream TextChunker() with default options "
        f"({IMPLEMENTATION}):"
    )
    table = {shape: measure(shape, peers) for shape in shapes}
    cols = ["one now", "clock", *[p[0] for p in peers]]
    print()
    print("tokens/s; 'clock': now advancing 20 ms a token; ratio: clock / fastest peer;")
    print(
        "interpreted: the chunker's modules run by the interpreter, with a clock (the same source"
    )
    print("as the compiled build); floor: a Python feed that only keeps the delta and")
    print("its time (what the calls alone cost); check floor: that plus the per-delta count,")
    print("threshold and terminator search, never cutting")
    floors = ["interpreted", "floor", "check floor"]
    print(f"{'shape':<9}" + "".join(f"{c:>18}" for c in [*cols, *floors]) + f"{'ratio':>8}  target")
    failed = 0
    for shape, rates in table.items():
        fastest = max((rates[p[0]] for p in peers), default=0.0)
        ratio = rates["clock"] / fastest if fastest else float("inf")
        met = rates["clock"] >= TARGET_RATE and ratio >= TARGET_RATIO
        failed += not met
        print(
            f"{shape:<9}"
            + "".join(f"{rates[c]:>18,.0f}" for c in [*cols, *floors])
            + f"{ratio:>7.1f}x  {'met' if met else 'NOT met'}"
        )
    print(
        f"target: with a clock, >= {TARGET_RATE:,} tokens/s and >= {TARGET_RATIO:.0f}x the "
        f"fastest peer on every shape: {'met' if not failed else f'NOT met on {failed}'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
