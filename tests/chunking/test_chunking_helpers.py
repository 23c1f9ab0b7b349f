"""The character helpers that stand for a regex, a set lookup or a ``str`` search in the chunker's
hot paths (compiled, loops in C), against what they stand for, on both builds."""

from __future__ import annotations

from chunker_impls import compiled_module
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream.chunking import sentences
from agent_stream.chunking.sentences import BLANK, WHITESPACE, WHITESPACE_SET

MANY = settings(max_examples=500, deadline=None)
# The rules of both builds (the compiled one when it is built).
BUILDS = [m for m in (sentences, compiled_module("sentences")) if m is not None]


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
