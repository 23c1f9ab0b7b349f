"""A2AEncoder and A2ADecoder: the artifact rules A2A clients depend on, the round trip back to
the same transcript, and the ``a2a-sdk`` client's own task manager reading the events."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from a2a.compat.v0_3.types import Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent
from a2a_sdk import sdk_task
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_message
from wire_corpus import corpus

from agent_stream.adapters.a2a import A2ADecoder, A2AEncoder, encode_messages
from agent_stream.adapters.a2a.encoder import frame_sse
from agent_stream.assemble import assemble
from agent_stream.message import Message, text, tool_call


def check_rules(events: list[Any]) -> None:
    """A Task first, one final status last, artifacts built by append with the last appended."""
    assert isinstance(events[0], Task)
    created: set[str] = set()
    last: set[str] = set()
    for e in events[1:-1]:
        assert not isinstance(e, Task)
        if isinstance(e, TaskStatusUpdateEvent):
            assert not e.final
            continue
        aid = e.artifact.artifact_id
        assert aid not in last, f"{aid} changed after its last chunk"
        if e.append:
            assert aid in created, f"append for unknown artifact {aid}"
        created.add(aid)
        if e.last_chunk:
            last.add(aid)
            assert (
                e.append
                or len(
                    [
                        x
                        for x in events
                        if isinstance(x, TaskArtifactUpdateEvent) and x.artifact.artifact_id == aid
                    ]
                )
                == 1
            ), "a last chunk that replaces the artifact"
    assert isinstance(events[-1], TaskStatusUpdateEvent) and events[-1].final


def summary(msgs: list[Message]) -> list[tuple[Any, ...]]:
    t = assemble(msgs)
    return [(m.message_id, m.thread_id, m.block_id, m.type, m.props, m.status) for m in t.messages]


@pytest.mark.parametrize("name", list(corpus()))
def test_corpus_round_trip(name: str) -> None:
    msgs = corpus()[name]
    enc = A2AEncoder()
    events = [e for m in msgs for e in enc.feed(m)] + enc.close()
    check_rules(events)
    dec = A2ADecoder()
    back = [
        m
        for line in "".join(frame_sse(e) for e in events).splitlines()
        for m in dec.feed_line(line)
    ] + dec.close()
    want, got = summary(msgs), summary(back)
    if name == "rewrites_retypes":  # a text artifact carries the text, not other props
        want[1][4].pop("message")
    assert got == want
    assert assemble(back).status == assemble(msgs).status
    assert [b.to_dict() for b in assemble(back).blocks] == [
        b.to_dict() for b in assemble(msgs).blocks
    ]


async def test_the_sdk_task_manager_builds_the_same_artifacts(caplog: Any) -> None:
    caplog.set_level(logging.WARNING, logger="a2a")
    msgs = corpus()["parallel_threads"]
    task = await sdk_task(encode_messages(msgs))
    assert task.status.state == TaskState.completed
    arts = {
        a.artifact_id: "".join(p.root.text for p in a.parts)  # type: ignore[union-attr]
        for a in task.artifacts or []
    }
    assert arts == {"T1:M1": "Sunny in Paris.", "T2:M1": "Markets are up.", "M2": "Both done."}
    assert task.metadata and task.metadata["agent_stream"]["data"]["usage"]["total_tokens"] == 21
    assert not caplog.records


def test_tool_call_waits_for_its_name_and_deltas_are_data_parts() -> None:
    enc = A2AEncoder()
    enc.feed(Message(type="tool_call", message_id="M1", props={"arguments": '{"a":'}, delta=True))
    assert (
        enc.feed(Message(type="tool_call", message_id="M1", props={"arguments": "1"}, delta=True))
        == []
    )
    (first,) = enc.feed(
        Message(
            type="tool_call",
            message_id="M1",
            props={"name": "f", "id": "c1"},
            delta=True,
            delta_action="merge",
        )
    )
    assert first.artifact.parts[0].root.data == {"arguments": '{"a":1', "name": "f", "id": "c1"}
    (more,) = enc.feed(
        Message(type="tool_call", message_id="M1", props={"arguments": "}"}, delta=True)
    )
    assert more.append and more.artifact.parts[0].root.data == {"arguments": "}"}


def test_rewrite_replaces_the_artifact_whole() -> None:
    enc = A2AEncoder()
    enc.feed(text("Hello", message_id="M1"))
    (e,) = enc.feed(
        Message(
            type="text",
            message_id="M1",
            props={"content": "Bye"},
            delta=True,
            delta_action="replace",
            delta_path="content",
        )
    )
    assert not e.append and e.artifact.parts[0].root.text == "Bye"


def test_cut_stream_fails_as_incomplete_with_a_warning() -> None:
    """Every open artifact is closed by a last chunk marked incomplete before the failed
    status (before, they were left open: a client waiting for lastChunk never got it); read
    back, the stream and its messages stay unfinished."""
    enc = A2AEncoder()
    first = enc.feed(Message(type="event", props={"event": "stream_start", "data": {}}))
    first += enc.feed(text("Starting the ans", message_id="M1"))
    first += enc.feed(tool_call("c1", "f", '{"a":', message_id="M2"))
    out = enc.close()
    assert out[-1].final and out[-1].status.state == TaskState.failed
    assert [w.code for w in enc.drain_warnings()] == ["incomplete"]
    lasts = [e for e in out if getattr(e, "last_chunk", None)]
    assert [e.artifact.artifact_id for e in lasts] == ["M1", "M2"]
    assert all(e.artifact.metadata == {"agent_stream": {"status": "incomplete"}} for e in lasts)
    assert out.index(lasts[-1]) < len(out) - 1
    dec = A2ADecoder()
    msgs = [m for e in first + out for m in dec.feed(e)]
    t = assemble(msgs)
    assert t.status != "completed" and {m.status for m in t.messages} == {"streaming"}
    assert t.get(None, "M1").content == "Starting the ans"
    assert "incomplete" in [w.code for w in dec.drain_warnings()]


@pytest.mark.parametrize(
    ("status", "state"), [("error", TaskState.failed), ("cancelled", TaskState.canceled)]
)
def test_a_stream_ending_error_or_cancelled_closes_its_open_artifacts(
    status: str, state: TaskState
) -> None:
    """Open artifacts get a last chunk marked with how the stream ended before the final
    status; read back, the messages stay unfinished and the transcript ends as it did."""
    enc = A2AEncoder()
    out = enc.feed(Message(type="event", props={"event": "stream_start", "data": {}}))
    out += enc.feed(text("Starting the ans", message_id="M1"))
    out += enc.feed(
        Message(type="event", props={"event": "stream_end", "data": {"status": status}})
    )
    out += enc.close()
    lasts = [e for e in out if getattr(e, "last_chunk", None)]
    assert [e.artifact.artifact_id for e in lasts] == ["M1"]
    assert lasts[0].artifact.metadata == {"agent_stream": {"status": status}}
    assert out[-1].final and out[-1].status.state == state
    dec = A2ADecoder()
    t = assemble([m for e in out for m in dec.feed(e)])
    assert t.status == status and t.get(None, "M1").status != "completed"


def test_decoder_drops_append_for_unknown_artifact() -> None:
    dec = A2ADecoder()
    dec.feed(
        {"result": {"kind": "task", "id": "t", "contextId": "c", "status": {"state": "working"}}}
    )
    out = dec.feed(
        {
            "result": {
                "kind": "artifact-update",
                "taskId": "t",
                "contextId": "c",
                "append": True,
                "artifact": {"artifactId": "x", "parts": [{"kind": "text", "text": "hi"}]},
            }
        }
    )
    assert out == [] and [w.code for w in dec.drain_warnings()] == ["unknown_artifact"]


def test_decoder_reads_a_foreign_server() -> None:
    dec = A2ADecoder()
    out: list[Message] = []
    for ev in [
        {"kind": "task", "id": "t", "contextId": "c", "status": {"state": "submitted"}},
        {
            "kind": "artifact-update",
            "taskId": "t",
            "contextId": "c",
            "artifact": {"artifactId": "a1", "parts": [{"kind": "text", "text": "He"}]},
        },
        {
            "kind": "artifact-update",
            "taskId": "t",
            "contextId": "c",
            "append": True,
            "lastChunk": True,
            "artifact": {"artifactId": "a1", "parts": [{"kind": "text", "text": "y"}]},
        },
        {
            "kind": "status-update",
            "taskId": "t",
            "contextId": "c",
            "final": True,
            "status": {
                "state": "failed",
                "message": {
                    "kind": "message",
                    "messageId": "m",
                    "role": "agent",
                    "parts": [{"kind": "text", "text": "boom"}],
                },
            },
        },
    ]:
        out += dec.feed(ev)
    t = assemble(out)
    assert [(m.message_id, m.content, m.status) for m in t.messages] == [("a1", "Hey", "completed")]
    assert t.status == "error" and t.stream_data["error"] == "boom"


@settings(max_examples=200, deadline=None)
@given(st.lists(any_message(), max_size=25), st.booleans())
def test_any_stream_follows_the_artifact_rules(msgs: list[Message], ended: bool) -> None:
    enc = A2AEncoder()
    events = [e for m in msgs for e in enc.feed(m)]
    events += enc.close(status="completed" if ended else None)
    check_rules(events)
    dec = A2ADecoder()
    for e in events:
        dec.feed(e.model_dump(mode="json", by_alias=True, exclude_none=True))


def test_convert_then_decode_on_the_command_line() -> None:
    from cli_harness import run

    msgs = corpus()["custom_structured"]
    stdin = "".join(m.to_json() + "\n" for m in msgs).encode()
    wire = run(["convert", "--to", "a2a", "--conversation", "conv-7"], stdin)
    assert wire.code == 0 and b'"contextId":"conv-7"' in wire.out
    back = run(["decode", "--from", "a2a"], wire.out)
    assert back.code == 0, back.err
    got = [Message.from_json(line) for line in back.out.decode().splitlines()]
    assert summary(got) == summary(msgs)
    bad = run(["decode", "--from", "a2a"], b'data: {"result": {"kind": "nope"}}\n')
    assert bad.code == 2 and "line 1: not an A2A streaming event" in bad.err


@pytest.mark.parametrize("argv", [["convert", "--to", "a2a"], ["decode", "--from", "a2a"]])
def test_without_a2a_sdk_the_commands_name_the_extra(
    argv: list[str],
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    from agent_stream.cli import main

    for mod in ["a2a", *(m for m in sys.modules if m.startswith("a2a."))]:
        monkeypatch.setitem(sys.modules, mod, None)  # importing a2a now fails
    for mod in [m for m in sys.modules if m.startswith("agent_stream.adapters.a2a")]:
        monkeypatch.delitem(sys.modules, mod)
    f = tmp_path / "in.txt"
    f.write_text('{"type":"text","props":{"content":"hi"}}\n', encoding="utf-8")
    assert main([*argv, str(f)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'agent-stream[a2a]'" in err and "Traceback" not in err


def test_decoder_reads_a_plain_message_reply_and_a_jsonrpc_error() -> None:
    dec = A2ADecoder()
    out = dec.feed(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "kind": "message",
                "messageId": "r1",
                "role": "agent",
                "parts": [{"kind": "text", "text": "just this"}],
            },
        }
    )
    t = assemble(out)
    assert [(m.content, m.status) for m in t.messages] == [("just this", "completed")]
    assert t.status == "completed"
    err = A2ADecoder().feed(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}}
    )
    assert (
        assemble(err).status == "error" and assemble(err).stream_data["error"] == "Task not found"
    )
