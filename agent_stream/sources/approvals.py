"""Runs paused for the asker: a tool call waiting for approval (or for an answer), resumed by
the conversation's next message.

A framework that pauses a run (pydantic-ai's ``DeferredToolRequests``, the Agents SDK's
interruptions) asks through a ``user_input`` message per waiting call; the reply ends completed
and the source keeps the paused run under the conversation: the asker's signed address and the
chat session together (:func:`conversation_key`), never the session alone, which travels in every
envelope and is no secret. The same asker's next message in that session answers (another sender
reusing the session id starts a conversation of its own and resumes nothing): for an approval, a
yes (``yes``, ``y``, ``ok``, ``approve``...) runs the call and anything else refuses it, the text
going to the model as the reason; for a question, the text is the answer.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypeVar

from agent_stream.message import USER_INPUT, Message
from agent_stream.recent import RecentMap

__all__ = ["PausedRuns", "asking", "conversation_key", "is_yes", "thread_id"]

V = TypeVar("V")

_YES = frozenset(
    {"y", "yes", "yeah", "yep", "ok", "okay", "sure", "approve", "approved", "allow", "go", "do it"}
)


def conversation_key(request: Any) -> str | None:
    """The key of a request's conversation: its sender and its chat session, or None when it has
    no session (nothing to resume).

    Args:
        request: the request (its ``sender``, the signed address, and ``session``).
    """
    session = getattr(request, "session", None)
    if not session:
        return None
    return f"{getattr(request, 'sender', None) or ''}\x1f{session}"


def thread_id(request: Any) -> str | None:
    """A framework thread id for a request's conversation (a LangGraph ``thread_id``): a hash
    of its sender and session, so two senders in one session id never share a thread; None
    without a session.

    Args:
        request: the request (its ``sender`` and ``session``).
    """
    key = conversation_key(request)
    return None if key is None else hashlib.sha256(key.encode()).hexdigest()[:32]


def is_yes(text: str) -> bool:
    """Whether an answer approves: ``yes``, ``ok``, ``approve``... (case and a trailing ``!`` or
    ``.`` ignored).

    Args:
        text: the asker's answer.
    """
    return text.strip().lower().rstrip("!. ") in _YES


def asking(
    call_id: str | None, name: str | None, arguments: Any, kind: str = "approval"
) -> Message:
    """The ``user_input`` message asking about one waiting tool call.

    Args:
        call_id: the tool call's id.
        name: the tool's name.
        arguments: its arguments (a JSON string or any JSON value).
        kind: ``approval`` (run it or not), ``question`` or ``external`` (its result is asked).
    """
    args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    if kind == "approval":
        content = f"Approve {name}({args})? Answer yes to run it; anything else refuses it."
    else:
        content = f"{name}({args}) waits for your answer."
    props = {"content": content, "kind": kind, "call_id": call_id, "name": name, "arguments": args}
    return Message(type=USER_INPUT, props={k: v for k, v in props.items() if v is not None})


class PausedRuns(RecentMap[str, V]):
    """Paused runs by conversation (:func:`conversation_key`), the oldest forgotten past
    ``limit``.

    Args:
        limit: the most paused runs kept.
    """

    __slots__ = ()

    def __init__(self, limit: int = 1024) -> None:
        super().__init__(limit)

    def take(self, key: str | None) -> V | None:
        """The run paused in conversation ``key`` (no longer kept), else None.

        Args:
            key: the conversation's :func:`conversation_key` (None: none, so no run).
        """
        return None if key is None else self.pop(key)
