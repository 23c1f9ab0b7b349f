"""`agent-stream convert`: Message JSONL in, one wire format out."""

from __future__ import annotations

import argparse
import importlib
import sys

from agent_stream.commands._io import BadLine, add_input_args, open_input, read_messages, report
from agent_stream.errors import MissingDependency, UsageError

# --to NAME -> module agent_stream.adapters.<module>, which exposes
#   cli_encode(messages: Iterable[Message], args: argparse.Namespace) -> Iterator[str]
# yielding text written to stdout verbatim.
FORMATS = {
    "chat": "chat",
    "openai": "openai",
    "cui": "cui",
    "channels": "channels",
    "agui": "agui",
}

EPILOG = """examples:
  agent-stream convert --to chat < stream.jsonl           ChatMessage JSON, one a line
  agent-stream convert --to chat s.jsonl | agent-stream decode --from chat | agent-stream assemble
  agent-stream convert --to openai --include-usage stream.jsonl   OpenAI chat.completion.chunk SSE
  agent-stream convert --to cui --sse stream.jsonl        native Message JSON as SSE
  agent-stream convert --to channels --channels text,reasoning,tool stream.jsonl
  agent-stream convert --to agui stream.jsonl             AG-UI events (SSE)
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "convert",
        help="convert Message JSONL to a wire format (chat, openai, cui, channels, agui)",
        description="Read Message JSONL (stdin when no FILE) and write it in another wire format. "
        "Output depends only on the input.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_args(p)
    p.add_argument("--to", required=True, choices=sorted(FORMATS), help="output format")
    p.add_argument("--conversation", default="agent-stream",
                   help="chat: conversation id the stream_ids derive from (default: %(default)s)")
    p.add_argument("--include-usage", action="store_true",
                   help="openai: send the usage chunk before [DONE]")
    p.add_argument("--model", default="agent-stream",
                   help="openai: the model name in every chunk (default: %(default)s)")
    p.add_argument("--channels", default=None,
                   help="channels: comma-separated channels the recipient gets "
                   "(default: every channel but reasoning)")
    p.add_argument("--sse", action="store_true", help="cui: write SSE (data: <json>) not JSONL")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        module = importlib.import_module(f"agent_stream.adapters.{FORMATS[args.to]}")
    except MissingDependency as exc:
        report(f"agent-stream convert: {exc}")
        return 2
    errors: list[BadLine] = []
    stream = open_input(args.file)
    out = sys.stdout
    try:
        for text in module.cli_encode(read_messages(stream, args.keep_going, errors), args):
            out.write(text)
    except BadLine as bad:
        out.flush()
        report(bad)
        return 2
    except UsageError as exc:
        report(f"agent-stream convert: {exc}")
        return 2
    finally:
        if stream is not sys.stdin:
            stream.close()
    out.flush()
    return 0
