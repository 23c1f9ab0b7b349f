"""Shared by the relay tests: an in-process sub-reply, and the check that a relayed stream holds a
sub-agent's transcript placed under its relay block."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

from agent_stream.assemble import Assembler, Transcript, assemble
from agent_stream.events import EventView
from agent_stream.message import BLOCK_START, THREAD_START, Message
from agent_stream.sources.replay import ReplayModel
from agent_stream.writer import collect

PEER = "agent1qsubagent000000000000000000000000000000000000000000000000000"


def replay_stream(question: str) -> list[Message]:
    """What the replay model writes for ``question`` (rate 0), as a whole stream."""
    model = ReplayModel(rate=0)
    return asyncio.run(collect(lambda out: model(question, out)))


async def replay_stream_async(question: str) -> list[Message]:
    model = ReplayModel(rate=0)
    return await collect(lambda out: model(question, out))


class FakeReply:
    """A sub-reply in this process: yields ``messages`` (``pause`` seconds apart); then its
    status is ``status`` (default: the stream_end's, else ``lost``). ``cancel()`` records the
    call and ends it ``cancelled``."""

    def __init__(
        self,
        messages: Iterable[Message],
        *,
        status: str | None = None,
        peer: str = PEER,
        pause: float = 0.0,
    ) -> None:
        self.messages = list(messages)
        self.peer = peer
        self.status: str | None = None
        self._final = status
        self.pause = pause
        self.cancelled = False
        self.transcript: Transcript = Transcript()

    async def __aiter__(self) -> AsyncIterator[Message]:
        assembler = Assembler()
        self.transcript = assembler.transcript
        for m in self.messages:
            if self.pause:
                await asyncio.sleep(self.pause)
            assembler.feed(m)
            yield m
        ends = [m for m in self.messages if m.event == "stream_end"]
        self.status = self._final or (EventView(ends[-1]).status if ends else "lost")

    def cancel(self) -> None:
        self.cancelled = True
        self.status = "cancelled"


def subtree(messages: list[Message], root: str) -> tuple[set[str], set[str]]:
    """(block ids, thread ids) under relay block ``root`` (parent_block_id / parent blocks)."""
    blocks = {root}
    threads: set[str] = set()
    for m in messages:
        ev = EventView(m)
        if m.event == BLOCK_START and ev.data.get("parent_block_id") in blocks and ev.block_id:
            blocks.add(ev.block_id)
        elif m.event == THREAD_START and m.block_id in blocks and ev.thread_id:
            threads.add(ev.thread_id)
    return blocks, threads


def relay_blocks(messages: list[Message]) -> list[tuple[str, dict[str, Any]]]:
    """(block id, block_start data) of every block that carries an ``agent``."""
    return [
        (EventView(m).block_id or "", EventView(m).data)
        for m in messages
        if m.event == BLOCK_START and "agent" in EventView(m).data
    ]


def _line(t: Transcript, m: Any, root: str | None, relay_thread: str | None) -> str:
    b = t.block(m.block_id) if m.block_id and m.block_id != root else None
    th = t.thread(m.thread_id) if m.thread_id and m.thread_id != relay_thread else None
    return json.dumps(
        [
            m.type,
            m.props,
            m.status,
            [b.type, b.label, b.status] if b else "root",
            [th.label, th.status] if th else None,
        ],
        sort_keys=True,
    )


def assert_placed(sub: Transcript, got: list[Message], root: str) -> None:
    """``got`` (a relayed stream) holds ``sub``'s messages with the same type, props and status,
    in blocks and threads of the same type, label and status, all under block ``root``
    (``sub``'s messages outside any block in ``root`` itself, outside any thread in the relay's
    thread). Compared as sorted lines: concurrent threads may interleave in any order."""
    whole = assemble(got)
    blocks, threads = subtree(got, root)
    relay_thread = next(
        (m.thread_id for m in got if m.event == BLOCK_START and m.block_id == root), None
    )
    mine = [m for m in whole.messages if m.block_id in blocks]
    assert all(m.thread_id in threads or m.thread_id == relay_thread for m in mine)
    got_lines = sorted(_line(whole, m, root, relay_thread) for m in mine)
    want_lines = sorted(_line(sub, m, None, None) for m in sub.messages)
    assert got_lines == want_lines, (
        [x[:200] for x in got_lines if x not in want_lines],
        [x[:200] for x in want_lines if x not in got_lines],
    )


def keys_unique(messages: list[Message]) -> bool:
    """No two message_starts for one (thread, message) and no chunk id twice."""
    starts = [(m.thread_id, m.message_id) for m in messages if m.event == "message_start"]
    chunks = [m.chunk_id for m in messages if m.chunk_id]
    return len(starts) == len(set(starts)) and len(chunks) == len(set(chunks))
