"""Shared helpers of the command-line edge: reading Message JSONL, reporting bad lines."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TextIO

from agent_stream.errors import StreamError
from agent_stream.message import Message


class BadLine(Exception):
    """A numbered input line could not be read."""

    def __init__(self, lineno: int, reason: str) -> None:
        super().__init__(f"line {lineno}: {reason}")
        self.lineno = lineno
        self.reason = reason


def add_input_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="input file (default: standard input)")
    parser.add_argument("--keep-going", action="store_true",
                        help="report bad lines on stderr, skip them and exit 0")


def open_input(path: str | None) -> TextIO:
    if path is None or path == "-":
        return sys.stdin
    return open(path, encoding="utf-8")


def numbered_lines(stream: TextIO) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers, newline stripped."""
    for n, line in enumerate(stream, 1):
        line = line.rstrip("\r\n")
        if line.strip():
            yield n, line


def read_messages(stream: TextIO, keep_going: bool, errors: list[BadLine]) -> Iterator[Message]:
    """Messages from JSONL; a bad line raises BadLine (with keep_going: reported, skipped)."""
    for n, line in numbered_lines(stream):
        try:
            yield Message.from_json(line)
        except StreamError as exc:
            bad = BadLine(n, str(exc))
            if not keep_going:
                raise bad from None
            report(bad)
            errors.append(bad)


def report(err: BadLine | str) -> None:
    print(str(err), file=sys.stderr, flush=True)
