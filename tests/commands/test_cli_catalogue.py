"""Issue 10's catalogue: every command survives any bytes, names the bad line, loses no output.

Each case is one line (or a layout of lines) put after good lines that carry the words alpha,
bravo, charlie and before good lines carrying foxtrot, golf, in the input format of the command
(Message JSONL, JSON-string deltas, ChatMessage JSON, OpenAI SSE). Every case runs on every
command that reads its format (most on all nine) in-process, twice: stopping at the bad line
(exit 2, the line named, the earlier words in the output) and with --keep-going (exit 0, every
word in the output). Every run: exit 0 or 2, no traceback, output UTF-8 and strict JSON.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import pytest
from cli_harness import (
    COMMANDS,
    MARKERS,
    Result,
    bad_line_numbers,
    check_run,
    lazy_stream,
    prefix,
    reads,
    run,
    suffix,
)

from agent_stream.commands.formats import decoders

ALL = ("messages", "deltas", *decoders())


def msg(**d: Any) -> bytes:
    return json.dumps(d).encode()


def text_with(**props: Any) -> bytes:
    return msg(type="text", message_id="M9", props=props)


def event(name: str, **data: Any) -> bytes:
    return msg(type="event", props={"event": name, "data": data})


def chat(content: Any = None, **top: Any) -> bytes:
    d: dict[str, Any] = {
        "timestamp": "2024-01-01T00:00:00+00:00",
        "msg_id": "6f1d1f4e-3a6b-4c8e-9a59-0f1e2d3c4b5a",
        "content": content or [],
    }
    d.update(top)
    return json.dumps(d).encode()


def sse(chunk: Any) -> bytes:
    return b"data: " + (chunk if isinstance(chunk, bytes) else json.dumps(chunk).encode())


DEEP = b"[" * 100_000 + b"]" * 100_000
BIG_INT = b"1" + b"0" * 5000
rng = random.Random(10)
GARBAGE = bytes(b for b in rng.randbytes(400) if b not in b"\n")


@dataclass(frozen=True)
class Case:
    """``line`` (by input format; a format it lacks is not run) and what must come of it.

    expect: "bad" (reported as the bad line), "ok" (accepted), "any" (either, but named if
    rejected); per format when a dict. ``layout`` puts the lines together differently.
    """

    name: str
    line: dict[str, bytes]
    expect: str | dict[str, str] = "bad"
    args: tuple[str, ...] = ()
    layout: str = "middle"
    issue: bool = False
    only: tuple[str, ...] = field(default=())  # commands to run on (default: all reading it)

    def expected(self, fmt: str) -> str:
        return self.expect if isinstance(self.expect, str) else self.expect.get(fmt, "bad")


def every(line: bytes, **kw: Any) -> dict[str, Any]:
    return {"name": kw.pop("name"), "line": dict.fromkeys(ALL, line), **kw}


CASES = [
    # -- the issue's cases ------------------------------------------------------------------
    Case(**every(DEEP, name="deeply nested array", issue=True)),
    Case(**every(b'{"a":' * 1000 + b"1" + b"}" * 1000, name="deeply nested object", issue=True)),
    Case(
        "nesting deeper than 64 inside a valid line",
        {
            "messages": text_with(x=json.loads("[" * 70 + "]" * 70)),
            "chat": chat([{"type": "text", "text": "x", "deep": json.loads("[" * 70 + "]" * 70)}]),
            "openai": sse({"choices": [{"delta": json.loads("[" * 70 + "]" * 70)}]}),
            "deltas": b"[" * 70 + b"]" * 70,
        },
        issue=True,
    ),
    Case(
        "900-deep props",
        {
            "messages": b'{"type":"x","message_id":"M1","props":{"a":'
            + b'{"a":' * 900
            + b"1"
            + b"}" * 901
            + b"}"
        },
        issue=True,
    ),
    Case(**every(BIG_INT, name="integer of 5,000 digits", issue=True)),
    Case(
        "integer of 5,000 digits in a field",
        {
            "messages": b'{"type":"text","message_id":"M9","props":{"content":"x","m":'
            + BIG_INT
            + b"}}",
            "chat": chat([{"type": "text", "text": "x"}])[:-1] + b', "n": ' + BIG_INT + b"}",
            "openai": b'data: {"created": ' + BIG_INT + b', "choices": []}',
            "deltas": b"[" + BIG_INT + b"]",
        },
        issue=True,
    ),
    Case(**every(b'"caf\xe9"', name="invalid UTF-8", issue=True)),
    Case(
        "invalid UTF-8 inside OpenAI data",
        {"openai": sse(b'{"choices":[{"index":0,"delta":{"content":"\xff"}}]}')},
        issue=True,
    ),
    Case(**every(b'"\\ud800"', name="a lone surrogate written out", issue=True)),
    Case(
        "a lone surrogate in a field",
        {
            "messages": text_with(content="\ud800"),
            "chat": chat([{"type": "text", "text": "\udc00"}]),
            "openai": sse({"choices": [{"index": 0, "delta": {"content": "\ud83d"}}]}),
            "deltas": b'"ok \\udfff"',
        },
        issue=True,
    ),
    Case(
        "usage that is not a number",
        {
            "openai": sse({"choices": [], "usage": {"prompt_tokens": "lots"}}),
            "messages": event("stream_end", usage={"prompt_tokens": "lots"}),
        },
        issue=True,
    ),
    Case(
        "usage NaN",
        {
            "openai": b'data: {"choices": [], "usage": {"prompt_tokens": NaN}}',
            "messages": b'{"type":"event","props":{"event":"stream_end","data":'
            b'{"usage":{"total_tokens":NaN}}}}',
        },
        issue=True,
    ),
    Case(**every(b"NaN", name="NaN", issue=True)),
    Case(**every(b"[Infinity, -Infinity]", name="Infinity", issue=True)),
    Case(
        "NaN in a field",
        {
            "messages": b'{"type":"text","props":{"content":"x","v":NaN}}',
            "chat": chat()[:-1] + b', "x": -Infinity}',
        },
        issue=True,
    ),
    Case(
        '"text": 12',
        {"chat": chat([{"type": "text", "text": 12}]), "messages": text_with(content=12)},
        issue=True,
    ),
    Case(
        "chunk_count that is not a number",
        {"messages": event("message_end", message_id="M1", chunk_count="lots")},
        issue=True,
    ),
    Case(
        "a string appended onto a list",
        {
            "messages": msg(
                type="x", message_id="M7", delta=True, delta_path="rows", props={"rows": "s"}
            )
        },
        layout="after-list",
        expect={"messages": "bad"},
        issue=True,
        only=("assemble",),
    ),
    # -- bytes and lines -----------------------------------------------------------------------
    Case(**every(GARBAGE, name="binary garbage")),
    Case(**every(b"\x00", name="a NUL byte")),
    Case(**every(b'"a\x00b"', name="a raw NUL inside a string")),
    Case(**every(b"\x00" * 1000, name="a thousand NULs")),
    Case(**every(b"\xff\xfe" + '"hi"'.encode("utf-16-le"), name="UTF-16 with its BOM")),
    Case(**every(b'"\xc0\xaf"', name="an overlong UTF-8 sequence")),
    Case(**every(b'"\xed\xa0\x80"', name="a surrogate encoded in UTF-8")),
    Case(**every(b'"\xe2\x82"', name="a cut multibyte character")),
    Case(**every(b'"\xf5\x80\x80\x80"', name="a byte beyond Unicode")),
    Case(**every(b'"a"\r"b"', name="a bare CR inside a line")),
    Case(**every(b"\xef\xbb\xbf" + b'"x"', name="a BOM on a later line")),
    Case(**every(b"", name="a BOM opening the input", expect="ok", layout="bom")),
    Case(**every(b"", name="CRLF line ends", expect="ok", layout="crlf")),
    Case(**every(b"", name="empty and blank lines between", expect="ok", layout="blanks")),
    Case(**every(b"", name="last line without a newline", expect="ok", layout="no-final-nl")),
    Case(**every(b"{", name="a bad last line without a newline", layout="bad-last-no-nl")),
    Case(**every(b"", name="empty input", expect="ok", layout="empty")),
    Case(**every(b"", name="only newlines", expect="ok", layout="newlines")),
    Case(**every(b"", name="a million blank lines, then a bad one", layout="million")),
    Case(**every(b"", name="a 100 MB line", layout="100mb")),
    Case(
        **every(b"x" * 3000, name="a line over --max-line-bytes", args=("--max-line-bytes", "2000"))
    ),
    Case(
        **every(
            b"",
            name="a line over the cap at the end, no newline",
            layout="long-last",
            args=("--max-line-bytes", "2000"),
        )
    ),
    # -- JSON values --------------------------------------------------------------------------
    Case(**every(b"[]", name="an array")),
    Case(**every(b"null", name="null")),
    Case(**every(b"true", name="a boolean")),
    Case(**every(b'"just a string"', name="a string", expect={"deltas": "ok"})),
    Case(**every(b"{}", name="an empty object", expect={"openai": "any"})),
    Case(**every(b'{"type":"text"} x', name="trailing garbage")),
    Case(**every(b"{}{}", name="two values on a line")),
    Case(**every(b"1e400", name="a float that overflows")),
    Case(**every(b"-" + b"9" * 30, name="a huge negative integer")),
    Case(**every(b'{"\\udfff": 1}', name="a lone surrogate in a key")),
    Case(
        "brackets inside strings are not nesting",
        {
            "messages": text_with(content="[" * 1000 + '\\"{'),
            "deltas": json.dumps("[" * 1000 + '\\"{' * 100).encode(),
            "chat": chat([{"type": "text", "text": "{[" * 1000}]),
            "openai": sse({"choices": [{"index": 0, "delta": {"content": "[" * 1000}}]}),
        },
        expect="ok",
    ),
    Case(
        "a surrogate pair escape is fine",
        {
            "messages": b'{"type":"text","message_id":"M9","props":{"content":"\\ud83d\\ude00"}}',
            "deltas": b'"\\ud83d\\ude00"',
        },
        expect="ok",
    ),
    Case(
        "an escaped NUL is fine",
        {"messages": text_with(content="a\u0000b"), "deltas": b'"a\\u0000b"'},
        expect="ok",
    ),
    Case(
        "a 1 MB line under the cap",
        {
            "messages": text_with(content="z" * (1 << 20)),
            "deltas": json.dumps("z" * (1 << 20)).encode(),
        },
        expect="ok",
    ),
    # -- every Message field of the wrong type --------------------------------------------------
    *[
        Case(f"Message {name}", {"messages": line})
        for name, line in [
            ("type 12", msg(type=12)),
            ("type empty", msg(type="")),
            ("props a string", msg(type="text", props="x")),
            ("props a list", msg(type="text", props=[])),
            ("chunk_id a number", msg(type="text", chunk_id=1)),
            ("message_id a number", msg(type="text", message_id=1)),
            ("block_id a list", msg(type="text", block_id=[])),
            ("thread_id an object", msg(type="text", thread_id={})),
            ("delta 1", msg(type="text", delta=1)),
            ('delta "true"', msg(type="text", delta="true")),
            ("delta_path a number", msg(type="text", delta=True, delta_path=1)),
            ("delta_action unknown", msg(type="text", delta=True, delta_action="bogus")),
            ('type_change "yes"', msg(type="text", type_change="yes")),
            ("metadata a number", msg(type="text", metadata=1)),
            ('metadata.timestamp "1"', msg(type="text", metadata={"timestamp": "1"})),
            ("metadata.timestamp beyond 64 bits", msg(type="text", metadata={"timestamp": 2**70})),
            ("metadata.sequence 1.5", msg(type="text", metadata={"sequence": 1.5})),
            ("metadata.trace_id a number", msg(type="text", metadata={"trace_id": 1})),
            ("an unknown field", msg(type="text", colour="red")),
            ("thinking content a list", msg(type="thinking", props={"content": []})),
            ('loading done "yes"', msg(type="loading", props={"message": "m", "done": "yes"})),
            ("tool_call arguments an object", msg(type="tool_call", props={"arguments": {}})),
            ("tool_call id a number", msg(type="tool_call", props={"id": 1})),
            ("error message a number", msg(type="error", props={"message": 1})),
            ('image width "100"', msg(type="image", props={"url": "u", "width": "100"})),
            ("event name a number", msg(type="event", props={"event": 1})),
            ("event data a string", msg(type="event", props={"event": "x", "data": "x"})),
            ("message_end message_id a number", event("message_end", message_id=12)),
            ('block_end message_count "1"', event("block_end", block_id="B1", message_count="1")),
            ("stream_end status unknown", event("stream_end", status="bogus")),
            ("thread_start thread_id a number", event("thread_start", thread_id=1)),
            ('stream_start timestamp "now"', event("stream_start", timestamp="now")),
            ("usage 1.5", event("stream_end", usage={"completion_tokens": 1.5})),
            (
                "a delta_path of 100 segments",
                msg(type="x", delta=True, delta_path=".".join(["a"] * 100), props={"a": 1}),
            ),
        ]
    ],
    # -- deltas that cannot apply (the assembler's rules; encoders may pass them) ---------------
    *[
        Case(
            f"delta: {name}",
            {"messages": line},
            layout="after-list",
            expect={"messages": "bad"},
            only=("assemble",),
        )
        for name, line in [
            (
                "a list appended onto a string",
                msg(type="x", message_id="M7", delta=True, delta_path="s", props={"s": [1]}),
            ),
            (
                "merge of a non-object",
                msg(
                    type="x",
                    message_id="M7",
                    delta=True,
                    delta_action="merge",
                    delta_path="o",
                    props={"o": 1},
                ),
            ),
            (
                "a path through a string",
                msg(type="x", message_id="M7", delta=True, delta_path="s.x", props={"s": {"x": 1}}),
            ),
        ]
    ],
    # -- ChatMessage fields of the wrong type ---------------------------------------------------
    *[
        Case(f"ChatMessage {name}", {"chat": line})
        for name, line in [
            ("msg_id a number", chat(msg_id=1)),
            ("timestamp a number", chat(timestamp=1)),
            ("content a string", chat("x")),
            ("content item a number", chat([1])),
            ("stream_id a number", chat([{"type": "start-stream", "stream_id": 1}])),
            ("metadata value a number", chat([{"type": "metadata", "metadata": {"k": 1}}])),
            (
                "metadata props nested too deep",
                chat(
                    [
                        {
                            "type": "metadata",
                            "metadata": {
                                "agent_stream": "1",
                                "op": "message",
                                "type": "text",
                                "props": "[" * 5000 + "]" * 5000,
                            },
                        }
                    ]
                ),
            ),
            (
                "metadata props with NaN",
                chat(
                    [
                        {
                            "type": "metadata",
                            "metadata": {
                                "agent_stream": "1",
                                "op": "message",
                                "type": "text",
                                "props": '{"v": NaN}',
                            },
                        }
                    ]
                ),
            ),
            ("an unknown content type", chat([{"type": "video"}])),
        ]
    ],
    # -- OpenAI chunks of the wrong shape -------------------------------------------------------
    *[
        Case(f"OpenAI {name}", {"openai": line}, expect=expect)
        for name, line, expect in [
            ("usage 1.5", sse({"choices": [], "usage": {"total_tokens": 1.5}}), "bad"),
            ("usage true", sse({"choices": [], "usage": {"prompt_tokens": True}}), "bad"),
            ("usage a string", sse({"choices": [], "usage": "x"}), "bad"),
            ("choices a string", sse({"choices": "x"}), "bad"),
            ("a choice that is a number", sse({"choices": [1]}), "any"),
            ("content a number", sse({"choices": [{"index": 0, "delta": {"content": 12}}]}), "any"),
            (
                "tool_calls a string",
                sse({"choices": [{"index": 0, "delta": {"tool_calls": "x"}}]}),
                "any",
            ),
            (
                "finish_reason a number",
                sse({"choices": [{"index": 0, "delta": {}, "finish_reason": 1}]}),
                "any",
            ),
            (
                "index a string",
                sse({"choices": [{"index": "0", "delta": {"content": "x"}}]}),
                "any",
            ),
            ("not an SSE line", b"hello", "bad"),
            ("data deeply nested", b"data: " + DEEP, "bad"),
        ]
    ],
]


def layout(case: Case, fmt: str) -> tuple[bytes | Callable[[], BinaryIO], int | None, int, int]:
    """(stdin, the bad line's number or None, marker words before it, marker words in all)."""
    pre, post = prefix(fmt), suffix(fmt)
    kind = case.layout
    line = case.line[fmt]
    if kind == "middle":
        return b"\n".join([*pre, line, *post]) + b"\n", len(pre) + 1, 3, 5
    if kind == "after-list":  # a message with a list, a string, a number to go wrong on
        base = msg(type="x", message_id="M7", props={"rows": [1], "s": "t", "o": 1})
        return b"\n".join([*pre, base, line, *post]) + b"\n", len(pre) + 2, 3, 5
    if kind == "bom":
        return b"\xef\xbb\xbf" + b"\n".join([*pre, *post]) + b"\n", None, 5, 5
    if kind == "crlf":
        return b"\r\n".join([*pre, *post]) + b"\r\n", None, 5, 5
    if kind == "blanks":
        return b"\n\n  \n\t\n".join([*pre, *post]) + b"\n\n", None, 5, 5
    if kind == "no-final-nl":
        return b"\n".join([*pre, *post]), None, 5, 5
    if kind == "bad-last-no-nl":
        return b"\n".join([*pre, line]), len(pre) + 1, 3, 3
    if kind == "empty":
        return b"", None, 0, 0
    if kind == "newlines":
        return b"\n" * 1000, None, 0, 0
    if kind == "million":
        return (
            b"\n".join(pre) + b"\n" + b" \n" * 1_000_000 + b"{\n" + b"\n".join(post),
            len(pre) + 1_000_001,
            3,
            5,
        )
    if kind == "100mb":
        parts: list[bytes | tuple[bytes, int]] = [
            b"\n".join(pre) + b"\n",
            (b"a", 100 * 1024 * 1024),
            b"\n" + b"\n".join(post) + b"\n",
        ]
        return (lambda: lazy_stream(parts)), len(pre) + 1, 3, 5
    if kind == "long-last":
        return b"\n".join([*pre, *post, b"y" * 5000]), len(pre) + len(post) + 1, 5, 5
    raise AssertionError(kind)


def runs() -> list[Any]:
    params = []
    for case in CASES:
        for command in COMMANDS:
            fmt = reads(command)
            if fmt in case.line and (not case.only or command in case.only):
                params.append(pytest.param(case, command, id=f"{command}: {case.name}"))
    return params


def words_in(out: bytes) -> list[str]:
    text = out.decode("utf-8")
    return [w for w in MARKERS if w in text]


@pytest.mark.parametrize(("case", "command"), runs())
def test_every_command_survives_the_case(case: Case, command: str) -> None:
    fmt = reads(command)
    stdin, bad, before, total = layout(case, fmt)
    expect = case.expected(fmt)
    argv = [*COMMANDS[command], *case.args]
    for keep_going in (False, True):
        data = stdin() if callable(stdin) else stdin
        r: Result = run([*argv, "--keep-going"] if keep_going else argv, data)
        if expect == "ok" or bad is None:
            check_run(r, bad=None)
            assert r.code == 0, r.err
            assert words_in(r.out) == MARKERS[:total], r.err
            continue
        check_run(r, bad=bad)
        if expect == "bad" and not keep_going:
            assert r.code == 2, r.err
        if r.code == 0:  # --keep-going, or a line the command may take
            assert words_in(r.out) == MARKERS[:total], r.err
        else:  # the words of the lines before the bad one, and none after it
            assert words_in(r.out) == MARKERS[:before], (r.out[-300:], r.err)
        if keep_going:
            assert r.code == 0, r.err
            if expect == "bad":
                assert bad in bad_line_numbers(r.err), r.err


def test_the_catalogue_is_the_issue_and_thirty_more() -> None:
    assert sum(c.issue for c in CASES) >= 15
    assert sum(not c.issue for c in CASES) >= 30 + 15
    assert len({c.name for c in CASES}) == len(CASES)
