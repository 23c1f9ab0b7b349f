"""The language rules in agent_stream.chunking.sentences, against straightforward references: the
last word and clause boundary, the end of a whitespace run and the last line break in one (on the
interpreted and the compiled build), what a glued terminator means, graphemes that stay whole."""

from __future__ import annotations

from chunker_impls import compiled_module
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream.chunking import sentences
from agent_stream.chunking.sentences import (
    CJK_TERMINATOR_SET,
    CLOSER_SET,
    MAY_FOLLOW_END,
    TERMINATOR_SET,
    WHITESPACE_RUN,
    WHITESPACE_SET,
    ends_sentence,
    glued,
)

MANY = settings(max_examples=500, deadline=None)

_CJK = "今天好こんにちはカタ"
_CJK_PUNCT = "。！？｡，、；：…ー・」』）】〕〉》〗〙〛”’"
_CLAUSE_MARKS = (",", ";", ":", "..", "…", "—", "–", "，", "、", "；", "：")


# The rules of both builds (the compiled one when it is built).
BUILDS = [m for m in (sentences, compiled_module("sentences")) if m is not None]
# Long texts, few marks: the boundary searches read the last characters one by one, then search.
_SPARSE = "a" * 12 + "Z" * 4 + " \n"


def _texts(alphabet: str, max_size: int = 30) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(list(alphabet)), max_size=max_size).map("".join)


def _span(s: str, data: st.DataObject) -> tuple[int, int]:
    a = data.draw(st.integers(0, len(s)))
    return a, data.draw(st.integers(a, len(s)))


def naive_last_word(s: str, a: int, z: int) -> int:
    """After the last space in s[a:z], or between two CJK characters (looking one past z)."""
    best = -1
    for p in range(a + 1, z + 1):
        after_space = s[p - 1] in WHITESPACE_SET
        between_cjk = (
            s[p - 1] in _CJK
            and p < len(s)
            and s[p] not in WHITESPACE_SET
            and s[p] not in _CJK_PUNCT
        )
        if after_space or between_cjk:
            best = p
    return best


def naive_last_clause(s: str, a: int, z: int) -> int:
    """Try every clause mark in s[a:z] from the last one back; the first that is a boundary."""
    for x in range(z - 1, a - 1, -1):
        if any(s.startswith(mark, x, z) for mark in _CLAUSE_MARKS):
            m = sentences._CLAUSE_AT.match(s, x, z)
            if m is not None:
                return m.end()
    return -1


def test_the_first_characters_of_whitespace_and_cjk_are_as_the_boundary_search_assumes() -> None:
    assert all(c <= " " or c >= sentences._SPACE_OR_CJK_FROM for c in sentences.WHITESPACE)
    assert min(c for c in sentences.WHITESPACE if c > " ") == sentences._SPACE_OR_CJK_FROM
    assert sentences._CJK_CHARS.startswith(sentences._CJK_FROM)
    assert min(sentences._CJK_CHARS.replace("-", "")) == sentences._CJK_FROM  # (ranges a-b)


@MANY
@given(
    _texts(" \n\t\u3000\u00a0\u2009aZ.。，」" + _CJK)
    | _texts(_SPARSE + "a" * 60 + " 今", max_size=200),
    st.data(),
)
def test_last_word_boundary_is_the_last_space_or_cjk_pair(s: str, data: st.DataObject) -> None:
    a, z = _span(s, data)
    for rules in BUILDS:
        assert rules.last_word_boundary(s, a, z) == naive_last_word(s, a, z)


@MANY
@given(
    _texts(",;:.…—–，、；：」』）”’\"')] \naZ今")
    | _texts(_SPARSE * 3 + ',;:..)"', max_size=200)
    | _texts(_SPARSE * 3 + ",;:..…—，、今」 ", max_size=200),
    st.data(),
)
def test_last_clause_boundary_is_the_last_mark_that_ends_a_clause(
    s: str, data: st.DataObject
) -> None:
    a, z = _span(s, data)
    for rules in BUILDS:
        assert rules.last_clause_boundary(s, a, z) == naive_last_clause(s, a, z)


@MANY
@given(st.text(alphabet=st.sampled_from(list(". !?…3aZe\"')\n。」と")), max_size=20), st.data())
def test_a_terminator_glued_to_anything_else_never_ends_a_sentence(
    s: str, data: st.DataObject
) -> None:
    """The scanner skips such terminators without asking: ends_sentence would say no."""
    runs = [i for i, c in enumerate(s) if c in TERMINATOR_SET and (i == 0 or s[i - 1] != c)]
    if not runs:
        return
    i = data.draw(st.sampled_from(runs))
    if i + 1 == len(s) or s[i + 1] in MAY_FOLLOW_END or s[i] in CJK_TERMINATOR_SET:
        return
    j = i + 1
    while j < len(s) and s[j] in TERMINATOR_SET:
        j += 1
    k = j
    while k < len(s) and s[k] in CLOSER_SET:
        k += 1
    w = k
    if k < len(s) and s[k] in WHITESPACE_SET:
        w = WHITESPACE_RUN.match(s, k).end()  # type: ignore[union-attr]
    assert ends_sentence(s, i, j, k, w, len(s), 0) is False


def test_ends_sentence_reads_abbreviations_initials_and_list_markers() -> None:
    def ends(s: str) -> bool | None:
        i = s.index(".")
        w = WHITESPACE_RUN.match(s, i + 1).end()  # type: ignore[union-attr]
        return ends_sentence(s, i, i + 1, i + 1, w, len(s), 0)

    assert ends("It ended. Then") is True
    assert ends("Ask Dr. Smith") is False  # a title
    assert ends("Apple Inc. is") is False  # continues: lowercase after
    assert ends("Apple Inc. Then") is True  # capitalised word after
    assert ends("J. R. R.") is False  # an initial
    assert ends("1. First") is False  # a list marker at the start of a line
    assert ends("born in 1980. Then") is True
    assert ends_sentence("one.Two words", 3, 4, 4, 4, 13, 0) is True  # "one.Two": glued words
    assert ends_sentence("one.Tw", 3, 4, 4, 4, 6, 0) is None  # the next word decides


def test_glued_keeps_graphemes_and_crlf_whole() -> None:
    assert glued("e\u0301", 1)  # a combining accent
    assert glued("👍🏽", 1)  # a skin tone
    assert glued("👩\u200d👧", 1) and glued("👩\u200d👧", 2)  # a zero-width joiner
    assert glued("\r\n", 1)
    assert not glued("ab", 1) and not glued("ab", 0) and not glued("ab", 2)


@MANY
@given(_texts(sentences.WHITESPACE + "\u00a0\u202f\u1680a.今"), st.data())
def test_whitespace_end_is_where_the_whitespace_run_ends(s: str, data: st.DataObject) -> None:
    i, n = _span(s, data)
    m = WHITESPACE_RUN.match(s, i, n)
    for rules in BUILDS:
        assert rules.whitespace_end(s, i, n) == (i if m is None else m.end())


@MANY
@given(_texts(" \n\t\r.a"), st.data())
def test_last_line_break_is_rfind(s: str, data: st.DataObject) -> None:
    a, z = _span(s, data)
    for rules in BUILDS:
        assert rules.last_line_break(s, a, z) == s.rfind("\n", a, z)
