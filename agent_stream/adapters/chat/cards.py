"""Interactive cards on the chat wire (uagents-core's ``cards``: carousel, detail, form, review,
custom), both ways, with uagents-core's own helpers (no metadata key is spelled out here).

- A ``card`` Message, or a ``user_input`` Message carrying a ``card`` prop (a question asked as a
  review or form card), goes out as the card's ``MetadataContent`` and a ``TextContent``
  fallback (its title, rows, choices or fields as text) that a peer rendering no cards reads.
- A card ``MetadataContent`` from a peer becomes a ``card`` Message; one that claims to be a card
  but that uagents-core refuses (unknown kind, a payload its models refuse, too deep) raises
  :class:`CardError`, and the caller keeps the rest of the ChatMessage.
- :func:`card_response_of` reads the answer to a card from a ChatMessage (a card response
  ``MetadataContent``).
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel
from pydantic import ValidationError as V2ValidationError
from uagents_core.contrib.protocols.chat import ChatMessage, MetadataContent, TextContent
from uagents_core.contrib.protocols.chat.cards import (
    META_CARD_KIND,
    META_CARD_PROTOCOL_VERSION,
    CardResponse,
    CustomCardPayload,
    FormCardPayload,
    ReviewCardPayload,
    create_card_content,
    extract_card,
    extract_card_response,
    validate_card_payload,
)

from agent_stream.message import CARD, Message, card_texts

__all__ = [
    "CardError",
    "CardResponse",
    "card_items",
    "card_message",
    "card_response_from",
    "card_response_of",
    "fallback_text",
]


class CardError(ValueError):
    """A card that cannot go on, or come off, the wire: the message says why."""


def card_items(card: dict[str, Any], fallback: str | None = None) -> list[Any]:
    """The card's ``MetadataContent`` and its ``TextContent`` fallback.

    Args:
        card: ``kind``, ``payload`` (a dict), optional ``card_id`` (a UUID4) and ``terminal``.
        fallback: the text a peer rendering no cards reads (None: made from the payload).

    Raises:
        CardError: an unknown kind, a payload uagents-core refuses, a card_id not a UUID4.
    """
    kind = card.get("kind")
    try:
        payload = validate_card_payload(str(kind), card.get("payload") or {})
    except (ValueError, V2ValidationError, RecursionError) as exc:
        raise CardError(f"a {kind!r} card uagents-core refuses: {_short(exc)}") from None
    card_id = card.get("card_id")
    try:
        parsed = uuid.UUID(str(card_id)) if card_id is not None else None
    except ValueError:
        raise CardError(f"card_id {card_id!r} is not a UUID") from None
    if parsed is not None and parsed.version != 4:
        raise CardError(f"card_id {card_id!r} is not a version-4 UUID")
    meta = create_card_content(
        payload,
        card_id=parsed,
        is_terminal=bool(card.get("terminal")),
    )
    text = fallback if fallback is not None else fallback_text(payload)
    return [meta, TextContent.construct(type="text", text=text)]


def card_message(item: MetadataContent, message_id: str) -> Message | None:
    """The ``card`` Message of a card ``MetadataContent`` (None: the item is not a card).

    Args:
        item: a MetadataContent from a peer.
        message_id: the new Message's id.

    Raises:
        CardError: it claims to be a card, but uagents-core refuses it.
    """
    md = item.metadata
    if META_CARD_PROTOCOL_VERSION not in md or META_CARD_KIND not in md:
        return None
    try:
        card = extract_card(item)
    except RecursionError:
        card = None
    if card is None:
        raise CardError(f"a {md.get(META_CARD_KIND)!r} card that uagents-core refuses; ignored")
    props: dict[str, Any] = {
        "kind": md[META_CARD_KIND],
        "payload": card.payload.model_dump(mode="json", exclude_none=True),
    }
    if card.card_id is not None:
        props["card_id"] = str(card.card_id)
    if card.is_terminal:
        props["terminal"] = True
    return Message(type=CARD, props=props, message_id=message_id)


def card_response_of(chat: ChatMessage) -> CardResponse | None:
    """The answer to a card a ChatMessage carries as a card response ``MetadataContent``.

    Args:
        chat: an incoming ChatMessage.
    """
    for item in chat.content:
        if isinstance(item, MetadataContent):
            response = card_response_from(item)
            if response is not None:
                return response
    return None


def card_response_from(item: MetadataContent) -> CardResponse | None:
    """The card response one ``MetadataContent`` item carries (None: it is no card response).

    Args:
        item: a MetadataContent of an incoming ChatMessage.
    """
    return extract_card_response(item)


def fallback_text(payload: BaseModel) -> str:
    """What a peer that renders no cards reads of a card: its title, rows and choices or fields.

    Args:
        payload: a validated card payload (uagents-core's models).
    """
    data = payload.model_dump(mode="json", exclude_none=True)
    lines: list[str] = []
    if data.get("title"):
        lines.append(str(data["title"]))
    if data.get("subtitle"):
        lines.append(str(data["subtitle"]))
    for row in data.get("summary_rows") or ():
        lines.append(f"{row['label']}: {row['value']}")
    if isinstance(payload, ReviewCardPayload):
        choices = [payload.approve_cta.label]
        if payload.reject_cta is not None:
            choices.append(payload.reject_cta.label)
        lines.append("Answer " + " or ".join(f'"{c}"' for c in choices) + ".")
    elif isinstance(payload, FormCardPayload):
        for f in payload.fields:
            options = f" ({', '.join(o.label for o in f.options)})" if f.options else ""
            lines.append(f"- {f.label}{options}{' (required)' if f.required else ''}")
    elif isinstance(payload, CustomCardPayload):
        lines.extend(card_texts(data.get("root")))
    else:  # carousel, detail
        for n, item in enumerate(data.get("items") or (), 1):
            sub = f" — {item['subtitle']}" if item.get("subtitle") else ""
            lines.append(f"{n}. {item['title']}{sub}")
        sub_options = data.get("sub_options")
        if sub_options:
            labels = ", ".join(c["label"] for c in sub_options["choices"])
            lines.append(f"{sub_options['label']}: {labels}")
        for cta in data.get("ctas") or ():
            lines.append(f"[{cta['label']}]")
    return "\n".join(lines)


def _short(exc: Exception, limit: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
