"""A real agent in another process, found through the local directory at an endpoint that
answers readiness probes later than ``probe_timeout`` (a proxy that holds every ``HEAD`` 1 s and
forwards envelopes at once), asks our agent a question: our agent acknowledges and answers it.
Before it asked anything, that slow first probe does not resolve it.
"""

from __future__ import annotations

import asyncio
import http.client
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
from agents_harness import PEERS, Harness
from uagents.dispatch import dispatcher

from agent_stream.uagents import ChatRequest, LocalDirectory, StreamingChat, _compat, local_agent
from agent_stream.uagents.local._agents import endpoint_for, free_port
from agent_stream.writer import StreamWriter

PROBE_TIMEOUT = 0.3
HEAD_DELAY = 1.0


class SlowProbeProxy:
    """Forwards to ``target`` (an http://127.0.0.1 URL): every ``HEAD`` ``delay`` seconds
    late, every ``POST`` at once."""

    def __init__(self, target: str, delay: float) -> None:
        parts = urlsplit(target)
        assert parts.hostname == "127.0.0.1" and parts.port is not None
        host, port = parts.hostname, parts.port
        self.probes = 0
        self.posts = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self, body: bytes | None) -> None:
                conn = http.client.HTTPConnection(host, port, timeout=10)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    self.send_response(resp.status)
                    for k, v in resp.getheaders():
                        if k.lower() not in ("transfer-encoding", "connection", "date", "server"):
                            self.send_header(k, v)
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                except OSError:  # the client gave up waiting
                    pass
                finally:
                    conn.close()

            def do_HEAD(self) -> None:
                owner.probes += 1
                time.sleep(delay)
                self._forward(None)

            def do_POST(self) -> None:
                owner.posts += 1
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/submit"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy_port() -> Iterator[tuple[SlowProbeProxy, int]]:
    port = free_port()
    proxy = SlowProbeProxy(endpoint_for(port), HEAD_DELAY)
    try:
        yield proxy, port
    finally:
        proxy.close()


async def respond(request: ChatRequest, out: StreamWriter) -> None:
    await out.text("here I am")


async def test_a_busy_peer_found_in_the_directory_gets_our_acknowledgement_and_answer(
    harness: Harness, proxy_port: tuple[SlowProbeProxy, int]
) -> None:
    proxy, port = proxy_port
    directory = LocalDirectory(harness.directory, probe_timeout=PROBE_TIMEOUT)
    ours = local_agent(
        "busy peer directory: our agent's seed", free_port(), directory=directory, announce=False
    )
    ours.include(StreamingChat(respond), publish_manifest=True)
    before = asyncio.all_tasks()
    ours.start_message_dispenser()
    ours.start_message_receivers()
    tasks = asyncio.all_tasks() - before
    tasks.add(asyncio.create_task(ours.start_server()))
    loop = asyncio.get_running_loop()
    peer = None
    try:
        assert await ours.listening() and ours.local_port is not None
        peer = harness.start(
            str(PEERS / "slow_probe_asker.py"),
            "--port",
            str(port),
            "--seed",
            f"busy peer directory: asker {port} {time.time_ns()}",
            "--to",
            ours.address,
            "--to-endpoint",
            endpoint_for(ours.local_port),
            "--advertise",
            proxy.url,
            stdin=True,
        )
        address = (await loop.run_in_executor(None, peer.wait_for, "READY ", 30)).split()[1]
        deadline = time.monotonic() + 15
        while (directory.entry(address) or {}).get("endpoint") != proxy.url:
            assert time.monotonic() < deadline, "the asker never listed itself at the proxy"
            await asyncio.sleep(0.05)
        resolver = _compat.resolver_of(ours)
        # never heard from: its first probe times out and it is not found
        assert await resolver.resolve(address) == (None, [])
        answer: dict[str, Any] = await loop.run_in_executor(None, peer.request, {}, 40)
        assert answer.get("status") != "undelivered", answer
        assert answer["completed"] and answer["text"] == "here I am", answer
        assert proxy.probes >= 2 and proxy.posts >= 2  # found at the proxy, sent through it
    finally:
        if peer is not None:
            await loop.run_in_executor(None, peer.stop)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        dispatcher.unregister(ours.address, ours)
