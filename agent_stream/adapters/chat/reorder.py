"""The decoder's ordering of tagged ChatMessages: a reorder window per conversation, gaps, and
the ledger of everything held back.

Tagged ChatMessages of a conversation are numbered 1, 2, ... (``seq``; a coalesced one covers
``seq``..``seq_last``). One that arrives early is held back until the missing ones arrive, for
at most ``gap_timeout`` seconds or ``reorder_window`` messages; then the gap is reported and
decoding goes on (the reply is then not whole: ``skipped``). One that arrives after its gap
was reported is dropped, and so is one
numbered more than ``max_seq_ahead`` past the expected one (it does not become the new base).
Held-back ChatMessages of all conversations share a total count and size: past them the oldest
is dropped (a gap, reported in its turn).
"""

from __future__ import annotations

from collections.abc import Callable

from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat.limits import WarningQueue
from agent_stream.adapters.chat.sizes import estimated_size

__all__ = ["HeldLedger", "ReorderWindow", "seq_number"]

Decode = Callable[[ChatMessage], None]


def seq_number(text: str | None) -> int | None:
    """A ``seq`` value as a number (None unless 1 to 18 ASCII digits).

    Args:
        text: the tag's ``seq`` value (None: absent).
    """
    if text is None or not text.isascii() or not text.isdecimal() or len(text) > 18:
        return None
    return int(text)


class HeldLedger:
    """Every held-back ChatMessage of every conversation, oldest first, with their sizes.

    Args:
        max_count: the most held-back ChatMessages in all.
        max_bytes: the most bytes (estimated) they may take in all.
    """

    __slots__ = ("bytes", "entries", "max_bytes", "max_count")

    def __init__(self, max_count: int, max_bytes: int) -> None:
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.entries: dict[tuple[ReorderWindow, int], int] = {}  # (window, seq): cost
        self.bytes = 0

    def add(self, window: ReorderWindow, seq: int, cost: int) -> None:
        """Note that a window holds a ChatMessage.

        Args:
            window: the conversation's window.
            seq: the ChatMessage's sequence number.
            cost: its estimated size, in bytes.
        """
        self.entries[(window, seq)] = cost
        self.bytes += cost

    def remove(self, window: ReorderWindow, seq: int) -> None:
        """Note that a window no longer holds a ChatMessage.

        Args:
            window: the conversation's window.
            seq: the ChatMessage's sequence number.
        """
        self.bytes -= self.entries.pop((window, seq), 0)

    def shed(self, warnings: WarningQueue) -> None:
        """Drop the oldest held-back ChatMessages until both totals are kept.

        Args:
            warnings: where each drop is reported.
        """
        while self.entries and (len(self.entries) > self.max_count or self.bytes > self.max_bytes):
            window, seq = next(iter(self.entries))
            window.drop(seq)
            warnings.add(
                "held_dropped",
                f"more held-back ChatMessages than max_held_total="
                f"{self.max_count} or max_held_bytes={self.max_bytes}; ChatMessage "
                f"{seq} of conversation {window.conversation!r} was dropped",
            )


class ReorderWindow:
    """Puts one conversation's tagged ChatMessages back in order for ``decode``.

    Args:
        conversation: the conversation's id.
        ledger: the decoder's ledger of held-back ChatMessages.
    """

    __slots__ = (
        "conversation",
        "expected",
        "gap_since",
        "held",
        "high",
        "high_since",
        "ledger",
        "skipped",
    )

    def __init__(self, conversation: str, ledger: HeldLedger) -> None:
        self.conversation = conversation
        self.ledger = ledger
        self.expected = 1
        self.held: dict[int, tuple[ChatMessage, int]] = {}  # by seq: (chat, last seq covered)
        self.gap_since: float | None = None  # when the oldest gap opened
        self.skipped = 0  # gaps given up (the reply is not whole)
        self.high = 0  # the last seq the sender says it sent (keepalive)
        self.high_since = 0.0  # when ``high`` was learnt

    def announce(self, high: int, now: float) -> None:
        """The sender says it sent up to ``high`` (a keepalive): a missing tail is a gap.

        Args:
            high: the highest sequence number sent.
            now: the current time, in seconds on a monotonic clock.
        """
        if high > self.high:
            self.high = high
            self.high_since = now

    def missing(self) -> tuple[int, int | None, float] | None:
        """The first missing range ``(lo, hi, since)`` (None: nothing known to be missing)."""
        if self.held:
            assert self.gap_since is not None
            return self.expected, min(self.held) - 1, self.gap_since
        if self.high >= self.expected:
            return self.expected, self.high, self.high_since
        return None

    def offer(
        self,
        chat: ChatMessage,
        seq: int,
        last: int,
        now: float,
        window: int,
        max_ahead: int,
        decode: Decode,
        warnings: WarningQueue,
    ) -> None:
        """Decode a ChatMessage in its turn, with any it releases.

        Args:
            chat: the ChatMessage.
            seq: the first sequence number it covers.
            last: the last one it covers (``seq_last``).
            now: the current time, in seconds on a monotonic clock.
            window: how many ChatMessages may be held back.
            max_ahead: how far ahead of the expected one a sequence number may be (further:
                dropped, warned).
            decode: decodes one ChatMessage, in its turn.
            warnings: where gaps and drops are reported.
        """
        if seq < self.expected:
            warnings.add(
                "late_chat_message",
                f"ChatMessage {seq} of conversation "
                f"{self.conversation!r} arrived after its gap was reported; dropped",
            )
            return
        if seq - self.expected > max_ahead:
            warnings.add(
                "seq_out_of_window",
                f"ChatMessage {seq} of conversation "
                f"{self.conversation!r} is more than max_seq_ahead={max_ahead} past "
                f"the expected {self.expected}; dropped",
            )
            return
        if seq > self.expected:
            if seq in self.held:
                self.ledger.remove(self, seq)
            self.held[seq] = (chat, last)
            self.ledger.add(self, seq, estimated_size(chat))  # held: counted
            if self.gap_since is None:
                self.gap_since = now
            # Held-back count, not distance: one coalesced ChatMessage may cover many seqs.
            if len(self.held) > window:
                self.skip_gap(now, decode, warnings)
            self.ledger.shed(warnings)
            return
        decode(chat)
        self.expected = last + 1
        self.release(now, decode, warnings)

    def release(self, now: float, decode: Decode, warnings: WarningQueue) -> None:
        """Decode the held-back ChatMessages that are next in turn.

        Args:
            now: the current time, in seconds on a monotonic clock.
            decode: decodes one ChatMessage, in its turn.
            warnings: where gaps and drops are reported.
        """
        held = self.held
        while self.expected in held:
            seq = self.expected
            chat, last = held.pop(seq)
            self.ledger.remove(self, seq)
            decode(chat)
            self.expected = last + 1
        for stale in [k for k in held if k < self.expected]:  # covered by a coalesced one
            self.drop(stale)
            warnings.add(
                "late_chat_message",
                f"ChatMessage {stale} of conversation "
                f"{self.conversation!r} was already covered; dropped",
            )
        self.gap_since = now if held else None

    def skip_gap(self, now: float, decode: Decode, warnings: WarningQueue) -> None:
        """Report the oldest gap and go on from the first held-back ChatMessage.

        Args:
            now: the current time, in seconds on a monotonic clock.
            decode: decodes one ChatMessage, in its turn.
            warnings: where gaps and drops are reported.
        """
        if not self.held:
            self.gap_since = None
            return
        first = min(self.held)
        expected = self.expected
        missing = f"{expected}" if first - 1 == expected else f"{expected}..{first - 1}"
        warnings.add(
            "gap",
            f"ChatMessage(s) {missing} of conversation {self.conversation!r} "
            "never arrived; going on without them",
        )
        self.skipped += 1
        self.expected = first
        self.release(now, decode, warnings)

    def drop(self, seq: int) -> None:
        """Forget a held-back ChatMessage.

        Args:
            seq: its sequence number.
        """
        self.held.pop(seq, None)
        self.ledger.remove(self, seq)
        if not self.held:
            self.gap_since = None

    def clear(self) -> None:
        """Forget every held-back ChatMessage."""
        for seq in list(self.held):
            self.drop(seq)
