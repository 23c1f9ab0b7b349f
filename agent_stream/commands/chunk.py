"""`agent-stream chunk`: token deltas (JSONL strings) in, TextChunker chunks (JSONL strings) out."""

from __future__ import annotations

import argparse
import json

from agent_stream import TextChunker
from agent_stream.commands._io import BadLine, add_input_args, open_lines, read_json, report
from agent_stream.errors import ChunkerConfigError, StreamError

EPILOG = """examples:
  printf '%s\\n' '"Hello"' '" world."' '" How"' '" are you?"' | agent-stream chunk
  -> "Hello world. "
     "How are you?"
  agent-stream chunk deltas.jsonl --min-chars 20 --max-chars 200

Every delta is fed at the same instant and nothing is released on time, so the output depends
only on the input. The chunks, concatenated, equal the deltas, concatenated. Blank lines are
skipped.
"""

_JSON_TYPES = {
    dict: "an object",
    list: "an array",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    type(None): "null",
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``chunk`` command.

    Args:
        sub: the ``agent-stream`` subcommands.
    """
    p = sub.add_parser(
        "chunk",
        help="buffer token deltas into sentence/paragraph chunks (JSONL strings in and out)",
        description="Read text deltas, one JSON string a line (stdin when no FILE), feed them to "
        "a TextChunker and print each chunk as a JSON string line. A line that is not a JSON "
        "string: the chunks of the text before it, then exit 2 and 'line N: <reason>' on "
        "stderr (--keep-going: report, skip, exit 0).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_args(p)
    p.add_argument(
        "--min-chars",
        type=int,
        default=None,
        metavar="N",
        help="a sentence or paragraph end releases a chunk of at least N characters (default: 40)",
    )
    p.add_argument(
        "--max-chars",
        type=int,
        default=None,
        metavar="N",
        help="no chunk is longer than N characters (default: 400)",
    )
    p.set_defaults(func=run)


def _kind(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def run(args: argparse.Namespace) -> int:
    """Chunk every delta; a bad line ends the input, after the text before it is flushed.

    Args:
        args: the parsed command line.

    Returns:
        The exit status.
    """
    options = {
        name: value
        for name, value in (("min_chars", args.min_chars), ("max_chars", args.max_chars))
        if value is not None
    }
    try:
        chunker = TextChunker(**options)
    except ChunkerConfigError as exc:
        report(f"agent-stream chunk: {exc}")
        return 2
    inp = open_lines(args)
    if inp is None:
        return 2

    def emit(chunks: list[str]) -> None:
        for chunk in chunks:
            inp.out.write(json.dumps(chunk, ensure_ascii=False) + "\n")

    for n, raw in inp.lines():
        try:
            delta = read_json(n, raw)
            if not isinstance(delta, str):
                raise BadLine(n, f"expected a JSON string, got {_kind(delta)}")
        except StreamError as exc:
            if inp.reject(exc):
                continue
            break
        emit(chunker.feed(delta, 0.0))
    emit(chunker.flush())
    return inp.close()
