"""The one registry of wire formats: what ``convert --to`` writes and ``decode --from`` reads.

The adapters are pure (Messages in, wire objects out); the command-line glue lives here: each
format's encoder with its options and framing, and its line decoder. Each imports its adapter
only when the format is chosen, so a missing optional extra (AG-UI) is reported then, as a
MissingDependency naming the pip extra. The decoders run behind the strict reader
(``agent_stream.jsontext``) and a check of the JSON types uagents or the OpenAI decoder would
otherwise coerce or choke on: a line is checked before the adapter sees it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from agent_stream import jsontext
from agent_stream.errors import StreamWarning, UsageError, WireError
from agent_stream.message import Message, Usage, field_type_errors

# convert --to NAME: the text to write for a stream of Messages and the command's options.
Encode = Callable[[Iterable[Message], "argparse.Namespace | None"], Iterator[str]]


class LineDecoder(Protocol):
    """A wire read one line at a time (what ``decode --from`` drives)."""

    def feed_line(self, line: str) -> list[Message]: ...

    def close(self) -> list[Message]: ...

    def drain_warnings(self) -> list[StreamWarning]: ...


@dataclass(frozen=True)
class Format:
    """One wire format: how to write it (``encoder``) and how to read it (``decoder``)."""

    name: str
    summary: str
    encoder: Encode | None = None
    decoder: Callable[[argparse.Namespace], LineDecoder] | None = None


# -- the glue: each format's encoder, options and framing ------------------------------------------
# Each encode_* imports its adapter and builds its encoder when called (so a missing extra or a
# bad option is reported before any input is read), and returns the text to write, lazily.
def _opt(args: argparse.Namespace | None, name: str, default: Any = None) -> Any:
    """``args.name`` when the namespace has it, else ``default``."""
    return getattr(args, name, default) if args is not None else default


def _framed(enc: Any, messages: Iterable[Message], frame: Callable[[Any], str]) -> Iterator[str]:
    """The framed text of a whole stream (then ``close``); then the encoder's warnings, on
    stderr."""
    from agent_stream.adapters.framing import run_encoder

    for item in run_encoder(enc, messages):
        yield frame(item)
    for w in enc.drain_warnings():
        print(f"warning: {w}", file=sys.stderr, flush=True)


def encode_chat(messages: Iterable[Message], args: argparse.Namespace | None) -> Iterator[str]:
    """``convert --to chat``: one ChatMessage JSON a line, as uagents serialises it.

    Encodes for a recipient that did not declare tag support (streams serialised, thinking
    withheld), the encoder's default chunking, the same ``now`` for every Message (no release on
    time), msg_ids and stream_ids derived from ``--conversation``: the output depends only on the
    input. Every started chat stream is ended at the end of input; stream_end is sent only if the
    input has one.
    """
    from agent_stream.adapters.chat import ChatEncoder

    enc = ChatEncoder(_opt(args, "conversation") or "agent-stream", deterministic=True)

    def text() -> Iterator[str]:
        for m in messages:
            for chat in enc.feed(m, 0.0):
                yield chat.json() + "\n"
        for chat in enc.end_streams(0.0):
            yield chat.json() + "\n"

    return text()


def encode_openai(messages: Iterable[Message], args: argparse.Namespace | None) -> Iterator[str]:
    """``convert --to openai [--include-usage] [--model NAME] [--tool-calls agent|client]``."""
    from agent_stream.adapters.openai import OpenAIEncoder, frame_sse

    enc = OpenAIEncoder(model=_opt(args, "model") or "agent-stream",
                        include_usage=bool(_opt(args, "include_usage", False)),
                        tool_calls=_opt(args, "tool_calls") or "agent")
    return _framed(enc, messages, frame_sse)


def encode_cui(messages: Iterable[Message], args: argparse.Namespace | None) -> Iterator[str]:
    """``convert --to cui [--sse]``: the Message JSON itself, JSONL or SSE."""
    from agent_stream.adapters.cui import CUIEncoder, frame_jsonl, frame_sse

    return _framed(CUIEncoder(), messages, frame_sse if _opt(args, "sse", False) else frame_jsonl)


def encode_channels(messages: Iterable[Message], args: argparse.Namespace | None
                    ) -> Iterator[str]:
    """``convert --to channels [--channels LIST]`` (UsageError for an unknown channel)."""
    from agent_stream.adapters.channels import ChannelsEncoder, frame_jsonl

    try:
        enc = ChannelsEncoder(_opt(args, "channels"))
    except WireError as exc:
        raise UsageError(f"--channels: {exc}") from None
    return _framed(enc, messages, frame_jsonl)


def encode_agui(messages: Iterable[Message], args: argparse.Namespace | None) -> Iterator[str]:
    """``convert --to agui``: AG-UI events as SSE (MissingDependency without ag-ui-protocol)."""
    from agent_stream.adapters.agui import AGUIEncoder, frame_sse

    return _framed(AGUIEncoder(), messages, frame_sse)


def encode_aisdk(messages: Iterable[Message], args: argparse.Namespace | None) -> Iterator[str]:
    """``convert --to aisdk``: the AI SDK UI message stream as SSE."""
    from agent_stream.adapters.aisdk import AISDKEncoder, frame_sse

    return _framed(AISDKEncoder(message_id=_opt(args, "message_id")), messages, frame_sse)


def encode_a2a(messages: Iterable[Message], args: argparse.Namespace | None) -> Iterator[str]:
    """``convert --to a2a``: JSON-RPC ``message/stream`` responses as SSE."""
    from agent_stream.adapters.a2a import A2AEncoder
    from agent_stream.adapters.a2a.encoder import frame_sse

    return _framed(A2AEncoder(context_id=_opt(args, "conversation")), messages, frame_sse)


class ChatLines:
    """``decode --from chat``: ChatMessage JSON lines in, Messages out (one sender, ``now`` 0)."""

    SENDER = "cli"

    def __init__(self) -> None:
        from agent_stream.adapters.chat import ChatDecoder

        self.decoder = ChatDecoder()

    def feed_line(self, line: str) -> list[Message]:
        """Decode one line (WireError for a line that is not a valid ChatMessage)."""
        from agent_stream.adapters.chat import parse_chat

        chat = parse_chat(line, max_bytes=self.decoder.limits.max_chat_bytes)
        return self.decoder.feed(self.SENDER, chat, 0.0)

    def close(self) -> list[Message]:
        """What is still held back, at the end of input."""
        return self.decoder.close()

    def drain_warnings(self) -> list[StreamWarning]:
        return self.decoder.drain_warnings()


def _chat_decoder(args: argparse.Namespace) -> LineDecoder:
    return Checked(ChatLines(), check_chat_line)


def _openai_decoder(args: argparse.Namespace) -> LineDecoder:
    from agent_stream.adapters.openai import OpenAISSEDecoder

    return Checked(OpenAISSEDecoder(), check_openai_line)


def _a2a_decoder(args: argparse.Namespace) -> LineDecoder:
    from agent_stream.adapters.a2a import A2ADecoder

    return A2ADecoder()


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("chat", "Agent Chat Protocol ChatMessage JSON, one a line", encode_chat,
           _chat_decoder),
    Format("openai", "OpenAI chat.completion.chunk SSE", encode_openai, _openai_decoder),
    Format("cui", "the native Message JSON (JSONL, or SSE with --sse)", encode_cui),
    Format("channels", "multi-channel events, one JSON a line", encode_channels),
    Format("agui", "AG-UI events as SSE", encode_agui),
    Format("aisdk", "Vercel AI SDK UI message stream (SSE)", encode_aisdk),
    Format("a2a", "A2A message/stream JSON-RPC responses (SSE)", encode_a2a, _a2a_decoder),
)}


def encoders() -> list[str]:
    """Names ``convert --to`` accepts."""
    return sorted(n for n, f in FORMATS.items() if f.encoder is not None)


def decoders() -> list[str]:
    """Names ``decode --from`` accepts."""
    return sorted(n for n, f in FORMATS.items() if f.decoder is not None)


# -- decoders behind the strict reader ---------------------------------------------------------
class Checked:
    """A line decoder whose every line passes ``check`` (raising WireError) first."""

    def __init__(self, inner: LineDecoder, check: Callable[[str], None]) -> None:
        self.inner = inner
        self.check = check

    def feed_line(self, line: str) -> list[Message]:
        self.check(line)
        return self.inner.feed_line(line)

    def close(self) -> list[Message]:
        return self.inner.close()

    def drain_warnings(self) -> list[StreamWarning]:
        return self.inner.drain_warnings()


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if v is None:
        return "null"
    if isinstance(v, dict):
        return "an object"
    return "an array" if isinstance(v, list) else "a string"


# Content fields uagents (pydantic v1) would coerce from a number: they must be strings.
_CHAT_STRINGS = {"text": ("text",), "start-stream": ("stream_id",),
                 "end-stream": ("stream_id",), "resource": ("resource_id",)}
_CHAT_JSON_KEYS = ("props", "message_metadata")  # agent_stream metadata values holding JSON


def _string(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise WireError(f"{where} must be a string, got {_kind(value)}")


def check_chat_line(line: str) -> None:
    """Strict JSON, and no number where a ChatMessage has a string (uagents would coerce it).

    agent_stream's JSON-in-metadata values are read strictly too, so none can nest too deep or
    carry NaN; one that is merely not JSON is left to the decoder (a warning there).
    """
    data = jsontext.loads(line, WireError)
    if not isinstance(data, dict):
        return  # parse_chat says what is wrong
    for key in ("msg_id", "timestamp"):
        if key in data:
            _string(data[key], key)
    content = data.get("content")
    if not isinstance(content, list):
        return
    for i, item in enumerate(content):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        for f in _CHAT_STRINGS.get(kind, ()) if isinstance(kind, str) else ():
            if f in item:
                _string(item[f], f"content.{i}.{f}")
        meta = item.get("metadata")
        if kind != "metadata" or not isinstance(meta, dict):
            continue
        for k, v in meta.items():
            _string(v, f"content.{i}.metadata.{k}")
            if k in _CHAT_JSON_KEYS:
                try:
                    jsontext.loads(v, WireError)
                except WireError as exc:
                    if not str(exc).startswith("not JSON"):
                        raise WireError(f"content.{i}.metadata.{k}: {exc}") from None


def check_openai_line(line: str) -> None:
    """A data line's payload is strict JSON, and its usage figures are integers."""
    from agent_stream.adapters.framing import sse_payload

    payload = sse_payload(line)  # WireError for a line that is not SSE
    if payload is None or payload == "[DONE]":
        return
    try:
        chunk = jsontext.loads(payload, WireError)
    except WireError as exc:
        reason = str(exc)
        raise WireError(("data is " if reason.startswith("not JSON") else "data: ") + reason
                        ) from None
    usage = chunk.get("usage") if isinstance(chunk, dict) else None
    if isinstance(usage, dict):
        problems = field_type_errors(Usage, usage, "usage")
        if problems:
            raise WireError(problems[0])
