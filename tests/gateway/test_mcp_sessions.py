"""The book of MCP sessions per caller: its cap, and what closes a session in it."""

from __future__ import annotations

from agent_stream.gateway.mcp_sessions import SessionBook


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_caller_at_its_cap_is_full_and_another_caller_is_not() -> None:
    book = SessionBook(2, idle=60, clock=Clock())
    book.opened("a", "s1")
    assert not book.full("a")
    book.opened("a", "s2")
    assert book.full("a") and not book.full("b")


def test_a_delete_or_404_of_its_owner_closes_a_session_and_another_callers_does_not() -> None:
    book = SessionBook(1, idle=60, clock=Clock())
    book.opened("a", "s1")
    book.closed("s1", "b")  # another caller naming a's session: the SDK said 404 to *it*
    assert book.full("a")
    book.closed("s1", "a")
    assert not book.full("a")


def test_an_idle_session_is_no_longer_counted_and_a_named_one_is() -> None:
    clock = Clock()
    book = SessionBook(2, idle=60, clock=clock)
    book.opened("a", "s1")
    book.opened("a", "s2")
    clock.now = 50
    book.named("a", "s2")
    book.named("b", "s1")  # not b's: s1 is not kept alive by it
    clock.now = 100
    assert book.count("a") == 1  # s1 idled out, s2 was named 50 s ago
    clock.now = 200
    assert book.count("a") == 0
