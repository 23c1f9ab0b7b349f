"""What ``convert --to`` writes and ``decode --from`` reads: the wire registry, on the command line.

Every wire is described once, in :mod:`agent_stream.adapters.registry`; this is the glue from
``convert``'s arguments to a wire's encoder options and framing (``--sse``), and from a bad
option to a usage error. Each wire imports its adapter only when it is chosen, so a missing
optional extra (AG-UI) is reported then, as a MissingDependency naming the pip extra. The
decoders run behind the strict reader (``agent_stream.jsontext``): a line is checked before the
adapter sees it (:mod:`agent_stream.adapters.lines`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from agent_stream.adapters import registry
from agent_stream.adapters.registry import LineDecoder, Wire
from agent_stream.errors import UsageError, WireError
from agent_stream.message import Message

__all__ = [
    "FORMATS",
    "Encode",
    "Format",
    "LineDecoder",
    "decoders",
    "encode_a2a",
    "encode_agui",
    "encode_aisdk",
    "encode_channels",
    "encode_chat",
    "encode_cui",
    "encode_openai",
    "encoders",
]

# convert --to NAME: the text to write for a stream of Messages and the command's options.
Encode = Callable[[Iterable[Message], "argparse.Namespace | None"], Iterator[str]]


@dataclass(frozen=True)
class Format:
    """One wire as the command line uses it: how to write it and how to read it.

    Attributes:
        name: the wire's name.
        summary: one line saying what it is.
        encoder: writes a stream of Messages as the wire's text (None: not written).
        decoder: makes a line decoder from the command's options (None: not read).
    """

    name: str
    summary: str
    encoder: Encode | None = None
    decoder: Callable[[argparse.Namespace], LineDecoder] | None = None


def _opt(args: argparse.Namespace | None, name: str) -> Any:
    """``args.name`` when the namespace has it, else None."""
    return getattr(args, name, None) if args is not None else None


def _options(wire: Wire, args: argparse.Namespace | None) -> tuple[dict[str, Any], list[str]]:
    """The encoder options ``args`` sets, and the flags that set them."""
    options: dict[str, Any] = {}
    flags: list[str] = []
    for o in wire.options:
        if o.flag is None:
            continue
        value = _opt(args, o.flag)
        if value is None or (o.blank_unset and value == ""):
            continue
        options[o.name] = value
        flags.append("--" + o.flag.replace("_", "-"))
    return options, flags


def _encode(wire: Wire) -> Encode:
    """``convert --to`` for ``wire``: the encoder is built when called (so a missing extra or a
    bad option is reported before any input is read); the text comes lazily, then the
    encoder's warnings go to stderr."""

    def encode(messages: Iterable[Message], args: argparse.Namespace | None) -> Iterator[str]:
        from agent_stream.adapters.framing import run_encoder

        options, flags = _options(wire, args)
        try:
            enc = wire.make_encoder(**options)
        except WireError as exc:  # an option's value is refused
            where = flags[0] if len(flags) == 1 else f"--to {wire.name}"
            raise UsageError(f"{where}: {exc}") from None
        frame = wire.frame("sse" if _opt(args, "sse") and "sse" in wire.frames else None)

        def text() -> Iterator[str]:
            for item in run_encoder(enc, messages):
                yield frame(item)
            for w in enc.drain_warnings():
                print(f"warning: {w}", file=sys.stderr, flush=True)

        return text()

    encode.__name__ = encode.__qualname__ = f"encode_{wire.name}"
    encode.__doc__ = f"``convert --to {wire.name}``: {wire.summary}."
    return encode


def _decode(wire: Wire) -> Callable[[argparse.Namespace], LineDecoder]:
    def make(args: argparse.Namespace) -> LineDecoder:
        return wire.make_decoder()

    return make


FORMATS: dict[str, Format] = {
    w.name: Format(w.name, w.summary, _encode(w), _decode(w) if w.decoder else None)
    for w in registry.wires()
}

# Each wire's convert function by name (what tests and the conformance server call).
encode_chat = _encode(registry.wire_named("chat"))
encode_openai = _encode(registry.wire_named("openai"))
encode_cui = _encode(registry.wire_named("cui"))
encode_channels = _encode(registry.wire_named("channels"))
encode_agui = _encode(registry.wire_named("agui"))
encode_aisdk = _encode(registry.wire_named("aisdk"))
encode_a2a = _encode(registry.wire_named("a2a"))


def encoders() -> list[str]:
    """Names ``convert --to`` accepts."""
    return sorted(n for n, f in FORMATS.items() if f.encoder is not None)


def decoders() -> list[str]:
    """Names ``decode --from`` accepts."""
    return sorted(n for n, f in FORMATS.items() if f.decoder is not None)
