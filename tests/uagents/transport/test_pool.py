"""An agent's kept-alive connections (agent_stream.uagents.transport._pool) and pipelined lanes
(agent_stream.uagents.transport._lanes) against a real HTTP/1.1 server on 127.0.0.1 that records which
connection each envelope came on, and against real agents over HTTP."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
from aiohttp import web
from inprocess_agents import Pair
from submit_server import submit_server
from uagents import Context, Protocol
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    TextContent,
    chat_protocol_spec,
)
from uagents_core.envelope import Envelope
from uagents_core.models import Model
from uagents_core.types import DeliveryStatus

from agent_stream.uagents import ChatRequest, StreamingChat, _compat
from agent_stream.uagents.local._agents import endpoint_for
from agent_stream.uagents.transport._lanes import (
    CHAT_DIGESTS,
    PROBE_POSTS,
    LaneLimits,
    PeerDispenser,
    independent,
)
from agent_stream.uagents.transport._pool import BATCH_HEADER, MAX_BATCH, EnvelopePoster
from agent_stream.writer import StreamWriter

CHAT = min(CHAT_DIGESTS)
A = "agent1" + "a" * 59


class Recorder:
    """An HTTP/1.1 server (keep-alive) answering 200 after ``delay`` seconds, recording each
    envelope's payload and the client port (one per connection) it came on."""

    def __init__(self, delay: float = 0.0, status: int = 200) -> None:
        self.delay = delay
        self.status = status
        self.got: list[str] = []
        self.ports: set[int] = set()
        self.in_flight = 0
        self.most_in_flight = 0

    async def handle(self, request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer is not None:
            self.ports.add(peer[1])
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            env = Envelope.model_validate_json(await request.read())
            if self.delay:
                await asyncio.sleep(self.delay)
            self.got.append(env.decode_payload())
        finally:
            self.in_flight -= 1
        return web.json_response(
            {} if self.status == 200 else {"detail": "nope"}, status=self.status
        )


@pytest_asyncio.fixture
async def served() -> AsyncIterator[tuple[Recorder, str, Any]]:
    rec = Recorder()
    app = web.Application()
    app.router.add_post("/submit", rec.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield rec, f"http://127.0.0.1:{port}/submit", runner
    finally:
        await runner.cleanup()


def envelope(payload: str, target: str = A) -> Envelope:
    env = Envelope(
        version=1,
        sender="agent1" + "s" * 59,
        target=target,
        session=uuid.uuid4(),
        schema_digest=CHAT,
    )
    env.encode_payload(payload)
    return env


def post(d: PeerDispenser, url: str, payload: str) -> asyncio.Future[Any]:
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    d.add_envelope(envelope(payload), [url], fut)
    return fut


async def test_one_connection_carries_a_peers_envelopes(served: tuple[Recorder, str, Any]) -> None:
    rec, url, _ = served
    d = PeerDispenser()
    try:
        for i in range(20):  # one after another, as a reply's pump sends
            assert (await post(d, url, f"m{i}")).status == DeliveryStatus.DELIVERED
        assert rec.got == [f"m{i}" for i in range(20)]
        assert len(rec.ports) == 1 and d.poster.connections_opened == 1
    finally:
        await d.drain(1)


async def test_without_keep_alive_each_envelope_opens_a_connection(
    served: tuple[Recorder, str, Any],
) -> None:
    rec, url, _ = served
    d = PeerDispenser(LaneLimits(keep_alive=False))
    try:
        for i in range(5):
            assert (await post(d, url, f"m{i}")).status == DeliveryStatus.DELIVERED
        assert len(rec.ports) == 5  # uagents' way: a new session per envelope
    finally:
        await d.drain(1)


async def test_a_kept_connection_the_server_closed_is_replaced(
    served: tuple[Recorder, str, Any],
) -> None:
    rec, url, runner = served
    poster = EnvelopePoster(keepalive=30.0)
    try:
        assert (await poster.post(envelope("one"), [url])).status == DeliveryStatus.DELIVERED
        for conn in list(runner.server.connections):  # the server closes its idle connection
            conn.force_close()
        await asyncio.sleep(0.05)
        assert (await poster.post(envelope("two"), [url])).status == DeliveryStatus.DELIVERED
        assert rec.got == ["one", "two"] and len(rec.ports) == 2
    finally:
        await poster.close()


async def test_a_refusal_and_a_dead_endpoint_fail_with_their_reason(
    served: tuple[Recorder, str, Any],
) -> None:
    rec, url, _ = served
    rec.status = 429
    poster = EnvelopePoster()
    try:
        result = await poster.post(envelope("x"), [url])
        assert result.status == DeliveryStatus.FAILED and "429: nope" in result.detail
        dead = await poster.post(envelope("y"), ["http://127.0.0.1:9/submit"])
        assert dead.status == DeliveryStatus.FAILED and "Failed to connect" in dead.detail
        rec.status = 200  # the first endpoint dead, the second takes it
        both = await poster.post(envelope("z"), ["http://127.0.0.1:9/submit", url])
        assert both.status == DeliveryStatus.DELIVERED and rec.got[-1] == "z"
    finally:
        await poster.close()


async def test_a_pipelined_peer_gets_a_window_of_envelopes_at_once_a_plain_one_one(
    served: tuple[Recorder, str, Any],
) -> None:
    rec, url, _ = served
    rec.delay = 0.2
    d = PeerDispenser(LaneLimits(window=4))
    try:
        started = time.monotonic()
        results = await asyncio.gather(*(post(d, url, f"plain{i}") for i in range(4)))
        plain = time.monotonic() - started
        assert all(r.status == DeliveryStatus.DELIVERED for r in results)
        assert rec.got == [f"plain{i}" for i in range(4)] and rec.most_in_flight == 1
        assert plain >= 0.75
        d.pipeline(A)
        started = time.monotonic()
        results = await asyncio.gather(*(post(d, url, f"tagged{i}") for i in range(8)))
        tagged = time.monotonic() - started
        assert all(r.status == DeliveryStatus.DELIVERED for r in results)
        assert sorted(rec.got[4:]) == sorted(f"tagged{i}" for i in range(8))
        assert rec.most_in_flight == 4  # the window, never more
        assert tagged < 0.75  # two round trips of four, not eight of one
        assert d.lanes == 0
    finally:
        await d.drain(1)


async def test_a_streaming_agent_pipelines_to_a_tagged_asker_only(pair: Pair) -> None:
    """The plugin marks a peer whose question is tagged (an agent_stream asker) for pipelining;
    a plain chat agent's question leaves its lane one at a time."""

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        await out.text("hi")

    server = pair.add("pipelining server", StreamingChat(respond))
    dispenser = _compat.dispenser_of(server)
    assert isinstance(dispenser, PeerDispenser)
    chat = StreamingChat()
    client = pair.add("pipelining asker", chat)
    reply = await chat.ask(client._build_context(), server.address, "hello", timeout=5)
    await asyncio.wait_for(reply.wait(), 6)
    assert reply.completed
    assert dispenser.pipelined(client.address)  # a StreamingChat asker: tagged
    client_lanes = _compat.dispenser_of(client)
    assert isinstance(client_lanes, PeerDispenser)
    assert client_lanes.pipelined(server.address)  # its replies were tagged: acks pipelined
    plain = pair.add("plain asker of the pipelining test", plain_chat())
    await _compat.build_context(plain).send(
        server.address, ChatMessage(content=[TextContent(text="hello")])
    )
    await asyncio.sleep(0.3)
    assert not dispenser.pipelined(plain.address)


def plain_chat() -> Protocol:
    proto = Protocol(spec=chat_protocol_spec)

    @proto.on_message(ChatMessage)
    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        return None

    @proto.on_message(ChatAcknowledgement)
    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        return None

    return proto


async def test_real_agents_over_http_share_one_kept_connection(pair: Pair) -> None:
    """Two protected agents on 127.0.0.1: the asker's envelopes reach the server's uvicorn
    over one kept connection."""
    server = pair.add("keepalive server", StreamingChat())
    task = asyncio.create_task(server.start_server())
    pair.tasks.add(task)
    assert await server.listening() and server.local_port is not None
    sender = pair.add("keepalive sender")
    d = sender._dispenser
    assert isinstance(d, PeerDispenser)
    url = endpoint_for(server.local_port)
    for _ in range(10):
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        env = envelope(f'{{"acknowledged_msg_id": "{uuid.uuid4()}"}}', target=server.address)
        env.sender = sender.address
        env.schema_digest = Model.build_schema_digest(ChatAcknowledgement)
        env.sign(_compat.identity_of(sender))
        d.add_envelope(env, [url], fut)
        assert (await fut).status == DeliveryStatus.DELIVERED
    assert d.poster.connections_opened == 1


async def test_a_pipelined_peer_may_have_more_envelopes_waiting(
    served: tuple[Recorder, str, Any],
) -> None:
    _, url, _ = served
    d = PeerDispenser(LaneLimits(max_queued=2, max_queued_pipelined=6))
    try:
        plain = await asyncio.gather(*(post(d, url, f"p{i}") for i in range(8)))
        assert sum(r.status == DeliveryStatus.DELIVERED for r in plain) == 2
        d.pipeline(A)
        piped = await asyncio.gather(*(post(d, url, f"t{i}") for i in range(8)))
        assert sum(r.status == DeliveryStatus.DELIVERED for r in piped) == 6
        assert all("too many envelopes queued" in r.detail for r in piped[6:])
    finally:
        await d.drain(1)


async def test_a_delivery_is_reported_with_its_endpoint(served: tuple[Recorder, str, Any]) -> None:
    rec, url, _ = served
    d = PeerDispenser()
    seen: list[tuple[str, str]] = []
    d.on_delivered.append(lambda target, endpoint: seen.append((target, endpoint)))
    try:
        assert (await post(d, url, "ok")).status == DeliveryStatus.DELIVERED
        rec.status = 500
        assert (await post(d, url, "refused")).status == DeliveryStatus.FAILED
        assert seen == [(A, url)]
    finally:
        await d.drain(1)


async def test_by_default_a_pipelined_peer_gets_64_envelopes_in_one_round_trip(
    served: tuple[Recorder, str, Any],
) -> None:
    # an agent busy with many replies to one gateway: its posts' round trips are slow, so the
    # window is what bounds the envelopes per second to that peer
    rec, url, _ = served
    rec.delay = 0.3
    d = PeerDispenser()
    try:
        d.pipeline(A)
        assert (await post(d, url, "hello")).status == DeliveryStatus.DELIVERED  # heard from
        rec.most_in_flight = 0
        started = time.monotonic()
        results = await asyncio.gather(*(post(d, url, f"m{i}") for i in range(64)))
        took = time.monotonic() - started
        assert all(r.status == DeliveryStatus.DELIVERED for r in results)
        assert rec.most_in_flight == 64
        # one round trip (0.3 s), with room for a busy machine; a window of 8 needs eight (2.4 s)
        assert took < 0.3 * 5
    finally:
        await d.drain(1)


async def test_a_refused_connect_is_tried_again_from_another_port() -> None:
    # on loopback under load a connect can be refused though the server listens (it lands on
    # the TIME_WAIT of a connection the server closed): the post tries again shortly after
    from agent_stream.uagents.local._agents import free_port

    port = free_port()
    rec = Recorder()
    app = web.Application()
    app.router.add_post("/submit", rec.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()

    async def listen_soon() -> None:
        await asyncio.sleep(0.08)  # the first connect is refused, a later one finds it
        await web.TCPSite(runner, "127.0.0.1", port).start()

    poster = EnvelopePoster()
    try:
        opening = asyncio.create_task(listen_soon())
        status = await poster.post(envelope("late"), [f"http://127.0.0.1:{port}/submit"])
        await opening
        assert status.status == DeliveryStatus.DELIVERED, status.detail
        assert rec.got == ["late"]
    finally:
        await poster.close()
        await runner.cleanup()


async def test_a_dead_endpoint_still_fails_within_a_fraction_of_a_second() -> None:
    from agent_stream.uagents.local._agents import free_port

    poster = EnvelopePoster()
    try:
        started = time.monotonic()
        status = await poster.post(envelope("x"), [f"http://127.0.0.1:{free_port()}/submit"])
        assert status.status == DeliveryStatus.FAILED
        assert "errno 111" in status.detail
        assert time.monotonic() - started < 1.0  # three more tries, 0.3 s of pauses
    finally:
        await poster.close()


async def test_a_connection_whose_answer_comes_in_two_parts_is_kept() -> None:
    """The answer's body after its headers, a moment later (as a busy server's may): the post
    reads it to the end, so the connection goes back to the pool instead of being closed."""

    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(status=200)
        resp.content_length = 2
        resp.content_type = "application/json"
        await resp.prepare(request)
        await asyncio.sleep(0.02)
        await resp.write(b"{}")
        await resp.write_eof()
        return resp

    async with submit_server(handle) as url:
        poster = EnvelopePoster()
        try:
            for i in range(5):
                status = await poster.post(envelope(f"m{i}"), [url])
                assert status.status == DeliveryStatus.DELIVERED
            assert poster.connections_opened == 1
        finally:
            await poster.close()


class BatchRecorder:
    """A server that takes batches (as an agent_stream agent does), answering each post after
    ``delay`` seconds; records the envelopes in the order they arrived and the most of them
    (and of posts) in flight at once."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.got: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.posts = 0
        self.most_posts = 0
        self.total_posts = 0

    async def handle(self, request: web.Request) -> web.Response:
        data = json.loads(await request.read())
        items = data if isinstance(data, list) else [data]
        self.in_flight += len(items)
        self.posts += 1
        self.total_posts += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.most_posts = max(self.most_posts, self.posts)
        self.got += [Envelope.model_validate(i).decode_payload() for i in items]
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= len(items)
            self.posts -= 1
        headers = {BATCH_HEADER: str(MAX_BATCH)}
        if not isinstance(data, list):
            return web.json_response({}, headers=headers)
        return web.json_response(
            {"statuses": [200] * len(items), "errors": [""] * len(items)}, headers=headers
        )


async def test_a_pipelined_window_bounds_envelopes_in_flight_batched_or_not() -> None:
    """The window counts envelopes, not posts: with a server that takes batches, 200 queued
    for a window of 16 never have more than 16 in flight (counted when each post was made,
    not when its task first ran, 16 posts of 16 went at once)."""
    rec = BatchRecorder(delay=0.05)
    async with submit_server(rec.handle) as url:
        d = PeerDispenser(LaneLimits(window=16))
        try:
            assert (await post(d, url, "hello")).status == DeliveryStatus.DELIVERED  # batches
            d.pipeline(A)
            results = await asyncio.gather(*(post(d, url, f"m{i}") for i in range(200)))
            assert all(r.status == DeliveryStatus.DELIVERED for r in results)
            assert sorted(rec.got[1:]) == sorted(f"m{i}" for i in range(200))
            assert rec.most_in_flight == 16
        finally:
            await d.drain(1)


async def test_independent_envelopes_go_beside_the_posts_under_way_to_a_plain_peer() -> None:
    """Questions that open sessions of their own do not wait for one another, even to a
    peer that cannot reorder; what is sent after them (not independent) still waits for
    every post before it, and goes after them."""
    rec = BatchRecorder(delay=0.2)
    async with submit_server(rec.handle) as url:
        d = PeerDispenser(LaneLimits(window=16))
        try:
            assert (await post(d, url, "hello")).status == DeliveryStatus.DELIVERED  # batches
            started = time.monotonic()
            futs = []
            for i in range(8):  # as eight questions are asked, one after another
                with independent():
                    futs.append(post(d, url, f"q{i}"))
                await asyncio.sleep(0.01)
            futs.append(post(d, url, "after"))
            results = await asyncio.gather(*futs)
            took = time.monotonic() - started
            assert all(r.status == DeliveryStatus.DELIVERED for r in results)
            assert sorted(rec.got[1:-1]) == [f"q{i}" for i in range(8)]
            assert rec.got[-1] == "after"  # it waited for every question's post
            assert rec.most_posts >= 6  # each question posted as it came, beside the others
            # about one round trip for the questions and one for "after" (0.4 s); one post at a
            # time would take nine (1.8 s): the bound sits between, with room for a busy machine
            assert took < 0.2 * 6

            # not independent: one post at a time, in order (those queued behind one batched)
            rec.got.clear()
            rec.most_posts = 0
            futs = []
            for i in range(8):
                futs.append(post(d, url, f"p{i}"))
                await asyncio.sleep(0.01)
            await asyncio.gather(*futs)
            assert rec.got == [f"p{i}" for i in range(8)]
            assert rec.most_posts == 1
        finally:
            await d.drain(1)


async def test_a_burst_to_an_endpoint_never_heard_from_waits_for_one_answer_then_batches() -> None:
    """A cold lane does not fill its window with posts of one envelope each before the
    endpoint has said whether it takes batches: a few posts first, then batches."""
    rec = BatchRecorder(delay=0.05)
    async with submit_server(rec.handle) as url:
        d = PeerDispenser(LaneLimits(window=128))
        try:
            d.pipeline(A)
            results = await asyncio.gather(*(post(d, url, f"m{i}") for i in range(256)))
            assert all(r.status == DeliveryStatus.DELIVERED for r in results)
            assert sorted(rec.got) == sorted(f"m{i}" for i in range(256))
            # PROBE_POSTS single posts, then batches of up to 64 within the window of 128
            assert rec.most_posts <= PROBE_POSTS + 2
            assert rec.total_posts <= PROBE_POSTS + 256 // MAX_BATCH + 2 <= 12  # not ~130
        finally:
            await d.drain(1)


async def test_an_envelope_waiting_for_a_post_slot_when_the_lanes_stop_is_failed() -> None:
    """A lane cancelled while its next batch waits for one of the agent's post slots tells
    that batch's senders it was not sent (they waited on their futures for ever)."""
    rec = BatchRecorder(delay=2.0)
    async with submit_server(rec.handle) as url:
        d = PeerDispenser(LaneLimits(max_posting=1))
        try:
            first = post(d, url, "holds the only slot")
            await asyncio.sleep(0.1)
            other = asyncio.get_running_loop().create_future()
            d.add_envelope(envelope("waits for it", target="agent1" + "b" * 59), [url], other)
            await asyncio.sleep(0.1)
            await d.drain(0.1)  # the lanes are cancelled
            result = await asyncio.wait_for(other, 2)
            assert result.status == DeliveryStatus.FAILED and "not sent" in result.detail
            assert (await asyncio.wait_for(first, 2)).status == DeliveryStatus.FAILED
        finally:
            await d.drain(0.1)
