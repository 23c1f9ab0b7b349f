"""Small pieces the encoders share: what a chunk does to a message's visible string.

The append-only wires (OpenAI, AG-UI, channels) show one string per message: ``content`` of
text, thinking and refusal, ``message`` of loading, ``arguments`` of a tool call. A chunk either
leaves that string alone, appends to it, or sets it to a new value (a whole chunk, a replace/set
at its path, a merge or replace of the root that carries it). ``visible_change`` says which,
without applying the whole delta, so the common case (appending text) costs a dict lookup.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from agent_stream.errors import StreamWarning
from agent_stream.message import LOADING, REFUSAL, TEXT, THINKING, TOOL_CALL, Message

APPEND = 1
SET = 2

# The one string of each built-in type that a plain-text wire shows.
VISIBLE_FIELD: dict[str, str] = {
    TEXT: "content",
    THINKING: "content",
    REFUSAL: "content",
    LOADING: "message",
    TOOL_CALL: "arguments",
}


def visible_change(msg: Message, field: str) -> tuple[int, str] | None:
    """(APPEND, s), (SET, s) or None: what ``msg`` does to the string at ``field``.

    A whole chunk sets it (to "" when absent); a type_change without props keeps it; an append
    (no path, or path == field) appends a string; replace/set at ``field`` sets it; replace/set
    without a path replaces all props; merge without a path sets it when the value carries it.
    Anything else (other paths, non-string values) leaves it alone.
    """
    props = msg.props
    if not msg.delta:
        if props is None and msg.type_change:
            return None
        v = props.get(field) if props else None
        return (SET, v if isinstance(v, str) else "")
    if props is None:
        return None
    path = msg.delta_path
    action = msg.delta_action or "append"
    v = props.get(field)
    if path is None:
        if action == "append":
            return (APPEND, v) if isinstance(v, str) else None
        if action == "merge":
            return (SET, v) if isinstance(v, str) else None
        return (SET, v if isinstance(v, str) else "")
    if path != field or not isinstance(v, str):
        return None
    if action == "append":
        return (APPEND, v)
    if action in ("replace", "set"):
        return (SET, v)
    return None


def sid(data: Mapping[str, Any], key: str, fallback: str | None = None) -> str | None:
    """``data[key]`` when it is a non-empty string (event data comes from anywhere), else
    ``fallback``."""
    v = data.get(key)
    return v if isinstance(v, str) and v else fallback


def id_fields(msg: Message) -> dict[str, str]:
    """Tool-call ``id``/``name`` strings this chunk sets (whole chunk, root delta or their path)."""
    props = msg.props
    if not props:
        return {}
    path = msg.delta_path
    if msg.delta and path is not None and path not in ("id", "name"):
        return {}
    out: dict[str, str] = {}
    for k in ("id", "name"):
        v = props.get(k)
        if isinstance(v, str) and v and (path is None or path == k):
            out[k] = v
    return out


class Parts:
    """A string built by appends: parts joined only when read (linear in total length)."""

    __slots__ = ("_parts", "size")

    def __init__(self, s: str = "") -> None:
        self._parts = [s] if s else []
        self.size = len(s)

    def append(self, s: str) -> None:
        self._parts.append(s)
        self.size += len(s)

    def value(self) -> str:
        parts = self._parts
        if not parts:
            return ""
        if len(parts) > 1:
            joined = "".join(parts)
            parts.clear()
            parts.append(joined)
        return parts[0]

    def set(self, s: str) -> None:
        self._parts = [s] if s else []
        self.size = len(s)


class Encoder(Protocol):
    """What every encoder is: Messages in, wire items out, ``close`` ends what is open."""

    def feed(self, msg: Message) -> list[Any]: ...

    def close(self) -> list[Any]: ...


def run_encoder(enc: Encoder, messages: Iterable[Message]) -> Iterator[Any]:
    """Every wire item ``enc`` makes of ``messages``, then those of ``close()``."""
    for m in messages:
        yield from enc.feed(m)
    yield from enc.close()


def set_shown(text: Parts, new: str, key: tuple[str | None, str], client: str,
              warnings: list[StreamWarning]) -> str | None:
    """Set a shown string to ``new``; what an append-only client must be sent, or None.

    The extension when ``new`` extends what was shown; otherwise (a rewrite the client cannot
    take back) a line break and ``new`` whole, with a ``rewrite`` warning naming ``client``.
    """
    cur = text.value()
    if new == cur:
        return None
    text.set(new)
    if new.startswith(cur):
        return new[len(cur):]
    warnings.append(StreamWarning(
        "rewrite", f"the message's text was rewritten; {client} gets the new text after a line "
        "break", message_id=key[1], thread_id=key[0]))
    return "\n" + new


def sse(data: str) -> str:
    """One Server-Sent Event carrying ``data`` (one line of JSON)."""
    return "data: " + data + "\n\n"


def report_warnings(warnings: Iterable[StreamWarning]) -> None:
    """Print warnings on stderr (the CLI's edge)."""
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr, flush=True)


def opt(args: Any, name: str, default: Any = None) -> Any:
    """``args.name`` when the argparse namespace has it, else ``default``."""
    return getattr(args, name, default) if args is not None else default
