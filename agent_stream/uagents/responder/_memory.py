"""A StreamingChat's conversation memory: which history a request gets, and what is kept.

A request's history is the one its client sent in its tag (checked against
:class:`~agent_stream.conversation.HistoryLimits`; a bad one is ignored with a warning), else the
turns its (sender, session) has in the :class:`~agent_stream.uagents.SessionStore`.
When a reply is produced, its question and answer are appended there, unless the client keeps
the history itself or the question ended the session. A store that fails is logged and the
answer goes on: memory never stops a reply.
"""

from __future__ import annotations

import dataclasses
import logging

from agent_stream.adapters.chat.wire import ends_session, sent_history
from agent_stream.conversation import HistoryLimits, Turn, history_from_json
from agent_stream.uagents._ratelog import RateLimitedLog
from agent_stream.uagents._request import ChatRequest
from agent_stream.uagents.responder._pump import describe
from agent_stream.uagents.responder._sessions import SessionKey, SessionStore

__all__ = ["Memory"]

LOG = logging.getLogger("agent_stream.uagents")


class Memory:
    """Conversation memory over ``store``, for one StreamingChat.

    Args:
        store: where the turns are kept.
        limits: how much history is accepted from a client and given to a responder.
    """

    def __init__(self, store: SessionStore, limits: HistoryLimits) -> None:
        self.store = store
        self.limits = limits
        self._log = RateLimitedLog(LOG, 5, 10.0)

    async def with_history(self, request: ChatRequest) -> ChatRequest:
        """``request`` with its history: the one its client sent, else the session's stored
        turns (none without a session).

        Args:
            request: the question as it arrived.

        Returns:
            A copy of ``request`` with ``history`` set.
        """
        sent = sent_history(request.message)
        if sent is not None:
            try:
                turns = history_from_json(sent, self.limits)
            except ValueError as exc:
                self._log.warning("history sent by %s ignored: %s", request.sender[:80], exc)
            else:
                return dataclasses.replace(request, history=turns, client_history=True)
        if request.session is None:
            return request
        try:
            turns = await self.store.load((request.sender, request.session))
        except Exception as exc:  # a store that fails must not stop the answer
            LOG.warning("could not load session %s: %s", request.session, describe(exc))
            return request
        return dataclasses.replace(request, history=turns)

    async def remember(self, request: ChatRequest, answer: str) -> None:
        """Store the question and its answer as the session's next two turns (not when the
        client keeps the history itself, or the question ended the session).

        Args:
            request: the question.
            answer: the text of its answer.
        """
        if request.session is None or request.client_history or ends_session(request.message):
            return
        try:
            await self.store.append(
                (request.sender, request.session),
                (Turn("user", request.text), Turn("assistant", answer)),
            )
        except Exception as exc:
            LOG.warning("could not store a turn of session %s: %s", request.session, describe(exc))

    async def forget(self, key: SessionKey) -> None:
        """Forget a session its peer ended.

        Args:
            key: the session: (peer address, session id).
        """
        try:
            await self.store.forget(key)
        except Exception as exc:
            LOG.warning("could not forget session %s: %s", key[1], describe(exc))
