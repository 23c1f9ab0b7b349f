"""The asker's room: asking an agent a question and reading its reply as it streams.

Rules of this room:

- A :class:`Reply` is one question's reply: its Messages in order, a live Transcript, and how it
  ended (completed, error, cancelled, lost); it always ends, also when the responder goes silent.
- Delivery is the asker's part of the protocol: acknowledge what arrives, ask for a gap once it
  is overdue, notice silence, resend the question until it is acknowledged, cancel at the source.
- A reply is found by (responder's signed address, conversation), never by an id alone.
- The send path is :mod:`agent_stream.uagents.transport`'s; nothing here posts envelopes itself.
"""

from __future__ import annotations

from agent_stream.uagents.asker._client import DeliveryError, Reply
from agent_stream.uagents.asker._delegation import delegate

__all__ = ["DeliveryError", "Reply", "delegate"]
