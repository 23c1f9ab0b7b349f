"""Per-peer send lanes (agent_stream.uagents.transport._lanes) posting real envelopes over HTTP on
127.0.0.1: to a server that answers 200 and records what it got, and to a socket that accepts
connections and never answers. Chat-protocol envelopes go through lanes; other protocols' go
the stock uagents way unless every_protocol."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from inprocess_agents import Pair
from lane_helpers import A, B, post
from uagents.communication import Dispenser
from uagents_core.envelope import Envelope
from uagents_core.identity import Identity
from uagents_core.models import ErrorMessage
from uagents_core.types import DeliveryStatus

from agent_stream.uagents import StreamingChat
from agent_stream.uagents._protection import protect
from agent_stream.uagents.local._agents import LocalAgent, NoRegistration, free_port
from agent_stream.uagents.local._directory import LocalResolver
from agent_stream.uagents.transport._lanes import LaneLimits, PeerDispenser


class Sink:
    """Answers 200 to every POST; records the envelopes' payloads in arrival order."""

    def __init__(self) -> None:
        self.got: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                owner.got.append(Envelope.model_validate(json.loads(body)).decode_payload())
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/submit"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def hanging() -> Iterator[str]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    try:
        yield f"http://127.0.0.1:{s.getsockname()[1]}/submit"
    finally:
        s.close()


async def test_other_protocols_keep_the_stock_uagents_sending(sink: Sink, hanging: str) -> None:
    """An envelope of another protocol is not bound by the lanes' post timeout: it goes
    through uagents' own queue (served by run()), as on a stock agent."""
    d = PeerDispenser(LaneLimits(post_timeout=0.2))
    runner = asyncio.create_task(d.run())
    try:
        other = post(d, A, hanging, "other protocol", digest="model:other")
        chat = post(d, B, hanging, "chat protocol")
        assert d.lanes == 1  # the chat envelope's lane only
        assert (await chat).status == DeliveryStatus.FAILED
        await asyncio.sleep(0.3)
        assert not other.done()  # uagents' own 300 s timeout, not the lanes' 0.2 s
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    d2 = PeerDispenser()
    runner = asyncio.create_task(d2.run())
    try:
        assert (
            await post(d2, A, sink.url, "stock", digest="model:other")
        ).status == DeliveryStatus.DELIVERED
        assert sink.got == ["stock"]
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


async def test_every_protocol_puts_all_sends_in_lanes(hanging: str) -> None:
    d = PeerDispenser(LaneLimits(post_timeout=0.2, every_protocol=True))
    other = post(d, A, hanging, "other protocol", digest="model:other")
    assert d.lanes == 1
    result = await other
    assert result.status == DeliveryStatus.FAILED and "no answer within 0.2 s" in result.detail
    await d.drain(1)


async def test_a_hanging_peer_does_not_hold_up_another_peer(sink: Sink, hanging: str) -> None:
    d = PeerDispenser(LaneLimits(post_timeout=0.5))
    stuck = post(d, A, hanging, "to the hanging peer")
    started = time.monotonic()
    fine = post(d, B, sink.url, "to the healthy peer")
    assert (await fine).status == DeliveryStatus.DELIVERED
    assert time.monotonic() - started < 0.4 and not stuck.done()
    result = await stuck
    assert result.status == DeliveryStatus.FAILED and "no answer within 0.5 s" in result.detail
    assert sink.got == ["to the healthy peer"]
    await d.drain(1)


async def test_a_peer_that_keeps_timing_out_is_not_tried_for_a_while(hanging: str) -> None:
    d = PeerDispenser(LaneLimits(post_timeout=0.2, max_timeouts=1, stall_for=30))
    first = post(d, A, hanging, "one")
    queued = post(d, A, hanging, "two")
    assert (await first).status == DeliveryStatus.FAILED
    assert "not answering" in (await queued).detail  # failed at once, not after 0.2 s more
    started = time.monotonic()
    later = await post(d, A, hanging, "three")
    assert later.status == DeliveryStatus.FAILED and "not tried again" in later.detail
    assert time.monotonic() - started < 0.1
    await d.drain(1)


async def test_order_per_peer_is_kept_and_a_full_lane_fails_at_once(sink: Sink) -> None:
    d = PeerDispenser(LaneLimits(max_queued=5))
    futs = [post(d, A, sink.url, f"m{i}") for i in range(8)]
    results = await asyncio.gather(*futs)
    delivered = [f"m{i}" for i, r in enumerate(results) if r.status == DeliveryStatus.DELIVERED]
    assert sink.got == delivered == [f"m{i}" for i in range(5)]  # added at once: five fit
    assert all("too many envelopes queued" in r.detail for r in results[5:])
    assert d.lanes == 0  # an idle lane goes away
    await d.drain(1)


async def test_streaming_chat_gives_an_agent_built_elsewhere_its_lanes(pair: Pair) -> None:
    port = free_port()
    plain = LocalAgent(
        name="built elsewhere",
        seed="lanes test plain agent",
        port=port,
        endpoint=[f"http://127.0.0.1:{port}/submit"],
        resolve=LocalResolver(),
        registration_policy=NoRegistration(),
        enable_agent_inspector=False,
        report_events=False,
        mark_inactive_on_shutdown=False,
        publish_agent_details=False,
        loop=asyncio.get_running_loop(),
    )

    async def respond(request: Any, out: Any) -> None:
        await out.text("Hello.")

    plain.include(StreamingChat(respond), publish_manifest=False)
    before = asyncio.all_tasks()
    plain.start_message_dispenser()
    plain.start_message_receivers()
    pair.tasks |= asyncio.all_tasks() - before
    pair.agents.append(plain)
    assert not isinstance(plain._dispenser, PeerDispenser)
    chat = StreamingChat()
    client = pair.add("lanes test asker", chat)
    reply = await chat.ask(client._build_context(), plain.address, "hi", timeout=5)
    await reply.wait(6)
    assert reply.completed and isinstance(plain._dispenser, PeerDispenser)


async def test_protecting_a_running_agent_keeps_its_other_protocols_on_its_own_dispenser(
    pair: Pair, sink: Sink
) -> None:
    """protect() on a running agent: sends of other protocols still go through the dispenser
    uagents started (nothing is stranded in a queue nobody serves), chat sends go to lanes."""
    peer = Identity.from_seed("lanes test sink peer", 0).address
    port = free_port()
    agent = LocalAgent(
        name="late",
        seed="lanes test late protect",
        port=port,
        endpoint=[f"http://127.0.0.1:{port}/submit"],
        resolve=LocalResolver({peer: sink.url}),
        registration_policy=NoRegistration(),
        enable_agent_inspector=False,
        report_events=False,
        mark_inactive_on_shutdown=False,
        loop=asyncio.get_running_loop(),
    )
    pair.agents.append(agent)
    stock = agent._dispenser
    before = asyncio.all_tasks()
    agent.start_message_dispenser()  # running the uagents way, not protected
    pair.tasks |= asyncio.all_tasks() - before
    protect(agent)
    lanes = agent._dispenser
    assert isinstance(lanes, PeerDispenser) and type(stock) is Dispenser
    status = await agent._build_context().send(peer, ErrorMessage(error="other protocol"))
    assert status.status == DeliveryStatus.DELIVERED and lanes.lanes == 0
    assert sink.got == [ErrorMessage(error="other protocol").json()]


async def test_urgent_envelopes_and_acks_go_first_to_a_pipelined_peer_only(sink: Sink) -> None:
    from uagents_core.contrib.protocols.chat import ChatAcknowledgement, ChatMessage
    from uagents_core.models import Model

    from agent_stream.uagents.transport._lanes import urgent

    ack = Model.build_schema_digest(ChatAcknowledgement)
    chat = Model.build_schema_digest(ChatMessage)
    # pipelined (a peer that restores order by seq); one post at a time shows the order
    d = PeerDispenser(LaneLimits(window=1))
    d.pipeline(A)
    futs = [post(d, A, sink.url, f"bulk{i}", digest=chat) for i in range(4)]
    with urgent():
        futs.append(post(d, A, sink.url, "first text", digest=chat))
    futs.append(post(d, A, sink.url, "an ack", digest=ack))
    futs.append(post(d, A, sink.url, "bulk4", digest=chat))
    await asyncio.gather(*futs)
    # all queued before the lane posts its first: the urgent ones first, each kind in order
    assert sink.got == ["first text", "an ack", "bulk0", "bulk1", "bulk2", "bulk3", "bulk4"]

    # a plain peer cannot reorder: everything in the order it was sent
    sink.got.clear()
    futs = [post(d, B, sink.url, f"bulk{i}", digest=chat) for i in range(3)]
    with urgent():
        futs.append(post(d, B, sink.url, "first text", digest=chat))
    futs.append(post(d, B, sink.url, "an ack", digest=ack))
    await asyncio.gather(*futs)
    assert sink.got == ["bulk0", "bulk1", "bulk2", "first text", "an ack"]
    await d.drain(1)


async def test_a_burst_to_a_peer_that_never_answers_fails_fast_and_whole(hanging: str) -> None:
    """A cold, pipelined lane to an endpoint that accepts connections and never answers: only
    the probe posts hang (not a window of them), and every envelope of the burst fails within
    about two post timeouts ("not answering" once the lane stalls); none is left waiting."""
    d = PeerDispenser(LaneLimits(post_timeout=0.3))
    try:
        d.pipeline(A)
        started = time.monotonic()
        futs = [post(d, A, hanging, f"m{i}") for i in range(300)]
        results = await asyncio.wait_for(asyncio.gather(*futs), 5)
        assert all(r.status == DeliveryStatus.FAILED for r in results)
        assert time.monotonic() - started < 0.3 * 2 + 1.0
        details = {r.detail for r in results}
        assert any("not answering" in x for x in details), details
    finally:
        await d.drain(1)


class HoldingSink(Sink):
    """A Sink that holds its answer to the envelope ``held`` until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        owner = self
        handler = self.server.RequestHandlerClass

        def holding(h: Any) -> None:
            body = h.rfile.read(int(h.headers.get("content-length") or 0))
            payload = Envelope.model_validate(json.loads(body)).decode_payload()
            owner.got.append(payload)
            if payload == "held":
                owner.release.wait(10)
            h.send_response(200)
            h.send_header("content-length", "2")
            h.end_headers()
            h.wfile.write(b"{}")

        handler.do_POST = holding  # type: ignore[attr-defined]


async def _waiting(d: PeerDispenser, target: str) -> Any:
    """The lane to ``target`` once its task waits on its posts under way."""
    lane = d._lanes[target]
    for _ in range(2000):
        if lane.arrived is not None:
            return lane
        await asyncio.sleep(0.001)
    raise AssertionError("the lane's task never waited on its post")


async def test_an_envelope_coming_while_the_lane_waits_on_a_post_begins_its_post_at_once() -> None:
    """The lane's task waits on the posts under way; an envelope that comes then, with room in
    the window, is posted from the sender's own turn of the loop (its post exists as soon as
    it is queued), not a turn or two later from the lane's task: at a thousand replies a turn
    took a third of a second. With no room it waits in the lane, in order, as before."""
    from agent_stream.uagents.transport._lanes import urgent

    s = HoldingSink()
    try:
        d = PeerDispenser(LaneLimits(window=8))
        d.pipeline(A)
        held = post(d, A, s.url, "held")
        lane = await _waiting(d, A)
        assert len(lane.posts) == 1
        for _ in range(500):  # bounded: the held post has reached the sink (two posts race)
            if s.got:
                break
            await asyncio.sleep(0.01)
        with urgent():
            second = post(d, A, s.url, "second")
        assert len(lane.posts) == 2 and not lane.urgent  # begun here, not queued
        await asyncio.wait_for(second, 5)  # answered while the first is still held
        assert second.result().status == DeliveryStatus.DELIVERED and not held.done()
        s.release.set()
        await asyncio.wait_for(held, 5)
        assert s.got == ["held", "second"]

        # no room in the window: it waits in the lane, and goes once the post is answered
        s.release.clear()
        d1 = PeerDispenser(LaneLimits(window=1))
        d1.pipeline(B)
        first = post(d1, B, s.url, "held")
        lane1 = await _waiting(d1, B)
        after = post(d1, B, s.url, "after")
        assert len(lane1.posts) == 1 and len(lane1.queue) == 1
        await asyncio.sleep(0.2)
        assert not after.done() and s.got[-1] == "held"
        s.release.set()
        await asyncio.wait_for(asyncio.gather(first, after), 5)
        assert s.got[-2:] == ["held", "after"]
        await d.drain(1)
        await d1.drain(1)
    finally:
        s.release.set()
        s.close()
