"""`agent-stream chunk`: token deltas (JSONL strings) in, TextChunker chunks (JSONL strings) out."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections.abc import Callable
from typing import TextIO

from agent_stream.chunker import TextChunker
from agent_stream.commands._io import BadLine, numbered_lines, report
from agent_stream.errors import ChunkerConfigError

EPILOG = """examples:
  printf '%s\\n' '"Hello"' '" world."' '" How"' '" are you?"' | agent-stream chunk
  -> "Hello world. "
     "How are you?"
  agent-stream chunk deltas.jsonl --min-chars 20 --max-chars 200

Every delta is fed at the same instant and nothing is released on time, so the output depends
only on the input. The chunks, concatenated, equal the deltas, concatenated. Blank lines are
skipped.
"""

_JSON_TYPES = {dict: "an object", list: "an array", bool: "a boolean", int: "a number",
               float: "a number", type(None): "null"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "chunk",
        help="buffer token deltas into sentence/paragraph chunks (JSONL strings in and out)",
        description="Read text deltas, one JSON string a line (stdin when no FILE), feed them to "
        "a TextChunker and print each chunk as a JSON string line. A line that is not a JSON "
        "string: exit 2 and 'line N: <reason>' on stderr.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", nargs="?", metavar="FILE", help="input file (default: standard input)")
    p.add_argument("--min-chars", type=int, default=None, metavar="N",
                   help="a sentence or paragraph end releases a chunk of at least N characters "
                   "(default: 40)")
    p.add_argument("--max-chars", type=int, default=None, metavar="N",
                   help="no chunk is longer than N characters (default: 400)")
    p.set_defaults(func=run)


def _open(path: str | None) -> tuple[TextIO, Callable[[], object]]:
    """The input as text and how to let go of it.

    Undecodable bytes become surrogates, so they are reported with their line number.
    """
    if path is None or path == "-":
        raw = getattr(sys.stdin, "buffer", None)
        if raw is None:  # already text (e.g. a StringIO in tests)
            return sys.stdin, lambda: None
        wrapper = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape")
        return wrapper, wrapper.detach  # leave sys.stdin open
    f = open(path, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115 (closed by caller)
    return f, f.close


def _write(chunks: list[str]) -> None:
    for chunk in chunks:
        sys.stdout.write(json.dumps(chunk, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def run(args: argparse.Namespace) -> int:
    options = {name: value for name, value in (("min_chars", args.min_chars),
                                               ("max_chars", args.max_chars)) if value is not None}
    try:
        chunker = TextChunker(**options)
    except ChunkerConfigError as exc:
        report(f"agent-stream chunk: {exc}")
        return 2
    try:
        stream, release = _open(args.file)
    except OSError as exc:
        report(f"agent-stream chunk: cannot read {args.file}: {exc.strerror or exc}")
        return 2
    try:
        for n, line in numbered_lines(stream):
            try:
                line.encode("utf-8")
            except UnicodeEncodeError:  # undecodable bytes, smuggled in as surrogates
                report(BadLine(n, "not UTF-8 text"))
                return 2
            try:
                delta = json.loads(line)
            except json.JSONDecodeError as exc:
                report(BadLine(n, f"not JSON: {exc.msg} (column {exc.colno})"))
                return 2
            if not isinstance(delta, str):
                report(BadLine(n, "expected a JSON string, got "
                                  f"{_JSON_TYPES.get(type(delta), type(delta).__name__)}"))
                return 2
            try:
                delta.encode("utf-8")
            except UnicodeEncodeError:
                report(BadLine(n, "the string holds a lone surrogate (not valid Unicode text)"))
                return 2
            chunks = chunker.feed(delta, 0.0)
            if chunks:
                _write(chunks)
        _write(chunker.flush())
    finally:
        release()
    return 0
