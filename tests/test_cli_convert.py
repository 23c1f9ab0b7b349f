"""`agent-stream convert --to openai|cui|channels|agui` and `agent-stream decode --from openai`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import Event, EventType
from openai.types.chat import ChatCompletionChunk
from pydantic import TypeAdapter

from agent_stream.assemble import assemble
from agent_stream.cli import main
from agent_stream.message import Message

STREAM = [
    {"type": "event", "props": {"event": "stream_start", "data": {"request_id": "q1"}}},
    {
        "type": "event",
        "props": {"event": "block_start", "data": {"block_id": "B1", "type": "llm"}},
        "block_id": "B1",
    },
    {"type": "thinking", "props": {"content": "Hmm."}, "message_id": "M1", "block_id": "B1"},
    {
        "type": "tool_call",
        "props": {"id": "c1", "name": "f", "arguments": '{"a": 1}'},
        "message_id": "M2",
        "block_id": "B1",
    },
    {
        "type": "text",
        "props": {"content": "Hello"},
        "message_id": "M3",
        "block_id": "B1",
        "delta": True,
    },
    {
        "type": "text",
        "props": {"content": " world"},
        "message_id": "M3",
        "block_id": "B1",
        "delta": True,
    },
    {
        "type": "event",
        "props": {"event": "block_end", "data": {"block_id": "B1"}},
        "block_id": "B1",
    },
    {
        "type": "event",
        "props": {
            "event": "stream_end",
            "data": {
                "status": "completed",
                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
            },
        },
    },
]


def write_jsonl(tmp_path: Path, rows: list[Any], name: str = "s.jsonl") -> str:
    p = tmp_path / name
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(p)


def run(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_convert_to_openai_writes_chunks_the_openai_package_reads(tmp_path, capsys) -> None:
    code, out, _ = run(
        [
            "convert",
            "--to",
            "openai",
            "--include-usage",
            "--model",
            "demo",
            write_jsonl(tmp_path, STREAM),
        ],
        capsys,
    )
    assert code == 0
    datas = [ln[6:] for ln in out.split("\n") if ln.startswith("data: ")]
    assert datas[-1] == "[DONE]"
    chunks = [ChatCompletionChunk.model_validate_json(d) for d in datas[:-1]]
    assert {c.id for c in chunks} == {"chatcmpl-q1"} and {c.model for c in chunks} == {"demo"}
    assert "".join(ch.delta.content or "" for c in chunks for ch in c.choices) == "Hello world"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 3


def test_convert_then_decode_openai_gives_back_the_text_and_tool_call(tmp_path, capsys) -> None:
    _, sse, _ = run(
        ["convert", "--to", "openai", "--tool-calls", "client", write_jsonl(tmp_path, STREAM)],
        capsys,
    )
    p = tmp_path / "reply.sse"
    p.write_text(sse)
    code, out, err = run(["decode", "--from", "openai", str(p)], capsys)
    assert code == 0 and err == ""
    msgs = [Message.from_json(ln) for ln in out.splitlines()]
    t = assemble(msgs)
    assert t.text() == "Hello world"
    assert [m.props for m in t.messages if m.type == "tool_call"] == [
        {"id": "c1", "name": "f", "arguments": '{"a": 1}'}
    ]
    assert [m.props["content"] for m in t.messages if m.type == "thinking"] == ["Hmm."]
    assert t.status == "completed"


def test_decode_openai_bad_line_exits_2_or_is_skipped(tmp_path, capsys) -> None:
    good = 'data: {"id":"x","choices":[{"index":0,"delta":{"content":"ok"}}]}'
    p = write_jsonl(tmp_path, [good, "data: {broken", "data: [DONE]"], "bad.sse")
    code, _, err = run(["decode", "--from", "openai", p], capsys)
    assert code == 2 and err.startswith("line 2: data is not JSON")
    code, out, err = run(["decode", "--from", "openai", "--keep-going", p], capsys)
    assert code == 0 and "line 2:" in err
    assert assemble([Message.from_json(ln) for ln in out.splitlines()]).text() == "ok"


def test_convert_to_cui_is_the_message_json_and_sse_with_sse(tmp_path, capsys) -> None:
    f = write_jsonl(tmp_path, STREAM)
    code, out, _ = run(["convert", "--to", "cui", f], capsys)
    assert code == 0
    assert [Message.from_json(ln) for ln in out.splitlines()] == [
        Message.from_dict(r) for r in STREAM
    ]
    code, out, _ = run(["convert", "--to", "cui", "--sse", f], capsys)
    events = [e for e in out.split("\n\n") if e]
    assert len(events) == len(STREAM) and all(e.startswith("data: {") for e in events)


def test_convert_to_channels_follows_the_channel_list(tmp_path, capsys) -> None:
    f = write_jsonl(tmp_path, STREAM)
    code, out, _ = run(["convert", "--to", "channels", f], capsys)
    assert code == 0
    evs = [json.loads(ln) for ln in out.splitlines()]
    assert "reasoning" not in {e["channel"] for e in evs}
    assert evs[-1] == {
        "channel": "status",
        "type": "stream.end",
        "data": {
            "status": "completed",
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        },
    }
    code, out, _ = run(["convert", "--to", "channels", "--channels", "reasoning", f], capsys)
    chans = {json.loads(ln)["channel"] for ln in out.splitlines()}
    assert chans == {"reasoning", "status"}
    code = main(["convert", "--to", "channels", "--channels", "bogus", f])
    err = capsys.readouterr().err
    assert code == 2 and "unknown channel" in err and "Traceback" not in err


def test_convert_to_agui_writes_valid_events(tmp_path, capsys) -> None:
    code, out, _ = run(["convert", "--to", "agui", write_jsonl(tmp_path, STREAM)], capsys)
    assert code == 0
    ta = TypeAdapter(Event)
    events = [ta.validate_json(ln[6:]) for ln in out.split("\n") if ln.startswith("data: ")]
    assert events[0].type == EventType.RUN_STARTED and events[0].run_id == "q1"
    assert events[-1].type == EventType.RUN_FINISHED
    assert (
        "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)
        == "Hello world"
    )


@pytest.mark.parametrize("fmt", ["openai", "cui", "channels", "agui"])
def test_a_stream_ending_in_error_converts_with_exit_0(tmp_path, capsys, fmt: str) -> None:
    rows = [
        *STREAM[:5],
        {"type": "error", "props": {"message": "boom"}},
        {"type": "event", "props": {"event": "stream_end", "data": {"status": "error"}}},
    ]
    code, out, _ = run(["convert", "--to", fmt, write_jsonl(tmp_path, rows)], capsys)
    assert code == 0 and "boom" in out


@pytest.mark.parametrize("fmt", ["openai", "cui", "channels", "agui"])
def test_an_unreadable_line_exits_2_naming_the_line(tmp_path, capsys, fmt: str) -> None:
    f = write_jsonl(tmp_path, [STREAM[0], "{not json", STREAM[2]])
    code, _, err = run(["convert", "--to", fmt, f], capsys)
    assert code == 2 and err.startswith("line 2: ")
