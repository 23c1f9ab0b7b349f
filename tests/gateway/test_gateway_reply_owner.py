"""A reply is its caller's, and its id is no capability: real gateways (`agent-stream gateway`)
in front of the echo agent, all on 127.0.0.1.

- with two API keys, every route that takes a reply id (stop, figures, resume by
  ``Last-Event-ID`` on each endpoint, the AI SDK chat's resume) answers the other key exactly as
  it answers an id that never existed, and leaves the reply running; its owner reads, resumes
  and stops it;
- the names a client picks (an AG-UI run id, an AI SDK chat id) are each caller's own: two keys
  picking the same one reach their own replies;
- without keys the owner is the client's address (127.0.0.2 is another client than 127.0.0.1);
- two gateways sharing Redis: the record carries its owner, the other key is refused on the
  other gateway too, and a record without an owner (written before replies had one) is no
  one's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from gateway_harness import Gateway, Harness, agui_body, sse_events, start_gateway

from agent_stream.gateway.store import end_entry

pytestmark = pytest.mark.integration

K1 = {"authorization": "Bearer k1"}
K2 = {"authorization": "Bearer k2"}
SLOW = "[n=1000 rate=50]"  # 20 s of reply: still running while the test looks at it
UNKNOWN = "r" + "0" * 24  # shaped like a reply id, never one


@pytest.fixture(scope="module")
def keyed(gw_harness: Harness, gw_agents: object) -> Iterator[Gateway]:
    g = start_gateway(
        gw_harness, "--agent", "echo", "--api-key", "k1", "--api-key", "k2", "--resume-window", "10"
    )
    yield g
    g.proc.stop()


def _first_events(pieces: Iterator[str], n: int = 3) -> str:
    """A stream's text once it holds ``n`` events (the reply is running); the rest stays in
    ``pieces``."""
    buf = ""
    for piece in pieces:
        buf += piece
        if buf.count("\n\n") >= n:
            return buf
    return buf


def _answers(c: httpx.Client, who: dict[str, str], name: str) -> list[tuple[str, int, str]]:
    """(route, status, body with ``name`` written ID) of every route that takes a reply id."""
    resume = {**who, "last-event-id": f"{name}:0"}
    asked = [
        ("GET /v1/replies", c.get(f"/v1/replies/{name}", headers=who)),
        ("DELETE /v1/replies", c.delete(f"/v1/replies/{name}", headers=who)),
        ("GET /v1/stream", c.get("/v1/stream", headers=resume)),
        ("POST /v1/stream", c.post("/v1/stream", headers=resume, json={})),
        ("POST /v1/chat/completions", c.post("/v1/chat/completions", headers=resume, json={})),
        ("POST /agui", c.post("/agui", headers=resume, json={})),
        ("POST /api/chat", c.post("/api/chat", headers=resume, json={})),
        ("GET /api/chat/{id}/stream", c.get(f"/api/chat/{name}/stream", headers=resume)),
    ]
    return [(route, r.status_code, r.text.replace(name, "ID")) for route, r in asked]


def _end_status(text: str) -> str:
    """The final status of a native Message stream."""
    last = sse_events(text)[-1]["data"]
    assert last["props"]["event"] == "stream_end", last
    status: str = last["props"]["data"]["status"]
    return status


def test_another_key_is_told_a_reply_is_unknown_on_every_route(keyed: Gateway) -> None:
    with (
        keyed.client() as c,
        c.stream("GET", "/v1/stream", params={"q": f"{SLOW} mine"}, headers=K1) as r,
    ):
        assert r.status_code == 200
        rid = r.headers["x-reply-id"]
        pieces = r.iter_text()
        got = _first_events(pieces)
        theirs = _answers(c, K2, rid)
        never = _answers(c, K2, UNKNOWN)
        assert theirs == never, (theirs, never)
        assert all(status == 404 for _, status, _ in theirs), theirs
        # each in its wire's own error format, the reply id nowhere
        kinds = {route: json.loads(body) for route, _, body in theirs}
        assert kinds["POST /v1/chat/completions"]["error"]["code"] == "unknown_reply"
        assert kinds["POST /agui"]["type"] == "RUN_ERROR"
        assert kinds["POST /api/chat"]["type"] == "error"
        assert kinds["GET /v1/replies"]["error"]["code"] == "unknown_reply"
        # the other key's stop stopped nothing; the owner reads, resumes and stops it
        mine = c.get(f"/v1/replies/{rid}", headers=K1)
        assert mine.status_code == 200 and mine.json()["status"] is None, mine.text
        with c.stream("GET", "/v1/stream", headers={**K1, "last-event-id": f"{rid}:0"}) as again:
            assert again.status_code == 200 and again.headers["x-reply-id"] == rid
            assert f"id: {rid}:1" in _first_events(again.iter_text(), 1)
        stop = c.delete(f"/v1/replies/{rid}", headers=K1)
        assert stop.status_code == 200 and stop.json() == {"id": rid, "status": "cancelled"}
        got += "".join(pieces)
    assert _end_status(got) == "cancelled"


def test_names_a_client_picks_are_its_callers_own(keyed: Gateway) -> None:
    with (
        keyed.client() as c,
        c.stream("POST", "/agui", json=agui_body(f"{SLOW} one", run_id="same"), headers=K1) as r1,
        c.stream("POST", "/agui", json=agui_body(f"{SLOW} two", run_id="same"), headers=K2) as r2,
    ):
        one, two = r1.headers["x-reply-id"], r2.headers["x-reply-id"]
        assert one != two
        assert c.get("/v1/replies/same", headers=K1).json()["id"] == one
        assert c.get("/v1/replies/same", headers=K2).json()["id"] == two
        # the second key's stop by run id stops its own reply, not the first key's
        stop = c.delete("/v1/replies/same", headers=K2)
        assert stop.json() == {"id": two, "status": "cancelled"}, stop.text
        assert c.get(f"/v1/replies/{one}", headers=K1).json()["status"] is None
        assert c.delete("/v1/replies/same", headers=K1).json() == {"id": one, "status": "cancelled"}
        assert "RUN_FINISHED" in "".join(r1.iter_text()) + "".join(r2.iter_text())
    chat = {
        "id": "chat-shared",
        "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": SLOW}]}],
    }
    with keyed.client() as c, c.stream("POST", "/api/chat", json=chat, headers=K1) as r:
        rid = r.headers["x-reply-id"]
        # another key's resume of the chat: no reply of its own runs there
        assert c.get("/api/chat/chat-shared/stream", headers=K2).status_code == 204
        with c.stream("GET", "/api/chat/chat-shared/stream", headers=K1) as again:
            assert again.status_code == 200 and again.headers["x-reply-id"] == rid
        assert c.delete("/v1/replies/chat-shared", headers=K2).status_code == 404
        assert c.delete("/v1/replies/chat-shared", headers=K1).json()["id"] == rid


def test_without_keys_a_reply_is_its_client_addresss(gateway: Gateway) -> None:
    other = httpx.Client(
        base_url=gateway.url, timeout=30, transport=httpx.HTTPTransport(local_address="127.0.0.2")
    )
    with (
        other,
        gateway.client() as c,
        c.stream("GET", "/v1/stream", params={"agent": "echo", "q": f"{SLOW} here"}) as r,
    ):
        rid = r.headers["x-reply-id"]
        _first_events(r.iter_text())
        assert _answers(other, {}, rid) == _answers(other, {}, UNKNOWN)
        assert c.get(f"/v1/replies/{rid}").json()["status"] is None
        # the other address may still ask questions of its own
        mine = other.get("/v1/stream", params={"agent": "echo", "q": "from elsewhere"})
        assert mine.status_code == 200 and "from elsewhere" in mine.text
        assert c.delete(f"/v1/replies/{rid}").json()["status"] == "cancelled"


@pytest.fixture(scope="module")
def shared(gw_harness: Harness, gw_agents: object, redis_url: str) -> Iterator[tuple[Gateway, ...]]:
    keys = ("--api-key", "k1", "--api-key", "k2")
    gws = tuple(
        start_gateway(gw_harness, "--agent", "echo", "--resume-store", redis_url, *keys)
        for _ in range(2)
    )
    yield gws
    for g in gws:
        g.proc.stop()


async def _store_call(url: str, call: str, *args: Any) -> Any:
    from agent_stream.gateway.redis_store import RedisStore

    store = RedisStore(url, window=30)
    try:
        return await getattr(store, call)(*args)
    finally:
        await store.close()


def test_redis_records_carry_their_owner(shared: tuple[Gateway, Gateway], redis_url: str) -> None:
    one, two = shared
    with (
        one.client() as c,
        two.client() as c2,
        c.stream("GET", "/v1/stream", params={"q": f"{SLOW} shared"}, headers=K1) as r,
    ):
        rid = r.headers["x-reply-id"]
        pieces = r.iter_text()
        got = _first_events(pieces)
        meta = asyncio.run(_store_call(redis_url, "meta", rid))
        assert isinstance(meta.get("owner"), str) and "k1" not in meta["owner"]
        # on the other gateway, the other key is told the reply is unknown, and stops nothing
        assert _answers(c2, K2, rid) == _answers(c2, K2, UNKNOWN)
        assert c.get(f"/v1/replies/{rid}", headers=K1).json()["status"] is None
        with c2.stream("GET", "/v1/stream", headers={**K1, "last-event-id": f"{rid}:0"}) as again:
            assert again.status_code == 200 and again.headers["x-reply-id"] == rid
        stop = c2.delete(f"/v1/replies/{rid}", headers=K1)
        assert stop.status_code == 202 and stop.json()["status"] == "cancelling"
        got += "".join(pieces)
    assert _end_status(got) == "cancelled"
    # a record without an owner (a gateway from before replies had one) is no one's; the same
    # record with the owner K1's replies carry is K1's
    for name, owner in (("r-legacy", None), ("r-owned", meta["owner"])):
        record = {"format": "native", "options": {}, "sse": True, "agent": "echo"}
        if owner is not None:
            record["owner"] = owner
        asyncio.run(_store_call(redis_url, "create", name, record))
        asyncio.run(_store_call(redis_url, "append", name, [end_entry("completed")]))
    with httpx.Client(base_url=two.url, timeout=30) as c:
        for who in (K1, K2):
            for route, status, _ in _answers(c, who, "r-legacy"):
                assert status == 404, (route, status)
        owned = c.get("/v1/stream", headers={**K1, "last-event-id": "r-owned:0"})
        assert owned.status_code == 200, owned.text
        assert c.get("/v1/stream", headers={**K2, "last-event-id": "r-owned:0"}).status_code == 404
