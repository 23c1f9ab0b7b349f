"""`agent-stream decode`: a wire format in, Message JSONL out."""

from __future__ import annotations

import argparse

from agent_stream.commands._io import add_input_args, decode_line, open_lines, report
from agent_stream.commands.formats import FORMATS, decoders
from agent_stream.errors import MissingDependency, StreamError
from agent_stream.message import Message

EPILOG = """examples:
  agent-stream decode --from chat replies.jsonl            ChatMessage JSONL -> Message JSONL
  agent-stream convert --to chat s.jsonl | agent-stream decode --from chat | agent-stream assemble
  curl -sN .../chat/completions ... | agent-stream decode --from openai   OpenAI SSE -> Messages
  agent-stream convert --to a2a s.jsonl | agent-stream decode --from a2a   A2A events -> Messages
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``decode`` command.

    Args:
        sub: the ``agent-stream`` subcommands.
    """
    p = sub.add_parser(
        "decode",
        help="decode a wire format (" + ", ".join(decoders()) + ") into Message JSONL",
        description="Read a wire format (stdin when no FILE) and write Message JSONL. "
        "Bad lines: the Messages of the lines before it, then 'line N: <reason>' on stderr "
        "and exit 2 (--keep-going: skip, exit 0). "
        "Warnings about valid input go to stderr and leave the exit status 0.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_args(p)
    p.add_argument("--from", dest="source", required=True, choices=decoders(), help="input format")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Decode line by line; at a bad line, what the decoder holds is written, then the error.

    Args:
        args: the parsed command line.

    Returns:
        The exit status.
    """
    make = FORMATS[args.source].decoder
    assert make is not None  # argparse offers only formats with a decoder
    try:
        decoder = make(args)
    except MissingDependency as exc:
        report(f"agent-stream decode: {exc}")
        return 2
    inp = open_lines(args)
    if inp is None:
        return 2

    def emit(messages: list[Message], n: int | None) -> None:
        for m in messages:
            inp.out.write(m.to_json() + "\n")
        for w in decoder.drain_warnings():
            report(f"line {n}: warning: {w}" if n is not None else f"warning: {w}")

    for n, raw in inp.lines():
        try:
            produced = decoder.feed_line(decode_line(n, raw))
        except StreamError as exc:
            if inp.reject(exc):
                continue
            break
        emit(produced, n)
    emit(decoder.close(), None)  # the end of input: what the decoder still holds
    return inp.close()
