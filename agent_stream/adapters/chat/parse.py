"""Parsing ChatMessage JSON at the edge, validated as uagents validates it (readable reasons)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic.v1 import ValidationError as _V1ValidationError
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    ResourceContent,
    StartSessionContent,
    StartStreamContent,
    TextContent,
)

from agent_stream import jsontext
from agent_stream.adapters.chat.wire import utf8_size
from agent_stream.errors import WireError

__all__ = ["parse_chat"]

_CONTENT_TYPES: dict[str, Any] = {
    "text": TextContent,
    "resource": ResourceContent,
    "metadata": MetadataContent,
    "start-session": StartSessionContent,
    "end-session": EndSessionContent,
    "start-stream": StartStreamContent,
    "end-stream": EndStreamContent,
}
_TOP_KEYS = ("timestamp", "msg_id", "content")
_UNEXPECTED = re.compile(r"unexpected keyword argument '([^']*)'")
_MISSING_ARG = re.compile(r"missing \d+ required positional arguments?: (.*)")


def _v1_errors(exc: _V1ValidationError, where: str) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"]
        m = _UNEXPECTED.search(msg)
        if m:
            msg = f"unknown field {m.group(1)!r}"
        label = f"{where}.{loc}" if where and loc else (where or loc)
        parts.append(f"{label}: {msg}" if label else msg)
    return "; ".join(dict.fromkeys(parts))


def _json(data: str | bytes) -> Any:
    """The decoded JSON text (WireError saying why it is not JSON)."""
    try:
        return jsontext.loads(data, WireError)
    except json.JSONDecodeError as exc:
        reason = f"not JSON: {exc.msg} at column {exc.colno}"
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8: {exc.reason}"
    raise WireError(reason)


def parse_chat(data: str | bytes | dict[str, Any], *, max_bytes: int | None = None) -> ChatMessage:
    """A ChatMessage from its JSON (or decoded JSON), validated as uagents validates it.

    Args:
        data: the JSON text, as a string or UTF-8 bytes, or the decoded object.
        max_bytes: the most UTF-8 bytes of JSON, checked before parsing (None: no cap).

    Raises:
        WireError: with a readable reason: too large, bad JSON, an unknown key (uagents rejects
            it), a missing field, a content item of an unknown type or with a bad field.
    """
    if isinstance(data, (str, bytes)):
        if max_bytes is not None:
            size = len(data) if isinstance(data, bytes) else utf8_size(data)
            if size > max_bytes:
                raise WireError(f"a ChatMessage of {size} bytes exceeds max_bytes={max_bytes}")
        data = _json(data)
    if not isinstance(data, dict):
        raise WireError(f"a ChatMessage must be a JSON object, got {type(data).__name__}")
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        raise WireError(
            "unknown field(s) "
            + ", ".join(repr(k) for k in unknown)
            + " (uagents rejects a ChatMessage with them)"
        )
    if "content" not in data:
        raise WireError("missing field 'content'")
    content = data["content"]
    if not isinstance(content, list):
        raise WireError(f"content must be a list, got {type(content).__name__}")
    for i, item in enumerate(content):
        _check_item(f"content.{i}", item)
    try:
        return ChatMessage.parse_obj(data)
    except _V1ValidationError as exc:
        raise WireError(_v1_errors(exc, "")) from None
    except TypeError as exc:  # uagents' positional __init__
        raise WireError(str(exc)) from None


def _check_item(where: str, item: Any) -> None:
    """Raise WireError with a readable reason when content item ``item`` is not valid."""
    if not isinstance(item, dict):
        raise WireError(f"{where}: a content item must be an object, got {type(item).__name__}")
    kind = item.get("type")
    cls = _CONTENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise WireError(
            f"{where}: unknown content type {kind!r} (expected one of "
            + ", ".join(_CONTENT_TYPES)
            + ")"
        )
    extra = [k for k in item if k not in cls.__fields__]
    if extra:
        raise WireError(f"{where} ({kind}): unknown field(s) " + ", ".join(repr(k) for k in extra))
    try:
        cls.parse_obj(item)
    except _V1ValidationError as exc:
        raise WireError(f"{_v1_errors(exc, where)}") from None
    except TypeError as exc:
        m = _MISSING_ARG.search(str(exc))
        raise WireError(
            f"{where} ({kind}): missing field(s) {m.group(1)}" if m else f"{where} ({kind}): {exc}"
        ) from None
