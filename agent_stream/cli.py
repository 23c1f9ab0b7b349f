"""The `agent-stream` command: one subcommand per module in agent_stream.commands."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Each name is a module agent_stream.commands.<name> exposing
#   register(subparsers) -> None   (adds its parser, sets defaults func=run)
#   run(args: argparse.Namespace) -> int
COMMANDS = ("assemble", "chunk", "convert", "decode", "serve", "ask", "demo")

EPILOG = """examples:
  agent-stream demo                                  two local agents streaming to each other
  agent-stream assemble stream.jsonl                 Message JSONL -> whole messages (JSON)
  printf '"Hello. "\\n"World."\\n' | agent-stream chunk   token deltas -> sentence chunks
  agent-stream convert --to chat < stream.jsonl      Message JSONL -> ChatMessage JSONL
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-stream",
        description="Stream agent and LLM output between Fetch.ai agents and other peers.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"agent_stream.commands.{name}")
        except ModuleNotFoundError as exc:  # a command whose module is not written yet
            if exc.name == f"agent_stream.commands.{name}":
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
