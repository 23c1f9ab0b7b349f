"""A peer that just sent this agent a verified envelope is busy, not gone, when its listed
endpoint answers the readiness probe too slowly: this agent's acknowledgement and reply reach
it. Without that evidence (a peer that never sent anything, a forged or unsigned sender, a
refusal since) a first probe that times out still does not resolve.

Real HTTP on 127.0.0.1: a running agent of ours with its HTTP server, and a peer whose endpoint
takes longer than ``probe_timeout`` to answer ``HEAD /submit`` but takes envelopes at once.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from directory_helpers import ADDR, ADDR2, CountingEndpoint
from hostile_peer import ACK, CHAT, envelope, post, valid_question
from uagents import Agent
from uagents.dispatch import dispatcher
from uagents_core.envelope import Envelope
from uagents_core.identity import Identity, generate_user_address

from agent_stream.uagents import ChatRequest, LocalDirectory, StreamingChat, _compat, local_agent
from agent_stream.uagents._protection import guard_of
from agent_stream.uagents.local._agents import endpoint_for, free_port
from agent_stream.uagents.local._directory import MAX_HEARD, LocalResolver
from agent_stream.writer import StreamWriter

PROBE_TIMEOUT = 0.3
HEAD_DELAY = 1.0  # the peer's endpoint answers probes this late: always past PROBE_TIMEOUT


# -- the directory itself ------------------------------------------------------------------------
@pytest.fixture
def slow() -> Iterator[CountingEndpoint]:
    """An endpoint serving ADDR and ADDR2 whose every probe answer comes too late."""
    e = CountingEndpoint(ADDR, ADDR2, delay=HEAD_DELAY)
    try:
        yield e
    finally:
        e.close()


async def test_a_peer_heard_from_is_busy_one_never_heard_from_is_not(
    tmp_path: Path, slow: CountingEndpoint
) -> None:
    directory = LocalDirectory(tmp_path / "agents.json", probe_timeout=PROBE_TIMEOUT)
    directory.register(ADDR, slow.url)
    directory.register(ADDR2, slow.url)
    resolver = LocalResolver(directory=directory)
    directory.heard(ADDR)
    assert await resolver.resolve(ADDR) == (ADDR, [slow.url])  # its first probe timed out
    assert await resolver.resolve(ADDR2) == (None, [])  # never heard from: timed out, not found
    assert slow.probes == 2


async def test_being_heard_from_lasts_probe_ttl(tmp_path: Path, slow: CountingEndpoint) -> None:
    directory = LocalDirectory(tmp_path / "agents.json", probe_timeout=PROBE_TIMEOUT, probe_ttl=0.2)
    directory.register(ADDR, slow.url)
    directory.heard(ADDR)
    await asyncio.sleep(0.3)
    assert await LocalResolver(directory=directory).resolve(ADDR) == (None, [])


async def test_heard_from_does_not_outweigh_a_refusal_or_a_wrong_answer(tmp_path: Path) -> None:
    nobody = CountingEndpoint()  # answers at once, but serves no address: "not-ready"
    try:
        directory = LocalDirectory(tmp_path / "agents.json", probe_timeout=PROBE_TIMEOUT)
        directory.register(ADDR, nobody.url)
        directory.register(ADDR2, f"http://127.0.0.1:{free_port()}/submit")  # nobody listens
        resolver = LocalResolver(directory=directory)
        directory.heard(ADDR)
        directory.heard(ADDR2)
        assert await resolver.resolve(ADDR) == (None, [])
        assert await resolver.resolve(ADDR2) == (None, [])
        # and the refusal ended the evidence: now slow, it is not trusted on that word
        nobody.serves.add(ADDR)
        nobody.delay = HEAD_DELAY
        assert await resolver.resolve(ADDR) == (None, [])
    finally:
        nobody.close()


async def test_unsigned_senders_and_junk_are_never_heard_from(
    tmp_path: Path, slow: CountingEndpoint
) -> None:
    user = generate_user_address()
    slow.serves.add(user)
    directory = LocalDirectory(tmp_path / "agents.json", probe_timeout=PROBE_TIMEOUT)
    directory.register(user, slow.url)
    for junk in (user, "", None, 42, b"agent1q"):
        directory.heard(junk)  # type: ignore[arg-type]
    assert await LocalResolver(directory=directory).resolve(user) == (None, [])


def test_senders_heard_from_are_bounded_least_recent_forgotten_first(tmp_path: Path) -> None:
    directory = LocalDirectory(tmp_path / "agents.json")
    directory.heard(ADDR)
    directory.heard(ADDR2)
    for i in range(MAX_HEARD - 1):
        directory.heard(f"agent1q{i:058d}")
    directory.heard(ADDR2)  # heard again: the most recent
    directory.heard("agent1q" + "x" * 58)
    assert len(directory._heard) == MAX_HEARD
    assert directory._heard_lately(ADDR2) and not directory._heard_lately(ADDR)


# -- an agent of ours, over HTTP -----------------------------------------------------------------
class SlowProbePeer:
    """A peer's endpoint: ``HEAD /submit`` answered ``delay`` seconds late (ready for
    ``address``), envelopes taken at once and kept in :attr:`received`."""

    def __init__(self, address: str, delay: float) -> None:
        self.received: list[dict[str, Any]] = []
        self.probes = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:
                owner.probes += 1
                time.sleep(delay)
                ready = self.headers.get("x-uagents-address") == address
                try:
                    self.send_response(200)
                    self.send_header("x-uagents-status", "ready" if ready else "not-ready")
                    self.end_headers()
                except OSError:  # the prober gave up long ago
                    pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.received.append(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/submit"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def texts(self) -> list[str]:
        """The text of the ChatMessages received."""
        out = []
        for env in self.received:
            if env.get("schema_digest") != CHAT:
                continue
            payload = json.loads(base64.b64decode(env["payload"]))
            out += [c["text"] for c in payload["content"] if c.get("type") == "text"]
        return out

    def acks(self) -> int:
        return sum(1 for env in self.received if env.get("schema_digest") == ACK)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def respond(request: ChatRequest, out: StreamWriter) -> None:
    await out.text("an answer")


class Running:
    """Our agent (StreamingChat answering "an answer"), listed nowhere, resolving peers from
    ``directory``, running with its HTTP server in this loop."""

    def __init__(self, directory: LocalDirectory) -> None:
        self.agent: Agent = local_agent(
            "directory heard-from test agent seed", free_port(), directory=directory, announce=False
        )
        self.agent.include(StreamingChat(respond), publish_manifest=True)
        self.tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> str:
        before = asyncio.all_tasks()
        self.agent.start_message_dispenser()
        self.agent.start_message_receivers()
        self.tasks |= asyncio.all_tasks() - before
        self.tasks.add(asyncio.create_task(self.agent.start_server()))
        assert await self.agent.listening() and self.agent.local_port is not None
        return endpoint_for(self.agent.local_port)

    async def close(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        dispatcher.unregister(self.agent.address, self.agent)


@pytest_asyncio.fixture
async def peer_and_ours(tmp_path: Path) -> AsyncIterator[tuple[Identity, SlowProbePeer, Running]]:
    identity = Identity.from_seed("directory heard-from slow peer seed", 0)
    peer = SlowProbePeer(identity.address, HEAD_DELAY)
    directory = LocalDirectory(tmp_path / "agents.json", probe_timeout=PROBE_TIMEOUT)
    directory.register(identity.address, peer.url, name="slow-peer", pid=os.getpid())
    ours = Running(directory)
    try:
        yield identity, peer, ours
    finally:
        await ours.close()
        peer.close()


async def until(check: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


def test_a_local_agents_guard_tells_its_directory_who_it_heard_from(tmp_path: Path) -> None:
    directory = LocalDirectory(tmp_path / "agents.json")
    agent = local_agent("directory heard-from wiring seed", free_port(), directory=directory)
    try:
        guard = guard_of(agent)
        assert guard is not None and directory.heard in guard.on_sender
        alone = local_agent("directory heard-from no directory", free_port(), directory=None)
        try:
            no_book = guard_of(alone)
            assert no_book is not None and no_book.on_sender == []
        finally:
            dispatcher.unregister(alone.address, alone)
    finally:
        dispatcher.unregister(agent.address, agent)


async def test_a_busy_peer_that_asked_us_gets_our_acknowledgement_and_reply(
    peer_and_ours: tuple[Identity, SlowProbePeer, Running],
) -> None:
    identity, peer, ours = peer_and_ours
    endpoint = await ours.start()
    resolver = _compat.resolver_of(ours.agent)
    # before it sent anything, the peer's slow first probe does not resolve it
    assert await resolver.resolve(identity.address) == (None, [])
    loop = asyncio.get_running_loop()
    question = envelope(ours.agent.address, CHAT, valid_question("hi"), identity=identity)
    assert await loop.run_in_executor(None, post, endpoint, question) == 200
    assert await until(lambda: peer.acks() >= 1 and "an answer" in "".join(peer.texts()), 15)
    assert peer.probes >= 1  # found through the directory, its probe timing out


def forged(target: str, claimed: str, signer: Identity | None) -> bytes:
    """A question claiming to come from ``claimed``: signed by ``signer`` (someone else), or
    not signed at all."""
    env = Envelope(
        version=1, sender=claimed, target=target, session=uuid.uuid4(), schema_digest=CHAT
    )
    env.encode_payload(valid_question("forged"))
    if signer is not None:
        env.sign(signer)  # the signature is the signer's, the sender another's
    return bytes(env.model_dump_json().encode())


async def test_a_forged_or_unsigned_sender_is_not_heard_from(
    peer_and_ours: tuple[Identity, SlowProbePeer, Running],
) -> None:
    identity, peer, ours = peer_and_ours
    endpoint = await ours.start()
    loop = asyncio.get_running_loop()
    other = Identity.from_seed("directory heard-from forger seed", 0)
    for body in (
        forged(ours.agent.address, identity.address, other),
        forged(ours.agent.address, identity.address, None),
    ):
        assert await loop.run_in_executor(None, post, endpoint, body) == 400
    await asyncio.sleep(0.2)
    assert await _compat.resolver_of(ours.agent).resolve(identity.address) == (None, [])
    assert peer.received == []
