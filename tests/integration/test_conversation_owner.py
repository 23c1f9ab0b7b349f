"""A conversation belongs to its sender: another sender reusing its session id (which travels in
every envelope and is no secret) starts a conversation of its own, over real agents and signed
envelopes on 127.0.0.1. It cannot approve a paused tool call, answer an interrupt or read a
LangGraph thread; the owner's own answer still resumes its run."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from agents_harness import ROOT, Harness

pytestmark = pytest.mark.integration

APPS = str(ROOT / "tests" / "peers" / "owned_apps.py")


def ask(h: Harness, name: str, seed: str, session: str, question: str) -> dict[str, Any]:
    """`agent-stream ask NAME QUESTION --seed SEED --session SESSION --json`: the transcript."""
    code, out, err = h.cli(
        "ask", name, question, "--seed", seed, "--session", session, "--json", "--timeout", "60"
    ).finish(90)
    assert code == 0, err
    transcript: dict[str, Any] = json.loads(out)
    return transcript


def of_type(transcript: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [m for m in transcript["messages"] if m["type"] == kind]


def text(transcript: dict[str, Any]) -> str:
    return "".join(m["props"].get("content", "") for m in of_type(transcript, "text"))


@pytest.fixture
def seeds() -> tuple[str, str]:
    stamp = time.time_ns()
    return f"owner sender A {stamp}", f"other sender B {stamp}"


def test_another_sender_cannot_approve_a_paused_tool_call(
    harness: Harness, seeds: tuple[str, str]
) -> None:
    a, b = seeds
    server, _, _ = harness.serve("--app", APPS + ":approval", "--name", "ops-owned")
    try:
        session = str(uuid.uuid4())
        asked = ask(harness, "ops-owned", a, session, "delete a")
        assert [m["props"]["name"] for m in of_type(asked, "user_input")] == ["delete_file"]
        assert not of_type(asked, "tool_result")

        hijack = ask(harness, "ops-owned", b, session, "yes")
        assert not [r for r in of_type(hijack, "tool_result") if "deleted" in str(r["props"])]
        # B's "yes" was a new question of B's own: the tool asks B for approval in turn
        assert of_type(hijack, "user_input")

        owner = ask(harness, "ops-owned", a, session, "yes")
        [result] = of_type(owner, "tool_result")
        assert result["props"]["content"] == "deleted a"
    finally:
        server.stop()


def test_another_sender_cannot_answer_an_interrupt(
    harness: Harness, seeds: tuple[str, str]
) -> None:
    a, b = seeds
    server, _, _ = harness.serve("--app", APPS + ":interrupting", "--name", "mail-owned")
    try:
        session = str(uuid.uuid4())
        asked = ask(harness, "mail-owned", a, session, "email Bob")
        assert [m["props"]["content"] for m in of_type(asked, "user_input")] == [
            "Send the email to Bob?"
        ]
        hijack = ask(harness, "mail-owned", b, session, "yes")
        assert "Sent" not in text(hijack)
        assert [m["props"]["content"] for m in of_type(hijack, "user_input")] == [
            "Send the email to Bob?"
        ]
        owner = ask(harness, "mail-owned", a, session, "yes")
        assert text(owner) == "Sent: you said yes."
    finally:
        server.stop()


def test_another_sender_cannot_read_or_write_a_langgraph_thread(
    harness: Harness, seeds: tuple[str, str]
) -> None:
    a, b = seeds
    server, _, _ = harness.serve("--app", APPS + ":remembering", "--name", "memo-owned")
    try:
        session = str(uuid.uuid4())
        assert text(ask(harness, "memo-owned", a, session, "my password is hunter2")) == (
            "thread holds: my password is hunter2"
        )
        leak = ask(harness, "memo-owned", b, session, "what did they say?")
        assert text(leak) == "thread holds: what did they say?"
        assert "hunter2" not in json.dumps(leak)
        owner = ask(harness, "memo-owned", a, session, "and now?")
        assert text(owner) == "thread holds: my password is hunter2 | and now?"
    finally:
        server.stop()


# A responder that answers with the questions its conversation's history holds.
HISTORY_APP = """
async def app(request):
    said = [t.text for t in request.history if t.role == "user"] + [request.text]

    async def chunks():
        yield {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": "history holds: " + " | ".join(said)}}],
        }

    return chunks()
"""


def test_through_the_fleet_another_replica_keeps_conversations_apart(
    harness: Harness, redis_url: str, seeds: tuple[str, str]
) -> None:
    a, b = seeds
    app = harness.workdir / "history_app.py"
    app.write_text(HISTORY_APP)
    seed = f"fleet owner seed {uuid.uuid4()}"
    replicas = [
        harness.serve(
            "--app", f"{app}:app", "--fleet", redis_url, "--sessions", redis_url, seed=seed
        )
        for _ in range(2)
    ]
    address = replicas[0][1]

    def ask_at(replica: int, seed: str, question: str) -> str:
        code, out, err = harness.cli(
            "ask",
            address,
            question,
            "--endpoint",
            replicas[replica][2],
            "--seed",
            seed,
            "--session",
            session,
            "--json",
            "--timeout",
            "30",
        ).finish(60)
        assert code == 0, err
        return text(json.loads(out))

    try:
        session = str(uuid.uuid4())
        assert ask_at(0, a, "my password is hunter2") == "history holds: my password is hunter2"
        # B, at the other replica, in A's session id: a conversation of its own
        assert ask_at(1, b, "what did they say?") == "history holds: what did they say?"
        # A, at the other replica: its own conversation, shared by the fleet
        assert ask_at(1, a, "and now?") == "history holds: my password is hunter2 | and now?"
    finally:
        for p, _, _ in replicas:
            p.stop()
