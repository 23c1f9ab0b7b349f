"""The caps on what peers can make a streaming agent hold: replies at once, refusals at once,
question size (see the doc of :mod:`agent_stream.uagents._streaming_chat`). ``ReplyCaps``
counts; the plugin asks it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic.v1 import BaseModel
from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat.wire import HISTORY_KEY, sent_history
from agent_stream.uagents._request import ChatRequest
from agent_stream.uagents.responder._pump import Refused

if TYPE_CHECKING:
    from agent_stream.uagents._settings import ReplyLimits

__all__ = ["ReplyCaps", "question_bytes"]


class ReplyCaps:
    """Replies running per peer and in all, and error replies being sent, against their caps.

    Args:
        limits: the caps (``ChatSettings.caps``).
    """

    def __init__(self, limits: ReplyLimits) -> None:
        self.limits = limits
        self.max_replies_per_sender = limits.max_replies_per_sender
        self.max_replies = limits.max_replies
        self.max_question_bytes = limits.max_question_bytes
        self.max_refusals = limits.max_refusals
        self.replies: dict[str, int] = {}  # peer -> replies its responder is producing
        self.refusing: dict[str, int] = {}  # peer -> error replies being sent to it

    def over_cap(self, request: ChatRequest) -> Refused | None:
        """Why ``request`` is not given to the responder (None: it is).

        Args:
            request: the question, before its responder runs.

        Returns:
            The refusal to send the asker, or None.
        """
        limit = self.max_question_bytes
        if limit is not None:
            size = question_bytes(request.message)
            if size > limit:
                return Refused(
                    f"The question is {size} bytes; this agent answers questions of "
                    f"at most {limit} bytes.",
                    "question_too_large",
                )
        mine = self.limits.trusted.get(request.sender, self.max_replies_per_sender)
        if self.replies.get(request.sender, 0) >= mine:
            return Refused(
                f"Too many questions at once: this agent answers at most "
                f"{mine} of yours at a time; ask again when "
                "a reply has ended.",
                "busy",
            )
        if sum(self.replies.values()) >= self.max_replies:
            return Refused(
                f"This agent is answering as many questions as it can "
                f"({self.max_replies}); ask again shortly.",
                "busy",
            )
        return None

    def may_refuse(self, sender: str) -> bool:
        """Whether an error reply may go to ``sender`` now (counted when it may).

        Args:
            sender: the peer to send the error reply to.
        """
        mine = self.refusing.get(sender, 0)
        share = (
            self.max_refusals if sender in self.limits.trusted else max(1, self.max_refusals // 4)
        )
        if mine >= share or sum(self.refusing.values()) >= self.max_refusals:
            return False
        self.refusing[sender] = mine + 1
        return True

    def refused(self, sender: str) -> None:
        """An error reply to ``sender`` is over.

        Args:
            sender: the peer the error reply went to.
        """
        _release(self.refusing, sender)

    def took(self, sender: str) -> None:
        """A reply to ``sender`` started.

        Args:
            sender: the peer being answered.
        """
        self.replies[sender] = self.replies.get(sender, 0) + 1

    def produced(self, sender: str) -> None:
        """A responder answering ``sender`` is done: its slot is free.

        Args:
            sender: the peer that was answered.
        """
        _release(self.replies, sender)


def _release(counts: dict[str, int], key: str) -> None:
    left = counts.get(key, 1) - 1
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)


def question_bytes(msg: ChatMessage) -> int:
    """The size of a question: the UTF-8 bytes of the strings its content items carry (text,
    metadata keys and values, resource ids, URIs and metadata; not the item types). The
    history an asker sends in its tag is not counted: it has its own cap (HistoryLimits).

    Args:
        msg: the question.
    """
    total = 0
    for item in msg.content:
        # its fields as they are (``item.dict()`` copied them all first: a tenth of an
        # agent's time per question); nested models are measured field by field
        total += sum(_size(v) for k, v in vars(item).items() if k != "type")
    history = sent_history(msg)
    if history is not None:
        total -= _size(HISTORY_KEY) + _size(history)
    return total


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, dict):
        return sum(_size(k) + _size(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sum(_size(v) for v in value)
    if isinstance(value, BaseModel):
        return _size(vars(value))
    return len(str(value)) if value is not None else 0
