"""`agent-stream chunk`: JSONL deltas in, JSONL chunks out; options, bad lines, help."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_stream.chunking import TextChunker
from agent_stream.cli import main

DELTAS = [
    "Hello",
    " world",
    ".",
    " This",
    " is",
    " a",
    " test",
    " of",
    " the",
    " chunk",
    " command",
    ",",
    " with",
    " 3",
    ".",
    "14",
    " and",
    " Dr",
    ".",
    " Smith",
    ".",
    "\n\n",
    "今天",
    "天气",
    "很好",
    "。",
    "👍🏽",
    " Done",
    ".",
]
TEXT = "".join(DELTAS)


def jsonl(items: list[str]) -> str:
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items)


def write(tmp_path: Path, content: str | bytes) -> Path:
    f = tmp_path / "deltas.jsonl"
    if isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(content, encoding="utf-8")
    return f


def cli(*args: str, stdin: str | bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    return subprocess.run(
        [sys.executable, "-m", "agent_stream", "chunk", *args],
        input=data,
        capture_output=True,
        check=False,
        timeout=60,
    )


def expected(deltas: list[str], **options: int) -> list[str]:
    ch = TextChunker(**options)
    out: list[str] = []
    for d in deltas:
        out += ch.feed(d, 0.0)
    return out + ch.flush()


def test_file_in_chunks_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunk", str(write(tmp_path, jsonl(DELTAS)))]) == 0
    lines = capsys.readouterr().out.splitlines()
    chunks = [json.loads(line) for line in lines]
    assert all(isinstance(c, str) for c in chunks)
    assert "".join(chunks) == TEXT
    assert chunks == expected(DELTAS)
    assert chunks[0] == "Hello world. "  # the first chunk comes at the first sentence end


def test_options_are_passed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, jsonl(DELTAS))
    assert main(["chunk", str(f), "--min-chars", "5", "--max-chars", "20"]) == 0
    chunks = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert chunks == expected(DELTAS, min_chars=5, max_chars=20)
    assert max(map(len, chunks)) <= 20 and "".join(chunks) == TEXT


def test_stdin_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(jsonl(DELTAS)))
    assert main(["chunk"]) == 0
    assert [json.loads(x) for x in capsys.readouterr().out.splitlines()] == expected(DELTAS)


def test_subprocess_stdin_keeps_unicode_readable() -> None:
    r = cli(stdin=jsonl(DELTAS))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("utf-8")
    assert "今天天气很好。" in out and "👍🏽" in out  # not \\u escapes
    assert "".join(json.loads(x) for x in out.splitlines()) == TEXT
    assert r.stderr == b""


def test_output_depends_only_on_input(tmp_path: Path) -> None:
    f = write(tmp_path, jsonl(DELTAS))
    first, second = cli(str(f)), cli(str(f))
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout


def test_blank_lines_are_skipped_and_empty_strings_allowed() -> None:
    r = cli(stdin='"One. "\n\n""\n"Two."\n   \n')
    assert r.returncode == 0, r.stderr
    assert "".join(json.loads(x) for x in r.stdout.decode().splitlines()) == "One. Two."


def test_empty_input_prints_nothing() -> None:
    r = cli(stdin="")
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"text": "hi"}', "line 2: expected a JSON string, got an object"),
        ("[1, 2]", "line 2: expected a JSON string, got an array"),
        ("42", "line 2: expected a JSON string, got a number"),
        ("null", "line 2: expected a JSON string, got null"),
        ("hello", "line 2: not JSON"),
        ('"unterminated', "line 2: not JSON"),
        ('"\\ud800"', "line 2: invalid unicode escape"),
    ],
)
def test_bad_line_exits_2_with_its_number(line: str, reason: str) -> None:
    r = cli(stdin=f'"ok"\n{line}\n"more"\n')
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith(reason), err
    assert "Traceback" not in err


def test_bad_line_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, '"fine"\n\n{"no": 1}\n')
    assert main(["chunk", str(f)]) == 2
    assert capsys.readouterr().err.startswith("line 3: expected a JSON string, got an object")


def test_undecodable_bytes_are_a_bad_line(tmp_path: Path) -> None:
    f = write(tmp_path, b'"ok"\n"caf\xe9"\n')
    r = cli(str(f))
    assert r.returncode == 2
    assert r.stderr.decode().startswith("line 2: invalid UTF-8 at byte 5")
    r = cli(stdin=b'"ok"\n\xff\xfe\n')
    assert r.returncode == 2
    assert r.stderr.decode().startswith("line 2: invalid UTF-8 at byte 1")


def test_bad_options_exit_2_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunk", "--min-chars", "50", "--max-chars", "10"]) == 2
    assert "max_chars (10) must be >= min_chars (50)" in capsys.readouterr().err
    assert main(["chunk", "--min-chars", "0"]) == 2
    assert "min_chars" in capsys.readouterr().err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chunk", str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "Traceback" not in err


def test_help_shows_an_example_and_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["chunk", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "agent-stream chunk" in out
    ch = TextChunker()
    assert f"(default: {ch.min_chars})" in out
    assert f"(default: {ch.max_chars})" in " ".join(out.split())
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "chunk" in capsys.readouterr().out


def test_the_help_example_is_true() -> None:
    r = cli(stdin=jsonl(["Hello", " world.", " How", " are you?"]))
    assert r.stdout.decode().splitlines() == ['"Hello world. "', '"How are you?"']
