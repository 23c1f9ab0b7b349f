"""Answering a reply over ``POST /v1/stream`` (``answers`` + ``card_response``), over the
gateway's own app (real HTTP on 127.0.0.1, an agent link answering given replies): the answer is
asked in the envelope session of the reply it names, with the card response; only the caller
that started that reply may answer it."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from inprocess_gateway import serve_gateway

from agent_stream.message import event, user_input

pytestmark = pytest.mark.integration

ASKS = [
    event("stream_start", {"request_id": "q"}),
    user_input("Send it?", message_id="M1"),
    event("stream_end", {"status": "completed"}),
]


async def test_an_answer_goes_in_the_session_of_the_reply_it_names_with_its_card_response(
    tmp_path: Path,
) -> None:
    card_id = str(uuid.uuid4())
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS, api_keys=["k1", "k2"]) as (url, link),
        httpx.AsyncClient(base_url=url, timeout=30) as c,
    ):
        h1 = {"authorization": "Bearer k1"}
        first = await c.post(
            "/v1/stream", json={"agent": "solo", "question": "Mail Bob"}, headers=h1
        )
        rid = first.headers["x-reply-id"]
        other = await c.post("/v1/stream", json={"agent": "solo", "question": "Other"}, headers=h1)
        assert other.status_code == 200
        answer = {"card_id": card_id, "selection": {"decision": "approve"}}
        r = await c.post(
            "/v1/stream",
            json={
                "agent": "solo",
                "question": "Approve",
                "answers": rid,
                "card_response": answer,
            },
            headers=h1,
        )
        assert r.status_code == 200, r.text
        typed = await c.post(
            "/v1/stream",
            json={"agent": "solo", "question": "yes", "answers": rid},
            headers=h1,
        )
        assert typed.status_code == 200
        # another key cannot answer k1's reply: as for an unknown id
        stolen = await c.post(
            "/v1/stream",
            json={"agent": "solo", "question": "no", "answers": rid, "card_response": answer},
            headers={"authorization": "Bearer k2"},
        )
        assert stolen.status_code == 404
        assert stolen.json()["error"]["code"] == "reply_not_found"
    asked = link.asked
    assert len(asked) == 4  # the stolen answer asked nothing
    first_session = asked[0]["session"]
    assert isinstance(first_session, uuid.UUID)
    assert asked[1]["session"] != first_session  # a new question: a session of its own
    assert asked[2]["session"] == first_session and asked[3]["session"] == first_session
    response = asked[2]["card_response"]
    assert str(response.card_id) == card_id and response.selection == {"decision": "approve"}
    assert asked[3]["card_response"] is None  # typed: text alone


def test_the_page_script_reads_cards_without_html() -> None:
    """Agent text in a card reaches the DOM only as textContent: the card code never sets
    innerHTML (the one innerHTML of the page is DOMPurify's sanitised markdown)."""
    js = (Path(__file__).resolve().parents[2] / "agent_stream/gateway/static/app.js").read_text()
    start, end = js.index("-- interactive cards"), js.index("-- the reply view")
    assert "innerHTML" not in js[start:end]
    assert js.count("innerHTML") == 1


@pytest.mark.parametrize("answers", [123, "", "x" * 300])
async def test_answers_must_be_a_reply_id(tmp_path: Path, answers: object) -> None:
    async with (
        serve_gateway(tmp_path, ["solo"], ASKS) as (url, link),
        httpx.AsyncClient(base_url=url, timeout=30) as c,
    ):
        r = await c.post("/v1/stream", json={"agent": "solo", "question": "q", "answers": answers})
    assert r.status_code == 400 and r.json()["error"]["code"] == "no_reply"
    assert link.asked == []
