"""Argument types and checks shared by the commands that run agents: durations, rates, seeds.

A bad value is refused by argparse (``error: argument --timeout: ...``, exit 2) before anything
starts.
"""

from __future__ import annotations

import argparse
import math
import sys

from agent_stream.seeds import seed_problem

__all__ = ["any_port", "port", "rate", "seconds", "seed_refused"]


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError("not a number: nan")
    return value


def seconds(text: str) -> float:
    """A duration in seconds: more than 0 (``inf`` allowed: no limit)."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def gather_window(text: str) -> float:
    """A gather window in seconds: 0 (text goes as released) or more, finite."""
    value = _number(text)
    if value < 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be 0 seconds or more, finite, got {text}")
    return value


def port(text: str) -> int:
    """A TCP port to listen on: 1 to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 1 to 65535, got {text}")
    return value


def any_port(text: str) -> int:
    """A TCP port, or 0 for a free one."""
    if text.strip() == "0":
        return 0
    return port(text)


def rate(text: str) -> float:
    """Tokens per second: 0 (as fast as possible) or more, finite."""
    value = _number(text)
    if value < 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(
            f"must be a number of tokens per second, 0 (as fast as possible) or more, got {text}"
        )
    return value


def seed_refused(command: str, seed: str, *, network: bool = False) -> bool:
    """Say on stderr what is wrong with a short seed: a warning locally; refused (True: the
    command must exit 2 before anything is sent) on a network.

    Args:
        command: the command's name, for the message.
        seed: the seed given.
        network: whether the agent runs on a Fetch network (anyone there can sign as it).
    """
    problem = seed_problem(seed)
    if problem is None:
        return False
    if network:
        print(
            f"agent-stream {command}: refused on a network: {problem}", file=sys.stderr, flush=True
        )
        return True
    print(f"agent-stream {command}: warning: {problem}", file=sys.stderr, flush=True)
    return False


def quiet_timeout_arg(p: argparse.ArgumentParser) -> None:
    """Add ``--quiet-timeout``: the quiet that ends a plain agent's reply (``ask``, ``chat``).

    Args:
        p: the command's parser.
    """
    p.add_argument(
        "--quiet-timeout",
        type=seconds,
        default=10.0,
        metavar="S",
        help="end a plain agent's reply (one that does not use agent_stream) once nothing "
        "has arrived for S seconds after its answer began; it also ends when the agent ends "
        "the session (default: %(default)s)",
    )


def client_args(p: argparse.ArgumentParser) -> None:
    """Add the options of a command that asks an agent as a client: ``--endpoint``, ``--port``
    and ``--seed``.

    Args:
        p: the command's parser.
    """
    p.add_argument(
        "--endpoint",
        default=None,
        metavar="URL",
        help="the agent's endpoint (default: looked up in the local directory)",
    )
    p.add_argument(
        "--port",
        type=any_port,
        default=0,
        metavar="Q",
        help="this client's port (default: a free one)",
    )
    p.add_argument(
        "--seed",
        default=None,
        help="this client's seed (default: this user's client identity, made on first use)",
    )
