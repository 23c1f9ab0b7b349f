"""What a content Message becomes on the chat wire: the encoder's withholding policy.

A Message of a withheld type (``thinking`` unless the recipient's channels include
``reasoning``) is not sent; appends to ``props.content`` are buffered (:mod:`.messages`); a whole
text no plain peer has seen is one TextContent; anything else is carried as metadata with a
rendering for plain peers (:mod:`.render`).
"""

from __future__ import annotations

from collections.abc import Callable

from agent_stream.adapters.chat.messages import (
    MessageChunking,
    MessageState,
    keeps_text,
    text_append,
)
from agent_stream.adapters.chat.render import PlainRenderer, ids_meta, message_meta
from agent_stream.adapters.chat.wire import OP_TEXT, STREAM_TYPES, Group
from agent_stream.message import Message

__all__ = ["ContentPolicy"]


class ContentPolicy:
    """Decides what each content Message becomes, and routes the groups it makes.

    Args:
        withheld_types: Message types not sent to the peer.
        chunking: cuts each message's text into chunks.
        plain: renders what an untagged peer sees as text.
        route: takes each group made.
    """

    def __init__(
        self,
        withheld_types: frozenset[str],
        chunking: MessageChunking,
        plain: PlainRenderer,
        route: Callable[[Group], None],
    ) -> None:
        self.withheld_types = withheld_types
        self.withheld_seen: set[str] = set()  # types of Messages actually withheld
        self._chunking = chunking
        self._plain = plain
        self._route = route

    def standalone(self, msg: Message) -> None:
        """A Message without a message_id: a whole text, or metadata with its rendering.

        Args:
            msg: the Message.
        """
        mtype = msg.type
        if mtype in self.withheld_types:
            self.withheld_seen.add(mtype)
            return
        props = msg.props
        if (
            mtype in STREAM_TYPES
            and not msg.delta
            and not msg.type_change
            and props
            and len(props) == 1
            and isinstance(props.get("content"), str)
        ):
            group = Group(
                ids_meta(msg, OP_TEXT), [self._plain.text_item(props["content"])], needs_turn=True
            )
            self._route(group)
            return
        group = Group(message_meta(msg), [])
        self._plain.render(msg, group, None)
        self._route(group)

    def content(self, u: MessageState, msg: Message, now: float) -> None:
        """A content chunk of a message (after a type change, as its new type).

        Args:
            u: the message's encoder state.
            msg: the chunk.
            now: the current time, in seconds on a monotonic clock.
        """
        u.received += 1
        new_type = msg.type if msg.type_change or not msg.delta else u.type
        if new_type in self.withheld_types:
            self._withhold(u, msg, new_type)
            return
        if u.withheld:
            # withheld -> visible: start afresh as a whole message (withheld content stays so)
            u.withheld = False
            props = msg.props if (msg.props is not None and not msg.delta) else {}
            msg = Message(
                type=new_type,
                props=props,
                message_id=msg.message_id,
                thread_id=msg.thread_id,
                block_id=msg.block_id,
                metadata=msg.metadata,
            )
        if new_type != u.type and u.chunker is not None:
            # what is buffered goes out as what it was written as
            self._chunking.flush(u)
            self._chunking.drop(u)
        u.type = new_type
        ok = u.text_ok
        u.text_ok = keeps_text(msg, ok)
        # Appends to props.content are buffered: as chat stream text for the text types, as
        # merged deltas carried as metadata for the others (when the content is a string).
        piece = text_append(msg) if ok or new_type in STREAM_TYPES else None
        if piece is not None:
            self._chunking.buffer(u, piece, now)
        elif new_type not in STREAM_TYPES or not self._whole_text(u, msg):
            self._as_metadata(u, msg, new_type)

    def _withhold(self, u: MessageState, msg: Message, new_type: str) -> None:
        """``u`` is (now) of a withheld type."""
        self.withheld_seen.add(new_type)
        if u.withheld or not u.sent:
            u.withheld = True
            u.deferred = None
            u.type = new_type
            self._chunking.drop(u)
            return
        # visible -> withheld: text still buffered is now known to be reasoning and is
        # dropped; the stream ends; the decoder learns the new type; the rest is withheld.
        u.type = new_type
        u.withheld = True
        group = Group(
            message_meta(
                Message(
                    type=new_type,
                    type_change=True,
                    message_id=msg.message_id,
                    thread_id=msg.thread_id,
                    block_id=msg.block_id,
                )
            ),
            [],
            owner=u.key,
        )
        if u.open:
            self._chunking.end_item(u, group)
        self._chunking.drop(u)
        u.wire_chunks += 1
        self._chunking.emit(u, group)

    def _whole_text(self, u: MessageState, msg: Message) -> bool:
        """Send a whole text no plain peer has seen text of as one TextContent; True if sent."""
        whole = msg.props
        if (
            msg.delta
            or msg.type_change
            or u.shown
            or not whole
            or len(whole) != 1
            or not isinstance(whole.get("content"), str)
        ):
            return False
        self._chunking.flush(u)
        if u.shown:
            return False
        u.shown = u.has_content = True
        u.wire_chunks += 1
        group = Group(
            ids_meta(msg, OP_TEXT),
            [self._plain.text_item(whole["content"])],
            owner=u.key,
            needs_turn=True,
        )
        self._chunking.emit(u, group)
        return True

    def _as_metadata(self, u: MessageState, msg: Message, new_type: str) -> None:
        """Carry ``msg`` as metadata (after any buffered text of the same message)."""
        self._chunking.flush(u)
        group = Group(message_meta(msg), [], owner=u.key)
        self._plain.render(msg, group, u)
        if new_type not in STREAM_TYPES:
            self._chunking.drop(u)
            if u.open:
                self._chunking.end_item(u, group)
        u.wire_chunks += 1
        u.has_content = True
        self._chunking.emit(u, group)
