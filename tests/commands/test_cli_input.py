"""The commands' input layer (agent_stream/commands/_io.py) and format registry (formats.py),
and the real `agent-stream` process on inputs that must not break it."""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest
from cli_harness import COMMANDS, run

from agent_stream.commands import _io
from agent_stream.commands.formats import FORMATS, decoders, encoders

AGENT_STREAM = [sys.executable, "-m", "agent_stream"]
TEXT = b'{"type":"text","message_id":"M1","delta":true,"props":{"content":"%s "}}'


def lines(data: bytes, max_bytes: int = 100, block: int = 7) -> list[tuple[int, bytes | None]]:
    old = _io.BLOCK
    _io.BLOCK = block  # small blocks: every line crosses reads
    try:
        return list(_io.raw_lines(io.BytesIO(data), max_bytes))
    finally:
        _io.BLOCK = old


def test_lines_are_numbered_counting_blank_ones_and_lose_cr_and_the_opening_bom() -> None:
    data = b"\xef\xbb\xbfone\r\n\n  \r\ntwo\n\xef\xbb\xbfthree\nlast"
    assert lines(data) == [(1, b"one"), (4, b"two"), (5, b"\xef\xbb\xbfthree"), (6, b"last")]
    assert lines(b"\xef\xbb\xbf\r\nx") == [(2, b"x")]  # a BOM alone makes a blank line


def test_a_line_too_long_is_reported_once_as_soon_as_it_passes_the_cap_and_skipped() -> None:
    data = b"a\n" + b"x" * 1000 + b"\nb\n" + b"y" * 101
    assert lines(data, max_bytes=100) == [(1, b"a"), (2, None), (3, b"b"), (4, None)]
    assert lines(b"z" * 100 + b"\n", max_bytes=100) == [(1, b"z" * 100)]  # the cap itself is fine


def test_output_is_flushed_before_every_read() -> None:
    events: list[str] = []

    class Src(io.BytesIO):
        def read1(self, n: int = -1) -> bytes:
            events.append("read")
            return super().read1(n)

    for _ in _io.raw_lines(Src(b"a\nb\n"), 100, lambda: events.append("flush")):
        pass
    assert events == ["flush", "read", "flush", "read"]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_missing_file_or_a_directory_cannot_be_read_exit_2(command: str, tmp_path: Path) -> None:
    for path, reason in (
        (tmp_path / "nope.jsonl", "No such file or directory"),
        (tmp_path, "Is a directory"),
    ):
        r = run([*COMMANDS[command], str(path)], b"")
        assert (r.code, r.out) == (2, b"")
        assert r.err == f"agent-stream: cannot read {path}: {reason}\n"


def test_an_unreadable_file_cannot_be_read(tmp_path: Path) -> None:
    """A file that opens but cannot be read: mode 000 (as root, which reads any file, a file
    whose read fails with EIO instead) is reported as `cannot read FILE: reason`, exit 2."""
    if os.geteuid() == 0:
        f, reason = Path("/proc/self/mem"), "Input/output error"
    else:
        f, reason = tmp_path / "secret.jsonl", "Permission denied"
        f.write_bytes(TEXT % b"x" + b"\n")
        f.chmod(0)
    r = run(["assemble", str(f)], b"")
    assert r.code == 2
    assert r.err.endswith(f"agent-stream: cannot read {f}: {reason}\n")


def test_max_line_bytes_must_be_a_positive_number(capsys: pytest.CaptureFixture[str]) -> None:
    from agent_stream.cli import main

    for bad in ("0", "lots"):
        with pytest.raises(SystemExit) as info:
            main(["assemble", "--max-line-bytes", bad])
        assert info.value.code == 2
    assert "--max-line-bytes" in capsys.readouterr().err


def test_convert_to_chat_with_a_bad_line_6_writes_what_lines_1_to_5_carry() -> None:
    good = [TEXT % w for w in (b"one", b"two", b"three", b"four", b"five")]
    alone = run(["convert", "--to", "chat"], b"\n".join(good) + b"\n")
    r = run(["convert", "--to", "chat"], b"\n".join([*good, b"{oops", TEXT % b"six"]) + b"\n")
    assert r.code == 2 and r.err.startswith("line 6: not JSON")
    text = "".join(
        c["text"]
        for ln in r.out.splitlines()
        for c in json.loads(ln)["content"]
        if c["type"] == "text"
    )
    assert text.startswith("one two three four five ") and "six" not in text
    assert "line 6: not JSON" in text  # then the wire's own error ending
    assert len(r.out) >= len(alone.out)


def test_assemble_prints_the_transcript_so_far_and_says_which_line_stopped_it() -> None:
    data = b"\n".join([TEXT % b"Hello", TEXT % b"World", b"NaN", TEXT % b"again"]) + b"\n"
    r = run(["assemble"], data)
    assert r.code == 2
    assert json.loads(r.out)["messages"][0]["props"]["content"] == "Hello World "
    assert r.err.splitlines() == [
        "line 3: NaN is not JSON",
        "agent-stream assemble: stopped at line 3; the transcript holds the lines before it",
    ]
    r = run(["assemble", "--keep-going"], data)
    assert (r.code, r.err) == (0, "line 3: NaN is not JSON\n")
    assert json.loads(r.out)["messages"][0]["props"]["content"] == "Hello World again "


def test_the_chunker_flushes_the_text_it_holds_before_the_error() -> None:
    r = run(["chunk"], b'"Hello, this is an unfinished"\n" sentence"\n[1]\n')
    assert r.code == 2 and r.err.startswith("line 3: expected a JSON string, got an array")
    assert (
        "".join(json.loads(x) for x in r.out.splitlines())
        == "Hello, this is an unfinished sentence"
    )


def test_registry_is_what_convert_and_decode_offer() -> None:
    assert {"chat", "openai", "cui", "channels", "agui"} <= set(encoders())
    assert {"chat", "openai"} <= set(decoders())
    assert all(FORMATS[n].encoder is not None for n in encoders())
    for name in encoders():
        r = run(["convert", "--to", name], TEXT % b"hi" + b"\n")
        assert r.code == 0 and b"hi" in r.out, (name, r.err)


def test_choosing_a_format_imports_its_adapter_and_no_other() -> None:
    code = (
        "import sys; from agent_stream.commands import formats; "
        "assert 'agent_stream.adapters.agui' not in sys.modules; "
        "formats.FORMATS['cui'].encoder(iter([]), None); "
        "assert 'agent_stream.adapters.agui' not in sys.modules; "
        "formats.FORMATS['agui'].encoder(iter([]), None); "
        "assert 'agent_stream.adapters.agui' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- the real process ---------------------------------------------------------------------------
def test_a_100_mb_line_in_a_file_is_a_line_too_long_and_the_rest_still_read(tmp_path: Path) -> None:
    f = tmp_path / "big.jsonl"
    with f.open("wb") as out:
        out.write(TEXT % b"before" + b"\n")
        out.write(b"a" * (100 * 1024 * 1024) + b"\n")
        out.write(TEXT % b"after" + b"\n")
    r = subprocess.run(
        [*AGENT_STREAM, "assemble", "--keep-going", str(f)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0
    assert (
        r.stderr.decode() == "line 2: line too long (over 16777216 bytes; see --max-line-bytes)\n"
    )
    assert json.loads(r.stdout)["messages"][0]["props"]["content"] == "before after "


def test_invalid_utf8_on_stdin_in_the_c_locale_is_a_bad_line_not_copied_through() -> None:
    good = b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"ok"}}]}'
    bad = b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"\xff"}}]}'
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "ascii"}
    r = subprocess.run(
        [*AGENT_STREAM, "decode", "--from", "openai"],
        input=good + b"\n" + bad,
        capture_output=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert r.returncode == 2
    assert r.stderr.decode().startswith("line 2: invalid UTF-8 at byte 59")
    assert b'"content":"ok"' in r.stdout and b"\xff" not in r.stdout


def test_non_ascii_output_is_utf8_whatever_the_locale() -> None:
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    r = subprocess.run(
        [*AGENT_STREAM, "convert", "--to", "cui"],
        input=TEXT.replace(b"%s", "héllo 世界".encode()) + b"\n",
        capture_output=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "héllo 世界".encode() in r.stdout


def test_output_of_a_line_is_out_before_the_next_line_is_waited_for() -> None:
    p = subprocess.Popen(
        [*AGENT_STREAM, "convert", "--to", "cui"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(TEXT % b"first" + b"\n")
        p.stdin.flush()
        ready, _, _ = select.select([p.stdout], [], [], 30)
        assert ready, "no output while the input stays open"
        assert b"first" in p.stdout.readline()
        p.stdin.close()
        assert p.wait(30) == 0
    finally:
        p.kill()
        p.wait()


def test_closing_the_input_twice_reports_the_bad_line_once_and_keeps_the_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    path = tmp_path / "in.jsonl"
    path.write_bytes(b"x" * 50 + b"\n")
    inp = _io.open_lines(argparse.Namespace(file=str(path), max_line_bytes=10))
    assert inp is not None
    assert list(inp.lines()) == []  # the only line is too long: the input stops there
    assert inp.close() == 2
    first = capsys.readouterr().err
    assert "line 1" in first
    assert inp.close() == 2
    assert capsys.readouterr().err == ""
