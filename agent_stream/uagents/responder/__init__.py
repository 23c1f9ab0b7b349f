"""The responder's room: answering questions with streamed replies.

Rules of this room:

- Each reply has one pump (:mod:`._pump`): the writer's Messages go through the chat encoder to a
  send queue and out one ChatMessage at a time, in order; every stream it started is ended,
  also on error, cancel, timeout and shutdown.
- What a peer can make us hold is capped per asker and in total (:mod:`._caps`): replies at
  once, refusals, question size; past a cap the asker gets a readable refusal, never silence.
- Open replies are indexed by (asker's signed address, conversation) (:mod:`._open_replies`);
  replay buffers and acknowledgements (:mod:`._delivery`) likewise.
- A conversation's memory is kept per (sender, session), bounded, in a store that may survive a
  restart (:mod:`._sessions`, :mod:`._memory`).
- An existing, non-streaming chat handler becomes a responder through :func:`wrap_chat_handler`.
"""

from __future__ import annotations

from agent_stream.uagents.responder._pump import PumpLimits
from agent_stream.uagents.responder._sessions import (
    MemorySessionStore,
    RedisSessionStore,
    SessionLimits,
    SessionStore,
    SqliteSessionStore,
    open_store,
)
from agent_stream.uagents.responder._wrap import wrap_chat_handler

__all__ = [
    "MemorySessionStore",
    "PumpLimits",
    "RedisSessionStore",
    "SessionLimits",
    "SessionStore",
    "SqliteSessionStore",
    "open_store",
    "wrap_chat_handler",
]
