"""Driving the gateway's page in a browser (Playwright's sync API): shared by the page tests."""

from __future__ import annotations

from typing import Any

__all__ = ["ask"]


def ask(pg: Any, agent: str, question: str, wait: bool = True) -> None:
    pg.select_option("#agent", agent)
    pg.fill("#question", question)
    pg.click("#ask")
    if wait:
        pg.wait_for_selector("body[data-state='done']", timeout=30_000)
