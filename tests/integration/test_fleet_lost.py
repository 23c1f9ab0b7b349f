"""A replica killed mid-reply: a surviving replica ends the reply `lost` for the asker, once, soon
after the dead replica's liveness key expired (not at the asker's idle timeout), numbered after
the last ChatMessage of the reply's mirror; never a live replica's reply, never one that ended.

First with Fleet objects on a real redis-server (a crash is a replica whose tasks stop and whose
liveness key is gone, as it is 5 s after a kill), then end to end: three `serve --fleet` replicas
behind a real haproxy, `kill -9` of the one answering, `agent-stream ask` with a 30 s idle timeout.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from agents_harness import STARTUP_WITHIN, Harness, address_of, port_open_failed
from haproxy import Haproxy, need_haproxy
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    StartStreamContent,
    TextContent,
)

from agent_stream import message as M
from agent_stream.adapters.chat import ChatDecoder, ChatEncoder
from agent_stream.adapters.chat.wire import seq_span
from agent_stream.assemble import Assembler
from agent_stream.telemetry import METRICS, prometheus_text
from agent_stream.uagents.fleet._fleet import Fleet
from agent_stream.uagents.fleet._lost import (
    is_final,
    lost_end,
    open_entry,
    open_streams,
    parse_open_entry,
)
from agent_stream.uagents.local._agents import free_port

pytestmark = pytest.mark.integration

ASKER = "agent1qasker" + "x" * 40
LOST_METRIC = "agent_stream_fleet_replies_lost_total"


def reply(
    conversation: str, sentences: int, *, end: bool = False, lean: bool = False
) -> list[ChatMessage]:
    """A tagged reply's ChatMessages as a replica sends them (ended when ``end``; ``lean``: to
    an asker of today, the lean wire with cut text)."""
    enc = ChatEncoder(conversation, tagged=True, meta_delay=0, lean=lean, cuts=lean)
    out = enc.feed(M.event("stream_start"), 0.0)
    for i in range(sentences):
        text = f"Sentence {i} of the reply, long enough to make a chunk of its own here. "
        out += enc.feed(M.text(text, message_id="m1", delta=True), float(i))
        out += enc.poll(float(i) + 1.0)
    if end:
        out += enc.close(float(sentences) + 1.0)
    return out


def started(chats: list[ChatMessage]) -> list[str]:
    """The chat streams ``chats`` start, in order."""
    return [str(i.stream_id) for c in chats for i in c.content if isinstance(i, StartStreamContent)]


def plain_view(chat: ChatMessage) -> list[Any]:
    """What a plain chat agent (no agent_stream) reads of ``chat``: stream ends, the session's
    end ("end") and text, in order."""
    out: list[Any] = []
    for item in chat.content:
        if isinstance(item, EndStreamContent):
            out.append(("end-stream", str(item.stream_id)))
        elif isinstance(item, EndSessionContent):
            out.append("end")
        elif isinstance(item, TextContent):
            out.append(item.text)
    return out


class Replicas:
    """Fleet objects of one address on a real Redis, each collecting what it sends."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.address = f"agent1qtest{uuid.uuid4().hex}"
        self.raw = redis.Redis.from_url(url, decode_responses=True)
        self.sent: dict[str, list[tuple[str, ChatMessage]]] = {}
        self.fleets: list[Fleet] = []

    def start(self, replica: str) -> Fleet:
        f = Fleet(self.url, replica=replica)
        got = self.sent.setdefault(replica, [])

        async def send_to(peer: str, chat: ChatMessage) -> None:
            got.append((peer, chat))

        f.start(self.address, lambda _fwd: None, send_to)
        self.fleets.append(f)
        return f

    def key(self, *parts: str) -> str:
        return ":".join(("agent_stream:fleet", self.address, *parts))

    async def joined(self, *replicas: str) -> None:
        deadline = time.monotonic() + 5
        while not all(self.raw.sismember(self.key("replicas"), r) for r in replicas):
            assert time.monotonic() < deadline, "the replicas did not join"
            await asyncio.sleep(0.02)

    async def crash(self, f: Fleet) -> None:
        """What kill -9 leaves, 5 s later: no more writes, the liveness key expired."""
        tasks = list(f._tasks)
        for t in tasks:
            t.cancel()
        await asyncio.wait(tasks, timeout=2)
        self.raw.delete(self.key("replica", f.replica))

    def all_sent(self) -> list[tuple[str, str, ChatMessage]]:
        return [(r, peer, chat) for r, got in self.sent.items() for peer, chat in got]

    async def close(self) -> None:
        for f in self.fleets:
            await f.close()
        self.raw.close()


async def flushed(f: Fleet, r: Replicas, conversation: str, count: int) -> None:
    deadline = time.monotonic() + 5
    while r.raw.hlen(r.key("replay", ASKER, conversation)) < count:
        assert time.monotonic() < deadline, "the mirror was not written"
        await asyncio.sleep(0.02)


def test_a_dead_replicas_open_reply_is_ended_lost_once(redis_url: str) -> None:
    async def main() -> None:
        r = Replicas(redis_url)
        holder, b, c = r.start("holder"), r.start("survivor-b"), r.start("survivor-c")
        try:
            await r.joined("holder", "survivor-b", "survivor-c")
            open_reply, ended_reply = reply("conv-open", 4), reply("conv-ended", 2, end=True)
            for chat in open_reply:  # its question opened a session
                holder.mirror(ASKER, "conv-open", chat, session=True)
            for chat in ended_reply:  # ended, not yet acknowledged (so not mirror_ended)
                holder.mirror(ASKER, "conv-ended", chat)
            await flushed(holder, r, "conv-open", len(open_reply))
            await flushed(holder, r, "conv-ended", len(ended_reply))
            assert r.raw.scard(r.key("open", "holder")) == 2
            assert await b.sweep() == 0 and await c.sweep() == 0  # alive: nothing is ended
            counted = METRICS.value(LOST_METRIC)
            await r.crash(holder)
            ended = await asyncio.gather(b.sweep(), c.sweep())
            assert sorted(ended) == [0, 1]  # once in the fleet
            assert METRICS.value(LOST_METRIC) == counted + 1  # and counted once, as exported
            assert f"\n{LOST_METRIC} {counted + 1:g}\n" in prometheus_text()
            assert await b.sweep() == 0 and await c.sweep() == 0
            sent = r.all_sent()
            assert len(sent) == 1
            _, peer, end = sent[0]
            assert peer == ASKER
            last = seq_span(open_reply[-1])
            assert last is not None and seq_span(end) == (last[1] + 1, last[1] + 1)
            # a plain asker sees the end as the replica would have sent it: its chat stream
            # ended, then the session
            assert plain_view(end) == [*(("end-stream", s) for s in started(open_reply)), "end"]
            assert started(open_reply)
            # the asker decodes the reply's end: status lost, its open message too
            dec, answer = ChatDecoder(), Assembler()
            for chat in [*open_reply, end]:
                for msg in dec.feed("responder", chat, 0.0):
                    answer.feed(msg)
            assert dec.finished("responder", "conv-open")
            assert answer.transcript.status == "lost"
            assert [m.status for m in answer.transcript.messages] == ["lost"]
            assert dec.drain_warnings() == []
            # a resend is served the end from the mirror; the dead replica's set is emptied
            await asyncio.sleep(0.3)
            assert r.raw.hexists(r.key("replay", ASKER, "conv-open"), str(last[1] + 1))
            served = await c.mirrored(ASKER, "conv-open", 1)
            assert [seq_span(x) for x in served] == [seq_span(x) for x in [*open_reply, end]]
            assert r.raw.scard(r.key("open", "holder")) == 0
            await b.sweep()
            await asyncio.sleep(0.3)  # a replica with nothing left open is forgotten
            assert not r.raw.sismember(r.key("replicas"), "holder")
        finally:
            await r.close()

    asyncio.run(main())


def test_the_lost_end_ends_the_reply_when_the_mirror_lacks_what_the_asker_got(
    redis_url: str,
) -> None:
    """The dead replica's last ChatMessages reached the asker but not the mirror (written up to
    50 ms late): the end, numbered after the mirror, reuses a number the asker decoded, and
    still ends the reply at once, as lost."""

    async def main() -> None:
        r = Replicas(redis_url)
        holder, b = r.start("racer"), r.start("survivor")
        try:
            await r.joined("racer", "survivor")
            chats = reply("conv-race", 4)
            for chat in chats[:-2]:  # the last two never reached Redis
                holder.mirror(ASKER, "conv-race", chat)
            await flushed(holder, r, "conv-race", len(chats) - 2)
            await r.crash(holder)
            assert await b.sweep() == 1
            ((_, end),) = r.sent["survivor"]
            last = seq_span(chats[-3])
            assert last is not None and seq_span(end) == (last[1] + 1, last[1] + 1)
            assert seq_span(end) == seq_span(chats[-2])  # a number the asker has
            dec, answer = ChatDecoder(), Assembler()
            for chat in [*chats, end]:  # the asker got them all
                for msg in dec.feed("responder", chat, 0.0):
                    answer.feed(msg)
            assert dec.finished("responder", "conv-race")
            assert answer.transcript.status == "lost"
        finally:
            await r.close()

    asyncio.run(main())


def test_a_live_replicas_and_an_ended_replys_are_left_alone(redis_url: str) -> None:
    """A live replica's open replies are never ended, however many sweeps; a reply whose replica
    ended it normally (mirror_ended) is no longer open; a clean stop leaves nothing to end."""

    async def main() -> None:
        r = Replicas(redis_url)
        a, b = r.start("live-a"), r.start("live-b")
        try:
            await r.joined("live-a", "live-b")
            for chat in reply("conv-a", 3):
                a.mirror(ASKER, "conv-a", chat)
            for chat in reply("conv-done", 2, end=True):
                b.mirror(ASKER, "conv-done", chat)
            b.mirror_ended(ASKER, "conv-done")
            await flushed(a, r, "conv-a", 3)
            await asyncio.sleep(0.2)
            assert r.raw.scard(r.key("open", "live-b")) == 0
            for _ in range(5):
                assert await b.sweep() == 0
                await asyncio.sleep(0.05)
            await a.close()  # a clean stop: its replies were ended by it (cancelled)
            assert not r.raw.exists(r.key("open", "live-a"))
            assert await b.sweep() == 0
            assert r.all_sent() == []
        finally:
            await r.close()

    asyncio.run(main())


def test_each_sweep_does_a_bounded_amount_of_work(redis_url: str) -> None:
    async def main() -> None:
        r = Replicas(redis_url)
        b = r.start("sweeper")
        try:
            await r.joined("sweeper")
            r.raw.sadd(r.key("replicas"), "dead-one")
            chats = reply("c", 1)
            for i in range(50):
                conv = f"conv-{i}"
                r.raw.sadd(r.key("open", "dead-one"), open_entry(ASKER, conv))
                r.raw.hset(r.key("replay", ASKER, conv), "1", f"1:{chats[0].json()}")
            assert await b.sweep() <= 16
            while r.raw.scard(r.key("open", "dead-one")):
                assert await b.sweep() <= 16
                await asyncio.sleep(0.1)  # the removals are written in batches
            assert len(r.all_sent()) == 50
        finally:
            await r.close()

    asyncio.run(main())


def test_hostile_entries_are_dropped_not_sent(redis_url: str) -> None:
    """Garbage in the fleet's Redis (replica ids, open-reply entries, mirror entries) ends no
    reply and does not stop the sweep; a good entry after it is still ended."""

    async def main() -> None:
        r = Replicas(redis_url)
        b = r.start("sweeper")
        try:
            await r.joined("sweeper")
            for bad_id in ("", "x" * 100, "\xff\xfe"):
                r.raw.sadd(r.key("replicas"), bad_id)
            r.raw.sadd(r.key("replicas"), "dead")
            bad = [
                "not json",
                "[1, 2]",
                '["only one"]',
                '["a", "b", "c"]',
                json.dumps(["", "conv"]),
                json.dumps([ASKER, "c" * 200]),
                json.dumps([ASKER * 10, "conv"]),
                "[" * 600,
                json.dumps({"peer": ASKER}),
            ]
            r.raw.sadd(r.key("open", "dead"), *bad)
            # entries whose mirror is gone, damaged, or ends with the reply's final message
            r.raw.sadd(r.key("open", "dead"), open_entry(ASKER, "no-mirror"))
            r.raw.sadd(r.key("open", "dead"), open_entry(ASKER, "damaged"))
            r.raw.hset(r.key("replay", ASKER, "damaged"), mapping={"x": "y", "2": "oops"})
            done = reply("finished", 1, end=True)
            r.raw.sadd(r.key("open", "dead"), open_entry(ASKER, "finished"))
            for chat in done:
                span = seq_span(chat)
                assert span is not None
                r.raw.hset(
                    r.key("replay", ASKER, "finished"), str(span[0]), f"{span[1]}:{chat.json()}"
                )
            deadline = time.monotonic() + 10
            while r.raw.scard(r.key("open", "dead")):
                assert time.monotonic() < deadline, "the sweep stopped"
                await b.sweep()
                await asyncio.sleep(0.1)
            assert r.all_sent() == []
            assert b.refused >= len(bad)
            good = reply("good", 2)
            r.raw.sadd(r.key("open", "dead"), open_entry(ASKER, "good"))
            for chat in good:
                span = seq_span(chat)
                assert span is not None
                r.raw.hset(r.key("replay", ASKER, "good"), str(span[0]), f"{span[1]}:{chat.json()}")
            assert await b.sweep() == 1
        finally:
            await r.close()

    asyncio.run(main())


def test_a_sweep_with_redis_down_ends_nothing_within_the_timeout() -> None:
    async def main() -> None:
        sent: list[ChatMessage] = []

        async def send_to(_peer: str, chat: ChatMessage) -> None:
            sent.append(chat)

        f = Fleet(f"redis://127.0.0.1:{free_port()}/0", replica="alone", timeout=0.2)
        f.start("agent1qdown", lambda _f: None, send_to)
        try:
            started = time.monotonic()
            for _ in range(5):
                assert await f.sweep() == 0
            assert time.monotonic() - started < 1.5
            assert sent == [] and f.degraded >= 1
        finally:
            await f.close()

    asyncio.run(main())


@pytest.mark.parametrize(
    "raw",
    [None, 12, b"", b"\xff", "[]", '["a"]', '["a", 1]', '[null, "c"]', "x" * 1000, "{}"],
)
def test_parse_open_entry_refuses_what_is_not_an_entry(raw: Any) -> None:
    assert parse_open_entry(raw) is None


def test_the_lost_end_is_numbered_and_final() -> None:
    end = lost_end("conv", 7)
    assert seq_span(end) == (7, 7) and is_final(end)
    assert plain_view(end) == []  # no stream left open, no session: nothing else to end
    assert not any(is_final(c) for c in reply("conv", 2))
    assert parse_open_entry(open_entry(ASKER, "conv")) == (ASKER, "conv")
    with pytest.raises(ValueError):
        lost_end("conv", 0)


def test_the_lost_end_closes_what_the_replys_own_end_would_have() -> None:
    """Laid out as the encoder's own last ChatMessage of a reply cut off with streams open:
    the same items, in the same order, only the status differs; a session's end is last."""
    chats = reply("conv", 3)
    streams = open_streams(c.json() for c in chats)
    assert streams == started(chats)
    end = lost_end("conv", 9, streams=streams, session=True)
    enc = ChatEncoder("conv", tagged=True, meta_delay=0, session=True)
    for msg in [M.event("stream_start"), M.text("Cut off. ", message_id="m1", delta=True)]:
        enc.feed(msg, 0.0)
    enc.poll(1.0)
    (own,) = enc.close(2.0, status="lost", error="the replica answering it stopped")
    assert [type(i) for i in end.content] == [type(i) for i in own.content]
    assert plain_view(end) == [("end-stream", streams[0]), "end"]
    assert seq_span(end) == (9, 9)
    heads = [i.metadata for i in end.content if hasattr(i, "metadata")]
    assert [("seq" in md, "conversation" in md) for md in heads] == [(True, True), (False, False)]
    with pytest.raises(ValueError):
        lost_end("conv", 9, streams=["not a uuid"])


def test_a_lean_reply_with_cut_text_leaves_open_the_streams_it_started() -> None:
    # several sentences gathered, their chunks one TextContent cut by the group's cuts: the
    # mirror still names the stream it started, and the lost end closes it
    chats = reply("lean", 12, lean=True)
    assert any("cuts" in c.json() for c in chats)
    streams = open_streams(c.json() for c in chats)
    assert streams == started(chats) and len(streams) == 1
    assert open_streams(c.json() for c in reply("lean", 12, end=True, lean=True)) == []
    end = lost_end("lean", len(chats) + 1, streams=streams)
    assert plain_view(end) == [("end-stream", streams[0])]


def test_open_streams_are_started_and_not_ended_whatever_the_mirror_holds() -> None:
    done = reply("done", 2, end=True)
    assert started(done) and open_streams(c.json() for c in done) == []
    cut = reply("cut", 2)
    # the window kept only a later chunk of the stream (its start was trimmed): still open
    assert open_streams([cut[-1].json()]) == started(cut)
    hostile = [
        "",
        "not json",
        "[]",
        '{"content": 5}',
        '{"content": [1, null, {"type": "start-stream", "stream_id": "nope"}]}',
        json.dumps({"content": [{"type": "start-stream", "stream_id": "x" * 10_000}]}),
        json.dumps({"content": [{"type": "metadata", "metadata": "x"}]}),
        "[" * 5000,
    ]
    assert open_streams(hostile) == []
    many = [
        json.dumps({"content": [{"type": "start-stream", "stream_id": str(uuid.uuid4())}]})
        for _ in range(500)
    ]
    assert len(open_streams(many)) == 64


# -- end to end: kill -9 mid-reply ---------------------------------------------------------------
QUESTION = "How do agents stream?"  # the replay model's longest answer: ~10 s at 60 tokens/s


class Served:
    """Three `serve --fleet` replicas of one address behind haproxy, and their Redis."""

    def __init__(self, h: Harness, redis_url: str) -> None:
        self.h = h
        seed = f"fleet lost seed {uuid.uuid4()}"
        self.address = address_of(seed)
        self.redis = redis.Redis.from_url(redis_url, decode_responses=True)
        ports = [free_port() for _ in range(3)]
        self.lb = Haproxy(h.workdir, ports)
        self.replicas = [
            h.cli(
                "serve",
                "--port",
                str(p),
                "--seed",
                seed,
                "--rate",
                "60",
                "--fleet",
                redis_url,
                "--endpoint",
                self.lb.endpoint,
            )
            for p in ports
        ]
        try:
            self.ids = [p.wait_for("replica:").split(":", 1)[1].strip() for p in self.replicas]
            deadline = time.monotonic() + STARTUP_WITHIN
            while True:
                closed = [p for p in ports if port_open_failed(p)]
                absent = [i for i in self.ids if not self.redis.exists(self.key("replica", i))]
                if not closed and not absent:
                    break
                assert time.monotonic() < deadline, (
                    f"the replicas did not come up: ports not listening {closed}, "
                    f"replicas not in the fleet {absent}"
                )
                time.sleep(0.05)
        except BaseException:
            self.stop()  # what it started, haproxy included, stops with the failure
            raise

    def key(self, *parts: str) -> str:
        return ":".join(("agent_stream:fleet", self.address, *parts))

    def claim(self, asker: str, timeout: float = 15) -> tuple[str, int]:
        """(question msg_id, replica index) of ``asker``'s question, once claimed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for k in self.redis.scan_iter(match=self.key("q", asker, "*"), count=1000):
                return k.rsplit(":", 1)[1], self.ids.index(str(self.redis.get(k)))
            time.sleep(0.05)
        raise AssertionError(f"no replica took the question of {asker}")

    def ask(self, seed: str) -> Any:
        return self.h.cli(
            "ask",
            self.address,
            "--endpoint",
            self.lb.endpoint,
            "--seed",
            seed,
            "--json",
            "--idle-timeout",
            "30",
            "--timeout",
            "60",
            QUESTION,
        )

    def stop(self) -> None:
        self.lb.stop()
        for p in self.replicas:
            p.stop()
        self.redis.close()


@pytest.fixture(scope="module")
def served(harness: Harness, redis_url: str) -> Iterator[Served]:
    need_haproxy()
    s = Served(harness, redis_url)
    try:
        yield s
    finally:
        s.stop()


def test_a_killed_replicas_reply_ends_lost_long_before_the_idle_timeout(served: Served) -> None:
    seed = f"fleet lost asker {uuid.uuid4()}"
    asker = address_of(seed)
    doomed_ask = served.ask(seed)
    conversation, doomed = served.claim(asker)
    served.lb.state(doomed, "maint")  # the other questions land on the live replicas
    others = []
    for _ in range(2):
        other = f"fleet lost other {uuid.uuid4()}"
        others.append((served.ask(other), address_of(other)))
    for _, other in others:
        assert served.claim(other)[1] != doomed
    deadline = time.monotonic() + 10
    while served.redis.hlen(served.key("replay", asker, conversation)) < 3:
        assert time.monotonic() < deadline, "the doomed reply did not start"
        time.sleep(0.05)
    served.replicas[doomed].proc.kill()  # mid-reply
    served.replicas[doomed].proc.wait(5)
    killed = time.monotonic()

    code, out, err = doomed_ask.finish(60)
    took = time.monotonic() - killed
    assert code == 1, err
    assert json.loads(out)["status"] == "lost", out
    # the liveness key expires within 5 s, a live replica sweeps every second
    assert took < 15, f"lost only after {took:.1f} s (the asker's idle timeout is 30 s)"
    ender = served.redis.get(served.key("lost", asker, conversation))
    assert ender in served.ids and served.ids.index(str(ender)) != doomed
    for p, other in others:  # the live replicas' replies were not ended
        code, out, err = p.finish(60)
        assert code == 0, err
        assert json.loads(out)["status"] == "completed"
        assert not served.redis.keys(served.key("lost", other, "*"))
