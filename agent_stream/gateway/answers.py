"""A client's answer to a reply that asked something (the page's card buttons and forms).

``POST /v1/stream`` may name the reply it answers (``answers``: its reply id) and carry a card
response (``card_response``: ``card_id``, ``selection``, ``text``, ``cancelled``, what
uagents-core's ``CardResponse`` holds). The answer is asked in that reply's envelope session, so
the agent resumes the run it paused there; a reply that is unknown, expired or another caller's
is a 404 (a reply id is no capability). A card response is validated with uagents-core's own
model and capped here; the agent reads it as ``request.card_response``.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from uagents_core.contrib.protocols.chat.cards import CardResponse

from agent_stream.gateway.middleware import HTTPError

if TYPE_CHECKING:
    from starlette.requests import Request

    from agent_stream.gateway.core import Gateway

__all__ = [
    "MAX_CARD_RESPONSE_BYTES",
    "SESSION",
    "answered_session",
    "card_response_of",
    "session_of",
]

SESSION = "session"  # the reply log's metadata field naming its envelope session
MAX_CARD_RESPONSE_BYTES = 16 * 1024  # a card response's JSON, UTF-8
MAX_SELECTION_KEYS = 64


def card_response_of(raw: Any) -> CardResponse | None:
    """The request's ``card_response`` (absent: None); HTTPError 400 when uagents-core refuses
    it, it is over :data:`MAX_CARD_RESPONSE_BYTES` or names more than 64 fields.

    Args:
        raw: the request body's ``card_response``.
    """
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise HTTPError(400, "invalid_card_response", "'card_response' must be an object")
    size = len(json.dumps(raw, ensure_ascii=False).encode())
    if size > MAX_CARD_RESPONSE_BYTES:
        raise HTTPError(
            413,
            "card_response_too_large",
            f"the card response is {size} bytes; the limit is {MAX_CARD_RESPONSE_BYTES}",
        )
    selection = raw.get("selection")
    if isinstance(selection, dict) and len(selection) > MAX_SELECTION_KEYS:
        raise HTTPError(
            400, "invalid_card_response", f"a selection names at most {MAX_SELECTION_KEYS} fields"
        )
    try:
        response = CardResponse.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
        why = errors[0]["msg"] if errors else "refused"
        raise HTTPError(
            400, "invalid_card_response", f"card_response {where or 'is invalid'}: {why}"[:300]
        ) from None
    if response.selection is None and response.text is None and not response.cancelled:
        raise HTTPError(
            400, "invalid_card_response", "a card response needs a selection, a text or cancelled"
        )
    return response


def session_of(meta: dict[str, Any]) -> uuid.UUID:
    """The envelope session a reply was asked in (its log's metadata); HTTPError 409 when the
    log names none (written by a gateway from before replies kept it).

    Args:
        meta: the reply log's metadata.
    """
    try:
        return uuid.UUID(str(meta[SESSION]))
    except (KeyError, ValueError):
        raise HTTPError(
            409, "not_answerable", "this reply cannot be answered: its session is unknown"
        ) from None


async def answered_session(
    gw: Gateway, request: Request, answers: Any, card: CardResponse | None
) -> uuid.UUID | None:
    """The session of the caller's reply that ``answers`` names (None: it names none).

    Args:
        gw: the gateway.
        request: the HTTP request (its caller).
        answers: the request body's ``answers``.
        card: the request's card response (None: none).

    Raises:
        HTTPError: 400 a card response that answers no reply, or ``answers`` not a reply id;
            404 the reply is unknown, expired or another caller's; 409 its session is unknown.
    """
    if answers is None:
        if card is not None:
            raise HTTPError(
                400, "no_reply", "a card_response needs 'answers': the reply it answers"
            )
        return None
    if not isinstance(answers, str) or not 0 < len(answers) <= 256:
        raise HTTPError(400, "no_reply", "'answers' must be a reply id")
    owned = await gw.owned(request, answers)
    if owned is None:
        raise HTTPError(404, "reply_not_found", "no reply of yours has this id")
    return session_of(owned[1])
