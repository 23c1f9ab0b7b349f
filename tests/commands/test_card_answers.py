"""Cards in the terminal: ``ask`` and ``chat`` draw a card's title, rows and numbered choices,
and in ``chat`` typing a choice's number answers with that button's own selection (a card
response, as a chat front end sends it); anything else typed goes as text."""

from __future__ import annotations

import io
import uuid

from rich.console import Console
from uagents_core.contrib.protocols.chat import MetadataContent
from uagents_core.contrib.protocols.chat.cards import extract_card_response

from agent_stream import Message
from agent_stream.commands.chat import card_answer, card_of
from agent_stream.render import LiveRenderer
from agent_stream.sources.approvals import asking

CARD_ID = str(uuid.uuid4())
CAROUSEL = {
    "kind": "carousel",
    "card_id": CARD_ID,
    "payload": {
        "title": "Snacks",
        "items": [
            {
                "id": "a",
                "title": "Apple",
                "primary_cta": {"label": "Order", "selection": {"id": "a"}},
            },
            {
                "id": "b",
                "title": "Pear",
                "primary_cta": {"label": "Order", "selection": {"id": "b"}},
            },
        ],
    },
}


def drawn(*msgs: Message) -> str:
    out = io.StringIO()
    r = LiveRenderer(Console(file=out, width=100, color_system=None))
    for m in msgs:
        r.feed(m)
    return out.getvalue()


def test_a_card_is_drawn_with_its_choices_numbered() -> None:
    text = drawn(Message(type="card", props=CAROUSEL, message_id="M1"))
    assert "▣ Snacks" in text and "[1] Apple: Order" in text and "[2] Pear: Order" in text


def test_an_approval_is_drawn_as_its_question_and_its_two_buttons() -> None:
    text = drawn(asking("c1", "delete_file", {"path": "a"}).model_copy(update={"message_id": "M2"}))
    assert '? Approve delete_file({"path": "a"})?' in text
    assert "[1] Approve" in text and "[2] Reject" in text


def test_typing_a_choices_number_answers_with_its_selection() -> None:
    card = card_of(Message(type="card", props=CAROUSEL, message_id="M1"))
    chat = card_answer(card, " 2 ", {"reasoning"})
    [response] = [
        r
        for i in chat.content
        if isinstance(i, MetadataContent) and (r := extract_card_response(i)) is not None
    ]
    assert response.selection == {"id": "b"} and str(response.card_id) == CARD_ID


def test_anything_else_typed_is_sent_as_text() -> None:
    card = card_of(Message(type="card", props=CAROUSEL, message_id="M1"))
    assert card_answer(card, "3", set()) is None  # no third choice
    assert card_answer(card, "the pear please", set()) is None
    assert card_answer(None, "1", set()) is None  # no card in the last reply
