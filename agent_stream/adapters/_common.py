"""Deprecated: the old home of the encoders' shared pieces, kept for modules not yet moved.

New code imports from ``adapters._tracking`` (Parts, set_shown, id_fields, ToolCall,
MessageTable, Warnings), ``adapters.framing`` (sse, run_encoder, Encoder), ``delta``
(visible_change, APPEND, SET), ``events`` (EventView instead of ``sid``) and ``adapters._cli``
(opt, encode_text). Remove this module once nothing imports it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from agent_stream.adapters._cli import opt
from agent_stream.adapters._tracking import Key, Parts, id_fields
from agent_stream.adapters.framing import Encoder, run_encoder, sse
from agent_stream.delta import APPEND, SET, visible_change
from agent_stream.errors import StreamWarning, WarningCode
from agent_stream.message import LOADING, REFUSAL, TEXT, THINKING, TOOL_CALL

__all__ = ["APPEND", "SET", "VISIBLE_FIELD", "Encoder", "Parts", "id_fields", "opt",
           "report_warnings", "run_encoder", "set_shown", "sid", "sse", "visible_change"]

VISIBLE_FIELD: dict[str, str] = {
    TEXT: "content",
    THINKING: "content",
    REFUSAL: "content",
    LOADING: "message",
    TOOL_CALL: "arguments",
}


def sid(data: Mapping[str, Any], key: str, fallback: str | None = None) -> str | None:
    """``data[key]`` when it is a non-empty string, else ``fallback`` (see ``events.EventView``)."""
    v = data.get(key)
    return v if isinstance(v, str) and v else fallback


def set_shown(text: Parts, new: str, key: Key, client: str,
              warnings: list[StreamWarning]) -> str | None:
    """``_tracking.set_shown`` with the old signature (warnings appended to a list)."""
    cur = text.value()
    if new == cur:
        return None
    text.set(new)
    if new.startswith(cur):
        return new[len(cur):]
    warnings.append(StreamWarning(
        WarningCode.REWRITE, f"the message's text was rewritten; {client} gets the new text "
        "after a line break", message_id=key[1], thread_id=key[0]))
    return "\n" + new


def report_warnings(warnings: Iterable[StreamWarning]) -> None:
    """Print warnings on stderr (the CLI's edge; new code uses ``_cli.encode_text``)."""
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr, flush=True)
