"""A responder of one's own with cards, for `agent-stream serve --app`: a question gets a
carousel of snacks (a ``card`` Message); a card response gets the choice it names back
(``request.card_response``), or says it carries none."""

from __future__ import annotations

import uuid
from typing import Any

MENU_ID = str(uuid.UUID(int=0x5EED, version=4))


async def respond(request: Any, out: Any) -> None:
    async with out.block("llm", label="Menu") as b:
        answer = request.card_response
        if answer is not None:
            chosen = (answer.selection or {}).get("id")
            card = str(answer.card_id) if answer.card_id else "no card"
            await b.text(f"You ordered {chosen} (card {card}).")
            return
        await b.text("Pick a snack.")
        await b.card(
            "carousel",
            {
                "title": "Snacks",
                "items": [
                    {
                        "id": "apple",
                        "title": "Apple",
                        "primary_cta": {"label": "Order", "selection": {"id": "apple"}},
                    },
                    {
                        "id": "pear",
                        "title": "Pear",
                        "primary_cta": {"label": "Order", "selection": {"id": "pear"}},
                    },
                ],
            },
            card_id=MENU_ID,
        )
