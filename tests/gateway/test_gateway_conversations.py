"""A client's conversation through the gateway reaches the agent as turns: with the `openai` SDK
(streamed and not), AG-UI and the AI SDK, the responder's ``request.history`` is the client's
messages before the last user message, roles kept; an oversized history is ignored by the agent
and the question still answered; an A2A contextId continues one chat session. Real processes on
127.0.0.1: tests/peers/history_agent.py answers with the history it was given."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import pytest
from agents_harness import PEERS
from gateway_harness import Gateway, Harness, sse_events, start_gateway

from agent_stream.uagents.local._agents import free_port

pytestmark = pytest.mark.integration

MESSAGES = [
    {"role": "system", "content": "Be terse."},
    {"role": "user", "content": "first question"},
    {"role": "assistant", "content": "first answer"},
    {"role": "developer", "content": "Cite sources."},
    {"role": "user", "content": [{"type": "text", "text": "second question"}]},
]
EXPECTED = [
    {"role": "system", "text": "Be terse."},
    {"role": "user", "text": "first question"},
    {"role": "assistant", "text": "first answer"},
    {"role": "system", "text": "Cite sources."},
]


@pytest.fixture(scope="module")
def history_gateway(gw_harness: Harness) -> Iterator[Gateway]:
    port = free_port()
    p = gw_harness.start(
        str(PEERS / "history_agent.py"),
        "--port",
        str(port),
        "--seed",
        f"gateway history {port} {time.time_ns()}",
        "--name",
        "hist",
    )
    address = p.wait_for("address:").split(":", 1)[1].strip()
    gw_harness.wait_up("history agent", port, address)
    yield start_gateway(gw_harness, "--agent", "hist")


def history_in(text: str) -> tuple[list[dict[str, str]], str]:
    """(the history the agent was given, the question) from its answer."""
    found = re.fullmatch(r"history: (\[.*?\])\n\nquestion: (.*)", text, re.S)
    assert found, text
    return json.loads(found.group(1)), found.group(2)


def test_openai_sdk_messages_are_the_agents_history(history_gateway: Gateway) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=history_gateway.url + "/v1", api_key="unused")
    done = client.chat.completions.create(model="hist", messages=MESSAGES)  # type: ignore[arg-type]
    assert history_in(done.choices[0].message.content or "") == (EXPECTED, "second question")
    chunks = client.chat.completions.create(
        model="hist",
        messages=MESSAGES,  # type: ignore[arg-type]
        stream=True,
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert history_in(text) == (EXPECTED, "second question")
    # one message: an empty history (nothing the gateway asked before leaks in)
    one = client.chat.completions.create(
        model="hist", messages=[{"role": "user", "content": "alone"}]
    )
    assert history_in(one.choices[0].message.content or "") == ([], "alone")


def test_agui_and_ai_sdk_messages_are_the_agents_history(history_gateway: Gateway) -> None:
    agui_messages = [{"id": f"m{i}", **m} for i, m in enumerate(MESSAGES)]
    agui_messages[-1]["content"] = "second question"
    body = {
        "threadId": "t",
        "runId": f"run-{uuid4()}",
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
        "messages": agui_messages,
    }
    with history_gateway.client() as http:
        r = http.post("/agui?agent=hist", json=body)
        assert r.status_code == 200, r.text
        text = "".join(
            e["data"].get("delta", "")
            for e in sse_events(r.text)
            if isinstance(e.get("data"), dict) and e["data"].get("type") == "TEXT_MESSAGE_CONTENT"
        )
        assert history_in(text) == (EXPECTED, "second question")

        ui = [
            {
                "id": f"u{i}",
                "role": m["role"] if m["role"] != "developer" else "system",
                "parts": [{"type": "text", "text": t["text"]}],
            }
            for i, (m, t) in enumerate(
                zip(MESSAGES, [*EXPECTED, {"text": "second question"}], strict=True)
            )
        ]
        r = http.post("/api/chat?agent=hist", json={"id": f"chat-{uuid4()}", "messages": ui})
        assert r.status_code == 200, r.text
        text = "".join(
            e["data"].get("delta", "")
            for e in sse_events(r.text)
            if isinstance(e.get("data"), dict) and e["data"].get("type") == "text-delta"
        )
        assert history_in(text) == (EXPECTED, "second question")


def test_an_oversized_or_malformed_history_is_ignored_and_the_question_answered(
    history_gateway: Gateway,
) -> None:
    big = "x" * (300 * 1024)  # over the agent's 256 KiB history cap, under the body limit
    messages = [
        {"role": "user", "content": "q0"},
        {"role": "assistant", "content": big},
        {"role": "user", "content": "still answered"},
    ]
    with history_gateway.client() as http:
        r = http.post("/v1/chat/completions", json={"model": "hist", "messages": messages})
        assert r.status_code == 200, r.text
        content = r.json()["choices"][0]["message"]["content"]
        assert history_in(content) == ([], "still answered")
        # the native endpoint checks its own history's shape
        for bad in ("nope", [{"role": "tool", "text": "x"}], [{"role": "user"}]):
            r = http.post("/v1/stream", json={"agent": "hist", "question": "q", "history": bad})
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_history"
        r = http.post(
            "/v1/stream?format=jsonl",
            json={
                "agent": "hist",
                "question": "q",
                "history": [{"role": "user", "text": "before"}],
            },
        )
        assert r.status_code == 200
        text = "".join(
            json.loads(ln).get("props", {}).get("content", "")
            for ln in r.text.splitlines()
            if ln.strip() and json.loads(ln).get("type") == "text"
        )
        assert history_in(text) == ([{"role": "user", "text": "before"}], "q")


def _send(http: Any, text: str, context_id: str) -> str:
    r = http.post(
        "/a2a/hist",
        json={
            "jsonrpc": "2.0",
            "id": str(uuid4()),
            "method": "message/send",
            "params": {
                "message": {
                    "role": "user",
                    "messageId": str(uuid4()),
                    "contextId": context_id,
                    "parts": [{"kind": "text", "text": text}],
                }
            },
        },
    )
    assert r.status_code == 200, r.text
    task = r.json()["result"]
    return "".join(
        p.get("text", "")
        for a in task.get("artifacts") or []
        if a.get("name") == "text"
        for p in a["parts"]
    )


def test_an_a2a_context_is_one_conversation(history_gateway: Gateway) -> None:
    ctx, other = str(uuid4()), str(uuid4())
    with history_gateway.client() as http:
        first = _send(http, "first task", ctx)
        assert history_in(first) == ([], "first task")
        second = _send(http, "second task", ctx)
        history, question = history_in(second)
        assert question == "second task"
        assert history == [
            {"role": "user", "text": "first task"},
            {"role": "assistant", "text": first},
        ]
        assert history_in(_send(http, "elsewhere", other)) == ([], "elsewhere")
