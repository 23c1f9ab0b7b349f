"""RecentMap: what a peer can make us remember stays within its limit, the oldest set first out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent_stream.recent import RecentMap


def test_setting_a_key_again_makes_it_the_most_recent() -> None:
    m: RecentMap[str, int] = RecentMap(2)
    m.put("a", 1)
    m.put("b", 2)
    m.put("a", 3)  # "a" is now newer than "b"
    m.put("c", 4)
    assert (m.get("a"), m.get("b"), m.get("c")) == (3, None, 4)
    assert m.pop("a") == 3
    assert m.pop("a") is None
    assert len(m) == 1


@given(st.lists(st.tuples(st.integers(0, 50), st.integers()), max_size=300), st.integers(1, 20))
def test_a_flood_of_keys_keeps_only_the_most_recent_limit(
    puts: list[tuple[int, int]], limit: int
) -> None:
    m: RecentMap[int, int] = RecentMap(limit)
    for k, v in puts:
        m.put(k, v)
    assert len(m) <= limit
    latest: dict[int, int] = {}
    for k, v in puts:  # the model: the last value of each key, in order of last setting
        latest.pop(k, None)
        latest[k] = v
    kept = list(latest.items())[-limit:]
    assert len(m) == len(kept)
    assert all(m.get(k) == v for k, v in kept)
