"""An agent's refusal reaches an HTTP client as an HTTP error in the client's own format (503
with Retry-After when the agent is at its limit, 413 when the question is too large for it),
not as a 200 stream holding only an error; a reply that opens normally streams as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from inprocess_gateway import serve_gateway

from agent_stream.message import error, event, text

# what an agent's refusal decodes to: the stream's start event, the error, the stream's end
START = event("stream_start", {"request_id": "q1"})
BUSY = [
    START,
    error("This agent is answering as many questions as it can (64); ask again shortly.", "busy"),
    event("stream_end", {"request_id": "q1"}),
]


async def post(base: str, path: str, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base, timeout=10) as c:
        return await c.post(path, json=body)


def openai(stream: bool = True) -> dict[str, Any]:
    return {"model": "llm", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}


AGUI = {
    "threadId": "t",
    "runId": "r",
    "state": {},
    "tools": [],
    "context": [],
    "forwardedProps": {"agent": "llm"},
    "messages": [{"id": "u", "role": "user", "content": "hi"}],
}


async def test_a_busy_agent_is_a_503_with_retry_after_in_each_clients_format(
    tmp_path: Path,
) -> None:
    async with serve_gateway(tmp_path, ["llm"], BUSY) as (base, _):
        for body in (openai(True), openai(False)):
            r = await post(base, "/v1/chat/completions", body)
            assert r.status_code == 503 and r.headers["retry-after"] == "2"
            err = r.json()["error"]
            assert err["code"] == "agent_busy" and "ask again shortly" in err["message"]
        r = await post(base, "/agui", AGUI)
        assert r.status_code == 503 and r.headers["retry-after"] == "2"
        assert r.json()["type"] == "RUN_ERROR" and r.json()["code"] == "agent_busy"


async def test_a_question_too_large_for_the_agent_is_a_413(tmp_path: Path) -> None:
    refusal = [
        START,
        error(
            "The question is 900 bytes; this agent answers questions of at most 100 bytes.",
            "question_too_large",
        ),
    ]
    async with serve_gateway(tmp_path, ["llm"], refusal) as (base, _):
        r = await post(base, "/v1/chat/completions", openai())
        assert r.status_code == 413 and r.json()["error"]["code"] == "question_too_large"


async def test_a_reply_that_opens_normally_streams_as_before(tmp_path: Path) -> None:
    async with serve_gateway(tmp_path, ["llm"], [START, text("Hello."), error("late", "busy")]) as (
        base,
        _,
    ):
        r = await post(base, "/v1/chat/completions", openai())
        assert r.status_code == 200 and "Hello." in r.text and "late" in r.text
