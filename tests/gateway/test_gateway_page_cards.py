"""Cards on the gateway's page, in a real headless Chromium: an agent that pauses for an answer
shows a review card (buttons) or a form card (fields); pressing a button or submitting the form
sends the card response to the reply that asked, in its session, and the paused run resumes. The
agents are `agent-stream serve --app` processes serving framework apps (tests/peers/owned_apps.py:
a pydantic-ai tool that needs approval, a LangGraph interrupt) behind a gateway of their own.
Skipped, saying why, when there is no chromium or no playwright."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_harness import Gateway, Harness, start_gateway
from page_helpers import ask

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
from menu_app import MENU_ID

pytestmark = pytest.mark.integration

APPS = Path(__file__).resolve().parents[1] / "peers" / "owned_apps.py"
MENU = Path(__file__).resolve().parents[1] / "peers" / "menu_app.py"


@pytest.fixture(scope="module")
def cards_gateway(gw_harness: Harness) -> Gateway:
    """A gateway in front of an approval agent (``ops``) and an interrupting one (``mailer``)."""
    gw_harness.serve("--app", f"{APPS}:approval", "--name", "ops")
    gw_harness.serve("--app", f"{APPS}:interrupting", "--name", "mailer")
    gw_harness.serve("--app", f"{MENU}:respond", "--name", "menu")
    return start_gateway(
        gw_harness,
        "--agent",
        "ops",
        "--agent",
        "mailer",
        "--agent",
        "menu",
        "--resume-window",
        "120",
    )


@pytest.fixture
def page(browser: Any, cards_gateway: Gateway) -> Iterator[Any]:
    ctx = browser.new_context()
    pg = ctx.new_page()
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.goto(cards_gateway.url + "/")
    pg.wait_for_selector("#agent option[value='mailer']", state="attached", timeout=10_000)
    try:
        yield pg
    finally:
        ctx.close()


def wait_done(pg: Any) -> None:
    pg.wait_for_selector("body[data-state='done']", timeout=60_000)


def test_a_review_cards_approve_button_runs_the_paused_tool(page: Any) -> None:
    ask(page, "ops", "Delete the file, please")
    first = page.locator("#reply .turn").nth(0)
    card = first.locator(".card[data-kind='review']")
    assert card.locator(".card-title").inner_text() == "Approve delete_file?"
    assert "delete_file" in card.locator(".card-rows").inner_text()
    buttons = card.locator("button.card-choice")
    assert buttons.all_inner_texts() == ["Approve", "Reject"]
    assert "deleted" not in first.inner_text()  # paused: nothing ran
    buttons.nth(0).click()
    wait_done(page)
    turns = page.locator("#reply .turn")
    assert turns.count() == 2
    assert turns.nth(1).locator(".user-turn").inner_text() == "Approve"
    assert "deleted" in turns.nth(1).locator(".assistant-turn").inner_text()  # the tool ran
    assert card.evaluate("e => e.classList.contains('answered')")
    assert all(b.is_disabled() for b in buttons.all())  # answered once
    assert page.inner_text("#f-status") == "completed"
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_reject_button_refuses_it(page: Any) -> None:
    page.click("#new")
    ask(page, "ops", "Delete the file, please")
    page.locator(".card button.card-choice", has_text="Reject").click()
    wait_done(page)
    answer = page.locator("#reply .turn").nth(1).locator(".assistant-turn").inner_text()
    assert "deleted a" not in answer and answer.strip()
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_form_cards_value_is_the_answer_to_an_interrupt(page: Any) -> None:
    page.click("#new")
    ask(page, "mailer", "Mail Bob")
    card = page.locator("#reply .turn").nth(0).locator(".card[data-kind='form']")
    field = card.locator(".card-form input")
    assert field.count() == 1
    assert "Send the email to Bob?" in page.locator("#reply .turn").nth(0).inner_text()
    card.locator("button.card-submit").click()  # empty but required: the browser refuses
    assert page.locator("#reply .turn").count() == 1
    field.fill("yes, today")
    card.locator("button.card-submit").click()
    wait_done(page)
    second = page.locator("#reply .turn").nth(1)
    assert second.locator(".user-turn").inner_text() == "yes, today"
    assert "Sent: you said yes, today." in second.inner_text()
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_typed_answer_while_a_card_waits_answers_it_too(page: Any) -> None:
    page.click("#new")
    ask(page, "mailer", "Mail Bob")
    ask(page, "mailer", "only tomorrow")
    second = page.locator("#reply .turn").nth(1)
    assert "Sent: you said only tomorrow." in second.inner_text()
    assert page.locator("#reply .turn").nth(0).locator(".card.answered").count() == 1
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_carousel_card_is_buttons_and_a_choice_reaches_the_responder(page: Any) -> None:
    """A responder's own card (not a pause): its choice is ``request.card_response``."""
    page.click("#new")
    ask(page, "menu", "Hungry")
    card = page.locator("#reply .turn").nth(0).locator(".card[data-kind='carousel']")
    assert card.locator(".card-title").inner_text() == "Snacks"
    choices = card.locator("button.card-choice")
    assert choices.all_inner_texts() == ["Apple: Order", "Pear: Order"]
    choices.nth(1).click()
    wait_done(page)
    second = page.locator("#reply .turn").nth(1)
    assert second.locator(".user-turn").inner_text() == "Pear: Order"
    assert "You ordered pear (card " + MENU_ID + ")." in second.inner_text()
    assert page.errors == []  # type: ignore[attr-defined]


def test_an_answer_to_another_callers_or_an_unknown_reply_is_refused(
    cards_gateway: Gateway,
) -> None:
    with httpx.Client(base_url=cards_gateway.url, timeout=60) as c:
        r = c.post(
            "/v1/stream",
            json={
                "agent": "ops",
                "question": "Approve",
                "answers": "r000000000000000000000000",
                "card_response": {"selection": {"decision": "approve"}},
            },
        )
        assert r.status_code == 404 and r.json()["error"]["code"] == "reply_not_found"
        r = c.post(
            "/v1/stream",
            json={"agent": "ops", "answers": "x", "card_response": {"selection": [1]}},
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_card_response"
        r = c.post(
            "/v1/stream",
            json={"agent": "ops", "card_response": {"selection": {"decision": "approve"}}},
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "no_reply"
