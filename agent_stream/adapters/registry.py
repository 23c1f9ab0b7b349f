"""Every wire agent_stream speaks, each described once: the one table the rest reads.

Routing by ``accept`` (:mod:`.routing`: ``writer_for``, ``sink_for``), the command line's
``convert --to`` / ``decode --from`` and the gateway's ``/v1/stream?accept=`` all look wires up
here, so they offer the same set. A wire is its name, the ``accept`` values the spec gives it,
its encoder (a factory taking the wire's options), how its objects are framed as text (SSE or
JSON lines, each with its content type), the response headers its clients want, and its line
decoder if it can be read back. Adding a wire is its module plus one :class:`Wire` line below.

Pure: nothing is imported until a wire is used (``module:attribute`` references), so a missing
optional extra (AG-UI, A2A) is reported when that wire is chosen, as a MissingDependency.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agent_stream.errors import StreamWarning, WireError
from agent_stream.message import Message

__all__ = [
    "CONTENT_TYPES",
    "Framing",
    "LineDecoder",
    "Option",
    "Wire",
    "accept_names",
    "aliases",
    "decoders",
    "encoders",
    "names",
    "resolve",
    "wire_named",
    "wires",
]

Framing = Literal["sse", "jsonl"]
CONTENT_TYPES: Mapping[Framing, str] = {"sse": "text/event-stream", "jsonl": "application/x-ndjson"}


class LineDecoder(Protocol):
    """A wire read one line of text at a time (what ``decode --from`` drives)."""

    def feed_line(self, line: str) -> list[Message]:
        """The Messages one line of the wire gives.

        Args:
            line: the line, without its line break.
        """
        ...

    def close(self) -> list[Message]:
        """The Messages that end what the lines left open."""
        ...

    def drain_warnings(self) -> list[StreamWarning]:
        """The warnings since the last call."""
        ...


@dataclass(frozen=True)
class Option:
    """An encoder option: its keyword, and the ``convert`` argument that sets it (if any).

    Attributes:
        name: the encoder's keyword.
        flag: the ``convert`` argument that sets it (None: none).
        blank_unset: an empty string on the command line means "not given" (the default).
    """

    name: str
    flag: str | None = None
    blank_unset: bool = False


def _load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True, eq=False)
class Wire:
    """One wire: how to write it and, when it can be read back, how to read it.

    Attributes:
        name: the wire's name (an ``accept`` value too).
        summary: one line saying what it is.
        encoder: the encoder class, a ``"module:attribute"`` reference imported on first use.
        frames: each framing the wire can be written in -> its frame function's
            ``"module:attribute"``; the first is the default.
        options: the options its encoder takes.
        accept: the spec's ``accept`` values for this wire -> the framing each selects
            (None: the default).
        decoder: the decoder's ``"module:attribute"`` (None: it cannot be read back).
        headers: HTTP headers a response in this wire carries.
    """

    name: str
    summary: str
    encoder: str
    frames: Mapping[Framing, str]
    options: tuple[Option, ...] = ()
    accept: Mapping[str, Framing | None] = field(default_factory=dict)
    decoder: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def framing(self) -> Framing:
        """The default framing."""
        return next(iter(self.frames))

    @property
    def option_names(self) -> frozenset[str]:
        return frozenset(o.name for o in self.options)

    def content_type(self, framing: Framing | None = None) -> str:
        """The HTTP content type of this wire.

        Args:
            framing: ``sse`` or ``jsonl`` (None: the wire's default).
        """
        return CONTENT_TYPES[framing or self.framing]

    def make_encoder(self, **options: Any) -> Any:
        """A fresh encoder (``framing.Encoder``); options set to None are left to its defaults.

        Raises:
            TypeError: an option this wire does not take.
        """
        unknown = set(options) - self.option_names
        if unknown:
            raise TypeError(f"{self.name}: unknown encoder option(s): {', '.join(sorted(unknown))}")
        factory: Callable[..., Any] = _load(self.encoder)
        return factory(**{k: v for k, v in options.items() if v is not None})

    def frame(self, framing: Framing | None = None) -> Callable[[Any], str]:
        """The function making one wire object into text.

        Args:
            framing: ``sse`` or ``jsonl`` (None: the wire's default).

        Raises:
            WireError: the wire cannot be written in that framing.
        """
        key = framing or self.framing
        if key not in self.frames:
            raise WireError(f"{self.name} is not written as {key}")
        fn: Callable[[Any], str] = _load(self.frames[key])
        return fn

    def make_decoder(self) -> LineDecoder:
        """A fresh line decoder (WireError when this wire cannot be read back)."""
        if self.decoder is None:
            raise WireError(f"{self.name} cannot be decoded")
        factory: Callable[[], LineDecoder] = _load(self.decoder)
        return factory()


_A = "agent_stream.adapters."
_WIRES: tuple[Wire, ...] = (
    Wire(
        "chat",
        "Agent Chat Protocol ChatMessage JSON, one a line",
        _A + "chat.lines:ChatStream",
        {"jsonl": _A + "chat.lines:frame_jsonl"},
        (Option("conversation", "conversation", blank_unset=True),),
        decoder=_A + "chat.lines:chat_lines",
    ),
    Wire(
        "openai",
        "OpenAI chat.completion.chunk SSE",
        _A + "openai:OpenAIEncoder",
        {"sse": _A + "openai:frame_sse"},
        (
            Option("model", "model", blank_unset=True),
            Option("include_usage", "include_usage"),
            Option("tool_calls", "tool_calls", blank_unset=True),
            Option("completion_id"),
            Option("created"),
        ),
        accept={"standard": None},
        decoder=_A + "lines:openai_lines",
    ),
    Wire(
        "cui",
        "the native Message JSON (JSONL, or SSE with --sse)",
        _A + "cui:CUIEncoder",
        {"jsonl": _A + "cui:frame_jsonl", "sse": _A + "cui:frame_sse"},
        accept={"cui-web": "sse", "cui-native": "jsonl", "cui-desktop": "jsonl"},
    ),
    Wire(
        "channels",
        "multi-channel events, one JSON a line",
        _A + "channels:ChannelsEncoder",
        {"jsonl": _A + "channels:frame_jsonl"},
        (Option("channels", "channels"),),
        accept={"channels": None},
    ),
    Wire(
        "agui",
        "AG-UI events as SSE",
        _A + "agui:AGUIEncoder",
        {"sse": _A + "agui:frame_sse"},
        (Option("thread_id"), Option("run_id")),
        accept={"agui": None},
    ),
    Wire(
        "aisdk",
        "Vercel AI SDK UI message stream (SSE)",
        _A + "aisdk:AISDKEncoder",
        {"sse": _A + "aisdk:frame_sse"},
        (
            Option("message_id", "message_id"),
            Option("ai_version"),
            Option("approvals"),
            Option("reply_id"),
        ),
        headers={"x-vercel-ai-ui-message-stream": "v1"},
    ),
    Wire(
        "a2a",
        "A2A message/stream JSON-RPC responses (SSE)",
        _A + "a2a:A2AEncoder",
        {"sse": _A + "a2a.encoder:frame_sse"},
        (Option("task_id"), Option("context_id", "conversation")),
        decoder=_A + "a2a:A2ADecoder",
    ),
)
_BY_NAME: dict[str, Wire] = {w.name: w for w in _WIRES}
_ALIASES: dict[str, tuple[Wire, Framing | None]] = {
    a: (w, f) for w in _WIRES for a, f in w.accept.items()
}


def wires() -> tuple[Wire, ...]:
    """Every wire, in the order the help lists them."""
    return _WIRES


def names() -> list[str]:
    """Every wire's name, sorted."""
    return sorted(_BY_NAME)


def encoders() -> list[str]:
    """The wires that can be written (all of them), sorted."""
    return names()


def decoders() -> list[str]:
    """The wires that can be read back, sorted."""
    return sorted(w.name for w in _WIRES if w.decoder is not None)


def wire_named(name: str) -> Wire:
    """The wire called ``name``.

    Args:
        name: the wire's name.

    Raises:
        WireError: no such wire; the message names the known ones.
    """
    try:
        return _BY_NAME[name]
    except KeyError:
        raise WireError(f"unknown wire {name!r}; known: {', '.join(names())}") from None


def aliases() -> dict[str, str]:
    """The spec's ``accept`` values (``standard``, ``cui-web``, ...) -> the wire each selects."""
    return {a: w.name for a, (w, _) in _ALIASES.items()}


def accept_names() -> list[str]:
    """Every value ``accept`` takes: the spec's values, then the wire names."""
    return [*_ALIASES, *(n for n in _BY_NAME if n not in _ALIASES)]


def resolve(accept: str | None) -> tuple[Wire, Framing]:
    """The wire and framing an ``accept`` value selects.

    Args:
        accept: the spec's ``accept`` value or a wire's name, any case (None or "":
            ``standard``).

    Raises:
        WireError: an unknown value (the message lists the known ones).
    """
    key = (accept or "standard").strip().lower()
    if key in _ALIASES:
        w, framing = _ALIASES[key]
        return w, framing or w.framing
    w2 = _BY_NAME.get(key)
    if w2 is None:
        raise WireError(f"unknown accept {accept!r}; known: {', '.join(accept_names())}")
    return w2, w2.framing
