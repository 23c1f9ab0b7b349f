"""Batching groups into ChatMessages: numbering, and metadata waiting to ride with content.

Each ChatMessage is a signed envelope, so groups that are only metadata (events, tool calls,
merged deltas...) do not go alone at once: they wait, in order, for the next ChatMessage that
carries content, or go on their own once the oldest has waited ``meta_delay`` seconds.

For a plain asker (``text_first``) every ChatMessage carries something it shows, text or a
resource: the bookkeeping waits, however long, for the next such ChatMessage (or the reply's
end). A plain client that reads the first ChatMessage, or prints each one, gets the answer, not
an empty message.

To a lean asker (``gather``) a group with content does not cut the ChatMessage at once either:
each group is due by a time (a chunk of text: its :attr:`~.wire.Group.due`, the end of the gather
window for its oldest character, see :class:`~.messages.MessageChunking`; other content: now;
metadata alone, or with only the end of a stream: ``meta_delay`` from now, or its chunker's
deadline when later: the merged appends of ``thinking``), and the ChatMessage is cut once the
earliest of its groups is due. Text the chunker released waits for more, never past its own
bound, and no sooner-due group waits past its time. Consecutive chunk groups of one stream then
go as one group and its TextContent items (the decoder reads each as a chunk of the group's
stream; to an asker that reads ``cuts=1``, ``cuts``: one TextContent, the chunks' concatenation,
and the group's ``cuts`` their lengths, at most :data:`~.wire.MAX_CUTS` per group), a chunk group
of the stream the chunk group before it on the wire was of names no ids (the decoder, reading in
order, infers them; after a gap it cannot, and drops the text with a warning), and each folded
group goes as the lean wire's ``p`` (its parts name only the ids the decoder cannot infer, their
quotes swapped: :mod:`.fold`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    ResourceContent,
    TextContent,
)

from agent_stream.adapters.chat.fold import fold_groups, relative_ids
from agent_stream.adapters.chat.wire import (
    CUTS_KEY,
    EPOCH,
    MAX_CUTS,
    OP_CHUNK,
    OP_END,
    OP_FOLD,
    PROTOCOL_VERSION,
    TAG_KEY,
    Group,
    MessageKey,
    uuid4_from,
)

__all__ = ["Batcher"]


class Batcher:
    """Packs the groups of one conversation into numbered ChatMessages.

    Args:
        conversation: the conversation's id.
        meta_delay: seconds metadata-only groups may wait for content to go with.
        deterministic: msg_ids derived from the conversation and sequence number, and a fixed
            timestamp.
        clock: the UTC time stamped on ChatMessages otherwise (None: the system's).
        fold: each message complete when a ChatMessage is cut goes folded (:mod:`.fold`).
        text_first: a plain asker's: a ChatMessage goes only with text or a resource in it
            (or when forced, at the reply's end); ``meta_delay`` does not apply.
        gather: a lean asker's: a ChatMessage is cut when its earliest group is due (module
            doc), and a stream's consecutive chunk groups share one group.
        cuts: (with ``gather``) the asker reads cut text: a shared group's chunks go as one
            TextContent and the group's ``cuts``.
    """

    def __init__(
        self,
        conversation: str,
        meta_delay: float,
        *,
        deterministic: bool = False,
        clock: Callable[[], datetime] | None = None,
        text_first: bool = False,
        fold: bool = False,
        gather: bool = False,
        cuts: bool = False,
    ) -> None:
        self.conversation = conversation
        self.meta_delay = meta_delay
        self.text_first = text_first
        self.fold = fold
        self.gather = gather
        self.cuts = cuts and gather
        self._deterministic = deterministic
        self._clock = clock
        self._pending: list[Group] = []  # groups for the next ChatMessage, in wire order
        self._scanned = 0  # _pending[:_scanned] are metadata-only (gather: their due is known)
        # _pending holds only metadata (gather: groups none of which is due yet), to go by then
        self.meta_due: float | None = None
        self._seq = 0
        self.session_end = False  # the next ChatMessage ends the session
        # gather: the message whose stream the last chunk group on the wire was of
        self._stream_of_last_chunk: MessageKey | None = None

    def add(self, group: Group) -> None:
        """Queue a group for the next ChatMessage.

        Args:
            group: the group.
        """
        self._pending.append(group)

    def pack(self, now: float, force: bool = False) -> list[ChatMessage]:
        """The ChatMessage carrying the groups produced so far, if one is to go now.

        Metadata-only groups wait (in order) for the next ChatMessage that carries content, at
        most ``meta_delay`` seconds.

        Args:
            now: the current time, in seconds on a monotonic clock.
            force: what is queued goes now.
        """
        pending = self._pending
        if not pending:
            if not self.session_end:
                return []
        elif self.gather and not force:
            due = self.meta_due
            for g in pending[self._scanned :]:
                d = g.due
                if _carries_content(g):
                    d = now if d is None else d
                else:  # never sooner than today: metadata alone (or ending a stream) waits
                    # meta_delay
                    d = now + self.meta_delay if d is None else max(d, now + self.meta_delay)
                if due is None or d < due:
                    due = d
            self._scanned = len(pending)
            self.meta_due = due
            if due is not None and now < due:
                return []
        elif not force:
            i, n = self._scanned, len(pending)
            carries = _shows if self.text_first else _has_items
            while i < n and not carries(pending[i]):
                i += 1
            if i == n:
                self._scanned = n
                if self.text_first:
                    return []
                due = self.meta_due
                if due is None:
                    due = self.meta_due = now + self.meta_delay
                if now < due:
                    return []
        self._pending = []
        self._scanned = 0
        self.meta_due = None
        self._seq += 1
        return [self._chat_message(self._content(pending))]

    def _content(self, groups: list[Group]) -> list[Any]:
        if self.fold and len(groups) > 1:
            groups = fold_groups(groups)
        if self.gather:
            if len(groups) > 1:
                groups = _join_chunks(groups, MAX_CUTS if self.cuts else None)
            for group in groups:
                op = group.meta.get("op")
                if op == OP_FOLD:
                    relative_ids(group.meta)
                elif op == OP_CHUNK:
                    if self.cuts:
                        _cut(group)
                    self._follow_on(group)
        content: list[Any] = []
        first = True
        for group in groups:
            meta = group.meta
            if first:
                meta["seq"] = str(self._seq)
                meta["conversation"] = self.conversation
                first = False
            content.append(MetadataContent.construct(type="metadata", metadata=meta))
            content.extend(group.items)
        if self.session_end:
            self.session_end = False
            if first:
                content.append(
                    MetadataContent.construct(
                        type="metadata",
                        metadata={
                            TAG_KEY: PROTOCOL_VERSION,
                            "op": OP_END,
                            "seq": str(self._seq),
                            "conversation": self.conversation,
                        },
                    )
                )
            content.append(EndSessionContent.construct(type="end-session"))
        return content

    def _follow_on(self, group: Group) -> None:
        """A chunk group of the stream the previous chunk group on the wire was of names no ids
        (the decoder reads it as that stream's: :mod:`.tagged`)."""
        meta = group.meta
        if "stream_id" not in meta and group.owner == self._stream_of_last_chunk:
            meta.pop("message_id", None)
            meta.pop("thread_id", None)
        self._stream_of_last_chunk = group.owner

    def _chat_message(self, content: list[Any]) -> ChatMessage:
        if self._deterministic:
            msg_id = uuid4_from("msg", self.conversation, str(self._seq))
            ts = EPOCH
        else:
            msg_id = uuid.uuid4()
            ts = self._clock() if self._clock is not None else datetime.now(timezone.utc)
        return ChatMessage.construct(timestamp=ts, msg_id=msg_id, content=content)


def _join_chunks(groups: list[Group], most: int | None = None) -> list[Group]:
    """Each chunk group that follows a chunk group of the same message joins it: its text items
    go after the first group's (the decoder reads every TextContent after a chunk group as a
    chunk of that group's stream, so the Messages are the same); ``most``: the most text items
    a group takes (the next goes as a group of its own: a follow-on, naming no ids)."""
    out: list[Group] = []
    last: Group | None = None
    texts = 0  # the text items of ``last``
    for g in groups:
        if (
            last is not None
            and g.owner is not None
            and g.owner == last.owner
            and g.meta.get("op") == OP_CHUNK
            and last.meta.get("op") == OP_CHUNK
            and not g.opens
            and all(type(i) is TextContent for i in g.items)
            and (most is None or texts + len(g.items) <= most)
        ):
            last.items = [*last.items, *g.items]
            texts += len(g.items)
            continue
        out.append(g)
        last = g
        texts = sum(1 for i in g.items if type(i) is TextContent)
    return out


def _cut(group: Group) -> None:
    """A chunk group's chunks as one TextContent, their concatenation (what a plain reader
    reads), and its ``cuts`` their lengths in characters, which the decoder cuts it back by;
    a group of one chunk, or with an empty one (never cut: a length is never 0), as it is."""
    at = [n for n, i in enumerate(group.items) if type(i) is TextContent]
    if len(at) < 2:
        return
    texts = [group.items[n].text for n in at]
    if not all(texts) or at[-1] - at[0] != len(at) - 1:
        return
    joined = TextContent.construct(type="text", text="".join(texts))
    group.items = [*group.items[: at[0]], joined, *group.items[at[-1] + 1 :]]
    group.meta[CUTS_KEY] = ",".join(str(len(t)) for t in texts)


def _carries_content(group: Group) -> bool:
    """Whether a group carries content, not only metadata and stream ends (a lean asker's
    stream end waits as metadata does)."""
    return any(type(item) is not EndStreamContent for item in group.items)


def _has_items(group: Group) -> bool:
    return bool(group.items)


def _shows(group: Group) -> bool:
    """Whether a plain reader shows something of the group: text, or a resource."""
    for item in group.items:
        cls = type(item)
        if (cls is TextContent and item.text) or cls is ResourceContent:
            return True
    return False
