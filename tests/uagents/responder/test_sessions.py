"""Conversation memory: the stores keep to their caps, survive a kill -9 (SQLite, Redis), and
the plugin gives a responder the session's earlier turns."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import stat
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inprocess_agents import Pair
from uagents_core.contrib.protocols.chat import ChatMessage, EndSessionContent, TextContent

from agent_stream.adapters.chat.wire import request_tags
from agent_stream.conversation import Turn, history_to_json
from agent_stream.uagents import ChatRequest, ChatSettings, StreamingChat
from agent_stream.uagents.responder._sessions import (
    MemorySessionStore,
    RedisSessionStore,
    SessionLimits,
    SqliteSessionStore,
    open_store,
)
from agent_stream.writer import StreamWriter

A, B = "agent1qsender" + "a" * 50, "agent1qsender" + "b" * 50


def pair_of(n: int) -> list[Turn]:
    return [Turn("user", f"question {n}"), Turn("assistant", f"answer {n}")]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- the memory store ------------------------------------------------------------------------------
async def test_turns_come_back_in_order_and_forget_forgets() -> None:
    store = MemorySessionStore()
    await store.append((A, "s1"), pair_of(1))
    await store.append((A, "s1"), pair_of(2))
    await store.append((B, "s1"), pair_of(9))  # another sender's session of the same id
    assert await store.load((A, "s1")) == (*pair_of(1), *pair_of(2))
    assert await store.load((B, "s1")) == tuple(pair_of(9))
    await store.forget((A, "s1"))
    assert await store.load((A, "s1")) == ()
    assert await store.load((B, "s1")) == tuple(pair_of(9))


async def test_past_the_per_session_caps_the_oldest_turns_go_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemorySessionStore(SessionLimits(max_turns=4, max_session_bytes=10_000))
    for n in range(5):
        await store.append((A, "s"), pair_of(n))
    assert await store.load((A, "s")) == (*pair_of(3), *pair_of(4))
    assert "oldest turns forgotten" in caplog.text
    by_bytes = MemorySessionStore(SessionLimits(max_session_bytes=30))
    await by_bytes.append((A, "s"), [Turn("user", "x" * 20)])
    await by_bytes.append((A, "s"), [Turn("assistant", "y" * 20)])
    assert await by_bytes.load((A, "s")) == (Turn("assistant", "y" * 20),)


async def test_sessions_per_sender_and_in_all_are_capped_least_recently_used_first() -> None:
    store = MemorySessionStore(SessionLimits(max_sessions_per_sender=2, max_sessions=3))
    await store.append((A, "1"), pair_of(1))
    await store.append((A, "2"), pair_of(2))
    await store.append((A, "1"), pair_of(3))  # session 1 used last
    await store.append((A, "3"), pair_of(4))  # A's third: session 2 goes
    assert await store.load((A, "2")) == ()
    assert await store.load((A, "1")) != ()
    await store.append((B, "1"), pair_of(5))
    await store.append((B, "2"), pair_of(6))  # a fourth in all: the oldest, A's session 1
    assert store.sessions == 3
    assert await store.load((A, "1")) == ()


async def test_an_idle_session_expires() -> None:
    clock = Clock()
    store = MemorySessionStore(SessionLimits(idle_expiry=60), clock=clock)
    await store.append((A, "s"), pair_of(1))
    clock.now += 59
    assert await store.load((A, "s")) == tuple(pair_of(1))
    clock.now += 61
    assert await store.load((A, "s")) == ()
    assert store.sessions == 0


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="max_turns"):
        SessionLimits(max_turns=0)
    with pytest.raises(ValueError, match="idle_expiry"):
        SessionLimits(idle_expiry=float("nan"))
    with pytest.raises(ValueError, match="unknown session store"):
        open_store("postgres://x")
    with pytest.raises(ValueError, match="does not exist"):
        open_store("sqlite:/no/such/dir/here.db")


LIMITS = SessionLimits(
    max_turns=8, max_session_bytes=2048, max_sessions_per_sender=3, max_sessions=64
)


def _held(store: MemorySessionStore, turns: list[tuple[int, int, int]]) -> int:
    async def flood() -> None:
        for sender, session, size in turns:
            await store.append(
                (f"agent1q{sender:060d}", f"{session:036d}"),
                [Turn("user", "q" * size), Turn("assistant", "a" * size)],
            )

    logging.getLogger("agent_stream.uagents").disabled = True
    try:
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        asyncio.run(flood())
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        logging.getLogger("agent_stream.uagents").disabled = False


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, 400), st.integers(0, 6), st.integers(0, 1500)),
        min_size=200,
        max_size=600,
    )
)
def test_a_flood_of_senders_and_sessions_stays_under_the_bound(
    turns: list[tuple[int, int, int]],
) -> None:
    store = MemorySessionStore(LIMITS)
    assert _held(store, turns) <= LIMITS.bound()
    assert store.sessions <= LIMITS.max_sessions


def test_the_measurement_sees_memory_the_caps_would_have_refused() -> None:
    """Control: with caps out of reach the same kind of flood holds more than the bound, so the
    test above measures something real."""
    loose = MemorySessionStore(
        SessionLimits(
            max_turns=10_000,
            max_session_bytes=10**9,
            max_sessions_per_sender=10_000,
            max_sessions=100_000,
        )
    )
    flood = [(s, k, 1500) for s in range(200) for k in range(4)]
    assert _held(loose, flood) > LIMITS.bound()


# -- durable stores -------------------------------------------------------------------------------
async def test_sqlite_keeps_turns_across_a_new_store_and_keeps_to_the_caps(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SqliteSessionStore(path, SessionLimits(max_turns=4, max_sessions_per_sender=2))
    for n in range(3):
        await store.append((A, "s"), pair_of(n))
    await store.append((A, "t"), pair_of(7))
    await store.append((A, "u"), pair_of(8))  # A's third session: the least recent ("s") goes
    await store.close()
    again = SqliteSessionStore(path)
    assert await again.load((A, "s")) == ()
    assert await again.load((A, "u")) == tuple(pair_of(8))
    await again.forget((A, "u"))
    assert await again.load((A, "u")) == ()
    await again.close()


def test_sqlite_turns_survive_kill_9(tmp_path: Path) -> None:
    """A process stores a turn, says so, and is killed -9 at once: the turn is there, whole."""
    path = tmp_path / "sessions.db"
    script = textwrap.dedent(f"""
        import asyncio, sys, time
        from agent_stream.conversation import Turn
        from agent_stream.uagents.responder._sessions import SqliteSessionStore
        async def main():
            store = SqliteSessionStore({str(path)!r})
            await store.append(({A!r}, "s"), [Turn("user", "q1"), Turn("assistant", "a1")])
            print("stored", flush=True)
            time.sleep(60)
        asyncio.run(main())
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "stored"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(10)

    async def read() -> tuple[Turn, ...]:
        store = SqliteSessionStore(path)
        try:
            return await store.load((A, "s"))
        finally:
            await store.close()

    assert asyncio.run(read()) == (Turn("user", "q1"), Turn("assistant", "a1"))


@pytest.mark.integration
async def test_redis_keeps_turns_and_keeps_to_the_caps(redis_url: str) -> None:
    limits = SessionLimits(max_turns=4, max_sessions_per_sender=2)
    store = RedisSessionStore(redis_url, limits, prefix="t1")
    try:
        for n in range(3):
            await store.append((A, "s"), pair_of(n))
        assert await store.load((A, "s")) == (*pair_of(1), *pair_of(2))
        await store.append((A, "t"), pair_of(7))
        await store.append((A, "u"), pair_of(8))
        assert await store.load((A, "s")) == ()
        other = RedisSessionStore(redis_url, limits, prefix="t1")  # another process's view
        assert await other.load((A, "u")) == tuple(pair_of(8))
        await other.forget((A, "u"))
        await other.close()
        assert await store.load((A, "u")) == ()
    finally:
        await store.close()


# -- the plugin -----------------------------------------------------------------------------------


async def test_a_responder_sees_the_sessions_earlier_turns(pair: Pair) -> None:
    seen: list[tuple[Turn, ...]] = []

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        seen.append(request.history)
        await out.text(f"Answer to {request.text}.")

    server = pair.add("sessions server agent", StreamingChat(respond))
    asker_chat = StreamingChat()
    asker = pair.add("sessions asking agent", asker_chat)
    ctx = asker._build_context()  # one context: one envelope session
    for q in ("first", "second", "third"):
        reply = await asker_chat.ask(ctx, server.address, q, timeout=10)
        await reply
        assert reply.completed
    assert seen[0] == ()
    assert seen[2] == (
        Turn("user", "first"),
        Turn("assistant", "Answer to first."),
        Turn("user", "second"),
        Turn("assistant", "Answer to second."),
    )
    other = await asker_chat.ask(asker._build_context(), server.address, "fresh", timeout=10)
    await other
    assert seen[3] == ()  # a new session remembers nothing


async def test_end_session_forgets_and_client_history_wins(pair: Pair) -> None:
    seen: list[tuple[Turn, ...]] = []
    store = MemorySessionStore()

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        seen.append(request.history)
        await out.text("ok")

    server = pair.add("sessions forget server", StreamingChat(respond, sessions=store))
    asker_chat = StreamingChat()
    asker = pair.add("sessions forget asker", asker_chat)
    ctx = asker._build_context()
    await (await asker_chat.ask(ctx, server.address, "one", timeout=10))
    assert store.sessions == 1
    await ctx.send(server.address, ChatMessage(content=[EndSessionContent(type="end-session")]))
    for _ in range(200):
        if store.sessions == 0:
            break
        await asyncio.sleep(0.02)
    assert store.sessions == 0

    sent = (Turn("system", "Be brief."), Turn("user", "hi"), Turn("assistant", "hello"))
    question = ChatMessage(
        content=[
            request_tags(history=history_to_json(sent)),
            TextContent(type="text", text="and now?"),
        ]
    )
    await (await asker_chat.ask(ctx, server.address, question, timeout=10))
    assert seen[-1] == sent
    assert store.sessions == 0  # the client keeps its history itself: nothing stored

    bad = ChatMessage(
        content=[
            request_tags(history='[{"role": "wizard", "text": 1}]'),
            TextContent(type="text", text="still answered?"),
        ]
    )
    reply = await asker_chat.ask(ctx, server.address, bad, timeout=10)
    await reply
    assert reply.completed and seen[-1] == ()  # bad history ignored, question answered


async def test_a_failing_store_does_not_stop_the_answer(pair: Pair) -> None:
    class Broken(MemorySessionStore):
        async def load(self, key: tuple[str, str]) -> tuple[Turn, ...]:
            raise OSError("disk on fire")

        async def append(self, key: tuple[str, str], turns: object) -> None:
            raise OSError("disk on fire")

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        await out.text("fine")

    settings_ = ChatSettings()
    server = pair.add(
        "sessions broken store", StreamingChat(respond, settings=settings_, sessions=Broken())
    )
    asker_chat = StreamingChat()
    asker = pair.add("sessions broken asker", asker_chat)
    reply = await asker_chat.ask(asker._build_context(), server.address, "q", timeout=10)
    await reply
    assert reply.completed and reply.text() == "fine"


async def test_the_sqlite_store_and_its_wal_and_shm_are_private_whatever_the_umask(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chats.db"
    old = os.umask(0o022)
    try:
        store = SqliteSessionStore(path)
        await store.append(("agent1qa", "s1"), [Turn("user", "my password is hunter2")])
        files = [path, tmp_path / "chats.db-wal", tmp_path / "chats.db-shm"]
        assert all(f.exists() for f in files)
        assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in files} == {
            f.name: 0o600 for f in files
        }
        await store.close()
    finally:
        os.umask(old)


async def test_an_existing_world_readable_sqlite_store_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    store = SqliteSessionStore(path)
    await store.append(("agent1qa", "s1"), [Turn("user", "hello")])
    await store.close()
    for f in tmp_path.iterdir():
        os.chmod(f, 0o644)
    again = SqliteSessionStore(path)
    assert await again.load(("agent1qa", "s1")) == (Turn("user", "hello"),)
    assert {stat.S_IMODE(f.stat().st_mode) for f in tmp_path.iterdir()} == {0o600}
    await again.close()
