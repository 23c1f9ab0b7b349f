"""The golden corpus (``golden/``, written once by ``golden/generate.py``): recorded (deltas,
clock) scripts with what the chunker answered to every call, replayed on the interpreted and on
the compiled build; and the clause and word boundaries of short texts, on both builds' rules.

A change to the chunker's rules that changes chunks fails here until the corpus is generated
again and its diff read."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from chunker_impls import FAST, NOT_BUILT, PURE, compiled_module

from agent_stream.chunking import sentences

GOLDEN = Path(__file__).resolve().parent / "golden"


@cache
def _load(name: str) -> list[Any]:
    rows: list[Any] = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    return rows


def _replay(cls: type[PURE], script: dict[str, Any]) -> None:
    ch = cls(**script["options"])
    calls: list[str] = []
    for call, want in zip(script["calls"], script["expect"], strict=True):
        if len(call) == 2:
            got = ch.feed(*call)
            calls.append(f"feed({call[0]!r}, {call[1]!r})")
        elif call:
            got = ch.poll(*call)
            calls.append(f"poll({call[0]!r})")
        else:
            got = ch.flush()
            calls.append("flush()")
        assert [ch.buffered, ch.next_deadline, *got] == want, (script["name"], calls[-12:])


def _names(name: str) -> list[str]:
    return [s["name"] for s in _load(name)]


def test_the_corpus_is_there_and_large() -> None:
    random_scripts, bench = _load("random"), _load("bench")
    assert len(random_scripts) >= 100 and len(bench) >= 5
    calls = sum(len(s["calls"]) for s in random_scripts + bench)
    chunks = sum(len(e) - 2 for s in random_scripts + bench for e in s["expect"])
    assert calls > 20_000 and chunks > 5_000
    # every kind of call, more than one message a script, and options of every kind
    kinds = {len(c) for s in random_scripts for c in s["calls"]}
    assert kinds == {0, 1, 2}
    assert any(s["options"]["first_chars"] is None for s in random_scripts)


@pytest.mark.parametrize("index", range(len(_load("random"))))
def test_random_scripts(implementation: type[PURE], index: int) -> None:
    _replay(implementation, _load("random")[index])


@pytest.mark.parametrize("index", range(len(_load("bench"))), ids=_names("bench"))
def test_bench_streams(implementation: type[PURE], index: int) -> None:
    _replay(implementation, _load("bench")[index])


@pytest.mark.parametrize("build", ["python", "compiled"])
def test_clause_and_word_boundaries(build: str) -> None:
    rules = sentences if build == "python" else compiled_module("sentences")
    if rules is None:
        pytest.skip(NOT_BUILT)
    for s, a, z, clause, word in _load("boundaries"):
        got = rules.last_clause_boundary(s, a, z), rules.last_word_boundary(s, a, z)
        assert got == (clause, word), (s, a, z)


def test_a_changed_answer_is_caught() -> None:
    """The replay is no formality: one chunk cut elsewhere fails it."""
    script = json.loads(json.dumps(_load("bench")[0]))
    i = next(i for i, e in enumerate(script["expect"]) if len(e) > 2)
    chunk = script["expect"][i][2]
    script["expect"][i][2] = chunk[:-1]
    with pytest.raises(AssertionError):
        _replay(FAST or PURE, script)
