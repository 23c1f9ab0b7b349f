"""`agent-stream convert --to chat` and `agent-stream decode --from chat`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    MetadataContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.assemble import assemble
from agent_stream.cli import main
from agent_stream.message import Message, loading, tool_call
from agent_stream.writer import StreamWriter, collect

AGENT_STREAM = [sys.executable, "-m", "agent_stream"]


async def _body(out: StreamWriter) -> None:
    async with out.block("llm", label="Answer") as b:
        async with b.message("thinking") as m:
            await m.append("private reasoning")
        await b.send(tool_call(id="c1", name="search", arguments='{"q":"x"}'))
        async with b.message() as m:
            for tok in [
                "Hello",
                "there.",
                "This",
                "answer",
                "is",
                "long",
                "enough",
                "to",
                "be",
                "cut",
                "into",
                "a",
                "few",
                "sentence",
                "chunks.",
                "Here",
                "is",
                "another",
                "sentence.",
                "And",
                "the",
                "end.",
            ]:
                await m.append(tok + " ")

    async def one(th: Any) -> None:
        async with th.message() as m:
            await m.append("Thread one speaks. ")
            await m.append("Then it stops.")

    async def two(th: Any) -> None:
        await th.send(loading("fetching"))
        async with th.message() as m:
            await m.append("Thread two speaks too.")

    await out.parallel(one, two)


@pytest.fixture()
def stream_file(tmp_path: Path) -> Path:
    msgs = asyncio.run(collect(_body))
    f = tmp_path / "stream.jsonl"
    f.write_text("".join(m.to_json() + "\n" for m in msgs), encoding="utf-8")
    return f


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _keyed(transcript: dict[str, Any]) -> dict[Any, Any]:
    return {
        (m["thread_id"], m["message_id"]): (m["type"], m["props"], m["block_id"], m["status"])
        for m in transcript["messages"]
        if m["type"] != "thinking"
    }


def test_convert_writes_one_chat_message_a_line_as_uagents_serialises_it(
    stream_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "convert", "--to", "chat", str(stream_file))
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) > 3
    for line in lines:
        assert ChatMessage.parse_raw(line).json() == line
    assert "private reasoning" not in out  # thinking withheld
    text = "".join(ChatMessage.parse_raw(line).text() for line in lines)
    assert text.startswith("Hello there.") and "Thread two speaks too." in text


def test_convert_output_depends_only_on_input_and_conversation(
    stream_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, a, _ = cli(capsys, "convert", "--to", "chat", str(stream_file))
    _, b, _ = cli(capsys, "convert", "--to", "chat", str(stream_file))
    _, c, _ = cli(capsys, "convert", "--to", "chat", "--conversation", "other", str(stream_file))
    assert a == b
    assert a != c and len(a.splitlines()) == len(c.splitlines())


def test_convert_sends_metadata_with_the_next_chat_message_and_the_rest_at_the_end(
    stream_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "convert", "--to", "chat", str(stream_file))
    assert code == 0, err
    chats = [ChatMessage.parse_raw(line) for line in out.splitlines()]
    # no time passes in convert: events, tool calls and loading wait for the next text
    assert all(any(isinstance(i, TextContent) for i in c.content) for c in chats[:-1])
    last = [i.metadata for i in chats[-1].content if isinstance(i, MetadataContent)]
    assert '"stream_end"' in last[-1]["props"]
    events = [
        json.loads(md["props"]).get("event")
        for c in chats
        for i in c.content
        if isinstance(i, MetadataContent) and "props" in (md := i.metadata)
    ]
    assert events[0] == "stream_start" and events.count("stream_end") == 1


def test_convert_decode_assemble_matches_assemble_of_the_input(
    stream_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, chat_lines, err = cli(capsys, "convert", "--to", "chat", str(stream_file))
    assert code == 0, err
    chat_file = tmp_path / "chat.jsonl"
    chat_file.write_text(chat_lines, encoding="utf-8")
    code, decoded, err = cli(capsys, "decode", "--from", "chat", str(chat_file))
    assert code == 0 and err == ""
    decoded_file = tmp_path / "decoded.jsonl"
    decoded_file.write_text(decoded, encoding="utf-8")
    _, got, _ = cli(capsys, "assemble", str(decoded_file))
    _, want, _ = cli(capsys, "assemble", str(stream_file))
    assert _keyed(json.loads(got)) == _keyed(json.loads(want))
    assert len(_keyed(json.loads(want))) == 5  # every message but the thinking one


def test_a_cut_stream_converts_to_chat_that_decodes_as_an_error_ending(
    stream_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Input without stream_end: the chat wire ends with stream_end status error (before, it
    only ended its chat streams, so the peer's transcript looked like a reply still going)."""
    cut = tmp_path / "cut.jsonl"
    lines = stream_file.read_text(encoding="utf-8").splitlines()
    cut.write_text("".join(ln + "\n" for ln in lines[: len(lines) // 2]), encoding="utf-8")
    code, chat_text, err = cli(capsys, "convert", "--to", "chat", str(cut))
    assert code == 0 and "incomplete" in err
    chat_file = tmp_path / "chat.jsonl"
    chat_file.write_text(chat_text, encoding="utf-8")
    code, decoded, err = cli(capsys, "decode", "--from", "chat", str(chat_file))
    assert code == 0, err
    msgs = [Message.from_json(ln) for ln in decoded.splitlines()]
    t = assemble(msgs)
    assert t.status == "error" and "before it was complete" in t.stream_data["error"]
    plain = "".join(ChatMessage.parse_raw(ln).text() for ln in chat_text.splitlines())
    assert "before it was complete" in plain  # a plain peer reads it too
    # a stream that did end is left as it was: one stream_end, completed
    code, whole, _ = cli(capsys, "convert", "--to", "chat", str(stream_file))
    assert whole.count('\\"stream_end\\"') == 1 and '\\"status\\":\\"error' not in whole


def test_the_shell_pipeline_end_to_end(stream_file: Path) -> None:
    cmd = " | ".join(
        [
            " ".join([*AGENT_STREAM, "convert", "--to", "chat", str(stream_file)]),
            " ".join([*AGENT_STREAM, "decode", "--from", "chat"]),
            " ".join([*AGENT_STREAM, "assemble"]),
        ]
    )
    r = subprocess.run(
        ["bash", "-o", "pipefail", "-c", cmd],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    want = assemble(Message.from_json(line) for line in stream_file.read_text().splitlines())
    assert _keyed(json.loads(r.stdout)) == _keyed(want.to_dict())


BAD = [
    ("{not json", "not JSON"),
    ('{"content": [], "surprise": 1}', "unknown field(s) 'surprise'"),
    ('{"content": [{"type": "text", "text": "x", "extra": 1}]}', "unknown field(s) 'extra'"),
    (
        '{"content": [{"type": "end-stream", "stream_id": "c232ab00-9414-11ec-b3c8-9e6bdeced846"}]}',
        "uuid version 4 expected",
    ),
]


@pytest.mark.parametrize(("line", "reason"), BAD)
def test_decode_reports_a_bad_line_and_exits_2(
    line: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = [ChatMessage(content=[TextContent(text="fine")]).json() for _ in range(2)]
    f = tmp_path / "in.jsonl"
    f.write_text(good[0] + "\n" + line + "\n" + good[1] + "\n", encoding="utf-8")
    code, out, err = cli(capsys, "decode", "--from", "chat", str(f))
    assert code == 2
    assert err.startswith("line 2: ") and reason in err
    assert "Traceback" not in err
    assert [Message.from_json(x).type for x in out.splitlines()] == ["text", "event"]


def test_decode_keep_going_reports_skips_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = [ChatMessage(content=[TextContent(text="fine")]).json() for _ in range(2)]
    f = tmp_path / "in.jsonl"
    f.write_text("\n".join([good[0], BAD[0][0], BAD[1][0], good[1]]) + "\n", encoding="utf-8")
    code, out, err = cli(capsys, "decode", "--from", "chat", "--keep-going", str(f))
    assert code == 0
    assert [line.split(":")[0] for line in err.splitlines()] == ["line 2", "line 3"]
    texts = [
        m.props["content"]
        for m in map(Message.from_json, out.splitlines())
        if m.type == "text" and m.props
    ]
    assert texts == ["fine", "fine"]


def test_decode_warnings_in_valid_messages_leave_exit_status_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = uuid.uuid4()
    start = ChatMessage(content=[StartStreamContent(stream_id=sid)]).json()
    f = tmp_path / "in.jsonl"
    f.write_text(start + "\n" + start + "\n", encoding="utf-8")  # a second start: a warning
    code, _, err = cli(capsys, "decode", "--from", "chat", str(f))
    assert code == 0
    assert "warning: duplicate_" in err


def test_decode_reads_standard_input_through_the_real_command() -> None:
    sid = uuid.uuid4()
    lines = [
        ChatMessage(content=[StartStreamContent(stream_id=sid), TextContent(text="Hi")]).json(),
        ChatMessage(content=[TextContent(text=" there")]).json(),
    ]
    r = subprocess.run(
        [*AGENT_STREAM, "decode", "--from", "chat"],
        input="\n".join(lines),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    t = assemble(Message.from_json(x) for x in r.stdout.splitlines())
    assert [m.props for m in t.messages] == [{"content": "Hi there"}]
