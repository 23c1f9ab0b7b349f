"""`agent-stream decode`: a wire format in, Message JSONL out."""

from __future__ import annotations

import argparse
import importlib
import sys

from agent_stream.commands._io import BadLine, add_input_args, numbered_lines, open_input, report
from agent_stream.errors import MissingDependency, StreamError

# --from NAME -> module agent_stream.adapters.<module>, which exposes
#   cli_decoder(args) -> an object with
#     feed_line(line: str) -> list[Message]   (raises StreamError for a bad line)
#     finish() -> list[Message]
#     drain_warnings() -> list[StreamWarning]
FORMATS = {"chat": "chat", "openai": "openai"}

EPILOG = """examples:
  agent-stream decode --from chat replies.jsonl            ChatMessage JSONL -> Message JSONL
  agent-stream convert --to chat s.jsonl | agent-stream decode --from chat | agent-stream assemble
  curl -sN .../chat/completions ... | agent-stream decode --from openai   OpenAI SSE -> Messages
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "decode",
        help="decode a wire format (chat, openai) into Message JSONL",
        description="Read a wire format (stdin when no FILE) and write Message JSONL. "
        "Bad lines: 'line N: <reason>' on stderr and exit 2 (--keep-going: skip, exit 0). "
        "Warnings about valid input go to stderr and leave the exit status 0.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_args(p)
    p.add_argument("--from", dest="source", required=True, choices=sorted(FORMATS),
                   help="input format")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        module = importlib.import_module(f"agent_stream.adapters.{FORMATS[args.source]}")
    except MissingDependency as exc:
        report(f"agent-stream decode: {exc}")
        return 2
    decoder = module.cli_decoder(args)
    stream = open_input(args.file)
    out = sys.stdout

    def emit(messages: list) -> None:
        for m in messages:
            out.write(m.to_json() + "\n")
        for w in decoder.drain_warnings():
            report(f"warning: {w}")

    try:
        for n, line in numbered_lines(stream):
            try:
                produced = decoder.feed_line(line)
            except StreamError as exc:
                out.flush()
                report(BadLine(n, str(exc)))
                if not args.keep_going:
                    return 2
                continue
            emit(produced)
        emit(decoder.finish())
    finally:
        if stream is not sys.stdin:
            stream.close()
    out.flush()
    return 0
