"""A2AEncoder / A2ADecoder and an agent's question: a stream that ends completed after a
``user_input`` ends its task ``input-required`` (the question as the status message, not an
artifact) and decodes back to the same transcript; a reply continuing a task opens with that
task and keeps what it had; another server's ``input-required`` reads as a question too."""

from __future__ import annotations

from typing import Any

from a2a.compat.v0_3.types import (
    Artifact,
    DataPart,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    TextPart,
)
from a2a.compat.v0_3.types import Message as A2AMessage
from a2a_sdk import sdk_task

from agent_stream.adapters.a2a import A2ADecoder, A2AEncoder
from agent_stream.assemble import assemble
from agent_stream.message import Message, event, text, user_input

QUESTION = '{"question": "Send the email?", "options": ["yes", "no"]}'


def _asking(status: str = "completed") -> list[Message]:
    return [
        event("stream_start", {"request_id": "q"}),
        text("Drafted.", message_id="M1"),
        user_input(QUESTION, message_id="M2", block_id="B1"),
        event(
            "stream_end", {"status": status, **({"error": "boom"} if status != "completed" else {})}
        ),
    ]


def _encode(msgs: list[Message], **options: Any) -> list[Any]:
    enc = A2AEncoder(task_id="t1", context_id="c1", **options)
    return [e for m in msgs for e in enc.feed(m)] + enc.close()


def _decode(events: list[Any]) -> list[Message]:
    dec = A2ADecoder()
    return [
        m
        for e in events
        for m in dec.feed(e.model_dump(mode="json", by_alias=True, exclude_none=True))
    ]


def _summary(msgs: list[Message]) -> list[tuple[Any, ...]]:
    t = assemble(msgs)
    return [(m.message_id, m.block_id, m.type, m.props, m.status) for m in t.messages]


def test_a_completed_stream_that_asks_ends_input_required_with_the_question() -> None:
    events = _encode(_asking())
    final = events[-1]
    assert isinstance(final, TaskStatusUpdateEvent) and final.final
    assert final.status.state == TaskState.input_required
    message = final.status.message
    assert message is not None and message.role == Role.agent
    [said, data] = [p.root for p in message.parts]
    assert isinstance(said, TextPart) and said.text == QUESTION
    assert isinstance(data, DataPart) and data.data == {
        "content": QUESTION,
        "value": {"question": "Send the email?", "options": ["yes", "no"]},
    }
    # the question is the status, not an output: only the text is an artifact
    arts = {e.artifact.artifact_id for e in events if isinstance(e, TaskArtifactUpdateEvent)}
    assert arts == {"M1"}
    back = _decode(events)
    assert _summary(back) == _summary(_asking())
    assert assemble(back).status == "completed"


def test_a_plain_text_question_has_no_value_and_two_questions_are_both_given() -> None:
    msgs = [
        event("stream_start", {}),
        user_input("Approve A?", message_id="M1"),
        user_input("Approve B?", message_id="M2"),
        event("stream_end", {"status": "completed"}),
    ]
    final = _encode(msgs)[-1]
    parts = [p.root for p in final.status.message.parts]
    assert parts[0].text == "Approve A?\n\nApprove B?"
    assert [p.data for p in parts[1:]] == [{"content": "Approve A?"}, {"content": "Approve B?"}]
    assert _summary(_decode(_encode(msgs))) == _summary(msgs)


def test_a_stream_that_fails_after_asking_fails_and_still_gives_the_question_back() -> None:
    events = _encode(_asking("error"))
    final = events[-1]
    assert final.status.state == TaskState.failed
    assert [p.root.text for p in final.status.message.parts] == ["boom"]
    back = assemble(_decode(events))
    assert back.status == "error" and back.stream_data["error"] == "boom"
    assert [m.props["content"] for m in back.messages if m.type == "user_input"] == [QUESTION]


def test_another_servers_input_required_is_a_question() -> None:
    dec = A2ADecoder()
    out = dec.feed(Task(id="x", context_id="c", status=TaskStatus(state=TaskState.submitted)))
    out += dec.feed(
        TaskStatusUpdateEvent(
            task_id="x",
            context_id="c",
            final=True,
            status=TaskStatus(
                state=TaskState.input_required,
                message=A2AMessage(
                    role=Role.agent,
                    message_id="q1",
                    parts=[Part(root=TextPart(text="Which city?"))],
                ),
            ),
        )
    )
    t = assemble(out)
    assert t.status == "completed" and "error" not in t.stream_data
    assert [(m.type, m.props) for m in t.messages] == [("user_input", {"content": "Which city?"})]


async def test_a_continued_task_opens_with_what_it_had_and_keeps_its_artifacts() -> None:
    first = _encode(_asking())
    prior = Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(state=TaskState.input_required),
        artifacts=[Artifact(artifact_id="M1", parts=[Part(root=TextPart(text="Drafted."))])],
        history=[
            A2AMessage(role=Role.user, message_id="u1", parts=[Part(root=TextPart(text="go"))]),
            first[-1].status.message,
            A2AMessage(role=Role.user, message_id="u2", parts=[Part(root=TextPart(text="yes"))]),
        ],
    )
    again = [
        event("stream_start", {"request_id": "q2"}),
        text("Sent.", message_id="M1"),  # a new reply numbers its messages afresh
        user_input("Anything else?", message_id="M2"),
        event("stream_end", {"status": "completed"}),
    ]
    events = _encode(again, task=prior)
    opening = events[0]
    assert isinstance(opening, Task) and opening.id == "t1"
    assert opening.status.state == TaskState.working
    assert opening.history == prior.history and opening.artifacts == prior.artifacts
    assert not [e for e in events[1:] if isinstance(e, Task)]
    new = {e.artifact.artifact_id for e in events if isinstance(e, TaskArtifactUpdateEvent)}
    assert new == {"M1~2"}  # never the artifact the task has
    final = events[-1]
    assert final.status.state == TaskState.input_required
    assert final.status.message.message_id == "t1-input-2"  # not the first question's id
    assert first[-1].status.message.message_id == "t1-input"
    # a2a-sdk's own task manager ends with both turns' artifacts
    task = await sdk_task(events)
    texts = [
        "".join(p.root.text for p in a.parts if isinstance(p.root, TextPart))
        for a in task.artifacts or []
    ]
    assert texts == ["Drafted.", "Sent."]
    assert prior.status.state == TaskState.input_required  # the given task is not changed


REVIEW = {
    "kind": "review",
    "payload": {
        "title": "Send the email to Bob?",
        "approve_cta": {"label": "Send"},
        "reject_cta": {"label": "Cancel"},
    },
    "card_id": "7d3c1b0e-8c9a-4f3e-9a1d-2b6f5e4c3a21",
}


def test_a_question_asked_as_a_card_carries_the_card_as_a_data_part() -> None:
    msgs = [
        event("stream_start", {"request_id": "q"}),
        Message(
            type="user_input",
            props={"content": "Send the email to Bob?", "card": REVIEW},
            message_id="M2",
        ),
        event("stream_end", {"status": "completed"}),
    ]
    final = _encode(msgs)[-1]
    assert final.status.state == TaskState.input_required
    parts = [p.root for p in final.status.message.parts]
    assert parts[0].text == "Send the email to Bob?"
    cards = [p for p in parts if (p.metadata or {}).get("agent_stream", {}).get("type") == "card"]
    assert [c.data for c in cards] == [REVIEW]
    # the question's props still travel whole, and read back as the same question
    [ask] = [m for m in _decode(_encode(msgs)) if m.type == "user_input"]
    assert ask.props == {"content": "Send the email to Bob?", "card": REVIEW}


def test_a_question_without_a_card_has_no_card_part() -> None:
    final = _encode(_asking())[-1]
    types = [
        (p.root.metadata or {}).get("agent_stream", {}).get("type")
        for p in final.status.message.parts
    ]
    assert "card" not in types


def test_the_decoder_reads_the_same_stream_written_as_a2a_1_0() -> None:
    from agent_stream.adapters.a2a.versions import core_json

    events = _encode(_asking())
    dec = A2ADecoder()
    v1 = [m for e in events for m in dec.feed({"jsonrpc": "2.0", "id": 1, "result": core_json(e)})]
    assert "statusUpdate" in core_json(events[-1]) and "kind" not in str(core_json(events[-1]))
    assert _summary(v1) == _summary(_decode(events))
    assert assemble(v1).status == "completed" and dec.ended
