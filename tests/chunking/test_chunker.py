"""TextChunker: where chunks end (a table of tricky cases in English, Chinese and Japanese),
sizes, the first chunk, time (poll, next_deadline), code fences, options.

Every test runs twice: on the interpreted chunker and on the same modules compiled (skipped while
they are not built); see ``implementation`` in conftest.py.
"""

from __future__ import annotations

import math
import re

import pytest
from chunker_impls import PURE

import agent_stream
import agent_stream.chunking
from agent_stream.errors import ChunkerConfigError, StreamError

TextChunker = PURE  # the implementation under test: set by ``implementation`` for each test


@pytest.fixture(autouse=True)
def _each_build(implementation: type[PURE], monkeypatch: pytest.MonkeyPatch) -> None:
    """``TextChunker`` here is the interpreted one, then the compiled one."""
    monkeypatch.setitem(globals(), "TextChunker", implementation)


CUT = "‖"  # marks where a chunk must end in the table below

_TOKEN = re.compile(r" ?[^\W\d_]+| ?\d+| ?[^\s\w]|\s+|.", re.S)


def feed_all(text: str, how: str, **options: object) -> list[str]:
    """Chunks of ``text`` fed whole, char by char or as BPE-like tokens, all at one instant."""
    ch = TextChunker(**options)  # type: ignore[arg-type]
    if how == "whole":
        pieces = [text]
    elif how == "chars":
        pieces = list(text)
    else:
        pieces = _TOKEN.findall(text)
        assert "".join(pieces) == text
    out: list[str] = []
    for p in pieces:
        out += ch.feed(p, 0.0)
    out += ch.flush()
    assert "".join(out) == text
    return out


def chunks(text: str, **options: object) -> list[str]:
    """The chunks, checked to be the same however the text is split."""
    whole = feed_all(text, "whole", **options)
    assert feed_all(text, "chars", **options) == whole, "char by char differs"
    assert feed_all(text, "tokens", **options) == whole, "token by token differs"
    return whole


# (marked text, options). Default options for the table: every sentence end releases
# (min_chars=1) and the first chunk follows the same rule (first_chars=None).
TABLE: list[tuple[str, dict[str, object]]] = [
    # sentences, terminators, what follows them
    ("Hello world. ‖How are you? ‖Fine!", {}),
    ("Really?! ‖Yes.", {}),
    ("First line.\n‖Second line.", {}),
    ("One.\r\n‖Two.", {}),
    ("It ended at one.‖Two more came.", {}),
    ("Use approx. five cups. ‖Stir well.", {}),
    ("Yahoo! is a company. ‖It is old.", {}),
    # decimals, versions, money, numbers
    ("Pi is 3.14 today. ‖Next.", {}),
    ("Use v1.2.3 now. ‖Then stop.", {}),
    ("It costs $29.99 only. ‖Buy it.", {}),
    ("The temperature was 98.6 degrees. ‖Fine.", {}),
    ("He was born in 1980. ‖That was long ago.", {}),
    ("See No. 5 for details. ‖Ok.", {}),
    ("Read Fig. 3 and Vol. 2 first. ‖Ok.", {}),
    # abbreviations and titles
    ("Fruit, e.g. apples, is good. ‖Eat it.", {}),
    ("One thing, i.e. this one, matters. ‖Yes.", {}),
    ("Apples, pears, etc. are fruit. ‖Yes.", {}),
    ("We bought apples, pears, etc. ‖Then we left.", {}),
    ("Dr. Smith is here. ‖He waits.", {}),
    ("Mr. and Mrs. Jones came. ‖They sat.", {}),
    ("Apple Inc. is big. ‖Yes.", {}),
    ("The U.S. economy grew. ‖It was fast.", {}),
    ("She lives in the U.S. ‖She likes it.", {}),
    ("He has a Ph.D. in physics. ‖Wow.", {}),
    ("We met at 5 p.m. yesterday. ‖Fine.", {}),
    ("It was 3 vs. 4 at the end. ‖Ok.", {}),
    # initials
    ("J. R. R. Tolkien wrote it. ‖Read it.", {}),
    ("John F. Kennedy spoke. ‖People listened.", {}),
    # ellipses
    ("Wait... what happened? ‖Nothing.", {}),
    ("Well… maybe later. ‖Sure.", {}),
    ("Wait... Then it came. ‖Ok.", {}),
    # URLs and e-mail addresses
    ("See https://example.com/a.b?x=1 for more. ‖Done.", {}),
    ("Visit example.com. ‖Then log in.", {}),
    ("Mail john.doe@example.com today. ‖Thanks.", {}),
    # closing quotes and brackets stay with the sentence
    ('He said "Stop." ‖Then he left.', {}),
    ("(See the note.) ‖Next.", {}),
    ("She said 'hi.' ‖We waved.", {}),
    ("**Done.** ‖Next one.", {}),
    # markdown: list markers, headings, paragraphs, tables, code
    ("Steps:\n1. Open the lid.\n‖2. Pour the tea.\n", {}),
    ("  10. Indented item.\n‖  11. Next item.", {}),
    ("## Heading\n\nText here. ‖More.", {}),  # a heading goes with what follows it
    ("Title line\n\n‖Body text here.", {}),
    ("| a. B | c. D |\n| e | f |\n\n‖After the table.", {}),
    ("Call `x.y(). Z` now. ‖Done.", {}),
    ("Intro.\n\n‖```py\nx = 1. \ny = 2. Yes.\n```\n‖After.", {}),
    ("~~~\nA. B. C.\n~~~\n‖Done.", {}),
    ("Text.\n\n‖    ```\n    code. Here.\n    ```\n‖More.", {}),
    # Chinese
    ("今天天气很好。‖我们去公园吧！‖你觉得怎么样？‖好的。", {}),
    ("他说：“你好。”‖然后走了。", {}),
    ("我想……也许吧。‖好。", {}),
    ("圆周率是3.14。‖对。", {}),
    ("我用Python 3.11写代码。‖很好。", {}),
    ("第一段。\n\n‖第二段。", {}),
    # Japanese
    ("こんにちは。‖元気ですか？‖はい！", {}),
    ("「こんにちは。」と彼は言った。‖それから帰った。", {}),
    ("「行こう！」‖彼女は笑った。", {}),
    ("ｺﾝﾆﾁﾊ｡‖ｻﾖｳﾅﾗ｡", {}),
    # sizes: tiny sentences merge up to min_chars; the first chunk comes early
    ("Hi. Ok. Sure. This sentence is long enough. ‖Next one.", {"min_chars": 30}),
    ("Hi! ‖Ok. Sure. This one is long enough now. ‖End.", {"min_chars": 30, "first_chars": 20}),
    (
        "The quick brown fox ‖jumps over the lazy dog and runs far away. ‖Ok.",
        {"min_chars": 30, "first_chars": 17},
    ),
    # max_chars forces a cut: clause, then word, then inside a word
    ("One long clause here, ‖and another long clause there", {"min_chars": 10, "max_chars": 30}),
    ("one two three four five ‖six seven eight", {"min_chars": 10, "max_chars": 25}),
    ("abcdefghij‖klmnopqrst‖uvw", {"min_chars": 5, "max_chars": 10}),
    ("中文没有空格所以按字切分‖好吗", {"min_chars": 5, "max_chars": 12}),
    ("| a | b |\n| c | d |\n‖| e | f |\n", {"min_chars": 5, "max_chars": 25}),
    # a fence longer than max_chars is cut at line ends only
    ("```\nline one\n‖line two\nline three\n‖```\n", {"min_chars": 5, "max_chars": 20}),
    # a fence that fits is kept whole: the text before it goes first
    ("Some intro words\n‖```\nx = 1\n```\n", {"min_chars": 5, "max_chars": 20}),
]


@pytest.mark.parametrize(("marked", "options"), TABLE, ids=[t[0][:40] for t in TABLE])
def test_chunks_end_where_marked(marked: str, options: dict[str, object]) -> None:
    opts: dict[str, object] = {"min_chars": 1, "first_chars": None, **options}
    assert chunks(marked.replace(CUT, ""), **opts) == marked.split(CUT)


def test_the_table_is_big_and_covers_three_scripts() -> None:
    assert len(TABLE) >= 40
    text = "".join(t for t, _ in TABLE)
    assert re.search("[\u4e00-\u9fff]", text) and re.search("[\u3040-\u30ff]", text)


# --------------------------------------------------------------------- confirmation


def test_a_terminator_waits_for_what_follows() -> None:
    ch = TextChunker(min_chars=1, first_chars=None)
    assert ch.feed("Pi is 3.", 0.0) == []
    assert ch.feed("14 and more. ", 0.0) == []  # "3." was not an end; "more. " waits for a letter
    assert ch.feed("Next", 0.0) == ["Pi is 3.14 and more. "]
    assert ch.flush() == ["Next"]


def test_cjk_terminator_needs_no_space_but_waits_for_a_closing_quote() -> None:
    ch = TextChunker(min_chars=1, first_chars=None)
    assert ch.feed("他说：“你好。", 0.0) == []
    assert ch.feed("”", 0.0) == []
    assert ch.feed("然", 0.0) == ["他说：“你好。”"]


def test_min_chars_merges_short_sentences() -> None:
    text = "Yes. No. Maybe. I think so. Perhaps not today. Fine."
    got = chunks(text, min_chars=20, first_chars=None)
    assert got == ["Yes. No. Maybe. I think so. ", "Perhaps not today. Fine."]


def test_defaults() -> None:
    ch = TextChunker()
    assert (ch.min_chars, ch.max_chars, ch.max_delay, ch.first_chars) == (40, 400, 0.25, 20)
    assert "min_chars=40" in repr(ch)


def test_every_chunk_is_at_most_max_chars() -> None:
    text = "word " * 50 + "x" * 130 + " 你好" * 40 + "\n```\n" + "code line\n" * 30 + "```\n"
    for how in ("whole", "chars", "tokens"):
        got = feed_all(text, how, min_chars=10, max_chars=60)
        assert max(map(len, got)) <= 60


def test_a_hard_cut_never_splits_a_grapheme() -> None:
    text = "e\u0301" * 30  # e + combining acute, no spaces at all
    got = feed_all(text, "chars", min_chars=5, max_chars=11, first_chars=None)
    for c in got:
        assert not c.startswith("\u0301")
    family = "👩\u200d👩\u200d👧" * 6
    got = feed_all(family, "chars", min_chars=3, max_chars=7, first_chars=None)
    assert "".join(got) == family
    for c in got:
        assert not c.startswith("\u200d") and not c.endswith("\u200d")


def test_an_inline_code_span_is_not_split() -> None:
    text = "Run `make test && make lint` to check everything here now"
    got = chunks(text, min_chars=5, max_chars=30, first_chars=None)
    assert any("`make test && make lint`" in c for c in got)


def test_a_stray_backtick_does_not_hide_later_sentence_ends() -> None:
    text = "Use ` carefully. It is fine.\nNext line. ‖Then more."
    assert chunks(text.replace(CUT, ""), min_chars=1, first_chars=None)[-1] == "Then more."


def test_a_long_fence_line_is_cut_at_a_space() -> None:
    text = "```\n" + "alpha beta gamma delta epsilon zeta eta theta\n" + "```\n"
    got = chunks(text, min_chars=5, max_chars=30, first_chars=None)
    assert got == ["```\n", "alpha beta gamma delta ", "epsilon zeta eta theta\n```\n"]


# --------------------------------------------------------------------- the first chunk


def test_first_chunk_at_first_sentence_end_whatever_its_length() -> None:
    ch = TextChunker()
    assert ch.feed("Sure! ", 0.0) == []
    assert ch.feed("Here", 0.0) == ["Sure! "]
    assert ch.feed(" is a short one. And more", 0.0) == []  # now min_chars applies


def test_first_chunk_after_first_chars_at_a_word_boundary() -> None:
    ch = TextChunker(first_chars=10)
    out: list[str] = []
    for tok in ["The", " capital", " of", " France", " is", " Paris"]:
        out += ch.feed(tok, 0.0)
    assert out == ["The capital "]


def test_flush_starts_a_new_message() -> None:
    ch = TextChunker()
    assert ch.feed("Hello there. This", 0.0) == ["Hello there. "]
    assert ch.flush() == ["This"]
    assert ch.buffered == 0 and ch.next_deadline is None
    assert ch.feed("Hi. ", 1.0) == []
    assert ch.feed("Again", 1.0) == ["Hi. "]  # the first-chunk rule applies again


def test_flush_of_nothing_is_nothing() -> None:
    assert TextChunker().flush() == []
    ch = TextChunker()
    assert ch.feed("", 0.0) == [] and ch.flush() == []


# --------------------------------------------------------------------- time


def test_next_deadline_is_oldest_arrival_plus_max_delay() -> None:
    ch = TextChunker(max_delay=0.5)
    assert ch.next_deadline is None
    ch.feed("", 1.0)
    assert ch.next_deadline is None  # nothing buffered
    ch.feed("Hello", 2.0)
    ch.feed(" world", 2.25)
    assert ch.next_deadline == 2.5
    assert ch.buffered == 11


def test_poll_before_the_deadline_releases_nothing() -> None:
    ch = TextChunker(max_delay=0.25)
    ch.feed("Hello", 0.0)
    assert ch.poll(0.2) == []
    assert ch.buffered == 5


def test_a_finished_sentence_does_not_wait_for_the_next_token() -> None:
    ch = TextChunker(max_delay=0.25)
    ch.feed("Hello", 0.0)
    ch.feed(" world", 0.01)
    ch.feed(".", 0.02)  # then the model stalls
    deadline = ch.next_deadline
    assert deadline == 0.25
    assert ch.poll(deadline) == ["Hello world."]
    assert ch.next_deadline is None


def test_a_steady_stream_is_cut_at_a_word_and_keeps_the_fresh_part() -> None:
    ch = TextChunker(max_delay=0.25, first_chars=None)
    out: list[str] = []
    t = 0.0
    for tok in [
        "The",
        " model",
        " keeps",
        " talking",
        " about",
        " many",
        " things",
        " without",
        " any",
        " pause",
    ]:
        out += ch.feed(tok, t)
        t += 0.05
    # at t=0.25 the first token was due: everything up to the last word boundary went out
    assert out == ["The model keeps talking about "]
    assert ch.next_deadline == pytest.approx(0.25 + 0.25)
    assert "".join(out) + ch.flush()[0] == (
        "The model keeps talking about many things without any pause"
    )


def test_a_late_feed_also_applies_the_deadline() -> None:
    ch = TextChunker(max_delay=0.25, first_chars=None)
    ch.feed("Some words", 0.0)
    # everything that was due, and the fresh part up to its last word boundary
    assert ch.feed(" arrive late", 1.0) == ["Some words arrive "]
    assert ch.next_deadline == 1.25


def test_poll_prefers_a_line_end_unless_it_releases_only_a_sliver() -> None:
    ch = TextChunker(max_delay=0.25, first_chars=None)
    ch.feed("|", 0.0)  # only this is due at 0.25
    ch.feed("\n| cell one | cell", 0.2)
    ch.feed(" two", 0.2)
    # a sliver rather than a cut inside the table row (see test_markdown_cuts)
    assert ch.poll(0.25) == ["|\n"]
    ch = TextChunker(max_delay=0.25, first_chars=None)
    ch.feed("A line that is long enough", 0.0)
    ch.feed("\nand the next", 0.2)
    assert ch.poll(0.25) == ["A line that is long enough\n"]


def test_an_open_fence_is_not_cut_by_time_and_reports_no_deadline() -> None:
    ch = TextChunker(max_delay=0.25, first_chars=None)
    assert ch.feed("Here:\n```py\nx = 1\n", 0.0) == []
    assert ch.poll(0.25) == ["Here:\n"]
    assert ch.next_deadline is None  # nothing can go before the fence closes
    assert ch.poll(5.0) == []
    # it looks closed, and it is long overdue: out it goes at once
    assert ch.feed("y = 2\n```", 5.0) == ["```py\nx = 1\ny = 2\n```"]
    assert ch.next_deadline is None


def test_poll_never_leaves_a_deadline_in_the_past() -> None:
    ch = TextChunker(max_delay=0.1, first_chars=None)
    t = 0.0
    for tok in ["Some", " text", " `code", " span", " here", "\n```", "\nx", " = 1", "\n"]:
        ch.feed(tok, t)
        t += 0.03
        d = ch.next_deadline
        if d is not None and d <= t:
            ch.poll(t)
            nd = ch.next_deadline
            assert nd is None or nd > t


def test_infinite_max_delay_never_releases_on_time() -> None:
    ch = TextChunker(max_delay=math.inf)
    ch.feed("Hello", 0.0)
    assert ch.next_deadline is None
    assert ch.poll(1e12) == []


# --------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"min_chars": 0}, "min_chars"),
        ({"min_chars": 1.5}, "min_chars"),
        ({"min_chars": True}, "min_chars"),
        ({"max_chars": 0}, "max_chars"),
        ({"min_chars": 50, "max_chars": 10}, "max_chars (10) must be >= min_chars (50)"),
        ({"max_delay": 0}, "max_delay"),
        ({"max_delay": -1.0}, "max_delay"),
        ({"max_delay": float("nan")}, "max_delay"),
        ({"max_delay": "1"}, "max_delay"),
        ({"first_chars": -1}, "first_chars"),
        ({"first_chars": 500}, "first_chars (500) must be <= max_chars (400)"),
    ],
)
def test_bad_options_raise_a_clear_error(options: dict[str, object], words: str) -> None:
    with pytest.raises(ChunkerConfigError, match=re.escape(words)):
        TextChunker(**options)  # type: ignore[arg-type]


def test_config_error_is_a_stream_error_and_a_value_error() -> None:
    with pytest.raises(StreamError):
        TextChunker(min_chars=0)
    with pytest.raises(ValueError):
        TextChunker(min_chars=0)


def test_public_at_the_package_top_level() -> None:
    assert agent_stream.TextChunker is agent_stream.chunking.TextChunker


def test_a_whole_document_in_one_delta_matches_token_by_token() -> None:
    doc = "\n\n".join(marked.replace(CUT, "") for marked, _ in TABLE) * 20  # ~60,000 chars
    whole = feed_all(doc, "whole")
    assert whole == feed_all(doc, "tokens")
    assert max(map(len, whole)) <= 400
    short = [c for c in whole[1:-1] if len(c) < 40]
    assert not short, short[:5]  # only the first and the last may be short
