"""Conversations over real agents on 127.0.0.1: `ask --session` continues one (the replay
model says what was asked before), the client identity it asks as is kept private, a kill -9
restart of `serve` with a SQLite or Redis store keeps the turns, `agent-stream chat` holds one in
a pseudo-terminal (two turns, Ctrl-C mid-reply, /new, Ctrl-D ends the session), and bad
`--session` / `--sessions` values are refused."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from agents_harness import PEERS, AgentProcess, Harness

from agent_stream.uagents.local._agents import free_port

pytestmark = pytest.mark.integration

Q1, Q2, Q3 = "How do agents stream?", "What about retries?", "One more thing"


def ask(h: Harness, *args: str) -> tuple[int, str, str]:
    return h.cli("ask", *args).finish(60)


def history_agent(h: Harness, name: str = "history") -> tuple[AgentProcess, str]:
    """tests/peers/history_agent.py, listed in the directory: (process, address)."""
    port = free_port()
    p = h.start(
        str(PEERS / "history_agent.py"),
        "--port",
        str(port),
        "--seed",
        f"history agent {port} {time.time_ns()}",
        "--name",
        name,
    )
    address = p.wait_for("address:").split(":", 1)[1].strip()
    h.wait_up("history agent", port, address)
    return p, address


def history_in(text: str) -> list[dict[str, str]]:
    found = re.search(r"history: (\[.*?\])\s*question:", text, re.S)
    assert found, text
    turns: list[dict[str, str]] = json.loads(found.group(1))
    return turns


def test_three_turns_through_ask_session(
    harness: Harness, llm: tuple[AgentProcess, str, str]
) -> None:
    session = str(uuid.uuid4())
    code, out, err = ask(harness, "llm", "--session", session, "--json", Q1)
    assert code == 0, err
    first = json.loads(out)
    assert first["session"] == session
    assert "Earlier in this conversation" not in json.dumps(first)

    code, out, err = ask(harness, "llm", "--session", session, "-v", Q2)
    assert code == 0, err
    assert f"Earlier in this conversation you asked: “{Q1}”." in out
    assert f"session: {session}" in err

    code, out, err = ask(harness, "llm", "--session", session, Q3)
    assert code == 0, err
    assert (
        f"Earlier in this conversation you asked first: “{Q1}”, and just before this: "
        f"“{Q2}” (2 questions so far)."
    ) in out

    # an id the agent has not seen starts a new conversation; memory is per asker: another
    # identity (--seed) in the same session starts afresh (two identities: asked at once)
    unseen = harness.cli("ask", "llm", "--session", str(uuid.uuid4()), Q3)
    other_asker = harness.cli(
        "ask",
        "llm",
        "--session",
        session,
        "--seed",
        "another client seed, long enough to be a real one",
        Q3,
    )
    code, out, err = unseen.finish(60)
    assert code == 0 and "Earlier in this conversation" not in out, err
    assert "another running client" not in err, err
    code, out, err = other_asker.finish(60)
    assert code == 0 and "Earlier in this conversation" not in out, err
    # so does no --session at all
    code, out, err = ask(harness, "llm", "--json", Q3)
    fresh = json.loads(out)
    assert uuid.UUID(fresh["session"]).version == 4 and fresh["session"] != session
    assert "Earlier in this conversation" not in out


def test_the_client_identity_is_kept_private(
    harness: Harness, llm: tuple[AgentProcess, str, str]
) -> None:
    code, _, err = ask(harness, "llm", "hello")
    assert code == 0, err
    seed_file = harness.workdir / "client" / "seed"
    assert stat.S_IMODE(seed_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(seed_file.parent.stat().st_mode) == 0o700
    assert len(seed_file.read_text().strip()) == 64
    seed_file.chmod(0o644)  # readable by others: refused, not used
    try:
        code, _, err = ask(harness, "llm", "hello")
        assert code == 2 and "open to group or others" in err, err
        code, _, err = ask(
            harness, "llm", "--seed", "an explicit client seed for this test run", "hello"
        )
        assert code == 0, err  # --seed does not need the stored one
    finally:
        seed_file.chmod(0o600)


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_a_kill_9_restart_keeps_the_conversation(
    harness: Harness, kind: str, request: pytest.FixtureRequest
) -> None:
    if kind == "sqlite":
        spec = f"sqlite:{harness.workdir / 'sessions.db'}"
    else:
        spec = request.getfixturevalue("redis_url")
    name = f"durable-{kind}"
    seed = f"durable {kind} agent seed {time.time_ns()}"
    args = ("--rate", "0", "--name", name, "--sessions", spec)
    p, _, _ = harness.serve(*args, seed=seed)
    session = str(uuid.uuid4())
    for q in (Q1, Q2):
        code, _, err = ask(harness, name, "--session", session, q)
        assert code == 0, err
    p.proc.kill()  # kill -9: no shutdown of any kind
    p.proc.wait()
    harness.serve(*args, seed=seed)
    code, out, err = ask(harness, name, "--session", session, Q3)
    assert code == 0, err
    assert f"you asked first: “{Q1}”, and just before this: “{Q2}”" in out


def test_bad_session_values_are_refused(
    harness: Harness, llm: tuple[AgentProcess, str, str]
) -> None:
    # every command at once (each refused on its own)
    asks = [
        harness.cli("ask", "llm", "--session", bad, "q") for bad in ("nope", str(uuid.uuid1()), "")
    ]
    serves = [
        (
            harness.cli("serve", "--port", str(free_port()), "--name", "bad", "--sessions", bad),
            says,
        )
        for bad, says in (
            ("bogus", "unknown session store"),
            ("sqlite:", "needs a file path"),
            (f"sqlite:{harness.workdir / 'no' / 'such' / 'dir.db'}", "does not exist"),
        )
    ]
    for p in asks:
        code, _, err = p.finish(60)
        assert code == 2 and "--session" in err, err
    for p, says in serves:
        code, _, err = p.finish(30)
        assert code == 2, err
        assert len(err.splitlines()) == 1 and says in err, err


def _chat(harness: Harness, *args: str) -> Any:
    pexpect = pytest.importorskip("pexpect")
    env = dict(harness.env, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "agent_stream", "chat", *args],
        cwd=str(harness.workdir),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 220),
    )
    return child


def test_chat_in_a_terminal(harness: Harness) -> None:
    agent, _ = history_agent(harness, "history-chat")
    pexpect = pytest.importorskip("pexpect")
    c = _chat(harness, "history-chat")
    try:
        c.expect(r"session ([0-9a-f-]{36})")
        session = c.match.group(1)
        c.expect("you>")
        # while chat runs as this user's identity, an ask gets a throwaway one (two clients at
        # one address would get each other's replies), says so, and is answered
        code, out, err = ask(harness, "history-chat", "--session", session, "meanwhile")
        assert code == 0 and "in use by another running client" in err, err
        assert history_in(out) == []
        c.sendline("first question")
        c.expect(r"question: first question")
        c.expect("completed")
        c.expect("you>")
        c.sendline("second question")  # the agent was given the first turn
        c.expect(r'"role": "user", "text": "first question"')
        c.expect(r"question: second question")
        c.expect("you>")
        c.sendline("slow and long")
        c.expect(r"w5\b")  # streaming ...
        c.sendintr()  # ... Ctrl-C: the reply is cancelled, the responder told
        c.expect(r"cancelled: status cancelled")
        c.expect("you>")
        agent.wait_for("cancelled slow and long", timeout=10)
        c.sendline("/new")
        c.expect(r"new conversation: session ([0-9a-f-]{36})")
        new_session = c.match.group(1)
        assert new_session != session
        c.expect("you>")
        c.sendline("third question")
        c.expect(r"history: \[\]")
        c.expect("you>")
        c.sendeof()  # Ctrl-D: leave, ending the session
        c.expect(f"session {new_session} ended")
        c.expect(pexpect.EOF)
    finally:
        c.close(force=True)
    assert c.exitstatus == 0, c.before
    # both sessions were ended (/new, then Ctrl-D: EndSessionContent): the agent forgot them,
    # though the same client identity asks in them again
    for ended in (session, new_session):
        code, out, err = ask(harness, "history-chat", "--session", ended, "again")
        assert code == 0, err
        assert history_in(out) == [], out
    code, out, err = ask(harness, "history-chat", "--session", new_session, "more")
    assert [t["text"] for t in history_in(out)][:1] == ["again"]  # memory still works there
    assert os.path.exists(harness.workdir / "client" / "seed")


class _RecordingModel(BaseHTTPRequestHandler):
    """An OpenAI-compatible model on 127.0.0.1 that records each request's messages."""

    seen: ClassVar[list[list[dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append(body["messages"])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for delta, finish in (
            ({"role": "assistant", "content": "Answer "}, None),
            ({"content": str(len(self.seen))}, None),
            ({}, "stop"),
        ):
            chunk = {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args: Any) -> None:
        pass


def test_serve_gives_an_openai_model_the_conversation(harness: Harness) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RecordingModel)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        harness.serve(
            "--model",
            "openai",
            "--base-url",
            f"http://127.0.0.1:{server.server_address[1]}/v1",
            "--name",
            "oai",
        )
        session = str(uuid.uuid4())
        for q in ("first", "second"):
            code, _, err = ask(harness, "oai", "--session", session, q)
            assert code == 0, err
    finally:
        server.shutdown()
        server.server_close()
    assert _RecordingModel.seen == [
        [{"role": "user", "content": "first"}],
        [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "Answer 1"},
            {"role": "user", "content": "second"},
        ],
    ]
