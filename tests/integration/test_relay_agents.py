"""Agents that delegate, over real signed HTTP between agent processes on 127.0.0.1: a
sub-agent's reply relayed live inside the caller's, across two and three hops; errors, a killed
sub-agent, cancel, loops and the hop limit (agent_stream.commands.team members, tests/peers/relay_asker.py
as the end client)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from agents_harness import PEERS, AgentProcess, Harness, free_port
from relay_ask import ask
from relay_fixtures import assert_placed, keys_unique, relay_blocks, subtree
from replay_answers import QUESTION, replay_transcript

from agent_stream.assemble import assemble
from agent_stream.message import Message

pytestmark = pytest.mark.integration

Q = QUESTION
CHEF_Q = "A pasta recipe for dinner"
CODER_Q = "Python code to retry an HTTP call"

# name -> team arguments; all started at once for the module
MEMBERS: dict[str, tuple[str, ...]] = {
    "researcher": ("--rate", "0"),
    "chef": ("--rate", "0"),
    "coder": ("--rate", "0"),
    "planner": (
        "--rate",
        "0",
        "--relay",
        "researcher",
        "--parallel",
        f"chef={CHEF_Q}",
        "--parallel",
        f"coder={CODER_Q}",
    ),
    "director": ("--rate", "0", "--relay", "planner"),
    "failer": ("--rate", "0", "--tokens", "200", "--fail-after", "40"),
    "slow": ("--rate", "40", "--tokens", "2000"),
    "boss": (
        "--rate",
        "0",
        "--relay",
        "failer",
        "--relay",
        "slow",
        "--sub-timeout",
        "8",
        "--sub-idle-timeout",
        "3",
    ),
    "slow2": ("--rate", "40", "--tokens", "2000"),
    "manager": ("--rate", "0", "--relay", "slow2", "--sub-timeout", "30"),
    "ping": ("--rate", "0", "--relay", "pong"),
    "pong": ("--rate", "0", "--relay", "ping"),
}


@pytest.fixture(scope="module")
def team(harness: Harness) -> Iterator[dict[str, tuple[AgentProcess, str]]]:
    procs: dict[str, AgentProcess] = {}
    for name, extra in MEMBERS.items():
        port = free_port()
        procs[name] = harness.start(
            "-m",
            "agent_stream.commands.team",
            "--name",
            name,
            "--port",
            str(port),
            "--seed",
            f"relay {name} {port}",
            *extra,
        )
    out = {
        name: (p, p.wait_for("address:", 60).split(":", 1)[1].strip()) for name, p in procs.items()
    }
    harness.wait_answering(*MEMBERS)
    yield out


def root_of(msgs: list[Message], name: str) -> str:
    roots = [b for b, d in relay_blocks(msgs) if d.get("agent_name") == name]
    assert len(roots) == 1, (name, relay_blocks(msgs))
    return roots[0]


def stats(p: AgentProcess) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in p.lines if line.startswith("STATS ")]


def errors_in(msgs: list[Message], root: str) -> list[dict[str, Any]]:
    blocks, _ = subtree(msgs, root)
    return [
        m.props
        for m in assemble(msgs).messages
        if m.type == "error" and m.block_id in blocks and m.props is not None
    ]


# -- two and three hops ----------------------------------------------------------------------------
def test_two_hops_relay_every_sub_agent_live_into_its_block(
    harness: Harness, team: dict[str, tuple[AgentProcess, str]]
) -> None:
    r = ask(harness, "planner", Q, "--reasoning")
    msgs = r["msgs"]
    assert r["status"] == "completed" and r["completed"], r["warnings"]
    assert keys_unique(msgs)
    whole = assemble(msgs)
    for name, question in (("researcher", Q), ("chef", CHEF_Q), ("coder", CODER_Q)):
        root = root_of(msgs, name)
        data = dict(relay_blocks(msgs))[root]
        assert data["agent"] == team[name][1] and data["label"] == name.capitalize()
        assert_placed(replay_transcript(question), msgs, root)
        assert any(
            m.type == "thinking" for m in whole.messages if m.block_id in subtree(msgs, root)[0]
        )
    # the two specialists ran in threads of the planner, labelled by name
    labels = {t.label for t in whole.threads}
    assert {"chef", "coder"} <= labels
    assert whole.text().rstrip().endswith(".") and "Summary: researcher answered" in whole.text()
    planner_stats = stats(team["planner"][0])
    assert planner_stats and planner_stats[-1]["status"] == "completed"


def test_two_hops_without_reasoning_withholds_every_hops_thinking(
    harness: Harness, team: dict[str, tuple[AgentProcess, str]]
) -> None:
    r = ask(harness, "planner", Q)
    msgs = r["msgs"]
    assert r["completed"]
    assert not [m for m in assemble(msgs).messages if m.type == "thinking"]
    assert_placed(replay_transcript(Q, reasoning=False), msgs, root_of(msgs, "researcher"))


def test_three_hops_nest_the_planner_and_its_sub_agents(
    harness: Harness, team: dict[str, tuple[AgentProcess, str]]
) -> None:
    two = ask(harness, "planner", Q, "--reasoning")
    three = ask(harness, "director", Q, "--reasoning")
    msgs = three["msgs"]
    assert three["status"] == "completed" and three["completed"], three["warnings"]
    assert keys_unique(msgs)
    planner_root = root_of(msgs, "planner")
    # the planner's whole reply (as a direct client sees it) is placed under its block ...
    assert_placed(assemble(two["msgs"]), msgs, planner_root)
    # ... and each leaf's under a block nested in it
    blocks, _ = subtree(msgs, planner_root)
    for name, question in (("researcher", Q), ("chef", CHEF_Q), ("coder", CODER_Q)):
        root = root_of(msgs, name)
        assert root in blocks
        assert_placed(replay_transcript(question), msgs, root)


# -- errors, a killed sub-agent, cancel --------------------------------------------------------------
def test_sub_agent_error_and_killed_sub_agent_end_their_blocks_and_the_caller_goes_on(
    harness: Harness, team: dict[str, tuple[AgentProcess, str]]
) -> None:
    port = free_port()
    p = harness.start(
        str(PEERS / "relay_asker.py"),
        "--port",
        str(port),
        "--seed",
        f"relay asker kill {port}",
        "--to",
        "boss",
        "--question",
        Q,
    )
    slow = team["slow"][0]
    deadline = time.monotonic() + 30
    while not stats(team["failer"][0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # the slow leaf is streaming now
    slow.proc.kill()  # kill -9 mid-reply
    killed_at = time.monotonic()
    code, out, err = p.finish(timeout=60)
    ended = time.monotonic() - killed_at
    assert code == 0, err
    r = json.loads(out.strip().splitlines()[-1])
    msgs = [Message.from_dict(m) for m in r["messages"]]
    whole = assemble(msgs)
    assert whole.status == "completed"  # the boss went on
    failer, slow_root = root_of(msgs, "failer"), root_of(msgs, "slow")
    assert whole.block(failer).status == "error"  # type: ignore[union-attr]
    assert [e["code"] for e in errors_in(msgs, failer)] == ["responder_error"]
    assert whole.block(slow_root).status == "error"  # type: ignore[union-attr]
    # declared lost after 3 s of silence (issue 11's liveness), well before the 8 s timeout
    assert errors_in(msgs, slow_root)[-1]["code"] == "lost"
    assert ended < 3 + 3
    assert all(m.status != "streaming" for m in whole.messages)
    assert "failer could not answer (error)" in whole.text()
    assert "slow could not answer" in whole.text()
    slow_text = "".join(
        m.content
        for m in whole.messages
        if m.type == "text" and m.block_id in subtree(msgs, slow_root)[0]
    )
    assert slow_text  # what came before the kill was relayed live


def test_a_hop_adds_one_send_not_a_buffered_wait(
    harness: Harness, team: dict[str, tuple[AgentProcess, str]]
) -> None:
    # slow2 streams 40 tokens/s: a chunker re-buffering at the manager would hold each chunk
    # for up to its max_delay (0.5 s); a relay passes it on at once
    direct = [ask(harness, "slow2", Q, "--cancel-after", "1.2")["first_text"] for _ in "ab"]
    relayed = [ask(harness, "manager", Q, "--cancel-after", "1.2")["first_text"] for _ in "ab"]
    assert min(relayed) - min(direct) < 0.25, (direct, relayed)


def test_cancel_from_the_end_client_travels_down_every_hop(
    harness: Harness, team: dict[str, tuple[AgentProcess, str]]
) -> None:
    manager, slow2 = team["manager"][0], team["slow2"][0]
    before_m, before_s = len(stats(manager)), len(stats(slow2))
    port = free_port()
    p = harness.start(
        str(PEERS / "relay_asker.py"),
        "--port",
        str(port),
        "--seed",
        f"relay asker cancel {port}",
        "--to",
        "manager",
        "--question",
        Q,
        "--cancel-after",
        "1.5",
        "--linger",
        "6",
    )
    r = json.loads(p.wait_for("{", 30))
    assert r["status"] == "cancelled" and r["first_text"] is not None
    deadline = time.monotonic() + 3
    while (
        len(stats(manager)) == before_m or len(stats(slow2)) == before_s
    ) and time.monotonic() < deadline:
        time.sleep(0.05)
    p.stop()  # the client stayed up: the manager stopped because it was told, not unreachable
    if len(stats(manager)) == before_m:
        pytest.xfail(
            "the manager streamed on: reply.cancel() does not travel upstream yet (issue 11)"
        )
    assert [s["status"] for s in stats(manager)[before_m:]] == ["cancelled"]
    assert [s["status"] for s in stats(slow2)[before_s:]] == ["cancelled"]


def test_cancelling_the_caller_mid_relay_cancels_the_relay(
    harness: Harness, team: dict[str, tuple[AgentProcess, str]]
) -> None:
    manager = team["manager"][0]
    before = len(stats(manager))
    port = free_port()
    p = harness.start(
        str(PEERS / "relay_asker.py"),
        "--port",
        str(port),
        "--seed",
        f"relay asker stop {port}",
        "--to",
        "manager",
        "--question",
        Q,
    )
    p.wait_for("ASKED", 30)  # (a loaded machine takes seconds to start the asker)
    time.sleep(2.5)  # the manager is relaying slow2 (2,000 tokens at 40/s)
    manager.stop()  # SIGTERM: its replies in flight are cancelled, their ends sent
    code, out, err = p.finish(timeout=30)
    assert code == 0, err
    r = json.loads(out.strip().splitlines()[-1])
    msgs = [Message.from_dict(m) for m in r["messages"]]
    whole = assemble(msgs)
    assert r["status"] == "cancelled" and whole.status == "cancelled"
    root = root_of(msgs, "slow2")
    assert whole.block(root).status == "cancelled"  # type: ignore[union-attr]
    assert all(m.status in ("cancelled", "completed") for m in whole.messages)
    assert [s["status"] for s in stats(manager)][before:] == ["cancelled"] * (
        len(stats(manager)) - before
    ) and len(stats(manager)) > before


def test_a_plain_chat_agent_without_agent_stream_is_relayed_too(
    harness: Harness, team: dict[str, tuple[AgentProcess, str]]
) -> None:
    from agents_harness import address_of

    tokens = [f"Plain token {i}. " for i in range(40)]
    token_file = harness.workdir / "plain_tokens.json"
    token_file.write_text(json.dumps(tokens))
    boss_port, plain_port = free_port(), free_port()
    boss_seed, plain_seed = f"relay plainboss {boss_port}", f"relay plain {plain_port}"
    boss = harness.start(
        "-m",
        "agent_stream.commands.team",
        "--name",
        "plainboss",
        "--port",
        str(boss_port),
        "--seed",
        boss_seed,
        "--rate",
        "0",
        "--relay",
        "plain",
    )
    plain = harness.plain(
        "per-token",
        "--tokens",
        str(token_file),
        "--peer",
        f"{address_of(boss_seed)}=http://127.0.0.1:{boss_port}/submit",
        seed=plain_seed,
        port=plain_port,
    )
    plain.wait_for("READY")
    harness.list_in_directory(
        address_of(plain_seed), f"http://127.0.0.1:{plain_port}/submit", plain.proc.pid
    )
    boss.wait_for("endpoint:")
    deadline = time.monotonic() + 20
    while "plainboss" not in {e.get("name") for e in harness.directory_entries().values()}:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    r = ask(harness, "plainboss", Q)
    msgs = r["msgs"]
    whole = assemble(msgs)
    assert whole.status == "completed" and r["completed"], r["warnings"]
    root = root_of(msgs, "plain")
    assert whole.block(root).status == "completed"  # type: ignore[union-attr]
    blocks, _ = subtree(msgs, root)
    relayed = "".join(
        m.content for m in whole.messages if m.type == "text" and m.block_id in blocks
    )
    assert relayed == "".join(tokens)


# -- loops and the hop limit -------------------------------------------------------------------------
def test_a_loop_is_answered_with_an_error_instead_of_recursing(
    harness: Harness, team: dict[str, tuple[AgentProcess, str]]
) -> None:
    r = ask(harness, "ping", "Ping?", timeout=30)
    msgs = r["msgs"]
    whole = assemble(msgs)
    assert whole.status == "completed"
    pong = root_of(msgs, "pong")
    ping_again = root_of(msgs, "ping")  # pong's refused relay of ping, inside pong's block
    assert ping_again in subtree(msgs, pong)[0]
    assert whole.block(ping_again).status == "error"  # type: ignore[union-attr]
    assert [e["code"] for e in errors_in(msgs, ping_again)] == ["loop"]
    assert len(stats(team["ping"][0])) == 1  # ping answered once: no recursion


def test_the_hop_limit_travels_in_the_tags(
    harness: Harness, team: dict[str, tuple[AgentProcess, str]]
) -> None:
    r = ask(harness, "director", Q, "--max-hops", "2")
    msgs = r["msgs"]
    whole = assemble(msgs)
    assert whole.status == "completed"
    planner = root_of(msgs, "planner")
    assert whole.block(planner).status == "completed"  # hop 2: allowed
    for name in ("researcher", "chef", "coder"):  # hop 3: refused by the planner
        root = root_of(msgs, name)
        assert whole.block(root).status == "error"  # type: ignore[union-attr]
        assert [e["code"] for e in errors_in(msgs, root)] == ["hop_limit"]
