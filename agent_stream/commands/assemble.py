"""`agent-stream assemble`: Message JSONL in, the assembled transcript as one JSON object out."""

from __future__ import annotations

import argparse
import json
import sys

from agent_stream.assemble import Assembler
from agent_stream.commands._io import BadLine, add_input_args, numbered_lines, open_input, report
from agent_stream.errors import StreamError
from agent_stream.message import Message

EPILOG = """examples:
  agent-stream assemble stream.jsonl
  printf '%s\\n' '{"type":"text","message_id":"M1","delta":true,"props":{"content":"Hello"}}' \\
                '{"type":"text","message_id":"M1","delta":true,"props":{"content":" World"}}' \\
    | agent-stream assemble
  -> {"messages": [{"message_id": "M1", "thread_id": null, "block_id": null, "type": "text",
       "props": {"content": "Hello World"}, "chunk_count": 2, "status": "streaming"}],
      "blocks": [], "threads": []}

Each message has message_id, thread_id, block_id, type, props, chunk_count and status
(streaming, completed, error, cancelled, incomplete), in order of first appearance.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "assemble",
        help="merge Message JSONL (deltas, events) into whole messages",
        description="Read Message JSONL (stdin when no FILE) and print the transcript as one JSON "
        'object: {"messages": [...], "blocks": [...], "threads": [...]}. A bad line: exit 2 '
        "and 'line N: <reason>' on stderr. Warnings (lost or duplicate chunks) go to stderr.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_args(p)
    p.add_argument("--indent", type=int, default=None, help="pretty-print with this indent")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    asm = Assembler()
    stream = open_input(args.file)
    reported = 0
    try:
        for n, line in numbered_lines(stream):
            try:
                asm.feed(Message.from_json(line))
            except StreamError as exc:
                report(BadLine(n, str(exc)))
                if not args.keep_going:
                    return 2
            for w in asm.warnings[reported:]:
                report(f"line {n}: warning: {w}")
            reported = len(asm.warnings)
    finally:
        if stream is not sys.stdin:
            stream.close()
    json.dump(asm.transcript.to_dict(), sys.stdout, ensure_ascii=False, indent=args.indent)
    sys.stdout.write("\n")
    return 0
