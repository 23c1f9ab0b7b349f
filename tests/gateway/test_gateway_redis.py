"""The Redis Streams resume store, against a real redis-server this test starts on 127.0.0.1:
the store's contract, and two gateways sharing it, a client cut off from one resuming on the
other (the ``redis_url`` fixture, tests/conftest.py). Skipped, saying why, only where
redis-server is not installed (Debian package
redis-server; `make test` installs it when missing)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest
from gateway_harness import Gateway, Harness, agui_body, sse_events, start_gateway
from wire_checks import agui_text, check_agui

from agent_stream.gateway.store import end_entry

pytestmark = pytest.mark.integration


async def test_redis_store_contract(redis_url: str) -> None:
    from agent_stream.gateway.redis_store import RedisStore

    a = RedisStore(redis_url, window=2, block_ms=100)
    b = RedisStore(redis_url, window=2, block_ms=100)  # another process's view
    try:
        await a.create("r-contract", {"format": "agui", "options": {"run_id": "x"}})
        await a.alias("agui-run:x", "r-contract")
        assert await b.resolve("agui-run:x") == "r-contract"
        assert await b.meta("r-contract") == {"format": "agui", "options": {"run_id": "x"}}
        await a.append("r-contract", ['{"type":"text"}'])

        async def follow() -> list[str]:
            return [e async for e in b.read("r-contract")]

        reader = asyncio.create_task(follow())
        await asyncio.sleep(0.2)
        assert not reader.done() and not await b.ended("r-contract")
        assert await b.readers("r-contract", +1) == 1 and await a.readers("r-contract") == 1
        await a.append("r-contract", ['{"type":"thinking"}', end_entry("completed")])
        got = await asyncio.wait_for(reader, 5)
        assert got == ['{"type":"text"}', '{"type":"thinking"}', end_entry("completed")]
        assert await b.ended("r-contract")
        await a.drop("r-contract", 1)
        await asyncio.sleep(1.3)
        assert await b.resolve("r-contract") is None and await b.meta("r-contract") is None
    finally:
        await a.close()
        await b.close()


@pytest.fixture(scope="module")
def pair(gw_harness: Harness, gw_agents: object, redis_url: str) -> Iterator[tuple[Gateway, ...]]:
    gws = tuple(
        start_gateway(
            gw_harness, "--agent", "echo", "--resume-store", redis_url, "--resume-window", "5"
        )
        for _ in range(2)
    )
    yield gws
    for g in gws:
        g.proc.stop()


def test_resume_on_another_gateway(pair: tuple[Gateway, Gateway]) -> None:
    one, two = pair
    expected = "shared" + "".join(f" w{i}" for i in range(1, 81))
    got = []
    buf = ""
    with httpx.Client(timeout=30) as c:
        with c.stream(
            "POST", one.url + "/agui", json=agui_body("[n=80 rate=40] shared", run_id="redis-run")
        ) as r:
            rid = r.headers["x-reply-id"]
            for piece in r.iter_text():
                buf += piece
                got = sse_events(buf[: buf.rfind("\n\n") + 2])
                if sum(e["data"]["type"] == "TEXT_MESSAGE_CONTENT" for e in got) >= 3:
                    break
        # the connection to gateway one is gone; gateway two picks the reply up
        cursor = got[-1]["id"]
        assert cursor.startswith(rid + ":")
        res = c.post(two.url + "/agui", headers={"last-event-id": cursor}, json={})
        assert res.status_code == 200 and res.headers["x-reply-id"] == rid
        rest = sse_events(res.text)
    preface = [e["data"] for e in rest if e["id"] == cursor]
    after = [e["data"] for e in rest if e["id"] != cursor]
    assert after[-1]["type"] == "RUN_FINISHED"
    check_agui(preface + after)
    assert agui_text([e["data"] for e in got] + after) == expected


def test_stop_through_another_gateway(pair: tuple[Gateway, Gateway]) -> None:
    one, two = pair
    with (
        httpx.Client(timeout=30) as c,
        c.stream("GET", one.url + "/v1/stream", params={"q": "[n=1000 rate=50] far"}) as r,
    ):
        rid = r.headers["x-reply-id"]
        buf = ""
        stopped_at = None
        for piece in r.iter_text():
            buf += piece
            if stopped_at is None and buf.count("\n\n") >= 5:
                stopped_at = time.monotonic()
                d = c.delete(f"{two.url}/v1/replies/{rid}")
                assert d.status_code == 202 and d.json()["status"] == "cancelling"
        ended = time.monotonic()
    assert stopped_at is not None and ended - stopped_at < 2.0
    last = sse_events(buf)[-1]["data"]
    assert last["props"]["event"] == "stream_end"
    assert last["props"]["data"]["status"] == "cancelled"


async def test_a_live_read_says_when_it_was_quiet_for_idle_seconds(redis_url: str) -> None:
    from agent_stream.gateway.redis_store import RedisStore

    a = RedisStore(redis_url, window=2, block_ms=1000)
    try:
        await a.create("r-idle", {"format": "native", "options": {}})
        got: list[tuple[float, str]] = []
        start = time.monotonic()

        async def follow() -> None:
            async for e in a.read("r-idle", idle=0.15):
                got.append((time.monotonic() - start, e))

        reader = asyncio.create_task(follow())
        await asyncio.sleep(0.5)
        await a.append("r-idle", ['{"type":"text"}', end_entry("completed")])
        await asyncio.wait_for(reader, 5)
        quiet = [t for t, e in got if e == ""]
        assert 2 <= len(quiet) <= 4 and quiet[0] >= 0.14  # each after 0.15 s of silence
        assert [e for _, e in got if e] == ['{"type":"text"}', end_entry("completed")]
    finally:
        await a.close()
