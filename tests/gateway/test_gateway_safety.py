"""Safe by default: API keys (401 in each client's format), keys from the environment, CORS only
for listed origins, body caps, the per-key reply limit, and no non-loopback bind without a key."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from gateway_harness import Gateway, Harness, agui_body, start_gateway

pytestmark = pytest.mark.integration

ORIGIN = "http://app.example.test"


@pytest.fixture(scope="module")
def locked(gw_harness: Harness, gw_agents: object) -> Iterator[Gateway]:
    gw_harness.env["AGENT_STREAM_GATEWAY_KEYS"] = "env-key-1, env-key-2"
    try:
        g = start_gateway(
            gw_harness,
            "--agent",
            "echo",
            "--api-key",
            "k-one",
            "--api-key",
            "k-two",
            "--cors-origin",
            ORIGIN,
            "--max-replies-per-key",
            "1",
            "--max-body-bytes",
            "4096",
        )
    finally:
        gw_harness.env.pop("AGENT_STREAM_GATEWAY_KEYS", None)
    yield g
    g.proc.stop()


def test_non_loopback_bind_needs_a_key(gw_harness: Harness) -> None:
    p = gw_harness.cli("gateway", "--host", "0.0.0.0", "--port", "1")
    code, out, err = p.finish(30)
    assert code == 2 and "--api-key" in err and "gateway:" not in out


def test_keys_required_and_errors_in_each_format(locked: Gateway) -> None:
    with httpx.Client(base_url=locked.url, timeout=30) as c:
        r = c.get("/v1/models")
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
        r = c.post("/agui", json=agui_body("hi"))
        assert r.status_code == 401 and r.json()["type"] == "RUN_ERROR"
        r = c.post("/api/chat", json={})
        assert r.status_code == 401 and r.json()["type"] == "error"
        r = c.post("/a2a/echo", json={"jsonrpc": "2.0", "id": 1, "method": "message/send"})
        assert r.status_code == 401 and r.json()["jsonrpc"] == "2.0"
        r = c.get("/v1/stream", params={"q": "hi"}, headers={"authorization": "Bearer nope"})
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        # public: the page, its assets, liveness, the A2A card
        for path in ("/", "/static/app.js", "/healthz", "/a2a/echo/.well-known/agent-card.json"):
            assert c.get(path).status_code == 200, path
        for key in ("k-one", "k-two", "env-key-1", "env-key-2"):
            r = c.get("/v1/models", headers={"authorization": f"Bearer {key}"})
            assert r.status_code == 200 and r.json()["data"][0]["id"] == "echo", key
        r = c.get("/v1/stream", params={"q": "with a key"}, headers={"x-api-key": "k-one"})
        assert r.status_code == 200 and "with a key" in r.text


def test_cors_only_for_listed_origins(locked: Gateway, gateway: Gateway) -> None:
    pre = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type",
    }
    with httpx.Client(timeout=30) as c:
        ok = c.options(locked.url + "/api/chat", headers={"origin": ORIGIN, **pre})
        assert ok.status_code == 200
        assert ok.headers["access-control-allow-origin"] == ORIGIN
        bad = c.options(locked.url + "/api/chat", headers={"origin": "http://evil.test", **pre})
        assert bad.headers.get("access-control-allow-origin") is None
        r = c.get(locked.url + "/healthz", headers={"origin": "http://evil.test"})
        assert r.headers.get("access-control-allow-origin") is None
        r = c.get(locked.url + "/healthz", headers={"origin": ORIGIN})
        assert r.headers["access-control-allow-origin"] == ORIGIN
        # a browser's A2A 1.0 client sends A2A-Version: the preflight allows it
        a2a = {**pre, "access-control-request-headers": "authorization,content-type,a2a-version"}
        ok = c.options(locked.url + "/a2a/echo", headers={"origin": ORIGIN, **a2a})
        assert ok.status_code == 200, ok.text
        assert "a2a-version" in ok.headers["access-control-allow-headers"].lower()
        # a gateway without --cors-origin sends no CORS header to anyone
        r = c.get(gateway.url + "/healthz", headers={"origin": ORIGIN})
        assert "access-control-allow-origin" not in r.headers


def test_body_cap_and_per_key_limit(locked: Gateway) -> None:
    one = {"authorization": "Bearer k-one"}
    with httpx.Client(base_url=locked.url, timeout=30) as c:
        r = c.post("/v1/stream", json={"question": "x" * 5000}, headers=one)
        assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_large"
        with c.stream(
            "GET", "/v1/stream", params={"q": "[n=500 rate=50] hold"}, headers=one
        ) as first:
            rid = first.headers["x-reply-id"]
            r = c.get("/v1/stream", params={"q": "second"}, headers=one)
            assert r.status_code == 429 and r.json()["error"]["code"] == "busy"
            r = c.post(
                "/v1/chat/completions",
                headers=one,
                json={"model": "echo", "messages": [{"role": "user", "content": "third"}]},
            )
            assert r.status_code == 429 and r.json()["error"]["type"] == "rate_limit_error"
            r = c.get(
                "/v1/stream", params={"q": "other key"}, headers={"authorization": "Bearer k-two"}
            )
            assert r.status_code == 200
            assert c.delete(f"/v1/replies/{rid}", headers=one).json()["status"] == "cancelled"
        # the cancelled reply no longer counts against its key: the next one is taken
        deadline = time.monotonic() + 10
        while (r := c.get("/v1/stream", params={"q": "again"}, headers=one)).status_code == 429:
            assert time.monotonic() < deadline, "the ended reply still counts against its key"
            time.sleep(0.05)
        assert r.status_code == 200 and "again" in r.text
