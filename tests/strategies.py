"""Hypothesis strategies shared by the encoder tests: any Message, valid or odd, in any order."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from agent_stream.message import Message

TYPES = [
    "text",
    "thinking",
    "loading",
    "tool_call",
    "error",
    "image",
    "action",
    "event",
    "refusal",
    "table",
    "citation",
]
EVENTS = [
    "stream_start",
    "stream_end",
    "thread_end",
    "block_start",
    "block_end",
    "message_start",
    "message_end",
    "custom",
]
DATA_KEYS = ["message_id", "thread_id", "block_id", "type", "status", "error", "usage", "label"]
DATA_VALUES = ["M1", "T1", "B1", "text", "thinking", "tool_call", "error", "cancelled"]

_leaf = st.one_of(st.integers(), st.text(max_size=3), st.none())
_props = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["content", "message", "arguments", "id", "name", "url", "rows"]),
        st.one_of(_leaf, st.lists(_leaf, max_size=2)),
        max_size=3,
    ),
)


@st.composite
def any_message(draw: Any) -> Message:
    """A Message of any built-in or custom type, any delta shape, or a (possibly odd) event."""
    t = draw(st.sampled_from(TYPES))
    ids = {
        "message_id": draw(st.sampled_from([None, "M1", "M2"])),
        "thread_id": draw(st.sampled_from([None, "T1", "T2"])),
        "block_id": draw(st.sampled_from([None, "B1", "B2"])),
    }
    if t == "event":
        data = draw(
            st.dictionaries(
                st.sampled_from(DATA_KEYS),
                st.one_of(_leaf, st.sampled_from(DATA_VALUES)),
                max_size=3,
            )
        )
        return Message(
            type="event", props={"event": draw(st.sampled_from(EVENTS)), "data": data}, **ids
        )
    return Message(
        type=t,
        props=draw(_props),
        delta=draw(st.booleans()),
        delta_path=draw(st.sampled_from([None, "content", "arguments", "rows"])),
        delta_action=draw(st.sampled_from([None, "append", "replace", "merge", "set"])),
        type_change=draw(st.booleans()),
        **ids,
    )


@st.composite
def tool_message(draw: Any) -> Message:
    """A tool_call or tool_result chunk: whole or a delta, ids and names early, late or never."""
    t = draw(st.sampled_from(["tool_call", "tool_result"]))
    keys = ["id", "name", "arguments"] if t == "tool_call" else ["call_id", "name", "content"]
    props = draw(
        st.dictionaries(
            st.sampled_from(keys),
            st.one_of(st.text(alphabet='ab{}":', max_size=4), _leaf),
            max_size=3,
        )
    )
    return Message(
        type=t,
        props=props,
        message_id=draw(st.sampled_from(["M1", "M2", "M3"])),
        thread_id=draw(st.sampled_from([None, "T1"])),
        delta=draw(st.booleans()),
        delta_path=draw(st.sampled_from([None, *keys])),
        delta_action=draw(st.sampled_from([None, "append", "set", "merge"])),
    )
