"""Running `agent-stream` commands in-process on bytes, and what every run must satisfy.

Shared by the input-layer catalogue and the fuzz test (tests/commands/).
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import sys
import traceback
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from agent_stream.cli import main
from agent_stream.commands.formats import decoders, encoders

# Every command that reads lines, by the input format it reads.
COMMANDS: dict[str, list[str]] = {
    "assemble": ["assemble"],
    "chunk": ["chunk"],
    **{f"convert-{f}": ["convert", "--to", f] for f in encoders()},
    **{f"decode-{f}": ["decode", "--from", f] for f in decoders()},
}


def reads(command: str) -> str:
    """The input format a command reads: messages, deltas, chat or openai."""
    if command == "assemble" or command.startswith("convert-"):
        return "messages"
    if command == "chunk":
        return "deltas"
    return command.removeprefix("decode-")


MARKERS = ["alpha", "bravo", "charlie", "foxtrot", "golf"]


def _msg(d: dict[str, Any]) -> bytes:
    return json.dumps(d).encode()


def _text(word: str) -> bytes:
    return _msg(
        {"type": "text", "message_id": "M1", "delta": True, "props": {"content": word + " "}}
    )


def _chat(word: str) -> bytes:
    return json.dumps(
        {
            "timestamp": "2024-01-01T00:00:00+00:00",
            "msg_id": str(uuid.uuid4()),
            "content": [{"type": "text", "text": word + " "}],
        }
    ).encode()


def _openai(word: str) -> bytes:
    return (
        b"data: "
        + json.dumps(
            {
                "id": "c1",
                "model": "m",
                "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}],
            }
        ).encode()
    )


START = _msg({"type": "event", "props": {"event": "stream_start", "data": {"request_id": "q1"}}})


def good_lines(fmt: str, words: list[str]) -> list[bytes]:
    """Lines of format ``fmt`` whose output carries each of ``words``."""
    if fmt == "messages":
        return [_text(w) for w in words]
    if fmt == "deltas":
        return [json.dumps(w + " ").encode() for w in words]
    if fmt == "chat":
        return [_chat(w) for w in words]
    return [_openai(w) for w in words]


@functools.cache
def _converted(fmt: str) -> tuple[list[bytes], list[bytes]]:
    """A wire's lines for the marker words, made by ``convert --to fmt``: (before foxtrot, rest)."""
    stream = b"\n".join([START, *good_lines("messages", MARKERS)]) + b"\n"
    r = run(["convert", "--to", fmt], stream)
    lines = [ln for ln in r.out.split(b"\n") if ln.strip()]
    cut = next(i for i, ln in enumerate(lines) if b"foxtrot" in ln)
    assert b"charlie" in b"".join(lines[:cut]), "one line a word is needed"
    return lines[:cut], lines[cut:]


def prefix(fmt: str) -> list[bytes]:
    """The good lines before a case's line: three marker words (and stream_start)."""
    if fmt not in ("messages", "deltas", "chat", "openai"):
        return _converted(fmt)[0]
    lines = good_lines(fmt, MARKERS[:3])
    return [START, *lines] if fmt == "messages" else lines


def suffix(fmt: str) -> list[bytes]:
    """The good lines after a case's line: the last two marker words."""
    if fmt not in ("messages", "deltas", "chat", "openai"):
        return _converted(fmt)[1]
    return good_lines(fmt, MARKERS[3:])


@dataclass
class Result:
    code: int
    out: bytes
    err: str


def run(argv: list[str], stdin: bytes | BinaryIO) -> Result:
    """``agent-stream argv`` in-process with ``stdin`` as its standard input (bytes)."""
    raw = io.BytesIO(stdin) if isinstance(stdin, bytes) else stdin
    out = io.BytesIO()
    err = io.StringIO()
    old = sys.stdin, sys.stdout, sys.stderr
    stdin_text = io.TextIOWrapper(raw, encoding="utf-8")  # type: ignore[arg-type]
    stdout_text = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stdin, sys.stdout, sys.stderr = stdin_text, stdout_text, err
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException:  # what the test is there to catch: shown as a traceback
        err.write(traceback.format_exc())
        code = -1
    finally:
        sys.stdin, sys.stdout, sys.stderr = old
        with contextlib.suppress(ValueError):
            stdout_text.flush()
        result = Result(code, out.getvalue(), err.getvalue())
        for wrapper in (stdin_text, stdout_text):
            with contextlib.suppress(ValueError):
                wrapper.detach()
    return result


def bad_line_numbers(err: str) -> list[int]:
    """N of each ``line N: <reason>`` on stderr that is not a warning."""
    out = []
    for line in err.splitlines():
        if line.startswith("line ") and ": warning:" not in line:
            head = line[5:].split(":", 1)[0]
            if head.isdigit():
                out.append(int(head))
    return out


def check_output_is_strict(out: bytes) -> None:
    """Output is UTF-8 and every JSON it carries is strict (no NaN, no lone surrogate)."""
    text = out.decode("utf-8")  # raises if not UTF-8
    for line in text.splitlines():
        s = line[6:] if line.startswith("data: ") else line
        if not s.strip() or s.strip() == "[DONE]" or not s.lstrip().startswith(("{", "[", '"')):
            continue
        json.loads(s, parse_constant=_no_constant)
    for ch in text:
        assert not 0xD800 <= ord(ch) <= 0xDFFF


def _no_constant(s: str) -> Any:
    raise AssertionError(f"{s} in output")


def check_run(r: Result, *, bad: int | None) -> None:
    """The rules every run keeps: exit 0 or 2, no traceback, strict UTF-8 output, and an exit 2
    names ``bad`` as the first bad line (when ``bad`` is given)."""
    assert "Traceback" not in r.err, r.err
    assert r.code in (0, 2), (r.code, r.err)
    check_output_is_strict(r.out)
    if r.code == 2 and bad is not None:
        assert bad_line_numbers(r.err)[:1] == [bad], r.err


def lazy_stream(parts: list[bytes | tuple[bytes, int]]) -> BinaryIO:
    """A read-only byte stream of ``parts``; ``(b, n)`` is ``b`` repeated n times, made lazily."""
    return io.BufferedReader(_Lazy(parts))  # type: ignore[arg-type]


class _Lazy(io.RawIOBase):
    def __init__(self, parts: list[bytes | tuple[bytes, int]]) -> None:
        self.chunks: Iterator[bytes] = self._gen(parts)
        self.left = memoryview(b"")

    @staticmethod
    def _gen(parts: list[bytes | tuple[bytes, int]]) -> Iterator[bytes]:
        for p in parts:
            if isinstance(p, bytes):
                yield p
            else:
                b, n = p
                block = b * (1 << 20)
                full, rest = divmod(n, 1 << 20)
                for _ in range(full):
                    yield block
                yield b * rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        while not self.left:
            nxt = next(self.chunks, None)
            if nxt is None:
                return 0
            self.left = memoryview(nxt)
        n = min(len(buf), len(self.left))
        buf[:n] = self.left[:n]
        self.left = self.left[n:]
        return n
