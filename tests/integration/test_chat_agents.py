"""Real agents in separate OS processes exchanging signed envelopes over HTTP on 127.0.0.1.

`agent-stream serve` / `ask`, tests/peers/plain_agent.py (uagents alone, no agent_stream) and
tests/peers/failing_agent.py (a responder that raises midway).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest
from agents_harness import PEERS, AgentProcess, Harness, address_of, free_port, scrape
from replay_answers import QUESTION, replay_transcript

pytestmark = pytest.mark.integration


def by_key(messages: list[dict[str, Any]]) -> dict[tuple[Any, Any], dict[str, Any]]:
    return {(m["thread_id"], m["message_id"]): m for m in messages}


def ask_json(
    harness: Harness, address: str, endpoint: str, question: str, *extra: str
) -> tuple[int, dict[str, Any], str]:
    p = harness.cli("ask", address, "--endpoint", endpoint, "--json", *extra, question)
    code, out, err = p.finish(timeout=60)
    return code, (json.loads(out) if out.strip() else {}), err


def plain_ask(
    harness: Harness, address: str, endpoint: str, question: str, quiet: float = 5.0
) -> dict[str, Any]:
    """tests/peers/plain_agent.py asks; its JSON summary of what it read."""
    port = free_port()
    seed = f"plain asker {port}"
    p = harness.plain(
        "ask",
        "--to",
        address,
        "--to-endpoint",
        endpoint,
        "--question",
        question,
        "--quiet",
        str(quiet),
        seed=seed,
        port=port,
    )
    # The agent it asks must find it: list it in the local directory, as a local agent would,
    # before it gets to ask (it starts in well over a tenth of a second).
    harness.list_in_directory(address_of(seed), f"http://127.0.0.1:{port}/submit", p.proc.pid)
    p.wait_for("READY")
    code, out, err = p.finish(timeout=60)
    assert code == 0, err
    return dict(json.loads(out.strip().splitlines()[-1]))


# -- serve / ask ---------------------------------------------------------------------------------
def test_serve_prints_address_and_local_endpoint_and_lists_itself(
    harness: Harness, llm: tuple[AgentProcess, str, str]
) -> None:
    _, address, endpoint = llm
    assert address.startswith("agent1") and len(address) > 60
    assert endpoint.startswith("http://127.0.0.1:") and endpoint.endswith("/submit")
    assert harness.directory_entries()[address]["endpoint"] == endpoint


def test_full_reply_is_streamed_and_rebuilt_exactly(
    harness: Harness, llm: tuple[AgentProcess, str, str]
) -> None:
    _, address, endpoint = llm
    code, got, err = ask_json(harness, address, endpoint, QUESTION)
    assert code == 0, err
    want = replay_transcript(QUESTION).to_dict()
    got_msgs, want_msgs = by_key(got["messages"]), by_key(want["messages"])
    assert got_msgs.keys() == want_msgs.keys()
    for key, w in want_msgs.items():
        g = got_msgs[key]
        assert (g["type"], g["props"], g["block_id"], g["status"]) == (
            w["type"],
            w["props"],
            w["block_id"],
            w["status"],
        ), key
    assert {b["block_id"]: (b["type"], b["label"], b["status"]) for b in got["blocks"]} == {
        b["block_id"]: (b["type"], b["label"], b["status"]) for b in want["blocks"]
    }
    assert {t["thread_id"]: (t["label"], t["status"]) for t in got["threads"]} == {
        t["thread_id"]: (t["label"], t["status"]) for t in want["threads"]
    }
    # reasoning was shared because ask asked for it and serve runs with --reasoning
    assert any(m["type"] == "thinking" for m in got["messages"])


def test_ask_renders_the_reply_live_without_a_terminal(
    harness: Harness, llm: tuple[AgentProcess, str, str]
) -> None:
    _, address, endpoint = llm
    p = harness.cli("ask", address, "--endpoint", endpoint, QUESTION)
    code, out, err = p.finish(timeout=60)
    assert code == 0, err
    assert "\x1b[" not in out  # not a terminal: no escape codes
    want = replay_transcript(QUESTION)
    for section in ("Thinking", "search_docs", "Answer"):
        assert section in out
    assert "[spec] ⚙ read_spec(" in out and "[benchmarks] ✓ fetch_benchmarks → " in out
    assert want.text() in out  # the answer, streamed in order
    assert "completed" in out.splitlines()[-1]


def test_ask_finds_a_local_agent_by_name_without_its_address(
    harness: Harness, llm: tuple[AgentProcess, str, str]
) -> None:
    p = harness.cli("ask", "llm", "--json", "--no-reasoning", QUESTION)
    code, out, err = p.finish(timeout=60)
    assert code == 0, err
    got = json.loads(out)
    assert not any(m["type"] == "thinking" for m in got["messages"])  # not asked for


def test_flow_control_bounds_unacknowledged_messages_and_still_completes(harness: Harness) -> None:
    _, address, endpoint = harness.serve("--rate", "0", "--max-in-flight", "1")
    code, got, err = ask_json(harness, address, endpoint, QUESTION)
    assert code == 0, err
    assert text_of(got) == replay_transcript(QUESTION).text()


def text_of(d: dict[str, Any]) -> str:
    return "".join(m["props"].get("content", "") for m in d["messages"] if m["type"] == "text")


# -- a peer without agent_stream -----------------------------------------------------------------
def test_plain_uagents_peer_reads_the_clean_answer_and_sees_every_stream_end(
    harness: Harness, llm: tuple[AgentProcess, str, str]
) -> None:
    _, address, endpoint = llm
    seen = plain_ask(harness, address, endpoint, QUESTION)
    want = replay_transcript(QUESTION)
    assert seen["text"] == want.text()  # TextContent concatenated: the answer and nothing else
    assert seen["starts"] and sorted(seen["starts"]) == sorted(seen["ends"])
    assert len(set(seen["starts"])) == len(seen["starts"])
    assert seen["ends_before_start"] == []
    assert seen["session_ended"]  # it opened a session; the last ChatMessage closed it
    thinking = next(m.content for m in want.messages if m.type == "thinking")
    assert thinking[:40] not in seen["text"]


def test_our_decoder_reads_a_one_message_per_token_stream_from_a_plain_agent(
    harness: Harness,
) -> None:
    server_port, ask_port = free_port(), free_port()
    ask_seed = f"asker of plain {ask_port}"
    plain = harness.plain(
        "per-token",
        "--peer",
        f"{address_of(ask_seed)}=http://127.0.0.1:{ask_port}/submit",
        seed=f"plain per-token {server_port}",
        port=server_port,
    )
    address = plain.wait_for("READY").split()[1]
    p = harness.cli(
        "ask",
        address,
        "--endpoint",
        f"http://127.0.0.1:{server_port}/submit",
        "--port",
        str(ask_port),
        "--seed",
        ask_seed,
        "--json",
        "--no-directory",
        "Tell me",
    )
    code, out, err = p.finish(timeout=60)
    assert code == 0, err
    got = json.loads(out)
    import importlib.util

    spec = importlib.util.spec_from_file_location("plain_agent", PEERS / "plain_agent.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    texts = [m for m in got["messages"] if m["type"] == "text"]
    assert len(texts) == 1 and texts[0]["status"] == "completed"
    assert texts[0]["props"]["content"] == mod.DEFAULT_TEXT
    assert texts[0]["chunk_count"] == len(mod.tokens_of(mod.DEFAULT_TEXT))


# -- failures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def failing(harness: Harness) -> tuple[AgentProcess, str, str]:
    port = free_port()
    p = harness.start(
        str(PEERS / "failing_agent.py"), "--port", str(port), "--seed", f"failing agent {port}"
    )
    return p, p.wait_for("address:").split()[1], p.wait_for("endpoint:").split()[1]


def test_a_responder_that_raises_midway_ends_its_streams_and_delivers_an_error(
    harness: Harness, failing: tuple[AgentProcess, str, str]
) -> None:
    _, address, endpoint = failing
    code, got, err = ask_json(harness, address, endpoint, "anything")
    assert code == 1 and "did not complete (status error)" in err
    statuses = {m["type"]: m["status"] for m in got["messages"]}
    assert statuses["text"] == "error" and statuses["thinking"] == "completed"
    assert all(m["status"] != "streaming" for m in got["messages"])
    assert all(b["status"] != "streaming" for b in got["blocks"])
    text = next(m for m in got["messages"] if m["type"] == "text")
    # the unfinished sentence the chunker held was flushed before the stream ended
    assert text["props"]["content"].endswith("cut off by the crash ")
    errors = [m for m in got["messages"] if m["type"] == "error"]
    assert errors and "model crashed midway" in errors[0]["props"]["message"]


def test_a_plain_peer_sees_every_stream_ended_and_a_readable_error(
    harness: Harness, failing: tuple[AgentProcess, str, str]
) -> None:
    _, address, endpoint = failing
    seen = plain_ask(harness, address, endpoint, "anything")
    assert seen["starts"] and sorted(seen["starts"]) == sorted(seen["ends"])
    assert seen["text"].startswith("The first sentence arrives whole.")
    assert "Error (responder_error): ModelCrashed: model crashed midway" in seen["text"]
    assert seen["session_ended"]


def test_agent_shutdown_mid_reply_ends_every_stream(harness: Harness) -> None:
    metrics = free_port()
    server, address, endpoint = harness.serve(
        "--rate", "15", "--reasoning", "--metrics-port", str(metrics)
    )
    p = harness.cli("ask", address, "--endpoint", endpoint, "--json", QUESTION)
    # the reply has begun (a loaded machine takes seconds to start `ask`), then streams its
    # reasoning for a while (15 tokens/s) before the shutdown
    deadline = time.monotonic() + 30
    while scrape(metrics, "agent_stream_replies_in_flight") < 1:
        assert time.monotonic() < deadline and p.proc.poll() is None, p.stderr
        time.sleep(0.05)
    time.sleep(2.0)
    assert server.stop() == 0  # SIGTERM: a graceful shutdown
    code, out, err = p.finish(timeout=30)
    assert code == 1, err
    got = json.loads(out)
    assert got["messages"], "something streamed before the shutdown"
    assert all(m["status"] in ("completed", "cancelled") for m in got["messages"])
    assert any(m["status"] == "cancelled" for m in got["messages"])
    assert address not in harness.directory_entries()  # withdrawn on shutdown


# -- demo ----------------------------------------------------------------------------------------
def _demo_servers() -> set[int]:
    """pids of running `agent-stream serve ... --name demo-llm` processes."""
    pids = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")  # noqa: SIM115
            except OSError:
                continue
            if b"serve" in cmd and b"demo-llm" in cmd:
                pids.add(int(d))
    return pids


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to see leftover processes")
def test_demo_runs_a_conversation_end_to_end_and_stops_everything(harness: Harness) -> None:
    before = _demo_servers()
    start = time.monotonic()
    p = harness.cli("demo", "--rate", "0")
    code, out, err = p.finish(timeout=60)
    assert code == 0, err
    assert time.monotonic() - start < 30
    assert "asks: How should agents stream LLM output to each other?" in out
    assert replay_transcript("How should agents stream LLM output to each other?").text() in out
    assert "completed" in out.splitlines()[-1] and "both agents stopped" in out
    assert _demo_servers() <= before
