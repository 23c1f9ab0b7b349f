"""Resume with Last-Event-ID, and disconnect vs stop, on a real gateway in front of real agents.

A resumed stream, put after what the client had, equals the uninterrupted one; on its own it
passes the AG-UI ordering rules and @ag-ui/client's verifyEvents, or the AI SDK's
readUIMessageStream (the reopening preface). A dropped connection keeps the reply running for
the resume window, then cancels it; a stop cancels it at once.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from gateway_harness import (
    WINDOW,
    Gateway,
    agui_body,
    assert_echo_stopped,
    echo_produced,
    sse_events,
)
from wire_checks import agui_text, aisdk_text, check_agui, node_available, node_verify

pytestmark = pytest.mark.integration


def _events(r: httpx.Response) -> list[dict[str, Any]]:
    return sse_events(r.text)


def _split(resumed: list[dict[str, Any]], cursor: str) -> tuple[list[Any], list[Any]]:
    """(preface, rest) of a resumed stream: the preface carries the cursor as its id."""
    i = 0
    while i < len(resumed) and resumed[i]["id"] == cursor:
        i += 1
    return [e["data"] for e in resumed[:i]], resumed[i:]


def test_agui_resume_at_every_kind_of_cut(gateway: Gateway) -> None:
    with gateway.client() as c:
        r = c.post(
            "/agui", json=agui_body("How do agents stream?", run_id="resume-agui", agent="llm")
        )
        full = _events(r)
        kinds = [e["data"]["type"] for e in full]
        cuts = sorted(
            {
                kinds.index("TEXT_MESSAGE_CONTENT") + 2,  # mid-message
                kinds.index("TOOL_CALL_ARGS"),  # mid tool call
                kinds.index("REASONING_MESSAGE_CONTENT"),  # mid reasoning
                kinds.index("STEP_STARTED"),
                0,
                len(full) - 2,
            }
        )
        # resume at every cut first (the shared gateway's window is short), check afterwards
        resumed = {}
        for k in cuts:
            res = c.post("/agui", headers={"last-event-id": full[k]["id"]}, json={})
            assert res.status_code == 200, (k, res.text)
            resumed[k] = _events(res)
        for k in cuts:
            preface, rest = _split(resumed[k], full[k]["id"])
            assert rest == full[k + 1 :], f"cut at {k}"
            assert all(p["type"].endswith(("START", "STARTED")) for p in preface)
            alone = preface + [e["data"] for e in rest]
            check_agui(alone)
            if node_available():
                verdict = node_verify("agui", alone)
                assert verdict["ok"], (k, verdict)
            before = [e["data"] for e in full[: k + 1]]
            assert agui_text(before) + agui_text([e["data"] for e in rest]) == agui_text(
                [e["data"] for e in full]
            )


def test_aisdk_resume_mid_message_read_by_ai(gateway: Gateway) -> None:
    body = {
        "id": "chat-resume",
        "agent": "llm",
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "parts": [{"type": "text", "text": "How do agents stream?"}],
            }
        ],
    }
    with gateway.client() as c:
        r = c.post("/api/chat", json=body)
        full = _events(r)
        kinds = [e["data"]["type"] if isinstance(e["data"], dict) else e["data"] for e in full]
        cuts = (kinds.index("text-delta") + 3, kinds.index("reasoning-delta") + 1)
        resumed = {}
        for k in cuts:
            res = c.get("/api/chat/chat-resume/stream", headers={"last-event-id": full[k]["id"]})
            assert res.headers["x-vercel-ai-ui-message-stream"] == "v1"
            resumed[k] = _events(res)
        for k in cuts:
            preface, rest = _split(resumed[k], full[k]["id"])
            assert rest == full[k + 1 :]
            assert preface[0]["type"] == "start"
            alone = preface + [e["data"] for e in rest if e["data"] != "[DONE]"]
            if node_available():
                verdict = node_verify("aisdk", alone)
                assert verdict["ok"], verdict
            before = [e["data"] for e in full[: k + 1]]
            assert aisdk_text(before) + aisdk_text([e["data"] for e in rest]) == aisdk_text(
                [e["data"] for e in full]
            )


def _read_some(
    c: httpx.Client, method: str, url: str, n: int, **kw: Any
) -> tuple[str, list[dict[str, Any]]]:
    """Open a stream, read ``n`` events, drop the connection: (reply id, events read)."""
    got: list[dict[str, Any]] = []
    buf = ""
    with c.stream(method, url, **kw) as r:
        assert r.status_code == 200, r.read()
        rid = r.headers["x-reply-id"]
        for piece in r.iter_text():
            buf += piece
            while "\n\n" in buf:
                block, buf = buf.split("\n\n", 1)
                got.extend(sse_events(block + "\n\n"))
            if len(got) >= n:
                break
    return rid, got


def test_cut_mid_message_then_resume_live(gateway: Gateway) -> None:
    """A real cut: the connection drops mid-message, the reply goes on, the client resumes."""
    # 5 s of reply: the agent's ChatMessages to the gateway (a lean asker) come up to the gather
    # window (1.75 s) apart, so a shorter one could be over by the time the client resumes
    q = "[n=200 rate=40] live"
    expected = "live" + "".join(f" w{i}" for i in range(1, 201))
    with gateway.client() as c:
        _, got = _read_some(
            c, "POST", "/agui", 6, json=agui_body(q, run_id="cut-live", agent="echo")
        )
        assert any(e["data"]["type"] == "TEXT_MESSAGE_CONTENT" for e in got)
        time.sleep(0.3)
        res = c.post("/agui", headers={"last-event-id": got[-1]["id"]}, json={})
        preface, rest = _split(_events(res), got[-1]["id"])
    data = [e["data"] for e in got] + [e["data"] for e in rest]
    assert data[-1]["type"] == "RUN_FINISHED"
    assert agui_text(data) == expected
    check_agui(preface + [e["data"] for e in rest])


def _stats(c: httpx.Client, rid: str) -> dict[str, Any]:
    r = c.get(f"/v1/replies/{rid}")
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


def test_disconnect_keeps_running_for_the_window_then_cancels(
    gateway: Gateway, gw_agents: dict[str, Any]
) -> None:
    echo = gw_agents["echo"][0]
    with gateway.client() as c:
        rid, got = _read_some(
            c, "GET", "/v1/stream", 4, params={"agent": "echo", "q": "[n=1000 rate=50] away"}
        )
        cut = time.monotonic()
        at_cut = echo_produced(echo, "away")
        time.sleep(WINDOW / 2)
        assert _stats(c, rid)["status"] is None  # still running, nobody reading
        assert echo_produced(echo, "away") > at_cut  # the agent keeps producing
        while time.monotonic() - cut < WINDOW + 2.0:
            if _stats(c, rid)["status"] is not None:
                break
            time.sleep(0.1)
        stats = _stats(c, rid)
        assert stats["status"] == "cancelled" and "abandoned" in stats["error"]
        assert time.monotonic() - cut >= WINDOW - 0.1
        assert_echo_stopped(echo, "away", time.monotonic())  # the cancel reached the agent
        # what it produced meanwhile is still resumable, and the stream says cancelled
        res = c.get("/v1/stream", headers={"last-event-id": got[-1]["id"]})
        last = _events(res)[-1]["data"]
        assert last["props"]["event"] == "stream_end"
        assert last["props"]["data"]["status"] == "cancelled"


def test_reconnect_within_window_completes(gateway: Gateway) -> None:
    with gateway.client() as c:
        rid, got = _read_some(
            c, "GET", "/v1/stream", 4, params={"agent": "echo", "q": "[n=100 rate=50] back"}
        )
        time.sleep(WINDOW / 2)
        res = c.get("/v1/stream", headers={"last-event-id": got[-1]["id"]})
        evs = [e["data"] for e in got] + [e["data"] for e in _events(res)]
        assert evs[-1]["props"]["data"]["status"] == "completed"
        assert _stats(c, rid)["status"] == "completed"


def test_stop_cancels_at_once(gateway: Gateway, gw_agents: dict[str, Any]) -> None:
    with (
        gateway.client() as c,
        c.stream(
            "POST",
            "/agui",
            json=agui_body("[n=1000 rate=50] halted by a stop", run_id="stop-run", agent="echo"),
        ) as r,
    ):
        buf = ""
        stopped_at = None
        for piece in r.iter_text():
            buf += piece
            if stopped_at is None and buf.count("TEXT_MESSAGE_CONTENT") >= 3:
                stopped_at = time.monotonic()
                # the AG-UI run id names the reply too
                with gateway.client() as c2:
                    d = c2.delete("/v1/replies/stop-run")
                assert d.status_code == 200 and d.json()["status"] == "cancelled"
        ended = time.monotonic()
    assert stopped_at is not None and ended - stopped_at < 1.5
    last = sse_events(buf)[-1]["data"]
    assert last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "cancelled"
    check_agui([e["data"] for e in sse_events(buf)])
    assert_echo_stopped(gw_agents["echo"][0], "halted", stopped_at)  # not only the stream stopped
