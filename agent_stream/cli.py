"""The `agent-stream` command: one subcommand per module in agent_stream.commands."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence
from types import ModuleType

from agent_stream import __version__
from agent_stream.eventloop import use_fast_loop

# Each command is a module of agent_stream.commands exposing
#   register(subparsers) -> None   (adds its parser, sets defaults func=run)
#   run(args: argparse.Namespace) -> int
COMMANDS = ("assemble", "chunk", "convert", "decode", "serve", "ask", "chat", "demo", "gateway")

EPILOG = """examples:
  agent-stream demo                                  two local agents streaming to each other
  agent-stream chat llm                              a conversation with a local agent
  agent-stream assemble stream.jsonl                 Message JSONL -> whole messages (JSON)
  printf '"Hello. "\\n"World."\\n' | agent-stream chunk   token deltas -> sentence chunks
  agent-stream convert --to chat < stream.jsonl      Message JSONL -> ChatMessage JSONL
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``agent-stream`` parser, with every command."""
    parser = argparse.ArgumentParser(
        prog="agent-stream",
        description="Stream agent and LLM output between Fetch.ai agents and other peers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"agent-stream {__version__}",
        help="print the version",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(sub)
    return parser


def _command_modules() -> list[ModuleType]:
    """The modules of COMMANDS, in that order."""
    from agent_stream.commands import (
        ask,
        assemble,
        chat,
        chunk,
        convert,
        decode,
        demo,
        gateway,
        serve,
    )

    return [assemble, chunk, convert, decode, serve, ask, chat, demo, gateway]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``agent-stream`` command.

    Args:
        argv: the command line without the program name (None: ``sys.argv[1:]``).

    Returns:
        The exit status (2: no command given, 130: interrupted).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


def run() -> int:
    """The ``agent-stream`` command: :func:`main` on uvloop's event loop when it is installed
    (:func:`~agent_stream.eventloop.use_fast_loop`)."""
    use_fast_loop()
    code = main()
    # The process ends now: its heap (uagents, pydantic, grpc... loaded) is left out of the
    # interpreter's last collections, which took ~1 s of a stop on a loaded 2-core machine.
    gc.freeze()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run())
