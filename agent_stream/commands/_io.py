"""The command line's one input layer: bytes in, numbered lines, strict JSON, bad lines reported.

Every command reads through here. Input is read as bytes (never a text decode that can raise)
and split into lines here: ``\\n`` ends a line, a ``\\r`` before it is dropped, a UTF-8 byte
order mark opening the input is skipped, lines of only whitespace are skipped but counted. A
line is bad (``line N: <reason>``) when it is longer than ``--max-line-bytes``, not UTF-8, or
not strict JSON (``agent_stream.jsontext``). Output goes to stdout as UTF-8 bytes, flushed
before each read of the input, so whatever earlier lines produced is out before a later line
is waited for or reported.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, TextIO

from agent_stream import jsontext
from agent_stream.errors import InvalidJSON, StreamError
from agent_stream.message import Message, type_errors

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
BLOCK = 1 << 16
BOM = b"\xef\xbb\xbf"


class BadLine(StreamError):
    """A numbered input line could not be read (``line N: reason``)."""

    def __init__(self, lineno: int, reason: str) -> None:
        super().__init__(f"line {lineno}: {reason}")
        self.lineno = lineno
        self.reason = reason


class CannotRead(Exception):
    """The input file cannot be opened or read (``agent-stream: cannot read FILE: reason``)."""

    def __init__(self, path: str, exc: OSError) -> None:
        super().__init__(f"agent-stream: cannot read {path}: {exc.strerror or exc}")


def _byte_count(text: str) -> int:
    """``--max-line-bytes`` values: a positive number of bytes."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of bytes: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def add_input_args(parser: argparse.ArgumentParser, *, keep_going: bool = True) -> None:
    """FILE, --max-line-bytes and (unless ``keep_going=False``) --keep-going."""
    parser.add_argument(
        "file", nargs="?", metavar="FILE", help="input file (default: standard input)"
    )
    if keep_going:
        parser.add_argument(
            "--keep-going",
            action="store_true",
            help="report bad lines on stderr, skip them and exit 0",
        )
    parser.add_argument(
        "--max-line-bytes",
        type=_byte_count,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help="a longer line is a bad line, 'line too long' (default: 16 MiB = %(default)s)",
    )


def report(err: BaseException | str) -> None:
    """One line on stderr (bad lines, warnings, reasons to stop)."""
    print(str(err), file=sys.stderr, flush=True)


class Output:
    """stdout as UTF-8 bytes whatever the locale (strict: output is always valid UTF-8)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.text = stream if stream is not None else sys.stdout
        self.raw: BinaryIO | None = getattr(self.text, "buffer", None)
        if self.raw is not None:
            self.text.flush()

    def write(self, s: str) -> None:
        if self.raw is not None:
            self.raw.write(s.encode("utf-8"))
        else:
            self.text.write(s)

    def flush(self) -> None:
        (self.raw if self.raw is not None else self.text).flush()


def open_input(path: str | None) -> BinaryIO:
    """The input as bytes: FILE, or stdin for none or ``-``; CannotRead if it cannot be opened.

    A text-only stdin (a StringIO in tests) is read whole and encoded, lone surrogates kept as
    the bytes that then fail to decode.
    """
    if path is None or path == "-":
        raw = getattr(sys.stdin, "buffer", None)
        if raw is not None:
            return raw  # type: ignore[no-any-return]
        import io

        return io.BytesIO(sys.stdin.read().encode("utf-8", "surrogatepass"))
    try:
        return open(path, "rb")
    except OSError as exc:
        raise CannotRead(path, exc) from None


def raw_lines(
    src: BinaryIO, max_bytes: int, before_read: Callable[[], None] = lambda: None
) -> Iterator[tuple[int, bytes | None]]:
    """``(n, line)`` for each non-blank line, ``(n, None)`` for one longer than ``max_bytes``.

    ``before_read`` runs before each (possibly blocking) read. A line too long is reported as
    soon as it passes the cap and its rest is skipped, never held in memory. The newline and a
    ``\\r`` before it are not part of a line; a UTF-8 BOM opening line 1 is dropped.
    """
    read = getattr(src, "read1", None) or src.read
    n = 0
    pending: list[bytes] = []
    size = 0
    skipping = False  # inside a line already reported too long
    while True:
        before_read()
        block = read(BLOCK)
        if not block:
            break
        parts = block.split(b"\n")
        last = parts.pop()
        for part in parts:
            n += 1
            if skipping:
                skipping = False
                continue
            if pending:
                pending.append(part)
                line = b"".join(pending)
                pending = []
                size = 0
            else:
                line = part
            if len(line) > max_bytes:
                yield n, None
            else:
                line = _trim(n, line)
                if line.strip():
                    yield n, line
        if last and not skipping:
            pending.append(last)
            size += len(last)
            if size > max_bytes:
                yield n + 1, None
                pending = []
                size = 0
                skipping = True
    if pending:
        line = _trim(n + 1, b"".join(pending))
        if line.strip():
            yield n + 1, line


def _trim(n: int, line: bytes) -> bytes:
    if line.endswith(b"\r"):
        line = line[:-1]
    if n == 1 and line.startswith(BOM):
        line = line[3:]
    return line


def too_long(n: int, max_bytes: int) -> BadLine:
    return BadLine(n, f"line too long (over {max_bytes} bytes; see --max-line-bytes)")


def decode_line(n: int, raw: bytes) -> str:
    """The line as text; BadLine ``invalid UTF-8 at byte K`` (K counts from 1)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadLine(n, f"invalid UTF-8 at byte {exc.start + 1}") from None


def read_json(n: int, raw: bytes) -> Any:
    """The line's one strict JSON value; BadLine saying what is wrong with it."""
    try:
        return jsontext.loads(raw, InvalidJSON)
    except InvalidJSON as exc:
        raise BadLine(n, str(exc)) from None


def read_message(n: int, raw: bytes) -> Message:
    """The line as a Message whose typed fields have their types; BadLine if not."""
    data = read_json(n, raw)
    try:
        msg = Message.from_dict(data)
    except StreamError as exc:
        raise BadLine(n, str(exc)) from None
    if msg.delta_path is not None and msg.delta_path.count(".") >= jsontext.MAX_DEPTH:
        raise BadLine(n, f"delta_path nested too deep (over {jsontext.MAX_DEPTH} segments)")
    problems = type_errors(msg)
    if problems:
        raise BadLine(n, "; ".join(problems))
    return msg


class Input:
    """The numbered lines of FILE (or stdin) for one command, and the bad line that stopped them.

    ``lines()`` yields ``(n, raw)`` for each non-blank line that is not too long. The command
    passes what it finds bad to ``reject``: with ``--keep-going`` it is reported at once and the
    command goes on; otherwise it is kept, the command stops reading, writes what the lines
    before it produced, and ``close()`` reports it after that output (exit 2).
    """

    def __init__(self, args: argparse.Namespace, out: Output) -> None:
        self.path: str | None = args.file
        self.keep_going = bool(getattr(args, "keep_going", False))
        self.max_bytes: int = getattr(args, "max_line_bytes", DEFAULT_MAX_LINE_BYTES)
        self.out = out
        self.src = open_input(args.file)
        self.lineno = 0
        self.bad: BadLine | None = None
        self.failed: CannotRead | None = None
        self._status: int | None = None  # set by the first close()

    def lines(self) -> Iterator[tuple[int, bytes]]:
        try:
            for n, raw in raw_lines(self.src, self.max_bytes, self.out.flush):
                self.lineno = n
                if raw is None:
                    if self.reject(too_long(n, self.max_bytes)):
                        continue
                    return
                yield n, raw
        except OSError as exc:  # a read failing half-way (an I/O error, a vanished device)
            self.failed = CannotRead(self.path or "standard input", exc)
        finally:
            if self.src is not getattr(sys.stdin, "buffer", None):
                self.src.close()

    def reject(self, exc: StreamError) -> bool:
        """A bad line (BadLine, or a StreamError about the current line): True to go on."""
        bad = exc if isinstance(exc, BadLine) else BadLine(self.lineno, str(exc))
        if self.keep_going:
            report(bad)
            return True
        self.bad = bad
        return False

    @property
    def stopped(self) -> bool:
        """Whether the input stopped early (a bad line, a failed read)."""
        return self.bad is not None or self.failed is not None

    def close(self) -> int:
        """The end of the input: flush the output, then report what stopped the input; the exit
        status. Idempotent: a second call reports nothing and returns the same status."""
        self.out.flush()
        if self._status is None:
            problem = self.failed if self.failed is not None else self.bad
            if problem is not None:
                report(problem)
            self._status = 0 if problem is None else 2
        return self._status


def open_lines(args: argparse.Namespace) -> Input | None:
    """The command's Input, writing to a new Output (``inp.out``); None after reporting that
    FILE cannot be read (the command then exits 2)."""
    try:
        return Input(args, Output())
    except CannotRead as exc:
        report(exc)
        return None
