"""Envelope batches between agent_stream agents, over real HTTP on 127.0.0.1: a protected
agent's server says it takes them; a lane that is behind sends several envelopes in one post,
each handled as if it had come alone, in order; a server that stops taking them gets them one
at a time; and what a hostile peer can post as a batch."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from hostile_peer import CHAT, envelope, valid_question
from inprocess_agents import Pair, unprotected
from submit_server import submit_server
from uagents import Context, Protocol
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    TextContent,
    chat_protocol_spec,
)
from uagents_core.envelope import Envelope
from uagents_core.identity import Identity
from uagents_core.types import DeliveryStatus

from agent_stream.uagents import _compat
from agent_stream.uagents._protection import Protection, protect
from agent_stream.uagents.local._agents import endpoint_for, free_port
from agent_stream.uagents.transport._guard import GuardSettings
from agent_stream.uagents.transport._lanes import PeerDispenser
from agent_stream.uagents.transport._pool import (
    BATCH_HEADER,
    MAX_BATCH,
    EnvelopePoster,
    error_text,
)

SENDER = Identity.from_seed("batch test sender seed, throwaway", 0)


def recording(got: list[str]) -> Protocol:
    proto = Protocol(spec=chat_protocol_spec)

    @proto.on_message(ChatMessage)  # type: ignore[untyped-decorator]
    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        got.append(msg.content[0].text)

    @proto.on_message(ChatAcknowledgement)  # type: ignore[untyped-decorator]
    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        return None

    return proto


def signed(target: str, text: str, identity: Identity = SENDER) -> Envelope:
    msg = ChatMessage(content=[TextContent(text=text)])
    env = Envelope(
        version=1, sender=identity.address, target=target, session=uuid.uuid4(), schema_digest=CHAT
    )
    env.encode_payload(msg.json())
    env.sign(identity)
    return env


async def served(pair: Pair, got: list[str], **guard: Any) -> tuple[Any, str]:
    server = pair.add("batch receiving server", recording(got))
    if guard:
        protect(server, Protection(guard=GuardSettings(**guard)))
    pair.tasks.add(asyncio.create_task(server.start_server()))
    assert await server.listening() and server.local_port is not None
    return server, endpoint_for(server.local_port)


async def settle(got: list[str], n: int) -> None:
    for _ in range(100):
        if len(got) >= n:
            return
        await asyncio.sleep(0.02)


async def test_a_protected_agent_takes_a_batch_each_envelope_in_order(pair: Pair) -> None:
    got: list[str] = []
    server, url = await served(pair, got)
    poster = EnvelopePoster()
    try:
        assert poster.batch_limit(url) == 1  # nothing heard yet: one at a time
        first = await poster.post(signed(server.address, "m0"), [url])
        assert first.status == DeliveryStatus.DELIVERED
        assert poster.batch_limit(url) == MAX_BATCH  # its answer said it takes batches
        before = poster.posts
        results = await poster.post_many(
            [signed(server.address, f"m{i}") for i in range(1, 21)], [url]
        )
        assert poster.posts == before + 1  # twenty envelopes, one post
        assert [r.status for r in results] == [DeliveryStatus.DELIVERED] * 20
        assert all(r.endpoint == url for r in results)
        await settle(got, 21)
        assert got == [f"m{i}" for i in range(21)]  # each handled, in order
    finally:
        await poster.close()


async def test_a_lane_that_is_behind_sends_batches_an_idle_one_single_posts(pair: Pair) -> None:
    got: list[str] = []
    server, url = await served(pair, got)
    d = PeerDispenser()
    loop = asyncio.get_running_loop()

    def send(text: str) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = loop.create_future()
        d.add_envelope(signed(server.address, text), [url], fut)
        return fut

    try:
        assert (await send("alone")).status == DeliveryStatus.DELIVERED
        assert d.poster.posts == 1
        # a plain lane (one post at a time, in order): forty queued at once
        results = await asyncio.gather(*(send(f"q{i}") for i in range(40)))
        assert all(r.status == DeliveryStatus.DELIVERED for r in results)
        assert d.poster.posts <= 1 + 3  # the first alone, the rest together
        await settle(got, 41)
        assert got == ["alone", *(f"q{i}" for i in range(40))]
    finally:
        await d.drain(1)


async def test_a_server_that_stops_taking_batches_gets_them_one_at_a_time() -> None:
    """An endpoint once served by an agent_stream agent, now by something that reads one
    envelope per post: the batch is answered 400, forgotten, and each envelope goes alone."""
    got: list[str] = []
    advertise = True
    busy = False

    async def handle(request: web.Request) -> web.Response:
        if busy:
            return web.json_response({"error": "too many envelopes"}, status=429)
        data = json.loads(await request.read())
        headers = {BATCH_HEADER: "8"} if advertise else {}
        if not isinstance(data, dict):
            return web.json_response({"error": "not an envelope"}, status=400, headers=headers)
        got.append(Envelope.model_validate(data).decode_payload())
        return web.json_response({}, headers=headers)

    target = "agent1" + "t" * 59
    async with submit_server(handle) as url:
        poster = EnvelopePoster()
        try:
            await poster.post(signed(target, "first"), [url])
            assert poster.batch_limit(url) == 8
            busy = True  # a refusal without the header (a busy edge's 429) is no new server
            refused = await poster.post(signed(target, "refused"), [url])
            assert refused.status == DeliveryStatus.FAILED and poster.batch_limit(url) == 8
            busy = False
            advertise = False
            results = await poster.post_many([signed(target, f"b{i}") for i in range(5)], [url])
            assert [r.status for r in results] == [DeliveryStatus.DELIVERED] * 5
            assert poster.batch_limit(url) == 1
            texts = [json.loads(p)["content"][0]["text"] for p in got[1:]]
            assert texts == [f"b{i}" for i in range(5)]
        finally:
            await poster.close()


async def test_a_protected_agents_readiness_answer_says_it_takes_batches(pair: Pair) -> None:
    server, url = await served(pair, [])
    async with (
        aiohttp.ClientSession() as s,
        s.head(url, headers={"x-uagents-address": server.address}) as resp,
    ):
        assert resp.status == 200 and resp.headers.get("x-uagents-status") == "ready"
        assert resp.headers.get(BATCH_HEADER) == str(MAX_BATCH)


async def test_a_warmed_endpoint_gets_batches_from_the_first_post_on_the_warm_connection(
    pair: Pair,
) -> None:
    got: list[str] = []
    server, url = await served(pair, got)
    poster = EnvelopePoster()
    try:
        assert not poster.heard(url)
        assert await poster.warm(url, server.address) is True
        assert poster.heard(url) and poster.batch_limit(url) == MAX_BATCH
        results = await poster.post_many(
            [signed(server.address, f"w{i}") for i in range(10)], [url]
        )
        assert [r.status for r in results] == [DeliveryStatus.DELIVERED] * 10
        assert poster.posts == 1  # the ten in one post, the first one
        assert poster.connections_opened == 1  # on the connection the warming opened
        await settle(got, 10)
        assert got == [f"w{i}" for i in range(10)]
    finally:
        await poster.close()


async def test_warming_a_stock_agent_learns_it_takes_no_batches(pair: Pair) -> None:
    got: list[str] = []
    stock = unprotected(pair, "stock agent seed for warming, throwaway", recording(got))
    pair.tasks.add(asyncio.create_task(stock.start_server()))
    assert await stock.listening() and stock.local_port is not None
    url = endpoint_for(stock.local_port)
    poster = EnvelopePoster()
    try:
        assert await poster.warm(url, stock.address) is True
        assert poster.heard(url) and poster.batch_limit(url) == 1
        results = await poster.post_many([signed(stock.address, f"s{i}") for i in range(3)], [url])
        assert [r.status for r in results] == [DeliveryStatus.DELIVERED] * 3
        assert poster.posts == 3  # one at a time
    finally:
        await poster.close()


async def test_warming_an_endpoint_nobody_serves_is_false_and_learns_nothing() -> None:
    url = endpoint_for(free_port())
    poster = EnvelopePoster()
    try:
        assert await poster.warm(url, "agent1" + "n" * 59, timeout=2.0) is False
        assert not poster.heard(url) and poster.batch_limit(url) == 1
    finally:
        await poster.close()


@contextlib.asynccontextmanager
async def probe_server(
    handle: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[str]:
    """A bare server answering uagents' readiness probe (HEAD /submit) with ``handle``."""
    app = web.Application()
    app.router.add_route("HEAD", "/submit", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        yield f"http://127.0.0.1:{port}/submit"
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("said", "learned"),
    [
        ("lots", 1),  # not a number
        ("-3", 1),
        ("0", 1),
        ("1", 1),
        ("1e3", 1),
        (" 8 ", 8),  # (HTTP trims a header's blanks)
        ("9" * 4000, MAX_BATCH),  # more than any batch: capped
        ("9" * 5000, 1),  # past Python's int-reading limit: ignored, never an error
    ],
)
async def test_what_a_warmed_peer_says_it_takes_is_bounded(said: str, learned: int) -> None:
    async def handle(request: web.Request) -> web.Response:
        return web.Response(headers={BATCH_HEADER: said})

    async with probe_server(handle) as url:
        poster = EnvelopePoster()
        try:
            assert await poster.warm(url, "agent1" + "h" * 59) is True
            assert poster.batch_limit(url) == learned
        finally:
            await poster.close()


@pytest.mark.parametrize("how", ["hangs", "hangs up"])
async def test_a_peer_that_hangs_or_hangs_up_on_the_warming_costs_its_timeout_only(
    how: str,
) -> None:
    release = asyncio.Event()

    async def handle(request: web.Request) -> web.Response:
        if how == "hangs":
            await release.wait()  # past the warming's timeout (released when the test ends)
        else:
            assert request.transport is not None
            request.transport.close()
        return web.Response()

    async with probe_server(handle) as url:
        poster = EnvelopePoster()
        try:
            started = asyncio.get_running_loop().time()
            assert await poster.warm(url, "agent1" + "h" * 59, timeout=0.5) is False
            assert asyncio.get_running_loop().time() - started < 5
            assert not poster.heard(url) and poster.batch_limit(url) == 1
        finally:
            release.set()
            await poster.close()


@pytest.mark.parametrize("method", ["HEAD", "GET", "OPTIONS", "PUT"])
async def test_any_other_request_to_a_protected_agent_is_answered_as_uagents_answers(
    pair: Pair, method: str
) -> None:
    """No address, a wrong one, a body: uagents' own answer, plus the batch header."""
    server, url = await served(pair, [])
    for headers, body in (({}, b""), ({"x-uagents-address": "agent1nobody"}, b"x" * 70_000)):
        async with (
            aiohttp.ClientSession() as s,
            s.request(method, url, headers=headers, data=body) as resp,
        ):
            await resp.read()
            assert resp.status < 500
            assert resp.headers.get(BATCH_HEADER) == str(MAX_BATCH)
    async with (
        aiohttp.ClientSession() as s,
        s.head(url, headers={"x-uagents-address": server.address}) as resp,
    ):
        assert resp.status == 200  # still served after them


WARMING = textwrap.dedent("""
    import asyncio, sys
    from agent_stream.uagents import local_agent, run_agent
    from agent_stream.uagents.local._agents import free_port
    from agent_stream.uagents.transport._lanes import isolate

    peer, url = sys.argv[1], sys.argv[2]
    agent = local_agent(
        "warming test agent seed (a process)", free_port(), directory=None, peers={peer: url}
    )

    async def main(ctx):
        poster = isolate(agent).poster
        for _ in range(200):
            if poster.heard(url):
                break
            await asyncio.sleep(0.05)
        print("warmed:", poster.heard(url), poster.batch_limit(url), poster.posts, flush=True)

    run_agent(agent, main)
""")


async def test_an_agent_warms_its_static_peers_when_it_starts(pair: Pair, tmp_path: Path) -> None:
    """Before it sends anything, an agent given a static peer knows it takes batches."""
    server, url = await served(pair, [])
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WARMING,
        server.address,
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ, AGENT_STREAM_DIRECTORY=str(tmp_path / "agents.json")),
        cwd=tmp_path,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    assert f"warmed: True {MAX_BATCH} 0" in out.decode()  # learned with no envelope posted


async def raw_batch(url: str, body: bytes, **headers: str) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as s,
        s.post(
            url,
            data=body,
            headers={"content-type": "application/json", BATCH_HEADER: "1", **headers},
        ) as resp,
    ):
        text = await resp.text()
        return resp.status, json.loads(text) if text else None


async def test_what_a_hostile_peer_posts_as_a_batch(pair: Pair) -> None:
    got: list[str] = []
    server, url = await served(pair, got)
    good = signed(server.address, "good").model_dump_json()
    forged = json.loads(signed(server.address, "forged").model_dump_json())
    forged["sender"] = Identity.from_seed("someone else entirely, throwaway", 0).address
    tampered = envelope(server.address, CHAT, valid_question("x"), identity=SENDER, tamper=True)

    assert (await raw_batch(url, b"not json"))[0] == 400
    assert (await raw_batch(url, b"{}"))[0] == 400  # not an array
    assert (await raw_batch(url, b"[]"))[0] == 400  # nothing in it
    too_many = ("[" + ",".join([good] * (MAX_BATCH + 1)) + "]").encode()
    assert (await raw_batch(url, too_many))[0] == 413
    status, _ = await raw_batch(url, f"[{good}]".encode(), **{"x-uagents-connection": "sync"})
    assert status == 400  # a query awaiting an answer never comes in a batch
    body = f'[1, "x", null, {json.dumps(forged)}, {tampered.decode()}, {good}]'.encode()
    status, answer = await raw_batch(url, body)
    assert status == 200
    assert answer["statuses"] == [400, 400, 400, 400, 400, 200]  # each on its own
    await settle(got, 1)
    assert got == ["good"]  # only the sound one reached the agent
    deep = ("[" * 100_000 + "]" * 100_000).encode()  # nested past any parser's depth
    assert (await raw_batch(url, deep))[0] == 400
    too_deep_inside = ("[" + '{"sender": ' + "[" * 5000 + "]" * 5000 + "}, " + good + "]").encode()
    assert (await raw_batch(url, too_deep_inside))[0] == 400  # the body cannot be read: none
    nested_item = ("[" + '{"sender": ' + "[" * 50 + "]" * 50 + "}, " + good + "]").encode()
    status, answer = await raw_batch(url, nested_item)
    assert status == 200 and answer["statuses"] == [400, 200]  # the sound one still delivered
    await settle(got, 2)
    assert got == ["good", "good"]
    got.clear()
    got.append("good")
    elsewhere = url.replace("/submit", "/not-submit")
    assert (await raw_batch(elsewhere, f"[{good}]".encode()))[0] == 404  # only where envelopes go
    huge = ("[" + ",".join([good] * 40) + "," + json.dumps("x" * (4 * 1024 * 1024)) + "]").encode()
    assert (await raw_batch(url, huge))[0] == 413  # the body limit of one envelope
    await asyncio.sleep(0.1)
    assert got == ["good"]


async def post_alone(url: str, item: Any) -> tuple[int, str, dict[str, str]]:
    async with (
        aiohttp.ClientSession() as s,
        s.post(url, data=json.dumps(item), headers={"content-type": "application/json"}) as r,
    ):
        body = await r.read()
        kept = {k.lower(): v for k, v in r.headers.items() if k.lower() != "date"}
        return r.status, body.decode(), kept


async def test_each_envelope_is_answered_as_uagents_handler_answers_it(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Envelopes skip uagents' ASGI handler (their JSON is not parsed again, a batch's not
    encoded again): each, batched or alone, must still get the status and the error that
    handler gives it, the same headers and body alone."""
    got: list[str] = []
    server, url = await served(pair, got)
    forged = json.loads(signed(server.address, "forged").model_dump_json())
    forged["sender"] = Identity.from_seed("someone else entirely, throwaway", 0).address
    tampered = json.loads(
        envelope(server.address, CHAT, valid_question("x"), identity=SENDER, tamper=True)
    )
    elsewhere = json.loads(signed(SENDER.address, "to nobody here").model_dump_json())
    unsigned = json.loads(envelope(server.address, CHAT, valid_question("y")))
    no_version = json.loads(signed(server.address, "z").model_dump_json())
    del no_version["version"]
    items = [
        forged,
        tampered,
        elsewhere,
        unsigned,
        no_version,
        json.loads(signed(server.address, "good").model_dump_json()),
    ]
    status, answer = await raw_batch(url, json.dumps(items).encode())
    assert status == 200
    direct = _compat.submit_envelope
    handled: list[Any] = []

    async def counted(*args: Any) -> tuple[int, str]:
        handled.append(args[2])
        return await direct(*args)

    with monkeypatch.context() as m:
        m.setattr(_compat, "submit_envelope", counted)
        alone = [await post_alone(url, item) for item in items]
    assert handled == items  # each went the direct way
    with monkeypatch.context() as m:  # uagents' own handler, given the body
        m.setattr(_compat, "submits_directly", lambda *_: False)
        by_uagents = [await post_alone(url, item) for item in items]
    assert alone == by_uagents
    answered = [(a[0], error_text(a[1]) if a[0] != 200 else "") for a in alone]
    assert list(zip(answer["statuses"], answer["errors"], strict=True)) == answered
    assert [a[0] for a in alone] == [400, 400, 400, 200, 400, 200]
    await settle(got, 3)
    await asyncio.sleep(0.1)
    assert got == ["good"] * 3  # the signed one, batched then twice alone (unsigned: unhandled)


async def test_each_envelope_of_a_batch_is_admitted_on_its_own(pair: Pair) -> None:
    """A batch does not buy a sender more than its rate: over it, those envelopes get 429."""
    got: list[str] = []
    server, url = await served(pair, got, sender_envelopes_per_second=2.0)
    body = (
        "[" + ",".join(signed(server.address, f"r{i}").model_dump_json() for i in range(10)) + "]"
    )
    status, answer = await raw_batch(url, body.encode())
    assert status == 200
    assert answer["statuses"][0] == 200 and answer["statuses"].count(429) >= 5
    assert all(e == "" or "too many" in e for e in answer["errors"])
    server_of = _compat.server_of(server)
    assert server_of.edge is not None and server_of.edge.guard.stats["http_refused"] >= 5
