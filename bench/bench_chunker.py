"""TextChunker throughput against the peers that do the same job, in the same run.

One deterministic, recorded-shaped token stream (a markdown chat answer: headings, prose with
numbers and abbreviations, bullet and numbered lists, a table, fenced code; split into BPE-sized
tokens with leading spaces) goes through:

- agent_stream.TextChunker.feed (every token, then flush), twice: all tokens at one `now` (as
  `agent-stream chunk` does) and with `now` advancing 20 ms a token (a 50 token/s model, so
  max_delay cuts happen inside feed);
- stream2sentence.generate_sentences (RealtimeTTS's splitter) on a prefix of the stream: it is
  slow, so it gets fewer tokens and is normalised to tokens/s;
- a LiveKit-agents-style loop: append each token to a buffer, re-run
  blingfire.text_to_sentences over the buffer, emit all sentences but the last (merging those
  shorter than 20 characters), keep the last.

Peers are bench-only extras (`pip install stream2sentence blingfire`); a missing one is skipped.
Run: python bench/bench_chunker.py
"""

from __future__ import annotations

import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_stream.chunker import TextChunker

SEED = 20240601
TARGET_TOKENS = 4000

_NOUNS = ["model", "agent", "stream", "token", "buffer", "message", "client", "server", "request", "response", "latency", "budget", "queue", "worker", "protocol", "envelope", "handler", "session", "cache", "index", "record", "field", "value", "channel", "network", "packet", "user", "browser", "reader", "window", "thread", "block", "chunk", "peer", "schema"]
_VERBS = ["sends", "receives", "buffers", "splits", "merges", "returns", "keeps", "drops", "checks", "reads", "writes", "streams", "handles", "parses", "renders", "signs", "verifies", "retries", "measures"]
_ADJS = ["small", "large", "fast", "slow", "simple", "robust", "typical", "recent", "remote", "local", "stable", "final", "first", "partial", "complete", "natural", "separate", "single"]
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


class _Writer:
    """Builds one markdown chat answer from a seeded random generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def sentence(self) -> str:
        r = self.rng
        words = [r.choice(_ADJS), r.choice(_NOUNS), r.choice(_VERBS), "the", r.choice(_ADJS),
                 r.choice(_NOUNS)]
        if r.random() < 0.5:
            words += [r.choice(("and", "while", "because", "so")), "the", r.choice(_NOUNS),
                      r.choice(_VERBS), r.choice(("it", "them", "each one"))]
        if r.random() < 0.45:
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
        return "\n".join(f"- **{r.choice(_NOUNS).capitalize()}**: {self.sentence()}"
                         for _ in range(r.randint(3, 6)))

    def numbered(self) -> str:
        return "\n".join(f"{i}. {self.sentence()}" for i in range(1, self.rng.randint(3, 6)))

    def table(self) -> str:
        r = self.rng
        rows = ["| Setting | Default | Meaning |", "| --- | --- | --- |"]
        rows += [f"| `{r.choice(_NOUNS)}_{r.choice(_NOUNS)}` | {r.randint(1, 999)}.{r.randint(0, 9)}"
                 f" | {r.choice(_ADJS)} {r.choice(_NOUNS)} |" for _ in range(r.randint(3, 6))]
        return "\n".join(rows)

    def code(self) -> str:
        r = self.rng
        lines = ["```python", "import asyncio", "", f"async def {r.choice(_VERBS)}(stream):"]
        for _ in range(r.randint(4, 10)):
            lines.append(f"    {r.choice(_NOUNS)} = await stream.{r.choice(_VERBS)}("
                         f"{r.randint(1, 99)}, timeout={r.randint(1, 9)}.5)")
        lines += ["    return None", "```"]
        return "\n".join(lines)

    def answer(self, min_chars: int) -> str:
        r = self.rng
        parts: list[str] = []
        size = 0
        while size < min_chars:
            kind = r.random()
            if kind < 0.12:
                block = f"## {r.choice(_ADJS).capitalize()} {r.choice(_NOUNS)}s"
            elif kind < 0.55:
                block = self.paragraph()
            elif kind < 0.7:
                block = self.bullets()
            elif kind < 0.8:
                block = self.numbered()
            elif kind < 0.9:
                block = self.table()
            else:
                block = self.code()
            parts.append(block)
            size += len(block) + 2
        return "\n\n".join(parts)


# GPT-2-style pre-tokenisation: a word with its leading space, numbers in runs of up to three
# digits, punctuation runs, whitespace; long words are then cut into BPE-sized pieces.
_PRE = re.compile(r"'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d{1,3}| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+")


def tokens(n_tokens: int = TARGET_TOKENS, seed: int = SEED) -> list[str]:
    """A deterministic token stream of about ``n_tokens`` BPE-sized deltas."""
    rng = random.Random(seed)
    text = _Writer(rng).answer(n_tokens * 4)
    out: list[str] = []
    for piece in _PRE.findall(text):
        while len(piece) > 7:  # split long words the way BPE vocabularies do
            cut = rng.randint(3, 6)
            out.append(piece[:cut])
            piece = piece[cut:]
        out.append(piece)
    assert "".join(out) == text
    return out[:n_tokens]


def _best(fn: Callable[[], list[str]], repeat: int) -> tuple[float, list[str]]:
    best = float("inf")
    chunks: list[str] = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        chunks = fn()
        best = min(best, time.perf_counter() - t0)
    return best, chunks


def run_agent_stream(toks: list[str], step: float) -> list[str]:
    ch = TextChunker()
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


def _sizes(chunks: list[str]) -> str:
    lens = sorted(len(c) for c in chunks)
    if not lens:
        return "no chunks"
    p90 = lens[min(len(lens) - 1, int(0.9 * len(lens)))]
    return (f"{len(lens):>5} chunks  size min {lens[0]:>3}  median {statistics.median(lens):>5.0f}"
            f"  p90 {p90:>3}  max {lens[-1]:>3}")


def main() -> None:
    toks = tokens()
    text = "".join(toks)
    print(f"stream: {len(toks):,} tokens, {len(text):,} chars, "
          f"{len(text) / len(toks):.1f} chars/token (seed {SEED})")
    results: list[tuple[str, float, list[str], int]] = []

    for label, step in (("agent_stream TextChunker, one `now`", 0.0),
                        ("agent_stream TextChunker, 20 ms/token", 0.02)):
        secs, chunks = _best(lambda step=step: run_agent_stream(toks, step), repeat=60)
        assert "".join(chunks) == text, "lossless"
        results.append((label, len(toks) / secs, chunks, len(toks)))

    peers: list[tuple[str, str, Callable[[list[str]], list[str]], int, int]] = [
        ("stream2sentence.generate_sentences", "stream2sentence", run_stream2sentence, 1000, 1),
        ("LiveKit-style blingfire re-scan", "blingfire", run_livekit_style, len(toks), 3),
    ]
    for label, module, fn, n, repeat in peers:
        try:
            __import__(module)
        except ImportError as exc:  # not installed, or a dependency of it is missing
            print(f"{label}: skipped ({exc})")
            continue
        sub = toks[:n]
        fn(sub[:50])  # warm up (stream2sentence loads its tokenizer on first use)
        secs, chunks = _best(lambda fn=fn, sub=sub: fn(sub), repeat=repeat)
        results.append((label, n / secs, chunks, n))

    print()
    print(f"{'':<40} {'tokens':>6} {'tokens/s':>12}   chunks")
    for label, rate, chunks, n in results:
        print(f"{label:<40} {n:>6,} {rate:>12,.0f}   {_sizes(chunks)}")
    ours = results[0][1]
    peers_rates = [r for r in results[2:]]
    if peers_rates:
        print()
        for label, rate, _chunks, _n in peers_rates:
            print(f"agent_stream (one `now`) / {label}: {ours / rate:,.1f}x")
        fastest = max(r[1] for r in peers_rates)
        print(f"vs the fastest peer: {ours / fastest:,.1f}x (target >= 10x); "
              f"realtime mode: {results[1][1] / fastest:,.1f}x")
    print(f"target >= 1,000,000 tokens/s: {'met' if ours >= 1_000_000 else 'NOT met'} "
          f"({ours:,.0f} one `now`, {results[1][1]:,.0f} at 20 ms/token)")


if __name__ == "__main__":
    main()
