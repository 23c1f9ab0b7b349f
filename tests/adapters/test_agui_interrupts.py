"""AG-UI interrupts, pure: a reply that asks its asker ends RUN_FINISHED with the interrupt outcome
(AG-UI 1.0), every event validated by ``ag_ui.core``'s own models; a resume entry becomes the
answer the agent reads as a typed one."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import Event, EventType, Interrupt, ResumeEntry, RunFinishedEvent
from pydantic import TypeAdapter

from agent_stream.adapters.agui import AGUIEncoder, encode_messages, frame_sse
from agent_stream.adapters.agui_interrupts import (
    INPUT_REQUIRED,
    TOOL_APPROVAL,
    BadResume,
    answer_text,
    response_schema,
)
from agent_stream.message import Message, event, text, tool_call, user_input
from agent_stream.sources.approvals import answer_of, asking, is_yes, question_card

EVENT = TypeAdapter(Event)


def wire(msgs: list[Message], **kw: Any) -> list[Any]:
    """The events a client parses from the SSE text of ``msgs``."""
    out = []
    for e in encode_messages(msgs, **kw):
        sse = frame_sse(e)
        assert sse.startswith("data: ") and sse.endswith("\n\n")
        assert "null" not in sse  # the 1.0 verifier refuses an explicit null on optional fields
        out.append(EVENT.validate_json(sse[6:-2]))
    return out


def paused() -> list[Message]:
    return [
        event("stream_start", {"request_id": "q1"}),
        text("Drafted.", message_id="M1"),
        tool_call("c1", "delete_file", '{"path": "a"}', message_id="T1"),
        asking("c1", "delete_file", {"path": "a"}).model_copy(update={"message_id": "A1"}),
        user_input("Which day?", message_id="Q1").model_copy(
            update={"props": {"content": "Which day?", "card": question_card("Which day?")}}
        ),
        event("stream_end", {"status": "completed"}),
    ]


def test_run_started_names_protocol_version_1_0() -> None:
    first = wire([event("stream_start", {"request_id": "q"}), text("hi")])[0]
    assert first.type == EventType.RUN_STARTED and first.protocol_version == "1.0"


def test_a_normal_finish_is_the_success_outcome() -> None:
    msgs = [text("hi", message_id="M"), event("stream_end", {"status": "completed"})]
    last = wire(msgs)[-1]
    assert last.type == EventType.RUN_FINISHED and last.outcome.type == "success"


def test_a_paused_run_ends_with_its_interrupts() -> None:
    events = wire(paused())
    last = events[-1]
    assert last.type == EventType.RUN_FINISHED and last.outcome.type == "interrupt"
    approval, question = last.outcome.interrupts
    card_ids = [(m.props or {})["card"]["card_id"] for m in paused() if m.type == "user_input"]
    assert [approval.id, question.id] == card_ids
    assert approval.reason == TOOL_APPROVAL and approval.tool_call_id == "c1"
    assert approval.message is not None and approval.message.startswith("Approve delete_file(")
    assert approval.response_schema is None
    assert approval.metadata is not None and approval.metadata["card"]["kind"] == "review"
    assert question.reason == INPUT_REQUIRED and question.message == "Which day?"
    assert question.tool_call_id is None
    assert question.response_schema == {
        "type": "object",
        "properties": {"answer": {"type": "string", "title": "Your answer"}},
        "required": ["answer"],
    }
    # the tool call is closed before the run pauses; the question is no CUSTOM event any more
    kinds = [e.type for e in events]
    assert kinds.index(EventType.TOOL_CALL_END) < len(kinds) - 1
    assert EventType.CUSTOM not in kinds


def test_the_encoder_lists_the_interrupts_it_sent() -> None:
    enc = AGUIEncoder()
    sent = [e for m in paused() for e in enc.feed(m)] + enc.close()
    finished = sent[-1]
    assert isinstance(finished, RunFinishedEvent) and finished.outcome is not None
    assert [i.id for i in enc.interrupts] == [i.id for i in finished.outcome.interrupts]  # type: ignore[union-attr]


def test_a_question_streamed_in_pieces_is_one_interrupt_with_its_whole_text() -> None:
    msgs = [
        event("message_start", {"message_id": "Q", "type": "user_input"}),
        Message(type="user_input", message_id="Q", delta=True, props={"content": "Send "}),
        Message(type="user_input", message_id="Q", delta=True, props={"content": "it?"}),
        event("message_end", {"message_id": "Q"}),
        event("stream_end", {"status": "completed"}),
    ]
    [only] = wire(msgs)[-1].outcome.interrupts
    assert only.id == "Q" and only.message == "Send it?" and only.reason == INPUT_REQUIRED


def test_interrupt_ids_are_unique_in_the_run() -> None:
    ask = asking("c1", "f", {})
    msgs = [ask, ask.model_copy(), event("stream_end", {"status": "completed"})]
    ids = [i.id for i in wire(msgs)[-1].outcome.interrupts]
    assert len(ids) == 2 and len(set(ids)) == 2 and ids[0] == (ask.props or {})["card"]["card_id"]


def test_an_approval_names_the_tool_call_as_the_client_saw_it() -> None:
    # two threads' calls share an id: the second is renamed on the wire, and so is its approval
    msgs = [
        event("message_start", {"message_id": "T1", "type": "tool_call", "thread_id": "a"}),
        tool_call("c1", "f", "{}", message_id="T1", thread_id="a", delta=True),
        tool_call("c1", "g", "{}", message_id="T2", thread_id="b"),
        asking("c1", "g", {}).model_copy(update={"thread_id": "b"}),
        event("stream_end", {"status": "completed"}),
    ]
    events = wire(msgs)
    starts = [e.tool_call_id for e in events if e.type == EventType.TOOL_CALL_START]
    [intr] = events[-1].outcome.interrupts
    assert len(set(starts)) == 2 and intr.tool_call_id == starts[-1] != "c1"


def test_a_question_of_a_sub_agent_names_it() -> None:
    msgs = [
        event("block_start", {"block_id": "B", "type": "agent", "agent_name": "mailer"}),
        user_input("Send it?", block_id="B", message_id="Q"),
        event("stream_end", {"status": "completed"}),
    ]
    events = wire(msgs)
    started = next(e for e in events if e.type == EventType.SUBAGENT_STARTED)
    [intr] = events[-1].outcome.interrupts
    assert intr.subagent_run_id == started.subagent_run_id


@pytest.mark.parametrize("status", ["cancelled", "error"])
def test_a_run_that_did_not_complete_asks_nothing(status: str) -> None:
    msgs = [user_input("Send it?"), event("stream_end", {"status": status, "error": "x"})]
    last = wire(msgs)[-1]
    if status == "cancelled":
        assert last.type == EventType.RUN_FINISHED and last.outcome.type == "cancelled"
    else:
        assert last.type == EventType.RUN_ERROR


# -- response schemas -----------------------------------------------------------------------------
def test_a_form_cards_fields_are_its_response_schema() -> None:
    card = {
        "kind": "form",
        "payload": {
            "title": "Book",
            "fields": [
                {"name": "day", "kind": "select", "label": "Day", "required": True,
                 "options": [{"value": "fri", "label": "Friday"}]},
                {"name": "n", "kind": "number", "label": "Seats"},
                {"name": "mail", "kind": "email", "label": "Mail"},
                {"name": "ok", "kind": "checkbox", "label": "Agree", "required": True},
            ],
            "submit_cta": {"label": "Go", "selection": {}},
        },
    }  # fmt: skip
    assert response_schema(card) == {
        "type": "object",
        "properties": {
            "day": {"type": "string", "enum": ["fri"], "title": "Day"},
            "n": {"type": "number", "title": "Seats"},
            "mail": {"type": "string", "format": "email", "title": "Mail"},
            "ok": {"type": "boolean", "title": "Agree"},
        },
        "required": ["day", "ok"],
    }
    assert response_schema({"kind": "review", "payload": {}}) is None
    # a card from elsewhere may be malformed: what is not a field is left out, nothing raises
    odd = {
        "kind": "form",
        "payload": {"fields": [{"name": "d", "kind": "select", "options": 5}, 7]},
    }
    assert response_schema(odd) == {
        "type": "object",
        "properties": {"d": {"type": "string", "enum": []}},
    }
    assert response_schema("not a card") is None


# -- resume entries as the agent's answer ---------------------------------------------------------
APPROVAL = Interrupt(id="a", reason=TOOL_APPROVAL)
QUESTION = Interrupt(
    id="q",
    reason=INPUT_REQUIRED,
    response_schema=response_schema(question_card("Which day?")),
)


def entry(iid: str, status: str = "resolved", payload: Any = None) -> ResumeEntry:
    return ResumeEntry(interrupt_id=iid, status=status, payload=payload)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "payload", "said"),
    [
        ("resolved", None, "yes"),
        ("resolved", True, "yes"),
        ("resolved", {"approved": True}, "yes"),
        ("resolved", {"decision": "approve"}, "yes"),
        ("resolved", False, "no"),
        ("resolved", {"approved": False}, "no"),
        ("resolved", {"approved": False, "reason": "too risky"}, "Refused: too risky"),
        ("resolved", {"approved": False, "reason": "yes"}, "Refused: yes"),
        ("resolved", "ok", "ok"),
        ("resolved", "not now", "not now"),
        ("cancelled", None, "no"),
        ("cancelled", {"approved": True}, "no"),
    ],
)
def test_an_approval_resume_is_the_agents_yes_or_its_refusal(
    status: str, payload: Any, said: str
) -> None:
    answer = answer_text([APPROVAL], [entry("a", status, payload)])
    assert answer == said
    # the agent reads it as the same decision (approval sources run the call on a yes)
    typed = answer_of(type("R", (), {"text": answer, "card_response": None})())
    assert is_yes(str(typed)) == (said in ("yes", "ok"))


@pytest.mark.parametrize(
    ("status", "payload", "said"),
    [
        ("resolved", {"answer": "Friday"}, "Friday"),
        ("resolved", "Friday", "Friday"),
        ("resolved", 3, "3"),
        ("cancelled", None, "cancelled"),
    ],
)
def test_a_question_resume_is_its_answer(status: str, payload: Any, said: str) -> None:
    assert answer_text([QUESTION], [entry("q", status, payload)]) == said


@pytest.mark.parametrize("payload", [None, {}, {"answer": ""}, {"other": "x"}])
def test_a_question_resolved_without_its_answer_is_refused(payload: Any) -> None:
    with pytest.raises(BadResume):
        answer_text([QUESTION], [entry("q", "resolved", payload)])


def test_an_approval_payload_of_another_shape_is_refused() -> None:
    with pytest.raises(BadResume):
        answer_text([APPROVAL], [entry("a", "resolved", [1, 2])])


def test_several_approvals_approve_only_together() -> None:
    b = Interrupt(id="b", reason=TOOL_APPROVAL)
    assert answer_text([APPROVAL, b], [entry("a"), entry("b")]) == "yes"
    assert answer_text([APPROVAL, b], [entry("a"), entry("b", "cancelled")]) == "no"
