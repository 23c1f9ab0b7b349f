"""`agent-stream serve --model openai` serves real model output to another agent.

A real HTTP server on 127.0.0.1 plays an OpenAI-compatible model; `serve` (an OS process) streams
what it returns over the chat protocol to `ask --json` (another OS process).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from agents_harness import Harness

pytestmark = pytest.mark.integration


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "rec",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


REPLY = [
    chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
    chunk({"reasoning_content": "The user "}),
    chunk({"reasoning_content": "greets me."}),
    chunk({"content": "Hello! "}),
    chunk({"content": "Streams end. "}),
    chunk({"content": "Always."}),
    chunk(finish="stop"),
    "data: [DONE]\n\n",
]


class FakeModel(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body.get("model") == "broken":
            payload = json.dumps({"error": {"message": "internal failure"}}).encode()
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for item in REPLY:
            self.wfile.write(item.encode())
            self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def ask(harness: Harness, model_url: str, model_name: str) -> tuple[int, dict[str, Any], str]:
    _, address, endpoint = harness.serve(
        "--model", "openai", "--base-url", model_url, "--model-name", model_name, "--reasoning"
    )
    p = harness.cli("ask", address, "--endpoint", endpoint, "--json", "hi")
    code, out, err = p.finish(timeout=60)
    return code, (json.loads(out) if out.strip() else {}), err


def test_serve_streams_a_real_models_reasoning_and_answer(harness: Harness, model_url: str) -> None:
    code, got, err = ask(harness, model_url, "rec")
    assert code == 0, err
    by_type = {m["type"]: m for m in got["messages"]}
    assert by_type["thinking"]["props"]["content"] == "The user greets me."
    assert by_type["text"]["props"]["content"] == "Hello! Streams end. Always."
    assert {m["status"] for m in got["messages"]} == {"completed"}


def test_a_failing_model_reaches_the_asker_as_an_error(harness: Harness, model_url: str) -> None:
    code, got, _ = ask(harness, model_url, "broken")
    assert code == 1, json.dumps(got)
    errors = [m for m in got["messages"] if m["type"] == "error"]
    assert errors and "internal failure" in errors[0]["props"]["message"]
