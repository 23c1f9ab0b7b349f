"""Fuzzing every command in-process: random bytes, and valid streams mutated (a byte flipped,
the input cut, a line duplicated or nested, a value swapped for one of another type).

Every run: exit 0 or 2, no traceback, UTF-8 strict-JSON output; an exit 2 names a line that
exists; and what the lines before the bad one produce alone is in the output too.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_harness import COMMANDS, MARKERS, bad_line_numbers, check_run, prefix, reads, run, suffix
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RICH = [
    json.dumps(d).encode()
    for d in [
        {
            "type": "event",
            "props": {"event": "block_start", "data": {"block_id": "B1"}},
            "block_id": "B1",
        },
        {"type": "thinking", "message_id": "M2", "block_id": "B1", "props": {"content": "hmm"}},
        {
            "type": "tool_call",
            "message_id": "M3",
            "block_id": "B1",
            "props": {"id": "c1", "name": "f", "arguments": '{"a": 1}'},
        },
        {
            "type": "event",
            "props": {"event": "message_end", "data": {"message_id": "M1", "chunk_count": 5}},
        },
        {
            "type": "event",
            "props": {"event": "block_end", "data": {"block_id": "B1"}},
            "block_id": "B1",
        },
        {
            "type": "event",
            "props": {
                "event": "stream_end",
                "data": {"status": "completed", "usage": {"prompt_tokens": 1, "total_tokens": 2}},
            },
        },
    ]
]


def valid_lines(fmt: str) -> list[bytes]:
    lines = [*prefix(fmt), *suffix(fmt)]
    return [*lines[:4], *RICH[:3], *lines[4:], *RICH[3:]] if fmt == "messages" else lines


OTHER_VALUES: list[Any] = [12, -1.5, "s", "", [], {}, None, True, 10**30, [[["x"]]], {"a": {}}]


def swap_type(line: bytes, pick: int, value: Any) -> bytes:
    """The line with one of its JSON values (the pick-th, walking the tree) replaced."""
    prefix_ = b""
    body = line
    if line.startswith(b"data: "):
        prefix_, body = b"data: ", line[6:]
    try:
        data = json.loads(body)
    except ValueError:
        return line
    slots: list[tuple[Any, Any]] = []
    stack = [data]
    while stack:
        v = stack.pop()
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, x in items:
            slots.append((v, k))
            stack.append(x)
    if not slots:
        return line
    container, key = slots[pick % len(slots)]
    container[key] = value
    return prefix_ + json.dumps(data).encode()


@st.composite
def mutated(draw: st.DrawFn, fmt: str) -> bytes:
    lines = list(valid_lines(fmt))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["flip", "cut", "dup", "nest", "swap", "insert", "drop"]))
        if kind == "flip" and lines[i]:
            j = draw(st.integers(0, len(lines[i]) - 1))
            b = bytearray(lines[i])
            b[j] ^= draw(st.integers(1, 255))
            lines[i] = bytes(b)
        elif kind == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "nest":
            depth = draw(st.sampled_from([1, 10, 63, 64, 65, 1000]))
            lines[i] = b"[" * depth + lines[i] + b"]" * depth
        elif kind == "swap":
            lines[i] = swap_type(
                lines[i], draw(st.integers(0, 50)), draw(st.sampled_from(OTHER_VALUES))
            )
        elif kind == "insert":
            lines.insert(i, draw(st.binary(max_size=40)))
        elif kind == "drop" and len(lines) > 1:
            del lines[i]
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b"\r\n"]))


def words(out: bytes) -> set[str]:
    text = out.decode("utf-8")
    return {w for w in MARKERS if w in text}


def check(command: str, data: bytes) -> None:
    r = run(COMMANDS[command], data)
    check_run(r, bad=None)
    if r.code != 2:
        return
    named = bad_line_numbers(r.err)
    assert named, r.err
    n = named[0]
    assert 1 <= n <= data.count(b"\n") + 1, r.err
    before = run(COMMANDS[command], b"\n".join(data.split(b"\n")[: n - 1]) + b"\n")
    check_run(before, bad=None)
    if before.code == 0:  # what the lines before the bad one produce alone is not lost
        assert words(before.out) <= words(r.out), (before.out[-300:], r.out[-300:], r.err)


FUZZ = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("command", list(COMMANDS))
@FUZZ
@given(data=st.binary(max_size=400))
def test_random_bytes(command: str, data: bytes) -> None:
    check(command, data)


@pytest.mark.parametrize("command", list(COMMANDS))
@FUZZ
@given(st.data())
def test_mutated_valid_streams(command: str, data: st.DataObject) -> None:
    check(command, data.draw(mutated(reads(command))))


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_valid_streams_are_valid(command: str) -> None:
    r = run(COMMANDS[command], b"\n".join(valid_lines(reads(command))) + b"\n")
    assert (r.code, r.err.count("line ")) == (0, 0) or r.code == 0, r.err
    assert words(r.out) == set(MARKERS), (r.out[-300:], r.err)
