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

Each question also carries an interactive card (the chat protocol's own way to ask): a review
card with approve and reject buttons for an approval, a form card with one text field for a
question. The card's answer resumes the run like typed text (:func:`answer_of`): the approve
button runs the call, reject or cancel refuses it, a form's value is the answer.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any, TypeVar

from agent_stream.message import USER_INPUT, Message
from agent_stream.recent import RecentMap

__all__ = [
    "NOTHING_WAITS",
    "PausedRuns",
    "answer_of",
    "asking",
    "conversation_key",
    "is_yes",
    "question_card",
    "thread_id",
]

#: What an answer to a card gets when nothing in its conversation waits for one.
NOTHING_WAITS = "Nothing in this conversation is waiting for an answer; nothing was resumed."

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
    props = {
        "content": content,
        "kind": kind,
        "call_id": call_id,
        "name": name,
        "arguments": args,
        "card": _card(call_id, name, args, kind, content),
    }
    return Message(type=USER_INPUT, props={k: v for k, v in props.items() if v is not None})


def _card(
    call_id: str | None, name: str | None, args: str, kind: str, content: str
) -> dict[str, Any]:
    """The card asking it: a review card for an approval, a form card for a question."""
    seed = f"{call_id}\x1f{name}\x1f{args}".encode()
    card_id = str(uuid.UUID(bytes=hashlib.sha256(seed).digest()[:16], version=4))
    tool = name or "the tool"
    rows = [{"label": "Tool", "value": tool}, {"label": "Arguments", "value": args[:2000]}]
    if kind == "approval":
        payload: dict[str, Any] = {
            "title": f"Approve {tool}?",
            "summary_rows": rows,
            "approve_cta": {
                "label": "Approve",
                "selection": {_DECISION: _APPROVE},
                "primary": True,
            },
            "reject_cta": {"label": "Reject", "selection": {_DECISION: _REJECT}},
        }
        return {"kind": "review", "payload": payload, "card_id": card_id}
    payload = {
        "title": content[:500],
        "fields": [{"name": _ANSWER, "kind": "text", "label": "Your answer", "required": True}],
        "submit_cta": {"label": "Send", "selection": {_DECISION: _ANSWER}, "primary": True},
    }
    return {"kind": "form", "payload": payload, "card_id": card_id}


_DECISION, _APPROVE, _REJECT, _ANSWER = "decision", "approve", "reject", "answer"


def question_card(question: str) -> dict[str, Any]:
    """The form card asking a plain question (one text field), as a ``user_input``'s ``card``.

    Args:
        question: the question.
    """
    card: dict[str, Any] = _card(None, None, question, "question", question)
    return card


def _selection_in_text(text: str) -> dict[str, Any] | None:
    """A CTA's selection sent as a JSON object of plain values in a TextContent, as some chat
    clients still answer a card."""
    text = text.strip()
    if not text.startswith("{") or len(text) > 4096:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    plain = (str, int, float, bool, type(None))
    if not isinstance(value, dict) or not value:
        return None
    if not all(isinstance(v, plain) for v in value.values()):
        return None
    return value


def answer_of(request: Any, waiting: bool = True) -> str | None:
    """The asker's answer in a request: the text, or what its card response says (the approve
    button: ``yes``; reject: ``no``, or the reason it typed; cancelled: ``cancelled``; a form:
    its value). A CTA's selection sent as JSON text counts too, where something waits.

    Args:
        request: the request (its ``text`` and ``card_response``).
        waiting: a run waits for this answer (else a card response answers nothing: None).
    """
    response = getattr(request, "card_response", None)
    text = str(getattr(request, "text", "") or "")
    selection: dict[str, Any] | None = None
    if response is not None:
        if not waiting:
            return None
        if response.cancelled:
            return "cancelled"
        selection = dict(response.selection or {})
        text = response.text or text
    elif waiting:
        selection = _selection_in_text(text)
    if selection is None:
        return text
    decision = selection.pop(_DECISION, None)
    if decision == _APPROVE:
        return "yes"
    if decision == _REJECT:
        return text if text and not is_yes(text) else "no"
    values = [v for v in selection.values() if v is not None]
    if len(values) == 1:
        return str(values[0])
    if values:
        return json.dumps(selection, ensure_ascii=False)
    return text


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
