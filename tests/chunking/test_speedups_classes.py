"""The compiled chunker's character classes are the pure rules' sets, code point for code point."""

from __future__ import annotations

import re

import pytest
from chunker_impls import FAST, NOT_BUILT

from agent_stream.chunking import sentences

pytestmark = pytest.mark.skipif(FAST is None, reason=NOT_BUILT)


def test_every_character_class_matches_the_pure_rules() -> None:
    from agent_stream.chunking import _speedups

    classes = _speedups._classes(0x10000)  # type: ignore[attr-defined]
    got = {name: set(chars) for name, chars in classes.items()}
    cjk = re.compile(f"[{sentences._CJK_CHARS}]")
    assert got == {
        "whitespace": set(sentences.WHITESPACE_SET),
        "terminators": set(sentences.TERMINATOR_SET),
        "cjk_terminators": set(sentences.CJK_TERMINATOR_SET),
        "closers": set(sentences.CLOSER_SET),
        "openers": set(sentences.OPENERS),
        "may_follow_end": set(sentences.MAY_FOLLOW_END),
        "cjk": {chr(o) for o in range(0x10000) if not 0xD800 <= o <= 0xDFFF
                if cjk.fullmatch(chr(o))},
        "cjk_punct": set(sentences._CJK_PUNCT),
    }
