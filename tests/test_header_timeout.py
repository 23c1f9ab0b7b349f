"""Slow clients (slowloris) are cut off by ``agent_stream._header_timeout``'s protocol, on a real
uvicorn server on 127.0.0.1, while normal clients keep being answered."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from slow_client import SLACK, Drip, closed_within, drip_while_getting, get, read_response

from agent_stream._header_timeout import HeaderTimeoutProtocol, protocol_class
from agent_stream.gateway.config import GatewayConfig
from agent_stream.uagents.local._agents import free_port
from agent_stream.uagents.transport._guard import GuardSettings


async def ok_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


@contextlib.asynccontextmanager
async def serving(http: type[HeaderTimeoutProtocol]) -> AsyncIterator[int]:
    """The port of a uvicorn server of ``ok_app`` with ``http``, in this loop; stopped after."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            ok_app,
            host="127.0.0.1",
            port=port,
            http=http,
            log_config=None,
            access_log=False,
            lifespan="off",
            timeout_keep_alive=30,
            timeout_graceful_shutdown=1,
        )
    )
    task = asyncio.create_task(server.serve())
    try:
        for _ in range(500):
            if server.started or task.done():
                break
            await asyncio.sleep(0.01)
        if task.done():
            task.result()
        assert server.started
        yield port
    finally:
        server.should_exit = True
        try:
            await asyncio.wait_for(task, 5)
        except asyncio.TimeoutError:
            task.cancel()


async def test_a_dripping_client_is_cut_off_while_others_are_answered() -> None:
    async with serving(protocol_class(1.0, 16)) as port:
        took, drip, statuses = await drip_while_getting(port)
        # the bytes arriving did not move the deadline: cut off ~1 s after connecting
        assert took is not None, "the dripping client was never cut off"
        assert 0.9 <= took <= 1.0 + SLACK, took
        assert drip.bytes_sent >= 3
        assert drip.received == b"" or drip.received.startswith(b"HTTP/1.1 408 ")
        assert len(statuses) >= 3 and set(statuses) == {200}, statuses
        assert await get(port) == 200


async def test_past_the_cap_the_oldest_silent_connection_is_closed() -> None:
    http = protocol_class(30.0, 4)
    async with serving(http) as port:
        silent = [await asyncio.open_connection("127.0.0.1", port) for _ in range(4)]
        try:
            for _ in range(200):
                if len(http.pending) == 4:
                    break
                await asyncio.sleep(0.01)
            assert len(http.pending) == 4
            # a normal client is not locked out: the connection at it longest makes room
            assert await get(port) == 200
            assert await closed_within(silent[0][0], 2.0)
            for reader, _ in silent[1:]:
                assert not await closed_within(reader, 0.2)
            assert len(http.pending) == 3
        finally:
            for _, writer in silent:
                writer.close()
        for _ in range(200):  # a closed connection is no longer counted
            if not http.pending:
                break
            await asyncio.sleep(0.01)
        assert not http.pending


async def test_a_kept_alive_connection_whose_next_request_drips_is_cut_off() -> None:
    async with serving(protocol_class(1.0, 16)) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        assert await read_response(reader) == (200, b"ok")
        # idle between requests is the keep-alive timeout's (30 s), not the headers' (1 s)
        assert not await closed_within(reader, 1.5)
        took = await Drip(reader, writer, period=0.3, limit=1.0 + 4 * SLACK).run()
        assert took is not None and 0.9 <= took <= 1.0 + SLACK, took


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="header_timeout"):
        protocol_class(0, 4)
    with pytest.raises(ValueError, match="max_pending"):
        protocol_class(1.0, 0)
    a, b = protocol_class(1.0, 4), protocol_class(1.0, 4)
    assert a.pending is not b.pending  # one count per server
    with pytest.raises(ValueError, match="header_timeout"):
        GuardSettings(header_timeout=0)
    with pytest.raises(ValueError, match="max_header_connections"):
        GuardSettings(max_header_connections=0)
    for bad in ({"header_timeout": 0.0}, {"max_header_connections": 0}):
        with pytest.raises(ValueError):
            GatewayConfig(**bad).check()
