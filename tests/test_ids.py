"""IdGenerator: sequential per prefix, never a duplicate under threads or tasks."""

from __future__ import annotations

import asyncio
import threading

from agent_stream.ids import IdGenerator


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
