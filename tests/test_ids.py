"""IdGenerator: sequential per prefix, never a duplicate under threads or tasks. SeenIds: a set
of ids, as small as a counter for IdGenerator's own."""

from __future__ import annotations

import asyncio
import sys
import threading

from hypothesis import given
from hypothesis import strategies as st

from agent_stream.ids import IdGenerator, SeenIds


def test_sequences_start_at_one_per_prefix() -> None:
    ids = IdGenerator()
    assert [ids.chunk(), ids.chunk(), ids.message(), ids.block(), ids.thread(), ids.chunk()] == [
        "C1",
        "C2",
        "M1",
        "B1",
        "T1",
        "C3",
    ]


def test_no_duplicates_across_os_threads() -> None:
    ids = IdGenerator()
    got: list[str] = []
    lock = threading.Lock()

    def draw() -> None:
        local = [ids.chunk() for _ in range(5000)]
        with lock:
            got.extend(local)

    workers = [threading.Thread(target=draw) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(got) == 40000 and len(set(got)) == 40000
    assert max(int(c[1:]) for c in got) == 40000


async def test_no_duplicates_across_asyncio_tasks() -> None:
    ids = IdGenerator()

    async def draw() -> list[str]:
        out = []
        for _ in range(500):
            out.append(ids.message())
            await asyncio.sleep(0)
        return out

    results = await asyncio.gather(*(draw() for _ in range(10)))
    flat = [i for r in results for i in r]
    assert len(set(flat)) == 5000


def test_the_locked_sequence_of_a_free_threaded_build_never_repeats() -> None:
    from agent_stream.ids import _sequence

    draw = _sequence(threading.Lock())
    got: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        local = [draw() for _ in range(5000)]
        with lock:
            got.extend(local)

    workers = [threading.Thread(target=take) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(got) == list(range(1, 20001))


ids_any = st.one_of(
    st.integers(1, 60).map(lambda n: f"C{n}"),  # IdGenerator's own, in any order
    st.sampled_from(["C0", "C01", "C", "c1", "M1", "C1.5", "C-1", "C\u0661", "", "C" + "9" * 30]),
    st.text(max_size=6),
)


@given(st.lists(ids_any, max_size=120), st.lists(ids_any, max_size=30))
def test_seen_ids_answer_as_a_set_of_strings(added: list[str], asked: list[str]) -> None:
    seen, model = SeenIds("C"), set[str]()
    for key in added:
        assert (key in seen) == (key in model)
        assert seen.add(key) == (key not in model)  # whether it was new
        model.add(key)
    assert all((key in seen) == (key in model) for key in asked + added)
    assert len(seen) == len(model) and 1 not in seen


def test_seen_ids_of_a_generator_in_order_take_no_set() -> None:
    ids, seen = IdGenerator(), SeenIds("C")
    for _ in range(500):
        seen.add(ids.chunk())
    assert "C500" in seen and "C501" not in seen
    assert sys.getsizeof(seen) < 100 and seen._ahead is None and seen._other is None
