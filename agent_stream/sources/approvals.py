"""Runs paused for the asker: a tool call waiting for approval (or for an answer), resumed by
the session's next message.

A framework that pauses a run (pydantic-ai's ``DeferredToolRequests``, the Agents SDK's
interruptions) asks through a ``user_input`` message per waiting call; the reply ends completed
and the source keeps the paused run under the chat session. The asker's next message in that
session answers: for an approval, a yes (``yes``, ``y``, ``ok``, ``approve``...) runs the call and
anything else refuses it, the text going to the model as the reason; for a question, the text is
the answer.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from agent_stream.message import USER_INPUT, Message
from agent_stream.recent import RecentMap

__all__ = ["PausedRuns", "asking", "is_yes"]

V = TypeVar("V")

_YES = frozenset(
    {"y", "yes", "yeah", "yep", "ok", "okay", "sure", "approve", "approved", "allow", "go", "do it"}
)


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
    """Paused runs by chat session, the oldest forgotten past ``limit``.

    Args:
        limit: the most paused runs kept.
    """

    __slots__ = ()

    def __init__(self, limit: int = 1024) -> None:
        super().__init__(limit)

    def take(self, session: str | None) -> V | None:
        """The run paused in ``session`` (no longer kept), else None.

        Args:
            session: the chat session (None: none, so no run).
        """
        return None if session is None else self.pop(session)
