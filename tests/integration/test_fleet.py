"""One agent address served by three `serve --fleet` replicas behind a real haproxy on 127.0.0.1.

The replicas share a throwaway seed and a real redis-server; the asker (`agent-stream ask`) knows
only haproxy's endpoint. haproxy's admin socket puts a replica in maintenance to choose where the
asker's next envelopes land (it keeps serving what it holds: replies go straight to the asker).
What is checked: a conversation's second turn, taken by another replica, sees the first; a cancel
landing on a replica that does not hold the reply cancels it; a kill -9 mid-reply ends only that
replica's reply `lost` (the others complete) and the conversation's next turn is answered with its
history by a surviving replica. Plus the bad inputs of the fleet's pub/sub channel.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from collections.abc import Iterator

import pytest
import redis
from agents_harness import (
    STARTUP_WITHIN,
    AgentProcess,
    Harness,
    address_of,
    port_open_failed,
    scrape,
    stop_together,
)
from haproxy import Haproxy, need_haproxy

from agent_stream.uagents.fleet._fleet import MAX_MESSAGE_BYTES, Fleet, Forwarded, parse_forwarded
from agent_stream.uagents.local._agents import free_port
from agent_stream.uagents.local._directory import LocalDirectory

pytestmark = pytest.mark.integration

Q1, Q2, Q3 = "How do agents stream?", "What about retries?", "One more thing"
REPLICAS = 3
# Tokens per second of the replicas' replay model: a reply (Q1's is ~640 tokens and three tool
# calls) lasts ~6.5 s, longer than an `ask` takes to start, so a kill or a cancel that follows
# another asker's start still lands mid-reply.
RATE = "120"


class Fleet3:
    """Three replicas, haproxy, the Redis they share."""

    def __init__(self, h: Harness, redis_url: str) -> None:
        self.h = h
        self.seed = f"fleet test seed {uuid.uuid4()} {time.time_ns()}"
        self.address = address_of(self.seed)
        self.redis = redis.Redis.from_url(redis_url, decode_responses=True)
        ports = [free_port() for _ in range(REPLICAS)]
        self.lb = Haproxy(h.workdir, ports)
        self.replicas: list[AgentProcess] = []
        self.ids: list[str] = []
        self.metrics = [free_port() for _ in range(REPLICAS)]
        try:
            for p, m in zip(ports, self.metrics, strict=True):
                proc = h.cli(
                    "serve",
                    "--port",
                    str(p),
                    "--seed",
                    self.seed,
                    "--rate",
                    RATE,
                    "--fleet",
                    redis_url,
                    "--endpoint",
                    self.lb.endpoint,
                    "--metrics-port",
                    str(m),
                )
                self.replicas.append(proc)
            for proc, p in zip(self.replicas, ports, strict=True):
                assert proc.wait_for("address:").split(":", 1)[1].strip() == self.address
                self.ids.append(proc.wait_for("replica:").split(":", 1)[1].strip())
                deadline = time.monotonic() + STARTUP_WITHIN
                while port_open_failed(p):
                    assert time.monotonic() < deadline, proc.stderr
                    time.sleep(0.05)
            assert len(set(self.ids)) == REPLICAS
            deadline = (
                time.monotonic() + STARTUP_WITHIN
            )  # every replica has joined (heartbeat written)
            while not all(self.redis.exists(self._key("replica", i)) for i in self.ids):
                assert time.monotonic() < deadline, "replicas did not join the fleet"
                time.sleep(0.05)
        except BaseException:
            self.stop()  # what it started, haproxy included, stops with the failure
            raise

    def _key(self, *parts: str) -> str:
        return ":".join(("agent_stream:fleet", self.address, *parts))

    def claims(self, asker: str) -> dict[str, str]:
        """{question msg_id: the replica that took it} for ``asker``'s questions."""
        prefix = self._key("q", asker, "")
        return {
            k[len(prefix) :]: str(self.redis.get(k))
            for k in self.redis.scan_iter(match=prefix + "*", count=1000)
        }

    def wait_new_claim(self, asker: str, known: dict[str, str], timeout: float = 15) -> str:
        """The replica index that took ``asker``'s next question."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            new = {k: v for k, v in self.claims(asker).items() if k not in known}
            if new:
                assert len(new) == 1, new
                return str(self.ids.index(next(iter(new.values()))))
            time.sleep(0.05)
        raise AssertionError(f"no replica took the question of {asker}")

    def metric(self, index: int, name: str, **labels: str) -> float:
        """Replica ``index``'s ``name`` for the responder side with ``labels`` (its /metrics)."""
        return scrape(self.metrics[index], name, side="responder", **labels)

    def new_claim(self, asker: str, known: dict[str, str]) -> tuple[str, int]:
        """(question msg_id, replica index) of ``asker``'s next question (waiting for it)."""
        index = int(self.wait_new_claim(asker, known))
        (conversation,) = self.claims(asker).keys() - known.keys()
        return conversation, index

    def sent(self, asker: str, conversation: str) -> int:
        """How many ChatMessages of the reply to ``conversation`` went out (its mirror)."""
        return int(self.redis.hlen(self._key("replay", asker, conversation)))

    def replies(self, index: int, status: str) -> float:
        """How many replies replica ``index`` ended with ``status``."""
        return self.metric(index, "agent_stream_replies_total", status=status)

    def ask(self, seed: str, session: str, question: str, *extra: str) -> AgentProcess:
        return self.h.cli(
            "ask",
            self.address,
            "--endpoint",
            self.lb.endpoint,
            "--seed",
            seed,
            "--session",
            session,
            "--json",
            "--idle-timeout",
            "4",
            "--timeout",
            "60",
            question,
            *extra,
        )

    def stop(self) -> None:
        self.lb.stop()
        stop_together(self.replicas)


@pytest.fixture(scope="module")
def fleet(harness: Harness, redis_url: str) -> Iterator[Fleet3]:
    need_haproxy()
    f = Fleet3(harness, redis_url)
    try:
        yield f
    finally:
        f.stop()


def answer_of(out: str) -> tuple[str, str]:
    data = json.loads(out)
    return data.get("status", ""), json.dumps(data, ensure_ascii=False)


def test_next_turn_on_another_replica_sees_the_first(fleet: Fleet3) -> None:
    seed, session = f"fleet asker {uuid.uuid4()}", str(uuid.uuid4())
    asker = address_of(seed)
    # the replicas list the balancer's endpoint, not their own, and none warns of another
    assert fleet.h.directory_entries()[fleet.address]["endpoint"] == fleet.lb.endpoint
    assert not any("already running" in r.stderr for r in fleet.replicas)
    code, out, err = fleet.ask(seed, session, Q1).finish(60)
    assert code == 0, err
    first = fleet.wait_new_claim(asker, {})
    known = fleet.claims(asker)
    fleet.lb.state(int(first), "maint")  # the next turn cannot land there
    try:
        code, out, err = fleet.ask(seed, session, Q2).finish(60)
    finally:
        fleet.lb.state(int(first), "ready")
    assert code == 0, err
    second = fleet.wait_new_claim(asker, known)
    assert second != first
    status, text = answer_of(out)
    assert status == "completed"
    assert f"Earlier in this conversation you asked: “{Q1}”." in text


def test_cancel_landing_on_another_replica_cancels_the_reply(fleet: Fleet3) -> None:
    seed, session = f"fleet asker {uuid.uuid4()}", str(uuid.uuid4())
    asker = address_of(seed)
    p = fleet.ask(seed, session, Q1)
    holder = int(fleet.wait_new_claim(asker, {}))
    before = fleet.replies(holder, "cancelled")
    resent = fleet.metric(holder, "agent_stream_resends_total")
    fleet.lb.state(holder, "maint")  # its acks and the cancel land on the other replicas
    try:
        time.sleep(2.0)  # seconds of reply, acknowledged through the others
        p.proc.terminate()  # ask's SIGTERM: it sends the cancel op and waits for the end
        code, _out, err = p.finish(20)
    finally:
        fleet.lb.state(holder, "ready")
    assert code == 130, err
    assert "interrupted (status cancelled)" in err, err
    # The holder itself ended the reply as cancelled (not abandoned when the asker left).
    deadline = time.monotonic() + 10
    while fleet.replies(holder, "cancelled") <= before:
        assert time.monotonic() < deadline, "the holder did not cancel the reply"
        time.sleep(0.1)
    # Its ChatMessages' acknowledgements reached it through the others: hardly anything was
    # resent (without forwarding, ~20 are; the asker may leave before acknowledging the end).
    assert fleet.metric(holder, "agent_stream_resends_total") <= resent + 2


def test_kill_mid_reply_loses_only_that_replicas_reply(fleet: Fleet3) -> None:
    seed, session = f"fleet asker {uuid.uuid4()}", str(uuid.uuid4())
    asker = address_of(seed)
    code, _out, err = fleet.ask(seed, session, Q1).finish(60)
    assert code == 0, err
    known = fleet.claims(asker)
    doomed = int(fleet.wait_new_claim(asker, {}))  # the replica to be killed
    live = [i for i in range(REPLICAS) if i != doomed]
    # Two other askers' replies go to the other replicas...
    fleet.lb.state(doomed, "maint")
    others = []
    for _ in range(2):
        other_seed = f"fleet other {uuid.uuid4()}"
        others.append((fleet.ask(other_seed, str(uuid.uuid4()), Q1), address_of(other_seed)))
    holders = {int(fleet.wait_new_claim(a, {})) for _, a in others}
    assert doomed not in holders
    # ...and, while they stream, the conversation's turn 2 goes to the doomed one.
    fleet.lb.state(doomed, "ready")
    fleet.lb.wait_up(doomed)
    for i in live:
        fleet.lb.state(i, "maint")
    try:
        doomed_ask = fleet.ask(seed, session, Q2)
        conversation, holder = fleet.new_claim(asker, known)
    finally:
        for i in live:
            fleet.lb.state(i, "ready")  # the doomed one stays in: the balancer finds it dead
    assert holder == doomed
    deadline = time.monotonic() + 15  # killed once its reply has begun reaching the asker
    while fleet.sent(asker, conversation) < 1:
        assert time.monotonic() < deadline, "the doomed replica sent nothing"
        time.sleep(0.02)
    assert all(p.proc.poll() is None for p, _ in others), "the other replies ended before the kill"
    fleet.replicas[doomed].proc.kill()
    fleet.replicas[doomed].proc.wait(5)

    code, out, err = doomed_ask.finish(60)
    assert code == 1, err
    assert answer_of(out)[0] == "lost", out
    for p, _ in others:
        code, out, err = p.finish(60)
        assert code == 0, err
        assert answer_of(out)[0] == "completed"

    # the address stays listed (at the balancer) by a live replica, whichever wrote it first
    book = LocalDirectory(fleet.h.directory)
    deadline = time.monotonic() + 10
    while (entry := book.entry(fleet.address)) is None:
        assert time.monotonic() < deadline, "no live replica lists the address"
        time.sleep(0.1)
    assert entry["endpoint"] == fleet.lb.endpoint
    assert entry["pid"] != fleet.replicas[doomed].proc.pid

    known = fleet.claims(asker)
    code, out, err = fleet.ask(seed, session, Q3).finish(60)
    assert code == 0, err
    third = int(fleet.wait_new_claim(asker, known))
    assert third != doomed
    status, text = answer_of(out)
    assert status == "completed"
    # turn 2 was lost, so the history is turn 1
    assert f"Earlier in this conversation you asked: “{Q1}”." in text


def test_the_address_stays_listed_when_the_replica_that_listed_it_stops(fleet: Fleet3) -> None:
    """Runs after the kill: of two live replicas, the one whose entry is in the directory stops
    (its entry goes with it); the other lists the address again, at the balancer."""
    book = LocalDirectory(fleet.h.directory)
    live = [i for i, p in enumerate(fleet.replicas) if p.proc.poll() is None]
    assert len(live) >= 2
    entry = book.entry(fleet.address)
    assert entry is not None
    writer = next(i for i in live if fleet.replicas[i].proc.pid == entry["pid"])
    fleet.replicas[writer].stop()
    deadline = time.monotonic() + 10
    while (entry := book.entry(fleet.address)) is None or entry["pid"] in (
        fleet.replicas[writer].proc.pid,
    ):
        assert time.monotonic() < deadline, "no live replica lists the address again"
        time.sleep(0.1)
    assert entry["endpoint"] == fleet.lb.endpoint
    assert fleet.replicas[live[0] if writer != live[0] else live[1]].proc.poll() is None


# -- the pub/sub channel's bad inputs --------------------------------------------------------------
ME = "replica-a"


def _msg(**fields: object) -> bytes:
    base: dict[str, object] = {"from": "replica-b", "to": "*", "kind": "ack", "sender": "agent1q"}
    base.update(fields)
    return json.dumps(base).encode()


def test_parse_forwarded_accepts_acks_and_ops() -> None:
    assert parse_forwarded(_msg(key="k1"), ME) == Forwarded("ack", "agent1q", key="k1")
    op = {"op": "cancel", "conversation": "c1"}
    got = parse_forwarded(_msg(kind="op", to=ME, op=op), ME)
    assert got is not None and got.kind == "op" and dict(got.op) == op


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b"{" * 5000,
        _msg(key="k", **{"from": ME}),  # its own
        _msg(key="k", to="replica-c"),  # another replica's
        _msg(key="k", to="unknown-replica-id-" + "x" * 100),
        _msg(key=""),
        _msg(key=7),
        _msg(key="k" * 65),
        _msg(key="k", sender=""),
        _msg(key="k", sender="s" * 300),
        _msg(key="k", kind="shutdown"),
        _msg(kind="op", op={"op": "rm -rf", "conversation": "c"}),
        _msg(kind="op", op={"op": "cancel"}),
        _msg(kind="op", op={"op": "cancel", "conversation": "c", "x": "y" * 200}),
        _msg(kind="op", op={"op": "cancel", "conversation": "c", "n": 1}),
        _msg(kind="op", op={f"k{i}": "v" for i in range(20)}),
        _msg(kind="op", op=["cancel"]),
        _msg(kind="op", op={"op": "resend", "conversation": "c", "from": "0" * MAX_MESSAGE_BYTES}),
        b"ack" * 2000,
        None,
        12,
    ],
)
def test_parse_forwarded_refuses_bad_messages(data: object) -> None:
    assert parse_forwarded(data, ME) is None


def test_hostile_channel_traffic_does_not_stop_forwarding(redis_url: str) -> None:
    """Garbage, huge and misaddressed messages on the channel are refused; a good one after
    them still arrives; a huge op is not forwarded."""

    async def main() -> None:
        got: list[Forwarded] = []
        a = Fleet(redis_url, replica="ra")
        b = Fleet(redis_url, replica="rb")
        address = f"agent1qtest{uuid.uuid4().hex}"
        a.start(address, got.append)
        b.start(address, lambda f: None)
        try:
            await asyncio.wait_for(a.subscribed.wait(), 5)
            raw = redis.asyncio.Redis.from_url(redis_url)
            channel = f"agent_stream:fleet:{address}:channel"
            for data in (b"\xff\xfe", b"x" * 100_000, b'{"kind": "ack"}', b"[]" * 10):
                await raw.publish(channel, data)
            await raw.aclose()
            sent = await b.route(
                "agent1qasker", {"op": "cancel", "conversation": "c" * 10_000}, _no_send
            )
            assert sent == "ignored"
            b.forward_ack("agent1qasker", "msg-1")
            deadline = time.monotonic() + 5
            while not got and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert got == [Forwarded("ack", "agent1qasker", key="msg-1")]
            assert a.refused >= 4
        finally:
            await a.close()
            await b.close()

    asyncio.run(main())


def test_redis_down_degrades_to_acting_alone() -> None:
    """With no Redis answering, a claim is taken locally (the question is answered) and a
    resend finds nothing, each within the timeout."""

    async def main() -> None:
        f = Fleet(f"redis://127.0.0.1:{free_port()}/0", replica="alone", timeout=0.2)
        f.start("agent1qdown", lambda _f: None)
        try:
            started = time.monotonic()
            assert await f.claim("agent1qasker", "m1") is True
            op = {"op": "resend", "conversation": "c", "from": "0"}
            assert await f.route("agent1qasker", op, _no_send) == "ignored"
            assert time.monotonic() - started < 2.0
            assert f.degraded >= 1
        finally:
            await f.close()

    asyncio.run(main())


def test_a_hanging_redis_costs_one_timeout_not_one_per_question() -> None:
    """A Redis that accepts connections and never answers: the first claim waits the timeout,
    the next ones (within the quiet time after a failure) are taken locally at once."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # accepted by the kernel, never answered

    async def main() -> None:
        port = listener.getsockname()[1]
        f = Fleet(f"redis://127.0.0.1:{port}/0", replica="stuck", timeout=0.3)
        f.start("agent1qstuck", lambda _f: None)
        try:
            started = time.monotonic()
            assert await f.claim("agent1qasker", "m0") is True
            assert 0.25 < time.monotonic() - started < 1.5
            started = time.monotonic()
            for i in range(20):
                assert await f.claim("agent1qasker", f"m{i + 1}") is True
            assert time.monotonic() - started < 0.2
        finally:
            await asyncio.wait_for(f.close(), 5)

    try:
        asyncio.run(main())
    finally:
        listener.close()


async def _no_send(_chat: object) -> None:
    raise AssertionError("nothing should be sent")


def test_resend_for_a_gone_replica_is_served_from_its_mirror(redis_url: str) -> None:
    """While the holder lives, an op for its reply is forwarded to it; once it is gone, a
    resend is served from the reply's mirror in Redis by another replica, in order."""
    from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent, TextContent

    def chat(seq: int) -> ChatMessage:
        return ChatMessage(
            content=[
                MetadataContent(metadata={"agent_stream": "1", "seq": str(seq)}),
                TextContent(text=f"part {seq}"),
            ]
        )

    async def main() -> None:
        address, asker = f"agent1qtest{uuid.uuid4().hex}", "agent1qasker"
        ops: list[Forwarded] = []
        a = Fleet(redis_url, replica="holder")
        b = Fleet(redis_url, replica="other")
        a.start(address, ops.append)
        b.start(address, lambda f: None)
        try:
            await asyncio.wait_for(a.subscribed.wait(), 5)
            assert await a.claim(asker, "conv1") is True
            assert await b.claim(asker, "conv1") is False  # taken: not answered twice
            for seq in range(3):
                a.mirror(asker, "conv1", chat(seq))
                a.mirror(asker, "conv1", chat(seq))  # sent again: written once
            await asyncio.sleep(0.5)
            assert await b.alive("holder") and not await b.alive("nobody")
            cancel = {"op": "cancel", "conversation": "conv1"}
            assert await b.route(asker, cancel, _no_send) == "forwarded"
            deadline = time.monotonic() + 5
            while not ops and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert ops == [Forwarded("op", asker, op=cancel)]
        finally:
            await a.close()  # the holder is gone (its liveness key with it)
        sent: list[ChatMessage] = []

        async def collect(c: ChatMessage) -> None:
            sent.append(c)

        try:
            resend = {"op": "resend", "conversation": "conv1", "from": "1"}
            assert await b.route(asker, resend, collect) == "replayed"
            assert [c.text() for c in sent] == ["part 1", "part 2"]
            assert await b.route(asker, cancel, _no_send) == "ignored"
        finally:
            await b.close()

    asyncio.run(main())


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--fleet", "http://127.0.0.1:6379"), "--fleet http://127.0.0.1:6379: expected redis://"),
        (("--fleet", ""), "expected redis://HOST:PORT/DB"),
        (("--endpoint", "ftp://lb/submit"), "--endpoint ftp://lb/submit: expected an http(s)"),
        (("--endpoint", "127.0.0.1:8000"), "expected an http(s) URL"),
    ],
)
def test_bad_fleet_options_are_refused(harness: Harness, args: tuple[str, ...], says: str) -> None:
    p = harness.cli("serve", "--port", str(free_port()), "--no-directory", *args)
    code, _out, err = p.finish(30)
    assert code == 2
    assert says in err


def test_a_replica_whose_redis_is_down_still_answers(harness: Harness) -> None:
    """Redis refusing connections: the replica answers alone, within its bounded timeouts."""
    dead = f"redis://127.0.0.1:{free_port()}/0"
    p, address, endpoint = harness.serve("--rate", "0", "--fleet", dead, "--sessions", "memory")
    try:
        started = time.monotonic()
        code, out, err = harness.cli(
            "ask", address, "--endpoint", endpoint, "--json", "--timeout", "30", Q1
        ).finish(60)
        assert code == 0, err + p.stderr
        assert json.loads(out)["status"] == "completed"
        assert time.monotonic() - started < 20
    finally:
        p.stop()
    assert "acting alone" in p.stderr
