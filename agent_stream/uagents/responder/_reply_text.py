"""What a reply said: the text its responder wrote, as the agent's memory and telemetry keep it.

An agent remembers each answer (the text of its text messages) for the conversation's next
turn. Assembling every Message a responder writes to get it (reasoning tokens, tool calls,
progress, every block's and thread's lifecycle) cost a thousand replies at once about an eighth
of the agent's CPU while their tool calls ran; :class:`AnswerText` hands an
:class:`~agent_stream.assemble.Assembler` only what its ``text()`` reads: the chunks of text
messages. A message that becomes text by a type change counts from that change on (what it
held before, e.g. reasoning, is not part of the answer).
"""

from __future__ import annotations

from agent_stream.assemble import Assembler
from agent_stream.message import TEXT, Message

__all__ = ["AnswerText"]


class AnswerText:
    """The text of a reply's text messages, fed every Message its responder writes."""

    __slots__ = ("_assembler", "_text_keys")

    def __init__(self) -> None:
        self._assembler = Assembler()
        self._text_keys: set[tuple[str | None, str]] = set()

    def feed(self, msg: Message) -> None:
        """Take one Message the responder wrote (lifecycle events and other types are skipped).

        Args:
            msg: the Message.
        """
        if msg.type != TEXT:
            mid = msg.message_id
            if mid is not None and (msg.thread_id, mid) in self._text_keys:
                self._assembler.feed(msg)  # a text message changing type: no longer text
            return
        mid = msg.message_id
        if mid is None:
            self._assembler.feed(msg)  # a whole text of its own
            return
        key = (msg.thread_id, mid)
        if key not in self._text_keys:
            self._text_keys.add(key)
            if msg.type_change:  # text from here on: a new message to the assembler
                msg = msg.model_copy(update={"type_change": False})
        self._assembler.feed(msg)

    def text(self) -> str:
        """The text so far, every text message's content in order of first appearance."""
        return self._assembler.transcript.text()
