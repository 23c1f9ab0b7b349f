"""A Message as tagged metadata, and what a plain peer reads of it (text lines, resources)."""

from __future__ import annotations

import logging
import mimetypes
from typing import Any, Protocol

from uagents_core.contrib.protocols.chat import Resource, ResourceContent, TextContent

from agent_stream.adapters.chat.cards import CardError, card_items
from agent_stream.adapters.chat.wire import (
    MEDIA_TYPES,
    OP_MESSAGE,
    PROTOCOL_VERSION,
    STREAM_TYPES,
    TAG_KEY,
    Group,
    dumps,
    uuid4_from,
)
from agent_stream.message import CARD, ERROR, USER_INPUT, Message

__all__ = ["PlainRenderer", "error_line", "ids_meta", "message_meta"]

LOG = logging.getLogger("agent_stream.adapters.chat")


def ids_meta(msg: Message, op: str) -> dict[str, str]:
    """The tag, ``op``, the Message's ids (absent ones left out) and its type.

    Args:
        msg: the Message.
        op: the group's op (``message``, ``stream_start``...).
    """
    meta = {TAG_KEY: PROTOCOL_VERSION, "op": op, **msg.ids()}
    meta["type"] = msg.type
    return meta


def message_meta(msg: Message, props: dict[str, Any] | None = None) -> dict[str, str]:
    """The metadata of a ``message`` group carrying a Message.

    Args:
        msg: the Message.
        props: props carried instead of its own (None: its own).
    """
    meta = ids_meta(msg, OP_MESSAGE)
    p = props if props is not None else msg.props
    if p is not None:
        meta["props"] = dumps(p)
    if msg.delta:
        meta["delta"] = "true"
    if msg.delta_action:
        meta["delta_action"] = msg.delta_action
    if msg.delta_path:
        meta["delta_path"] = msg.delta_path
    if msg.type_change:
        meta["type_change"] = "true"
    if msg.metadata is not None:
        md = msg.metadata.to_dict()
        if md:
            meta["message_metadata"] = dumps(md)
    return meta


def mime_type(kind: str, props: dict[str, Any]) -> str:
    """The MIME type of a media Message: guessed from its URL, else from its format.

    Args:
        kind: ``image``, ``audio`` or ``video``.
        props: the Message's props (``url``, ``format``).
    """
    url = props.get("url")
    guess = mimetypes.guess_type(url)[0] if isinstance(url, str) else None
    if guess and guess.startswith(kind + "/"):
        return guess
    fmt = props.get("format")
    if isinstance(fmt, str) and fmt:
        fmt = {"mp3": "mpeg", "jpg": "jpeg"}.get(fmt.lower(), fmt.lower())
        return f"{kind}/{fmt}"
    return f"{kind}/*"


def error_line(message: Any, code: Any = None) -> str:
    """The line a plain peer reads for an error.

    Args:
        message: the error's message (not a string, or empty: "the reply failed").
        code: the error's code, shown when it is a string.
    """
    msg = message if isinstance(message, str) and message else "the reply failed"
    if isinstance(code, str) and code:
        return f"Error ({code}): {msg}"
    return f"Error: {msg}"


class Shown(Protocol):
    """A message's encoder state as far as rendering goes (the encoder's ``MessageState``).

    Whether a plain peer was already shown its text.
    """

    shown: bool


class PlainRenderer:
    """The items a plain peer reads, and whether it has seen text or an error yet.

    Args:
        conversation: the conversation's id.
    """

    def __init__(self, conversation: str) -> None:
        self.conversation = conversation
        self.shown_text = False
        self.shown_error = False
        self._resources = 0

    def text_item(self, text: str) -> TextContent:
        """A TextContent (noting that a plain peer has seen text).

        Args:
            text: its text.
        """
        if text:
            self.shown_text = True
        return TextContent.construct(type="text", text=text)

    def line(self, line: str) -> str:
        """A line set apart from text already shown.

        Args:
            line: the line.
        """
        return ("\n\n" + line) if self.shown_text else line

    def _card(self, card: dict[str, Any], fallback: str | None) -> list[Any] | None:
        """A card's items (its MetadataContent and text fallback); None, logged, when
        uagents-core refuses it (the Message still goes, as metadata)."""
        try:
            return card_items(card, fallback)
        except CardError as exc:
            LOG.warning("chat encoder: card not sent as a card: %s", exc)
            return None

    def render(self, msg: Message, group: Group, u: Shown | None) -> None:
        """Add to a group the items a plain peer reads for a Message carried as metadata.

        Args:
            msg: the Message.
            group: the group carrying it.
            u: the message's encoder state (None: a Message without a message_id).
        """
        mtype = msg.type
        props = msg.props or {}
        if mtype == ERROR and not msg.delta:
            group.items.append(
                self.text_item(self.line(error_line(props.get("message"), props.get("code"))))
            )
            group.needs_turn = True
            self.shown_error = True
        elif mtype == USER_INPUT and not msg.delta and isinstance(props.get("content"), str):
            # what the reply asks the asker (an approval, a question): a plain peer reads it,
            # a Fetch.ai front end also gets it as the card it carries (review, form)
            line = self.line(props["content"])
            card = props.get("card")
            items = self._card(card, line) if isinstance(card, dict) else None
            group.items.extend(items or [self.text_item(line)])
            if items:
                self.shown_text = True
            group.needs_turn = True
        elif mtype == CARD and not msg.delta:
            items = self._card(props, None)
            if items:
                group.items.extend(items)
                self.shown_text = True
                group.needs_turn = True
        elif mtype in MEDIA_TYPES and not msg.delta and isinstance(props.get("url"), str):
            md = {"mime_type": mime_type(mtype, props)}
            alt = props.get("alt")
            if isinstance(alt, str) and alt:
                md["alt"] = alt
            self._resources += 1
            resource_id = uuid4_from("resource", self.conversation, str(self._resources))
            group.items.append(
                ResourceContent.construct(
                    type="resource",
                    resource_id=resource_id,
                    resource=Resource.construct(uri=props["url"], metadata=md),
                )
            )
        elif (
            mtype in STREAM_TYPES
            and (not msg.delta or msg.type_change)
            and u is not None
            and not u.shown
            and isinstance(props.get("content"), str)
        ):
            group.items.append(self.text_item(props["content"]))
            group.needs_turn = True
            u.shown = True
