"""An incoming ChatMessage, read once: :func:`read_chat` scans its items in one pass into an
:class:`Incoming`, the typed view the uagents runtime routes (a control op, a reply's
conversation, a request's tag, session markers, text, a card response). Nothing downstream
scans the raw message again for these; the decoder still reads a reply's stream items.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    MetadataContent,
    ResourceContent,
    StartSessionContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters.chat.cards import CardResponse, card_response_from
from agent_stream.adapters.chat.wire import (
    ACKS_KEY,
    ACKS_MANY,
    CONTROL_OPS,
    CUTS_KEY,
    FOLD_KEY,
    LEAN_KEY,
    TAG_KEY,
    content_class,
)

__all__ = ["Incoming", "read_chat"]

_NO_TAG: Mapping[str, str] = {}


@dataclass(frozen=True)
class Incoming:
    """What one incoming ChatMessage says, read in one pass (see :func:`read_chat`).

    Attributes:
        chat: the ChatMessage itself.
        tag: its first agent_stream-tagged metadata (empty: untagged).
        tags: every tagged metadata item, in order.
        op: the delivery op (``resend``/``cancel``) an asker sent, with its fields (None: none).
        conversation: the conversation a tagged reply ChatMessage belongs to (None: none).
        opens_session: it has a StartSessionContent.
        ends_session: it has an EndSessionContent.
        has_text: it has a non-empty TextContent.
        has_resource: it has a ResourceContent (an image, a file...).
        starts_stream: it has a StartStreamContent.
        card_response: the answer to a card it carries (None: none).
    """

    chat: ChatMessage
    tag: Mapping[str, str] = field(default_factory=dict)
    tags: tuple[Mapping[str, str], ...] = ()
    op: Mapping[str, str] | None = None
    conversation: str | None = None
    opens_session: bool = False
    ends_session: bool = False
    has_text: bool = False
    has_resource: bool = False
    starts_stream: bool = False
    card_response: CardResponse | None = None

    @property
    def tagged(self) -> bool:
        """It carries the agent_stream tag (a tagged asker or responder sent it)."""
        return bool(self.tags)

    @property
    def msg_id(self) -> str:
        """The ChatMessage's id, as text."""
        return str(self.chat.msg_id)

    @property
    def coalesced_acks(self) -> bool:
        """A tagged question asking for coalesced acknowledgements (``acks=many``)."""
        return self.tag.get(ACKS_KEY) == ACKS_MANY

    @property
    def reads_folds(self) -> bool:
        """A tagged question whose asker decodes folded items (``fold=1``; see .fold)."""
        return self.tag.get(FOLD_KEY) == "1"

    @property
    def reads_lean(self) -> bool:
        """A tagged question whose asker reads the lean wire (``lean=1``; see the package
        docstring)."""
        return self.tag.get(LEAN_KEY) == "1"

    @property
    def reads_cuts(self) -> bool:
        """A tagged question whose asker reads a lean chunk group's chunks as one TextContent
        cut by the group's ``cuts`` (``cuts=1``; only with ``lean=1``)."""
        return self.reads_lean and self.tag.get(CUTS_KEY) == "1"

    @property
    def channels(self) -> frozenset[str]:
        """The extra channels the asker asked for in its tags (a wish; the sender decides)."""
        return frozenset(c for md in self.tags for c in md.get("channels", "").split(",") if c)

    @property
    def answers(self) -> bool:
        """It carries (part of) an answer: text or a resource (metadata alone never does)."""
        return self.has_text or self.has_resource

    @property
    def cancels_session(self) -> bool:
        """An EndSessionContent without text: the asker ends the session (not a question)."""
        return self.ends_session and not self.has_text


def read_chat(chat: ChatMessage) -> Incoming:
    """Read ``chat`` once into an :class:`Incoming`.

    Args:
        chat: a ChatMessage as it arrived (validated by uagents).
    """
    tags: list[Mapping[str, str]] = []
    conversation: str | None = None
    opens = ends = text = resource = stream = False
    card: CardResponse | None = None
    for item in chat.content:
        cls = content_class(item)
        if cls is TextContent:
            text = text or bool(item.text)
        elif cls is MetadataContent:
            md = item.metadata
            if TAG_KEY in md:
                tags.append(md)
                if conversation is None:
                    conversation = md.get("conversation")
            if card is None:
                card = card_response_from(item)
        elif cls is ResourceContent:
            resource = True
        elif cls is StartStreamContent:
            stream = True
        elif cls is StartSessionContent:
            opens = True
        elif cls is EndSessionContent:
            ends = True
    head = tags[0] if tags else _NO_TAG
    op = head if head.get("op") in CONTROL_OPS and "conversation" in head else None
    return Incoming(
        chat=chat,
        tag=head,
        tags=tuple(tags),
        op=op,
        conversation=conversation,
        opens_session=opens,
        ends_session=ends,
        has_text=text,
        has_resource=resource,
        starts_stream=stream,
        card_response=card,
    )
