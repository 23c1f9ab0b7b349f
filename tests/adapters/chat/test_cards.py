"""Interactive cards on the chat wire, checked with uagents-core's own card helpers: a card (or a
question carrying one) goes out as uagents-core's card MetadataContent plus a text fallback, a
plain peer's card comes in as a ``card`` Message, and a card uagents-core refuses is said and
skipped while the rest of its ChatMessage is kept."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from chat_fixtures import decode, encode, plain, run
from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent, TextContent
from uagents_core.contrib.protocols.chat.cards import (
    CtaAction,
    FormCardPayload,
    FormField,
    ReviewCardPayload,
    ReviewSummaryRow,
    create_card_content,
    extract_card,
)

from agent_stream.adapters.chat import ChatDecoder
from agent_stream.assemble import assemble
from agent_stream.sources.approvals import asking
from agent_stream.writer import StreamWriter

CARD_ID = str(uuid.uuid4())
REVIEW = ReviewCardPayload(
    title="Book the flight?",
    summary_rows=[
        ReviewSummaryRow(label="From", value="Paris"),
        ReviewSummaryRow(label="To", value="Rome"),
    ],
    approve_cta=CtaAction(label="Book it", selection={"choice": "book"}, primary=True),
    reject_cta=CtaAction(label="Not now", selection={"choice": "no"}),
)


def cards_in(chats: list[ChatMessage]) -> list[Any]:
    return [
        card
        for c in chats
        for i in c.content
        if isinstance(i, MetadataContent) and (card := extract_card(i)) is not None
    ]


@pytest.mark.parametrize("tagged", [False, True])
def test_a_card_goes_out_as_uagents_cores_card_and_a_text_fallback(tagged: bool) -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await b.text("Here is the plan. ")
            await b.card("review", REVIEW, CARD_ID)

    chats = encode(run(body), close=True, tagged=tagged)
    [card] = cards_in(chats)
    assert card.payload == REVIEW and str(card.card_id) == CARD_ID
    text = plain(chats)
    assert text.startswith("Here is the plan. ")
    for shown in ("Book the flight?", "From: Paris", "To: Rome", '"Book it"', '"Not now"'):
        assert shown in text


def test_a_card_survives_the_tagged_wire_and_the_transcript() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await b.card("review", REVIEW, CARD_ID)

    msgs, _ = decode(encode(run(body), close=True, tagged=True))
    [card] = [m for m in assemble(msgs).messages if m.type == "card"]
    assert card.props["kind"] == "review" and card.props["card_id"] == CARD_ID
    assert ReviewCardPayload.model_validate(card.props["payload"]) == REVIEW


def test_a_plain_peers_card_comes_in_as_a_card_message() -> None:
    form = FormCardPayload(
        title="Where to?",
        fields=[FormField(name="city", kind="text", label="City", required=True)],
        submit_cta=CtaAction(label="Go", selection={"submit": "go"}),
    )
    chat = ChatMessage(
        content=[
            TextContent(text="One question: "),
            create_card_content(form, card_id=uuid.UUID(CARD_ID)),
        ]
    )
    dec = ChatDecoder()
    got = dec.feed("agent1qpeer", chat, 0.0)
    [card] = [m for m in got if m.type == "card"]
    assert card.props == {
        "kind": "form",
        "payload": form.model_dump(mode="json", exclude_none=True),
        "card_id": CARD_ID,
    }
    assert [m.props["content"] for m in got if m.type == "text"] == ["One question: "]


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("poll", {"title": "x"}),  # an unknown kind
        ("review", {"title": "no rows and no approve"}),  # a payload its models refuse
        ("custom", None),  # an element tree deeper than uagents-core's cap
    ],
)
def test_a_card_uagents_core_refuses_is_said_and_the_rest_is_kept(
    kind: str, payload: dict[str, Any] | None
) -> None:
    import json

    if payload is None:  # 20 nested groups
        node: dict[str, Any] = {"type": "text", "value": "deep"}
        for _ in range(20):
            node = {"type": "group", "children": [node]}
        payload = {"root": node}
    bad = MetadataContent(
        metadata={
            "card_protocol_version": "1",
            "requires_card_interaction": "true",
            "card_kind": kind,
            "card_payload": json.dumps(payload),
        }
    )
    dec = ChatDecoder()
    got = dec.feed("agent1qpeer", ChatMessage(content=[bad, TextContent(text="still here")]), 0.0)
    assert [m.props["content"] for m in got if m.type == "text"] == ["still here"]
    assert not [m for m in got if m.type == "card"]
    warnings = dec.drain_warnings()
    assert [w.code for w in warnings] == ["bad_card"]
    assert "refuses" in warnings[0].detail and kind in warnings[0].detail


def test_an_approval_question_carries_a_review_card_and_a_plain_peer_reads_the_question() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await b.send(asking("c1", "delete_file", {"path": "a"}))

    chats = encode(run(body), close=True, session=True, tagged=False)
    [card] = cards_in(chats)
    assert isinstance(card.payload, ReviewCardPayload)
    assert card.payload.approve_cta.label == "Approve" and card.payload.reject_cta is not None
    assert 'Approve delete_file({"path": "a"})?' in plain(chats)
    # and the question travels whole to a tagged asker, its card included
    msgs, _ = decode(encode(run(body), close=True, tagged=True))
    [asked] = [m for m in assemble(msgs).messages if m.type == "user_input"]
    assert asked.props["card"]["kind"] == "review"


def test_a_question_asks_with_a_one_field_form_card() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await b.send(asking("c2", "lookup", {"q": "x"}, kind="question"))

    [card] = cards_in(encode(run(body), close=True))
    assert isinstance(card.payload, FormCardPayload) and len(card.payload.fields) == 1
