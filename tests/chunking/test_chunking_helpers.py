"""The character helpers that stand for a regex, a set lookup or a ``str`` search in the chunker's
hot paths (compiled, loops in C), against what they stand for, on both builds."""

from __future__ import annotations

import itertools
import re

from chunker_impls import compiled_module
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream.chunking import buffer, scanner, sentences
from agent_stream.chunking.sentences import (
    BLANK,
    WHITESPACE,
    WHITESPACE_SET,
)

MANY = settings(max_examples=500, deadline=None)
# The rules of both builds (the compiled one when it is built).
BUILDS = [m for m in (sentences, compiled_module("sentences")) if m is not None]
SCANNERS = [m for m in (scanner, compiled_module("scanner")) if m is not None]
BUFFERS = [m for m in (buffer, compiled_module("buffer")) if m is not None]


@MANY
@given(
    st.text(alphabet=" \t\na\u3000\u00a0", max_size=12), st.integers(-14, 14), st.integers(-14, 14)
)
def test_is_blank_is_the_blank_regex(s: str, a: int, z: int) -> None:
    """Any offsets, out of range and crossed too: clamped as the regex clamps them."""
    for rules in BUILDS:
        assert rules.is_blank(s, a, z) == (BLANK.fullmatch(s, a, z) is not None), rules


@given(st.characters())
def test_is_space_is_the_whitespace_set(c: str) -> None:
    for rules in BUILDS:
        assert rules.is_space(c) == (c in WHITESPACE_SET), rules


def test_is_space_on_every_whitespace_character_and_its_neighbours() -> None:
    near = {chr(o + d) for c in WHITESPACE for o in (ord(c),) for d in (-1, 0, 1) if o + d >= 0}
    for rules in BUILDS:
        for c in near | {"\x85", "\u00a0", "\u200b", "\u202f", "\ufeff"}:
            assert rules.is_space(c) == (c in WHITESPACE_SET), (rules, hex(ord(c)))


@MANY
@given(
    st.text(alphabet="ab\n \u00e9\u4e2d\U0001f600", max_size=14),
    st.sampled_from(["\n", "a", "\u00e9", "\u4e2d", "\U0001f600", "\u0100"]),
    st.integers(-16, 16),
    st.integers(-16, 16),
)
def test_find_char_and_rfind_char_are_str_find(s: str, c: str, a: int, z: int) -> None:
    """Any width of string and character, offsets out of range and crossed too."""
    for rules in BUILDS:
        assert rules.char_search(s, c, a, z, False) == s.find(c, a, z), rules
        assert rules.char_search(s, c, a, z, True) == s.rfind(c, a, z), rules


@MANY
@given(
    st.text(
        alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        min_size=sentences._PLAIN_WORD_FROM,
    )
)
def test_a_long_word_of_letters_is_plain_before_a_dot(word: str) -> None:
    """``dot_ends`` takes a word of ASCII letters this long for ``_NOT_LOWER`` without a lookup:
    what ``_word_kind`` says of it."""
    assert sentences._word_kind(word) == sentences._NOT_LOWER


_CODE_ATOMS = ["a", " b", ".", " ", "\n", "\n\n", "`", "``", "```", "~~~", "x.y", "|", "1. ", "- "]


@MANY
@given(st.lists(st.sampled_from(_CODE_ATOMS), max_size=50), st.data())
def test_code_regions_are_in_order_and_only_the_last_is_open(
    atoms: list[str], data: st.DataObject
) -> None:
    """What ``forget_before`` relies on to drop the regions a cut released from the front:
    however the text arrives, each region ends before the next starts, only the last is open."""
    text = "".join(atoms)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    for build, buffers in zip(SCANNERS, BUFFERS, strict=True):
        buf = buffers.DeltaBuffer()
        sc = build.BoundaryScanner(buf)
        for a, z in zip([0, *cuts], [*cuts, len(text)], strict=True):
            buf.deltas.append(text[a:z])
            buf.join()
            sc.scan(buf.end, False)
            regions = sc.regions
            for one, after in itertools.pairwise(regions):
                assert one.end is not None and one.start < one.end <= after.start, build
        sc.scan(buf.end, True)
        regions = sc.regions
        for one, after in itertools.pairwise(regions):
            assert one.end is not None and one.start < one.end <= after.start, build


def test_is_cjk_is_the_cjk_class_on_every_character_of_the_basic_plane() -> None:
    cjk = re.compile(f"[{sentences._CJK_CHARS}]")
    for rules in BUILDS:
        wrong = [hex(o) for o in range(0x10000) if rules.is_cjk(chr(o)) != bool(cjk.match(chr(o)))]
        assert not wrong, (rules, wrong[:10])


@MANY
@given(st.text(alphabet=" \t\n\u3000a.今カ。」ｦ", max_size=16), st.data())
def test_visible_word_boundary_ends_where_the_regex_match_ends(s: str, data: st.DataObject) -> None:
    """Any offsets, the search's lookbehind reading before ``pos`` too."""
    pos = data.draw(st.integers(-2, len(s) + 2))
    end = data.draw(st.integers(-2, len(s) + 2))
    m = sentences.VISIBLE_WORD_BOUNDARY.search(s, max(pos, 0), max(end, 0))
    for rules in BUILDS:
        e = rules.visible_word_boundary(s, pos, end)
        assert e == (-1 if m is None else m.end()), rules
        if m is not None:  # an empty match is told by what precedes its end
            assert (m.start() == m.end()) == (not rules.is_space(s[e - 1])), rules
