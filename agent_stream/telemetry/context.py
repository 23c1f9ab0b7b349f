"""W3C trace context as it travels between agents: checked before anything trusts it.

A peer's ``traceparent`` is accepted only in the W3C form ``00-<32 hex>-<16 hex>-<2 hex>`` (a
later version's first four fields are read as the spec says), with neither id all zeros; a
``tracestate`` only as at most 32 well-formed list members within 512 characters (a bad one is
dropped, the traceparent kept). Nothing else from a peer is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "TRACEPARENT",
    "TRACESTATE",
    "TraceParent",
    "format_traceparent",
    "parse_traceparent",
    "parse_tracestate",
    "trace_headers_of",
]

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

_TP = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
_KEY = re.compile(
    r"(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@"
    r"[a-z][a-z0-9_\-*/]{0,13})"
)
_VALUE = re.compile(r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]")

TraceParent = tuple[int, int, int]  # trace id, parent span id, flags


def parse_traceparent(value: Any) -> TraceParent | None:
    """(trace id, span id, flags) of a W3C ``traceparent``; None when it is malformed.

    Args:
        value: the header's value, of any type (a non-string is malformed).
    """
    if not isinstance(value, str) or len(value) > 512:
        return None
    m = _TP.fullmatch(value)
    if m is None:
        return None
    version, trace, span, flags, rest = m.groups()
    if version == "ff" or (version == "00" and rest is not None):
        return None
    if rest is not None and not rest.startswith("-"):
        return None
    tid, sid = int(trace, 16), int(span, 16)
    if tid == 0 or sid == 0:
        return None
    return tid, sid, int(flags, 16)


def parse_tracestate(value: Any) -> list[tuple[str, str]] | None:
    """The list members of a W3C ``tracestate``; None when it is malformed (then dropped).

    Args:
        value: the header's value, of any type (a non-string is malformed).
    """
    if not isinstance(value, str) or len(value) > 512:
        return None
    members: list[tuple[str, str]] = []
    for raw in value.split(","):
        item = raw.strip(" \t")
        if not item:
            continue
        key, sep, val = item.partition("=")
        if not sep or not _KEY.fullmatch(key) or not _VALUE.fullmatch(val):
            return None
        if any(k == key for k, _ in members):
            return None
        members.append((key, val))
    return members if len(members) <= 32 else None


def format_traceparent(trace_id: int, span_id: int, flags: int) -> str:
    """The ``traceparent`` naming a span.

    Args:
        trace_id: the 128-bit trace id.
        span_id: the 64-bit span id.
        flags: the trace flags (its low byte is used).
    """
    return f"00-{trace_id:032x}-{span_id:016x}-{flags & 0xFF:02x}"


def trace_headers_of(content: Iterable[Any]) -> tuple[str | None, str | None]:
    """The (traceparent, tracestate) strings a question's agent_stream tags carry.

    They are not checked; (None, None) when the question carries none.

    Args:
        content: the question's content items.
    """
    for item in content:
        md = getattr(item, "metadata", None)
        if isinstance(md, dict) and "agent_stream" in md and TRACEPARENT in md:
            tp, ts = md.get(TRACEPARENT), md.get(TRACESTATE)
            return (tp if isinstance(tp, str) else "", ts if isinstance(ts, str) else None)
    return None, None
