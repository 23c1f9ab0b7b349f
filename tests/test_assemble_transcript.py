"""The transcript JSON says how the reply ended (status, error, usage) and, per block, where it
sits and who wrote it (parent_block_id, agent, agent_name, duration); the CLI's assemble and a
trip through the chat wire give the same JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from relay_fixtures import PEER, FakeReply, replay_stream_async

from agent_stream import StreamWriter, assemble
from agent_stream.message import Message, text
from agent_stream.writer import ThreadScope, collect


async def _team_stream() -> list[Message]:
    """A stream with a nested block, a relayed sub-agent (its reply replayed in-process), a
    thread, usage and a finish reason."""
    sub = await replay_stream_async("What is streaming?")

    async def body(out: StreamWriter) -> None:
        out.usage = {"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46}
        out.finish_reason = "stop"
        async with out.block("llm", label="Plan") as b:
            async with b.block("tool", label="Lookup") as inner:
                await inner.text("found it")
            await b.relay(FakeReply(sub), name="researcher", label="Researcher")

        async def side(t: ThreadScope) -> None:
            await t.text("side note")

        await out.parallel(side, labels=["side"])

    return await collect(body)


async def test_the_transcript_carries_the_end_usage_and_each_blocks_place_and_author() -> None:
    msgs = await _team_stream()
    t = assemble(msgs).to_dict()
    assert list(t)[:5] == ["status", "error", "usage", "finish_reason", "duration_ms"]
    assert t["status"] == "completed" and t["error"] is None
    assert t["usage"] == {"prompt_tokens": 12, "completion_tokens": 34, "total_tokens": 46}
    assert t["finish_reason"] == "stop" and isinstance(t["duration_ms"], int)
    blocks = {b["label"]: b for b in t["blocks"]}
    plan, lookup, relay = blocks["Plan"], blocks["Lookup"], blocks["Researcher"]
    assert plan["parent_block_id"] is None and plan["agent"] is None
    assert lookup["parent_block_id"] == plan["block_id"]
    assert relay["parent_block_id"] == plan["block_id"]
    assert (relay["agent"], relay["agent_name"]) == (PEER, "researcher")
    assert relay["relay_status"] == "completed"
    assert relay["usage"] is None or isinstance(relay["usage"], dict)
    sub_blocks = [b for b in t["blocks"] if b["parent_block_id"] == relay["block_id"]]
    assert sub_blocks, "the sub-agent's own blocks nest under the relay block"
    assert all(isinstance(b["duration_ms"], int) for b in t["blocks"])
    [thread] = [th for th in t["threads"] if th["label"] == "side"]
    assert isinstance(thread["duration_ms"], int) and thread["parent_thread_id"] is None
    sub_threads = [th for th in t["threads"] if th["label"] != "side"]
    assert sub_threads and all(th["status"] == "completed" for th in sub_threads)


async def test_a_failed_stream_says_so_at_the_top() -> None:
    async def body(out: StreamWriter) -> None:
        await out.send(text("partial"))
        out.fail("model unreachable")

    t = assemble(await collect(body)).to_dict()
    assert (t["status"], t["error"]) == ("error", "model unreachable")
    assert t["usage"] is None


def test_a_cut_stream_is_still_streaming_and_no_stream_at_all_has_no_status() -> None:
    cut = [
        Message.from_dict({"type": "event", "props": {"event": "stream_start", "data": {}}}),
        text("half", message_id="M1"),
    ]
    assert assemble(cut).to_dict()["status"] == "streaming"
    assert assemble([text("x")]).to_dict()["status"] is None


def test_odd_values_in_event_data_are_left_out_not_trusted() -> None:
    lines = [
        {"type": "event", "props": {"event": "stream_start", "data": {}}},
        {
            "type": "event",
            "props": {
                "event": "block_start",
                "data": {
                    "block_id": "B1",
                    "parent_block_id": ["B0"],
                    "agent": 12,
                    "agent_name": "",
                },
            },
        },
        {
            "type": "event",
            "props": {
                "event": "block_end",
                "data": {"block_id": "B1", "duration_ms": "5", "usage": "lots", "relay_status": 3},
            },
        },
        {
            "type": "event",
            "props": {"event": "thread_start", "data": {"thread_id": "T1", "parent_thread_id": 7}},
        },
        {
            "type": "event",
            "props": {
                "event": "stream_end",
                "data": {
                    "status": "completed",
                    "usage": [1],
                    "duration_ms": True,
                    "error": 4,
                    "finish_reason": {},
                },
            },
        },
    ]
    t = assemble(Message.from_dict(x) for x in lines).to_dict()
    assert (t["usage"], t["duration_ms"], t["error"], t["finish_reason"]) == (None,) * 4
    [b] = t["blocks"]
    assert [
        b[k]
        for k in ("parent_block_id", "agent", "agent_name", "duration_ms", "usage", "relay_status")
    ] == [None] * 6
    assert t["threads"][0]["parent_thread_id"] is None


def _cli(*args: str, stdin: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "agent_stream", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


async def test_assemble_and_a_trip_through_the_chat_wire_give_the_same_transcript_json(
    tmp_path: Path,
) -> None:
    msgs = await _team_stream()
    jsonl = "".join(m.to_json() + "\n" for m in msgs)
    want: dict[str, Any] = assemble(msgs).to_dict()
    assert json.loads(_cli("assemble", stdin=jsonl)) == want
    chat = _cli("convert", "--to", "chat", stdin=jsonl)
    decoded = _cli("decode", "--from", "chat", stdin=chat)
    got = json.loads(_cli("assemble", stdin=decoded))
    for key in ("status", "error", "usage", "finish_reason", "duration_ms", "threads"):
        assert got[key] == want[key], key

    def blocks(t: dict[str, Any]) -> list[dict[str, Any]]:
        # the chat wire withholds reasoning, so a block's message_count may be lower
        return [{k: v for k, v in b.items() if k != "message_count"} for b in t["blocks"]]

    assert blocks(got) == blocks(want)
