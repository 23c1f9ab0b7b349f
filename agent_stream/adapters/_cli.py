"""Command-line glue of the adapters' ``cli_encode`` functions (the only I/O under adapters/).

``agent-stream convert`` finds ``cli_encode(messages, args)`` in each adapter module; the format
registry in ``agent_stream.commands`` is to take these over. Nothing else here imports this.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agent_stream.adapters.framing import Encoder, run_encoder
from agent_stream.message import Message


def opt(args: Any, name: str, default: Any = None) -> Any:
    """``args.name`` when the argparse namespace has it, else ``default``."""
    return getattr(args, name, default) if args is not None else default


def encode_text(enc: Encoder[Any], messages: Iterable[Message], frame: Callable[[Any], str]
                ) -> Iterator[str]:
    """The framed text of a whole stream; then the encoder's warnings, on stderr."""
    for item in run_encoder(enc, messages):
        yield frame(item)
    for w in enc.drain_warnings():
        print(f"warning: {w}", file=sys.stderr, flush=True)
