"""Random hierarchical streams (threads, blocks, interleavings, deltas, reasoning) and chunker
options: shared by the chat codec's property tests."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st

from agent_stream.message import (
    BLOCK_END,
    BLOCK_START,
    MESSAGE_END,
    MESSAGE_START,
    STREAM_END,
    STREAM_START,
    THREAD_END,
    THREAD_START,
    BlockEndData,
    BlockStartData,
    Message,
    MessageEndData,
    MessageStartData,
    StreamEndData,
    StreamStartData,
    ThreadEndData,
    ThreadStartData,
    lifecycle,
)

SECRET = "θ"  # reasoning is written with this letter only; answer text never contains it
TEXT_ALPHABET = st.sampled_from(
    [*"abc xyz.,!?;:\n", "Dr. ", "3.14", "```", "- ", "é", "中", "。", "😀", "e\u0301", "  "]
)
answer_text = st.lists(TEXT_ALPHABET, max_size=40).map("".join)
secret_text = st.text(alphabet=SECRET + " .", max_size=30)


def splits(draw: st.DrawFn, s: str) -> list[str]:
    cuts = sorted(draw(st.lists(st.integers(0, len(s)), max_size=6)))
    return [s[a:b] for a, b in itertools.pairwise([0, *cuts, len(s)])]


APPEND_FORMS = st.sampled_from(
    [
        {},
        {},
        {"delta_action": "append"},
        {"delta_action": "append", "delta_path": "content"},
        {"delta_path": "content"},
    ]
)


def deltas(draw: st.DrawFn, s: str, typ: str, ids: dict[str, Any]) -> list[Message]:
    """Appends of ``s`` in random pieces, each in one of the ways an append can be written."""
    return [
        Message(type=typ, props={"content": p}, delta=True, **draw(APPEND_FORMS), **ids)
        for p in splits(draw, s)
    ]


@st.composite
def message_chunks(draw: st.DrawFn, ids: dict[str, Any]) -> tuple[str, list[Message], bool]:
    """(type at start, content chunks, ever reasoning) of one logical message."""
    kind = draw(
        st.sampled_from(
            [
                "text",
                "text",
                "text",
                "whole",
                "thinking",
                "thinking",
                "tool",
                "loading",
                "table",
                "image",
                "error",
                "to_table",
                "draft_to_text",
                "to_thinking",
                "from_thinking",
                "replace",
                "notes",
            ]
        )
    )
    if kind == "text":
        return "text", deltas(draw, draw(answer_text), "text", ids), False
    if kind == "whole":
        return "text", [Message(type="text", props={"content": draw(answer_text)}, **ids)], False
    if kind == "thinking":
        return "thinking", deltas(draw, draw(secret_text), "thinking", ids), True
    if kind == "notes":  # a custom type appending strings (onto a list: a DeltaError)
        start = draw(
            st.sampled_from([[], [Message(type="notes", props={"content": "N: "}, **ids)]])
        )
        return "notes", [*start, *deltas(draw, draw(answer_text), "notes", ids)], False
    if kind == "tool":
        args = draw(st.sampled_from(['{"q":"x"}', "{}", '{"n":[1,2]}']))
        return (
            "tool_call",
            [
                Message(
                    type="tool_call",
                    props={"id": "call_1", "name": "search", "arguments": args},
                    **ids,
                )
            ],
            False,
        )
    if kind == "loading":
        return (
            "loading",
            [
                Message(type="loading", props={"message": "working"}, **ids),
                Message(
                    type="loading", props={"done": True}, delta=True, delta_action="merge", **ids
                ),
            ],
            False,
        )
    if kind == "table":
        rows = draw(st.lists(st.integers(0, 9), max_size=3))
        return (
            "table",
            [Message(type="table", props={"columns": ["n"], "rows": []}, **ids)]
            + [
                Message(
                    type="table",
                    props={"rows": [{"n": r}]},
                    delta=True,
                    delta_path="rows",
                    delta_action="append",
                    **ids,
                )
                for r in rows
            ],
            False,
        )
    if kind == "image":
        return "image", [Message(type="image", props={"url": "https://x.test/a.png"}, **ids)], False
    if kind == "error":
        return (
            "error",
            [Message(type="error", props={"message": "boom", "code": "E1"}, **ids)],
            False,
        )
    if kind == "to_table":
        return (
            "text",
            [
                *deltas(draw, draw(answer_text), "text", ids),
                Message(type="table", type_change=True, props={"rows": []}, **ids),
                Message(type="table", props={"rows": [1]}, delta=True, delta_path="rows", **ids),
            ],
            False,
        )
    if kind == "draft_to_text":
        s = draw(answer_text)
        return (
            "draft",
            [
                Message(type="draft", props={"content": s}, **ids),
                Message(type="text", type_change=True, props={"content": s}, **ids),
                *deltas(draw, draw(answer_text), "text", ids),
            ],
            False,
        )
    if kind == "to_thinking":
        return (
            "text",
            [
                *deltas(draw, draw(answer_text), "text", ids),
                Message(type="thinking", type_change=True, **ids),
                *deltas(draw, draw(secret_text), "thinking", ids),
            ],
            True,
        )
    if kind == "from_thinking":
        return (
            "thinking",
            [
                *deltas(draw, draw(secret_text), "thinking", ids),
                Message(type="text", type_change=True, props={"content": draw(answer_text)}, **ids),
                *deltas(draw, draw(answer_text), "text", ids),
            ],
            True,
        )
    # replace: appended text corrected by a replace delta, then more appends
    return (
        "text",
        [
            *deltas(draw, draw(answer_text), "text", ids),
            Message(
                type="text",
                props={"content": draw(answer_text)},
                delta=True,
                delta_action="replace",
                delta_path="content",
                **ids,
            ),
            *deltas(draw, draw(answer_text), "text", ids),
        ],
        False,
    )


@st.composite
def hierarchical_streams(draw: st.DrawFn) -> tuple[list[Message], set[tuple[str | None, str]]]:
    """(Messages in arrival order, keys of messages that ever were reasoning)."""
    threads = draw(
        st.lists(st.sampled_from([None, "T1", "T2", "T3"]), min_size=1, max_size=3, unique=True)
    )
    lanes: list[list[Message]] = []
    reasoning: set[tuple[str | None, str]] = set()
    block_n = itertools.count(1)
    for tid in threads:
        lane: list[Message] = []
        if tid is not None:
            lane.append(lifecycle(THREAD_START, ThreadStartData(thread_id=tid), thread_id=tid))
        mid_n = itertools.count(1)  # message ids restart per thread: they collide on purpose
        for _ in range(draw(st.integers(1, 2))):
            in_block = draw(st.booleans())
            bid = f"B{next(block_n)}" if in_block else None
            if bid is not None:
                lane.append(
                    lifecycle(
                        BLOCK_START,
                        BlockStartData(block_id=bid, type="llm"),
                        block_id=bid,
                        thread_id=tid,
                    )
                )
            for _ in range(draw(st.integers(1, 3))):
                if draw(st.integers(0, 5)) == 0:  # a whole message with no message_id
                    lane.append(
                        draw(
                            st.sampled_from(
                                [
                                    Message(type="text", props={"content": "Standalone answer."}),
                                    Message(type="tool_call", props={"id": "c9", "name": "f"}),
                                    Message(
                                        type="event", props={"event": "progress", "data": {"p": 1}}
                                    ),
                                    Message(type="error", props={"message": "oops"}),
                                ]
                            )
                        ).model_copy(update={"thread_id": tid, "block_id": bid})
                    )
                    continue
                mid = f"M{next(mid_n)}"
                ids = {"message_id": mid, "thread_id": tid, "block_id": bid}
                typ, chunks, secret = draw(message_chunks(ids))
                if secret:
                    reasoning.add((tid, mid))
                lifecycle_events = draw(st.booleans())
                if lifecycle_events:
                    lane.append(
                        lifecycle(
                            MESSAGE_START,
                            MessageStartData(message_id=mid, type=typ, thread_id=tid),
                            **ids,
                        )
                    )
                lane += chunks
                if lifecycle_events:
                    count = len(chunks) + draw(st.sampled_from([0, 0, 0, 0, 1]))  # 1: lossy
                    status = draw(st.sampled_from(["completed", "completed", "error"]))
                    lane.append(
                        lifecycle(
                            MESSAGE_END,
                            MessageEndData(
                                message_id=mid,
                                type=typ,
                                thread_id=tid,
                                chunk_count=count,
                                status=status,
                            ),
                            **ids,
                        )
                    )
            if bid is not None:
                lane.append(
                    lifecycle(BLOCK_END, BlockEndData(block_id=bid), block_id=bid, thread_id=tid)
                )
        if tid is not None:
            lane.append(lifecycle(THREAD_END, ThreadEndData(thread_id=tid), thread_id=tid))
        lanes.append(lane)
    # interleave the lanes, keeping each lane's order
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(lifecycle(STREAM_START, StreamStartData()))
    pos = [0] * len(lanes)
    while any(p < len(lane) for p, lane in zip(pos, lanes, strict=True)):
        live = [i for i, (p, lane) in enumerate(zip(pos, lanes, strict=True)) if p < len(lane)]
        i = draw(st.sampled_from(live))
        take = draw(st.integers(1, 4))
        out += lanes[i][pos[i] : pos[i] + take]
        pos[i] += take
    if draw(st.booleans()):
        out.append(
            lifecycle(
                STREAM_END,
                StreamEndData(status=draw(st.sampled_from(["completed", "error", "cancelled"]))),
            )
        )
    for n, m in enumerate(out, 1):
        m.chunk_id = f"C{n}"
    return out, reasoning


CHUNKERS = st.sampled_from(
    [
        None,
        {"min_chars": 1, "max_chars": 8, "first_chars": None},
        {"min_chars": 5, "max_chars": 30, "max_delay": 0.1},
    ]
)


def with_extra(msgs: list[Message]) -> list[Message]:
    """The stream with each message_end's data ending in extra.content, the text its message's
    plain appends make (as the writer sends it)."""
    text: dict[tuple[str | None, str | None], str] = {}
    out: list[Message] = []
    for m in msgs:
        p = m.props or {}
        if (
            m.delta
            and not m.delta_path
            and not m.delta_action
            and isinstance(p.get("content"), str)
        ):
            key = (m.thread_id, m.message_id)
            text[key] = text.get(key, "") + p["content"]
        if m.event == MESSAGE_END:
            data = {**m.event_data, "extra": {"content": text.get((m.thread_id, m.message_id), "")}}
            m = m.model_copy(update={"props": {**p, "data": data}})
        out.append(m)
    return out
