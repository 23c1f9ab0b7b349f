"""Property: append deltas split any way over interleaved threads assemble to the unsplit text."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream.assemble import assemble
from agent_stream.message import Message

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@st.composite
def streams(draw: st.DrawFn) -> tuple[dict[tuple[str, str], str], list[Message]]:
    n = draw(st.integers(1, 5))
    originals: dict[tuple[str, str], str] = {}
    pieces: dict[tuple[str, str], list[str]] = {}
    for i in range(n):
        # ids deliberately reused across threads
        key = (f"T{draw(st.integers(1, 3))}", f"M{draw(st.integers(1, 2))}")
        if key in originals:
            continue
        text = draw(texts)
        cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=10)))
        bounds = [0, *cuts, len(text)]
        originals[key] = text
        pieces[key] = [text[a:b] for a, b in itertools.pairwise(bounds)]
        del i
    # interleave: repeatedly pick a key with pieces left
    order = []
    remaining = {k: list(v) for k, v in pieces.items()}
    while any(remaining.values()):
        k = draw(st.sampled_from(sorted(k for k, v in remaining.items() if v)))
        order.append((k, remaining[k].pop(0)))
    out = [
        Message(
            type="text",
            thread_id=k[0],
            message_id=k[1],
            chunk_id=f"C{i}",
            delta=True,
            props={"content": p},
        )
        for i, (k, p) in enumerate(order)
    ]
    return originals, out


@settings(max_examples=200, deadline=None)
@given(streams())
def test_split_interleaved_appends_assemble_to_the_unsplit_text(data) -> None:  # type: ignore[no-untyped-def]
    originals, messages = data
    t = assemble(messages)
    for (tid, mid), text in originals.items():
        st_ = t.get(tid, mid)
        assert st_ is not None
        assert st_.content == text
