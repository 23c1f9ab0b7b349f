"""Each endpoint of a real `agent-stream gateway` in front of a real `serve`, read by each format's
own client: the openai SDK (streaming and not), ag_ui.core models + the ordering rules, the AI
SDK chunks (and `ai`'s reader when installed), httpx for the native stream and accept routing."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from gateway_harness import Gateway, agui_body, sse_events
from wire_checks import agui_text, aisdk_text, check_agui, node_available, node_verify

from agent_stream.assemble import Assembler
from agent_stream.message import Message

pytestmark = pytest.mark.integration

QUESTION = "How do agents stream?"


@pytest.fixture(scope="module")
def reference(gateway: Gateway) -> Any:
    """The reply to QUESTION through the native stream, assembled: the text every wire carries."""
    with gateway.client() as c:
        r = c.get("/v1/stream", params={"agent": "llm", "q": QUESTION})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    evs = sse_events(r.text)
    rid = r.headers["x-reply-id"]
    assert [e["id"] for e in evs] == [f"{rid}:{i}" for i in range(len(evs))]
    a = Assembler()
    for e in evs:
        a.feed(Message.from_dict(e["data"]))
    t = a.transcript
    assert t.status == "completed" and t.text()
    return t


def test_openai_sdk_streaming_with_usage(gateway: Gateway, reference: Any) -> None:
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key="unused")
    stream = client.chat.completions.create(
        model="llm",
        messages=[{"role": "user", "content": QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, reasoning, finish, usage = [], [], None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for ch in chunk.choices:
            text.append(ch.delta.content or "")
            reasoning.append(getattr(ch.delta, "reasoning_content", None) or "")
            finish = ch.finish_reason or finish
    assert "".join(text) == reference.text()
    assert "search_docs" in "".join(reasoning)  # tool progress as reasoning_content
    assert finish == "stop"
    assert usage is not None and usage.completion_tokens > 0


def test_openai_sdk_not_streaming_and_models(gateway: Gateway, reference: Any) -> None:
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key="unused")
    models = {m.id for m in client.models.list()}
    assert {"llm", "echo"} <= models
    done = client.chat.completions.create(
        model="llm",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": QUESTION},
        ],
    )
    # a system prompt travels as history before the question: another reply script may answer
    assert done.object == "chat.completion" and done.choices[0].finish_reason == "stop"
    assert done.choices[0].message.content
    plain = client.chat.completions.create(
        model="llm", messages=[{"role": "user", "content": QUESTION}]
    )
    assert plain.choices[0].message.content == reference.text()
    assert plain.usage is not None and plain.usage.total_tokens > 0


def test_openai_errors_are_openai_errors(gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=gateway.url + "/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="nobody", messages=[{"role": "user", "content": "hi"}])
    assert info.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="llm", messages=[])


def test_agui_events_valid_ordered_lf(gateway: Gateway, reference: Any) -> None:
    with gateway.client() as c:
        r = c.post(
            "/agui", json=agui_body(QUESTION, agent="llm"), headers={"accept": "text/event-stream"}
        )
    assert r.status_code == 200 and "\r" not in r.text
    evs = sse_events(r.text)
    data = [e["data"] for e in evs]
    check_agui(data)
    assert data[0]["threadId"] == "thread-1" and data[0]["runId"] == "run-1"
    assert data[-1]["type"] == "RUN_FINISHED"
    assert agui_text(data) == reference.text()
    assert {"TOOL_CALL_START", "TOOL_CALL_RESULT", "REASONING_MESSAGE_CONTENT"} <= {
        d["type"] for d in data
    }
    if node_available():
        verdict = node_verify("agui", data)
        assert verdict["ok"], verdict


def test_aisdk_stream_and_resume_204(gateway: Gateway, reference: Any) -> None:
    body = {
        "id": "chat-wires",
        "trigger": "submit-message",
        "agent": "llm",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": QUESTION}]}],
    }
    with gateway.client() as c:
        r = c.post("/api/chat", json=body)
        assert r.status_code == 200
        assert r.headers["x-vercel-ai-ui-message-stream"] == "v1"
        chunks = [e["data"] for e in sse_events(r.text)]
        assert chunks[0]["type"] == "start" and chunks[-1] == "[DONE]"
        assert any(isinstance(x, dict) and x.get("type") == "finish" for x in chunks)
        assert aisdk_text(chunks) == reference.text()
        # the reply is over: nothing to resume
        assert c.get("/api/chat/chat-wires/stream").status_code == 204
        assert c.get("/api/chat/never-seen/stream").status_code == 204
    if node_available():
        verdict = node_verify("aisdk", chunks[:-1])
        assert verdict["ok"], verdict
        assert verdict["text"] == reference.text()


def test_native_post_jsonl_and_accept_routing(gateway: Gateway, reference: Any) -> None:
    with gateway.client() as c:
        r = c.post(
            "/v1/stream",
            json={"agent": "llm", "question": QUESTION},
            headers={"accept": "application/x-ndjson"},
        )
        assert r.headers["content-type"].startswith("application/x-ndjson")
        a = Assembler()
        for line in r.text.splitlines():
            a.feed(Message.from_json(line))
        assert a.transcript.text() == reference.text()

        r = c.get("/v1/stream", params={"agent": "llm", "q": QUESTION, "accept": "agui"})
        data = [e["data"] for e in sse_events(r.text)]
        check_agui(data)
        assert agui_text(data) == reference.text()

        r = c.get(
            "/v1/stream", params={"agent": "llm", "q": QUESTION}, headers={"accept": "channels"}
        )
        assert r.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(x) for x in r.text.splitlines()]
        assert lines and all(isinstance(x, dict) for x in lines)

        r = c.get("/v1/stream", params={"agent": "llm", "q": QUESTION, "accept": "standard"})
        assert sse_events(r.text)[-1]["data"] == "[DONE]"

        r = c.get("/v1/stream", params={"q": QUESTION, "accept": "nonsense"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "unknown_accept"


def test_errors_json_in_each_format(gateway: Gateway) -> None:
    big = "x" * (2 << 20)
    with gateway.client() as c:
        r = c.post("/agui", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["type"] == "RUN_ERROR"
        r = c.post("/api/chat", content=big.encode())
        assert r.status_code == 413 and r.json()["type"] == "error"
        r = c.post(
            "/v1/chat/completions",
            json={"model": "llm", "messages": [{"role": "user", "content": "q" * (70 * 1024)}]},
        )
        assert r.status_code == 413 and r.json()["error"]["code"] == "question_too_large"
        r = c.get("/v1/stream", params={"agent": "nobody", "q": "hi"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
        r = c.delete("/v1/replies/r000")
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_reply"
        health = c.get("/healthz").json()
        assert health["status"] == "ok" and health["open_replies"] >= 0


def test_access_log_one_line_per_request(gateway: Gateway) -> None:
    with httpx.Client(base_url=gateway.url) as c:
        r = c.get("/v1/stream", params={"agent": "echo", "q": "log me"})
    rid = r.headers["x-reply-id"]
    import time

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and rid not in gateway.proc.stderr:
        time.sleep(0.05)
    lines = [x for x in gateway.proc.stderr.splitlines() if f"reply={rid}" in x]
    assert len(lines) == 1, lines
    line = lines[0]
    for part in (
        "GET /v1/stream",
        "agent=echo",
        "format=native",
        "status=200",
        "bytes=",
        "chat_messages=",
        "ttfb_ms=",
        "ms=",
    ):
        assert part in line, line


def test_typescript_clients_over_http(gateway: Gateway, reference: Any) -> None:
    """@ag-ui/client's HttpAgent on POST /agui and ai's DefaultChatTransport on POST /api/chat,
    as an app would use them."""
    if not node_available():
        pytest.skip("the conformance suite's node_modules are not installed (make conformance)")
    from wire_checks import node_client

    agui = node_client("agui-http", gateway.url + "/agui", QUESTION, "llm")
    assert agui["ok"], agui
    assert agui["text"] == reference.text() and agui["last"] == "RUN_FINISHED"
    assert "chat protocol" in agui["reasoning"]
    ui = node_client("aisdk-http", gateway.url + "/api/chat", QUESTION, "llm")
    assert ui["ok"], ui
    assert ui["text"] == reference.text() and "chat protocol" in ui["reasoning"]
