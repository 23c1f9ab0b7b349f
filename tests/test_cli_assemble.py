"""`agent-stream assemble`: output shape, bad lines, --keep-going, help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_stream.cli import main

LINES = [
    '{"type":"event","props":{"event":"block_start","data":{"block_id":"B1","type":"llm"}}}',
    '{"chunk_id":"C1","message_id":"M1","block_id":"B1","type":"text","delta":true,"props":{"content":"Hello"}}',
    '{"chunk_id":"C2","message_id":"M1","block_id":"B1","type":"text","delta":true,"props":{"content":" World"}}',
    '{"chunk_id":"C3","type":"text","props":{"content":"standalone"}}',
]


def run(tmp_path: Path, lines: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    f = tmp_path / "in.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "agent_stream", "assemble", str(f), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_prints_messages_blocks_threads_with_all_seven_keys(tmp_path: Path) -> None:
    r = run(tmp_path, LINES)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert list(out) == [
        "status",
        "error",
        "usage",
        "finish_reason",
        "duration_ms",
        "withheld",
        "messages",
        "blocks",
        "threads",
    ]
    assert out["status"] is None  # no stream_start: not a stream that began, nor one that ended
    assert out["messages"][0] == {
        "message_id": "M1",
        "thread_id": None,
        "block_id": "B1",
        "type": "text",
        "props": {"content": "Hello World"},
        "chunk_count": 2,
        "status": "streaming",
    }
    # keyed by its chunk_id, shows message_id null
    assert out["messages"][1]["message_id"] is None
    assert out["messages"][1]["props"] == {"content": "standalone"}
    for m in out["messages"]:
        assert list(m) == [
            "message_id",
            "thread_id",
            "block_id",
            "type",
            "props",
            "chunk_count",
            "status",
        ]


def test_bad_line_exits_2_with_line_number_and_no_traceback(tmp_path: Path) -> None:
    r = run(tmp_path, [LINES[1], '{"type":"text","bogus":1}', LINES[2]])
    assert r.returncode == 2
    assert r.stderr.startswith("line 2: ") and "bogus" in r.stderr
    assert "Traceback" not in r.stderr


def test_keep_going_reports_and_prints_the_transcript(tmp_path: Path) -> None:
    r = run(tmp_path, [LINES[1], "not json", LINES[2]], "--keep-going")
    assert r.returncode == 0
    assert "line 2: not JSON" in r.stderr
    assert json.loads(r.stdout)["messages"][0]["props"]["content"] == "Hello World"


def test_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(LINES[1:3])))
    assert main(["assemble"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"][0]["props"]["content"] == "Hello World"


def test_help_shows_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["assemble", "--help"])
    assert "examples:" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "agent-stream demo" in capsys.readouterr().out
