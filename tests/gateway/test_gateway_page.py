"""The gateway's page in a real headless Chromium (Debian's, driven by Playwright): ask, watch
the reply build, stop; agent text can never run script. Skipped, saying why, when there is no
chromium or no playwright (`make test` installs chromium with apt-get when missing)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_harness import Gateway, Harness, start_gateway
from page_helpers import ask

pytestmark = pytest.mark.integration


@pytest.fixture
def page(browser: Any, gateway: Gateway) -> Iterator[Any]:
    ctx = browser.new_context()
    pg = ctx.new_page()
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.goto(gateway.url + "/")
    pg.wait_for_selector("#agent option[value='llm']", state="attached", timeout=10_000)
    try:
        yield pg
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def quiet_gateway(gw_harness: Harness) -> Gateway:
    """A gateway in front of `serve` without --reasoning: an agent that shares no reasoning."""
    gw_harness.serve("--rate", "0", "--name", "quiet")
    return start_gateway(gw_harness, "--agent", "quiet")


def test_page_builds_the_reply_live(page: Any) -> None:
    ask(page, "llm", "How do agents stream?")
    labels = page.locator(".block > h3").all_text_contents()
    assert "Thinking" in labels and "Answer" in labels and len(labels) >= 5
    # parallel threads side by side, labelled
    row = page.locator(".threads").first
    assert row.locator(".thread").count() >= 2
    assert {"spec", "benchmarks"} <= set(row.locator(".thread > h4").all_inner_texts())
    assert row.evaluate("e => getComputedStyle(e).display") == "flex"
    # reasoning: dimmed and collapsible
    reasoning = page.locator("details.reasoning").first
    assert "chat protocol" in reasoning.inner_text()
    assert (
        float(reasoning.evaluate("e => getComputedStyle(e.querySelector('.content')).opacity")) < 1
    )
    reasoning.locator("summary").click()
    assert reasoning.evaluate("e => e.open") is False
    # tool calls became their results; progress lines finished
    tools = page.locator(".tool.done").all_inner_texts()
    assert any(t.startswith("✓ search_docs →") for t in tools), tools
    assert page.locator(".tool.running").count() == 0
    assert page.locator(".status.done").count() >= 1
    # markdown: a table and a highlighted code block
    assert page.locator(".markdown table th").count() >= 2
    assert page.locator(".markdown pre code.hljs").count() >= 1
    assert page.locator(".markdown pre code span[class^='hljs-']").count() >= 1
    assert page.locator(".markdown ol li, .markdown ul li").count() >= 2
    # the footer
    footer = page.inner_text("#footer")
    assert re.search(r"\d+ ChatMessages", footer), footer
    assert re.search(r"first text \d+\.\d\d s", footer), footer
    assert re.search(r"total \d+\.\d\d s", footer), footer
    assert page.inner_text("#f-status") == "completed"
    assert page.errors == []  # type: ignore[attr-defined]


def test_tool_lines_show_in_the_order_they_came(page: Any) -> None:
    """Call, its progress, its result: the result is a line of its own after the progress line
    (before, the call's line became the result, above the progress line written after it)."""
    ask(page, "llm", "How do agents stream?")
    blocks = page.locator(".block:has(.status.done)")
    assert blocks.count() >= 1
    for i in range(blocks.count()):
        lines = blocks.nth(i).locator(".tool, .status").all_inner_texts()
        kinds = [
            "call" if t.startswith("⚙") else "result" if "→" in t else "progress" for t in lines
        ]
        assert kinds == ["call", "progress", "result"], lines
        assert not lines[0].endswith("…")  # the call is no longer running
    assert page.errors == []  # type: ignore[attr-defined]


def test_no_empty_thinking_box_when_the_agent_shares_no_reasoning(
    browser: Any, quiet_gateway: Gateway
) -> None:
    ctx = browser.new_context()
    pg = ctx.new_page()
    try:
        pg.goto(quiet_gateway.url + "/")
        pg.wait_for_selector("#agent option[value='quiet']", state="attached", timeout=10_000)
        ask(pg, "quiet", "How do agents stream?")
        labels = pg.locator(".block > h3").all_text_contents()
        assert "Answer" in labels and "Thinking" not in labels, labels
        assert pg.locator("details.reasoning").count() == 0
        for i in range(pg.locator(".block").count()):  # every box drawn has something in it
            assert pg.locator(".block").nth(i).locator(":scope > :not(h3)").count() >= 1
    finally:
        ctx.close()


HOSTILE = (
    "**bold** <script>window.__pwned = 1</script>"
    '<img src=x onerror="window.__pwned = 2"> <a href="javascript:window.__pwned=3">x</a>'
    '<svg onload="window.__pwned = 4"></svg> <iframe src="javascript:1"></iframe>'
)


def test_agent_text_cannot_inject_script(page: Any) -> None:
    ask(page, "echo", HOSTILE)
    reply = page.locator("#reply")
    assert reply.locator("strong").inner_text() == "bold"  # markdown still renders
    assert page.evaluate("window.__pwned") is None
    for bad in ("script", "img[onerror]", "svg[onload]", "iframe", "a[href^='javascript']"):
        assert reply.locator(bad).count() == 0, bad
    page.click("#reply a") if reply.locator("a").count() else None
    assert page.evaluate("window.__pwned") is None


def test_stop_button(page: Any) -> None:
    ask(page, "echo", "[n=1000 rate=50] stop me", wait=False)
    page.locator("#reply .markdown", has_text="w5").wait_for(timeout=15_000)
    page.click("#stop")
    page.wait_for_selector("body[data-state='done']", timeout=5_000)
    assert page.inner_text("#f-status") == "cancelled"
    assert "w900" not in page.inner_text("#reply")


def test_the_page_is_a_conversation_that_survives_a_reload(page: Any) -> None:
    """Two turns: the second reply knows the first question (the page sent it as history);
    after a reload the turns are still there and a third question still carries them."""
    ask(page, "llm", "How do agents stream?")
    ask(page, "llm", "And what about retries?")
    turns = page.locator("#reply .turn")
    assert turns.count() == 2
    assert turns.nth(0).locator(".user-turn").inner_text() == "How do agents stream?"
    second = turns.nth(1).locator(".assistant-turn").inner_text()
    assert "Earlier in this conversation you asked: “How do agents stream?”" in second
    assert "Earlier in this conversation" not in turns.nth(0).inner_text()
    # each reply rendered with its blocks and threads, as a single reply is
    assert turns.nth(1).locator(".block > h3", has_text="Answer").count() == 1
    assert turns.nth(1).locator(".threads .thread").count() >= 2
    assert page.locator("#question").input_value() == ""  # the input stays, emptied

    page.reload()
    page.wait_for_selector("#agent option[value='llm']", state="attached", timeout=10_000)
    turns = page.locator("#reply .turn")
    assert turns.count() == 2
    assert "Earlier in this conversation" in turns.nth(1).inner_text()
    assert turns.nth(1).locator(".block > h3", has_text="Answer").count() == 1
    ask(page, "llm", "One more thing")
    third = page.locator("#reply .turn").nth(2).inner_text()
    assert "you asked first: “How do agents stream?”" in third
    assert "just before this: “And what about retries?”" in third

    page.click("#new")
    assert page.locator("#reply .turn").count() == 0
    page.reload()
    page.wait_for_selector("#agent option[value='llm']", state="attached", timeout=10_000)
    assert page.locator("#reply .turn").count() == 0
    ask(page, "llm", "Fresh start")
    assert "Earlier in this conversation" not in page.inner_text("#reply")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_hint_says_when_the_agent_withholds_its_reasoning(
    browser: Any, quiet_gateway: Gateway, gateway: Gateway
) -> None:
    ctx = browser.new_context()
    pg = ctx.new_page()
    try:
        pg.goto(quiet_gateway.url + "/")
        pg.wait_for_selector("#agent option[value='quiet']", state="attached", timeout=10_000)
        ask(pg, "quiet", "How do agents stream?")
        hint = pg.locator("#reply .hint.withheld")
        assert hint.count() == 1
        assert "does not share its reasoning" in hint.inner_text()
        pg.goto(gateway.url + "/")  # an agent that shares it: no hint
        pg.wait_for_selector("#agent option[value='llm']", state="attached", timeout=10_000)
        pg.click("#new")
        ask(pg, "llm", "How do agents stream?")
        assert pg.locator("#reply .hint.withheld").count() == 0
    finally:
        ctx.close()
