"""`agent-stream convert`: Message JSONL in, one wire format out."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from agent_stream.commands._io import (
    BadLine,
    Input,
    add_input_args,
    open_lines,
    read_message,
    report,
)
from agent_stream.commands.formats import FORMATS, encoders
from agent_stream.errors import MissingDependency, StreamError, UsageError
from agent_stream.message import STREAM_END, Message, StreamEndData, lifecycle

EPILOG = """examples:
  agent-stream convert --to chat < stream.jsonl           ChatMessage JSON, one a line
  agent-stream convert --to chat s.jsonl | agent-stream decode --from chat | agent-stream assemble
  agent-stream convert --to openai --include-usage stream.jsonl   OpenAI chat.completion.chunk SSE
  agent-stream convert --to cui --sse stream.jsonl        native Message JSON as SSE
  agent-stream convert --to channels --channels text,reasoning,tool stream.jsonl
  agent-stream convert --to agui stream.jsonl             AG-UI events (SSE)
  agent-stream convert --to aisdk stream.jsonl            AI SDK UI message stream (SSE)
  agent-stream convert --to a2a --conversation c1 stream.jsonl   A2A message/stream responses
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``convert`` command.

    Args:
        sub: the ``agent-stream`` subcommands.
    """
    p = sub.add_parser(
        "convert",
        help="convert Message JSONL to a wire format (" + ", ".join(encoders()) + ")",
        description="Read Message JSONL (stdin when no FILE) and write it in another wire format. "
        "Output depends only on the input. A bad line: what the lines before it make, ended "
        "as the wire ends a failed stream, then 'line N: <reason>' on stderr and exit 2 "
        "(--keep-going: report, skip, exit 0).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_args(p)
    p.add_argument("--to", required=True, choices=encoders(), help="output format")
    p.add_argument(
        "--conversation",
        default="agent-stream",
        help="chat: conversation id the stream_ids derive from (default: %(default)s)",
    )
    p.add_argument(
        "--include-usage", action="store_true", help="openai: send the usage chunk before [DONE]"
    )
    p.add_argument(
        "--model",
        default="agent-stream",
        help="openai: the model name in every chunk (default: %(default)s)",
    )
    p.add_argument(
        "--tool-calls",
        choices=("agent", "client"),
        default="agent",
        help="openai: the agent's own tool calls as progress in reasoning_content "
        "(agent, the default) or as tool_calls for the client to make (client)",
    )
    p.add_argument(
        "--channels",
        default=None,
        help="channels: comma-separated channels the recipient gets "
        "(default: every channel but reasoning)",
    )
    p.add_argument("--sse", action="store_true", help="cui: write SSE (data: <json>) not JSONL")
    p.set_defaults(func=run)


def _messages(inp: Input) -> Iterator[Message]:
    """The input's Messages; at a bad line that stops it, a stream_end with status error
    (unless the stream already ended), so the encoder flushes what it holds and ends the wire
    its own way for a failed stream."""
    ended = False
    for n, raw in inp.lines():
        try:
            msg = read_message(n, raw)
        except BadLine as bad:
            if inp.reject(bad):
                continue
            if not ended:
                yield lifecycle(STREAM_END, StreamEndData(status="error", error=str(bad)))
            return
        ended = ended or msg.event == STREAM_END
        yield msg


def run(args: argparse.Namespace) -> int:
    """Encode the input's Messages; what the lines before a bad one make is written first.

    Args:
        args: the parsed command line.

    Returns:
        The exit status.
    """
    encode = FORMATS[args.to].encoder
    assert encode is not None  # argparse offers only formats with an encoder
    inp = open_lines(args)
    if inp is None:
        return 2
    try:
        text = encode(_messages(inp), args)  # imports the adapter, builds the encoder
        for chunk in text:
            inp.out.write(chunk)
    except (MissingDependency, UsageError) as exc:
        inp.out.flush()
        report(f"agent-stream convert: {exc}")
        return 2
    except StreamError as exc:  # the encoder refused a Message: the line it came from is bad
        inp.bad = BadLine(inp.lineno, str(exc))
    return inp.close()
