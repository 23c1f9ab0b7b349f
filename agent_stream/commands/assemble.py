"""`agent-stream assemble`: Message JSONL in, the assembled transcript as one JSON object out."""

from __future__ import annotations

import argparse
import json
from typing import Any

from agent_stream.assemble import Assembler
from agent_stream.commands._io import add_input_args, open_lines, read_message, report
from agent_stream.errors import StreamError

EPILOG = """examples:
  agent-stream assemble stream.jsonl
  printf '%s\\n' '{"type":"text","message_id":"M1","delta":true,"props":{"content":"Hello"}}' \\
                '{"type":"text","message_id":"M1","delta":true,"props":{"content":" World"}}' \\
    | agent-stream assemble
  -> {"status": null, "error": null, "usage": null, "finish_reason": null, "duration_ms": null,
      "messages": [{"message_id": "M1", "thread_id": null, "block_id": null, "type": "text",
       "props": {"content": "Hello World"}, "chunk_count": 2, "status": "streaming"}],
      "blocks": [], "threads": []}

The top level is the stream's end: status (null before stream_start, streaming until
stream_end, then completed, error or cancelled), error, usage, finish_reason, duration_ms.
Each message has message_id, thread_id, block_id, type, props, chunk_count and status
(streaming, completed, error, cancelled, incomplete), in order of first appearance; each block
its type, label, status, message_count, thread_ids, parent_block_id, agent and agent_name (a
relayed sub-agent's address and name), duration_ms, relay_status and usage; each thread its
type, label, status, message_count, parent_thread_id and duration_ms.
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``assemble`` command.

    Args:
        sub: the ``agent-stream`` subcommands.
    """
    p = sub.add_parser(
        "assemble",
        help="merge Message JSONL (deltas, events) into whole messages",
        description="Read Message JSONL (stdin when no FILE) and print the transcript as one JSON "
        'object: {"status", "error", "usage", "finish_reason", "duration_ms", "messages": [...], '
        '"blocks": [...], "threads": [...]}. A bad line: the '
        "transcript of the lines before it, 'line N: <reason>' on stderr and exit 2 "
        "(--keep-going: report, skip, exit 0). Warnings (lost or duplicate chunks) go to stderr.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_args(p)
    p.add_argument("--indent", type=int, default=None, help="pretty-print with this indent")
    p.set_defaults(func=run)


def reply_json(reply: Any, *, session: str | None = None) -> str:
    """The transcript JSON of an asked reply (``ask --json``, ``demo --json``): as
    ``assemble`` prints it, with the reply's own end as ``status`` (``timeout``, ``lost``,
    ``undelivered``... when the agent's stream did not say how it ended) and, when given, the
    conversation's ``session`` id.

    Args:
        reply: the :class:`~agent_stream.uagents.Reply`.
        session: the conversation's session id (None: left out).
    """
    data = reply.transcript.to_dict()
    if reply.status is not None:
        data["status"] = reply.status
    if session is not None:
        data["session"] = session
    return json.dumps(data, ensure_ascii=False, indent=2)


def run(args: argparse.Namespace) -> int:
    """Merge every line; print the transcript (of the lines before a bad one, if one stops it).

    Args:
        args: the parsed command line.

    Returns:
        The exit status.
    """
    inp = open_lines(args)
    if inp is None:
        return 2
    asm = Assembler()
    reported = 0
    for n, raw in inp.lines():
        try:
            asm.feed(read_message(n, raw))
        except StreamError as exc:
            if not inp.reject(exc):
                break
        for w in asm.warnings[reported:]:
            report(f"line {n}: warning: {w}")
        reported = len(asm.warnings)
    transcript = asm.transcript.to_dict()
    inp.out.write(json.dumps(transcript, ensure_ascii=False, indent=args.indent) + "\n")
    code = inp.close()
    if inp.bad is not None:
        report(
            f"agent-stream assemble: stopped at line {inp.bad.lineno}; the transcript "
            "holds the lines before it"
        )
    return code
