"""AG-UI interrupts: what a paused reply asks, as ``Interrupt``s, and the answer a resume gives.
Pure.

A reply that pauses for its asker sends one ``user_input`` Message per question (an approval of
a tool call, a question, a LangGraph ``interrupt``), most with a ``card`` prop (see
:mod:`agent_stream.sources.approvals`). On AG-UI each is an ``Interrupt`` of the run's
``RUN_FINISHED`` (outcome ``interrupt``):

- ``id``: its card's ``card_id``, else its message id, else ``interrupt-N`` (unique in the run);
- ``reason``: :data:`TOOL_APPROVAL` for an approval (props ``kind: approval``), else
  :data:`INPUT_REQUIRED`;
- ``message``: its ``content``; ``toolCallId``: the tool call it is about (props ``call_id``),
  as the client saw it;
- ``responseSchema``: for a form card, a JSON Schema object with one property per field
  (text, email: string; number; select: an enum of its values; checkbox: boolean);
- ``metadata``: ``{"kind": ..., "card": ...}`` when the Message has them.

A resume entry (``{interruptId, status, payload?}``) is answered as the agent reads a typed
answer (:func:`answer_text`): an approval ``resolved`` approves (``yes``) unless its payload
says no (``false``, ``{"approved": false, "reason"?}``: ``no``, or ``Refused: <reason>`` for the
model to read); a text payload is the typed answer itself (a yes approves, anything else
refuses with that text as the reason); ``cancelled`` refuses (``no``); a question ``resolved``
answers with its payload (a string as it is; a form's values: its one value, or their JSON),
``cancelled`` answers ``cancelled`` (what a card's cancel says).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ag_ui.core import Interrupt

__all__ = [
    "INPUT_REQUIRED",
    "TOOL_APPROVAL",
    "BadResume",
    "answer_text",
    "interrupt_of",
    "response_schema",
]

TOOL_APPROVAL = "tool_approval"  # the reason of an interrupt asking to approve a tool call
INPUT_REQUIRED = "input_required"  # the reason of any other question
MAX_SCHEMA_FIELDS = 64  # a form's fields carried into a responseSchema, at most

_FIELD_TYPES = {"text": "string", "email": "string", "number": "number", "checkbox": "boolean"}


class BadResume(ValueError):
    """A resume entry that cannot be answered to the agent (a question resolved without an
    answer, a form's payload missing a required field...): the message says why."""


def response_schema(card: Any) -> dict[str, Any] | None:
    """The JSON Schema of the answer a form card asks for (None: not a form card).

    Args:
        card: a ``user_input``'s ``card`` prop (``kind``, ``payload``).
    """
    if not isinstance(card, Mapping) or card.get("kind") != "form":
        return None
    payload = card.get("payload")
    fields = payload.get("fields") if isinstance(payload, Mapping) else None
    if not isinstance(fields, list) or not fields:
        return None
    props: dict[str, Any] = {}
    required: list[str] = []
    for f in fields[:MAX_SCHEMA_FIELDS]:
        if not isinstance(f, Mapping) or not isinstance(f.get("name"), str):
            continue
        kind = f.get("kind")
        prop: dict[str, Any] = {"type": _FIELD_TYPES.get(str(kind), "string")}
        if kind == "email":
            prop["format"] = "email"
        elif kind == "select":
            options = f.get("options")
            options = options if isinstance(options, list) else []
            values = [o.get("value") for o in options if isinstance(o, Mapping)]
            prop["enum"] = [v for v in values if isinstance(v, str)]
        if isinstance(f.get("label"), str):
            prop["title"] = f["label"]
        props[f["name"]] = prop
        if f.get("required") is True:
            required.append(f["name"])
    if not props:
        return None
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def interrupt_of(
    props: Mapping[str, Any],
    interrupt_id: str,
    *,
    tool_call_id: str | None = None,
    subagent_run_id: str | None = None,
) -> Interrupt:
    """The Interrupt of one ``user_input`` Message (its props once whole).

    Args:
        props: the Message's props (``content``, ``kind``, ``card``...).
        interrupt_id: its id, unique in the run.
        tool_call_id: the tool call it is about, as the client saw it (None: none).
        subagent_run_id: the sub-agent that asks (None: the agent itself).
    """
    kind = props.get("kind")
    content = props.get("content")
    card = props.get("card")
    meta = {k: props[k] for k in ("kind", "card") if props.get(k) is not None}
    return Interrupt(
        id=interrupt_id,
        reason=TOOL_APPROVAL if kind == "approval" else INPUT_REQUIRED,
        message=content if isinstance(content, str) and content else None,
        tool_call_id=tool_call_id,
        response_schema=response_schema(card),
        subagent_run_id=subagent_run_id,
        metadata=meta or None,
    )


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _approval(status: str, payload: Any) -> str:
    """An approval's answer: ``yes``, else the refusal's reason (``no`` without one)."""
    if status == "cancelled" or payload is False:
        return "no"
    if payload is None or payload is True:
        return "yes"
    if isinstance(payload, str):
        return payload if payload.strip() else "yes"
    if isinstance(payload, Mapping):
        ok = payload.get("approved", payload.get("approve"))
        decision = payload.get("decision")
        reason = payload.get("reason")
        if ok is False or decision == "reject":  # "Refused: ..." never reads as a yes
            return f"Refused: {reason}" if isinstance(reason, str) and reason.strip() else "no"
        if ok is True or decision == "approve" or not payload:
            return "yes"
    raise BadResume(
        "an approval's payload is true, false, {approved: bool, reason?: string} or a text"
    )


def _answer(status: str, payload: Any, schema: Mapping[str, Any] | None) -> str:
    """A question's answer: its payload as text (``cancelled`` when cancelled)."""
    if status == "cancelled":
        return "cancelled"
    if payload is None:
        raise BadResume("a resolved question needs its answer as the payload")
    if not isinstance(payload, Mapping):
        return _json(payload)
    required = (schema or {}).get("required") or ()
    missing = [r for r in required if payload.get(r) in (None, "")]
    if missing:
        raise BadResume(f"the answer misses the required field(s): {', '.join(missing)}")
    values = [v for v in payload.values() if v is not None]
    if len(values) == 1:
        return _json(values[0])
    if not values:
        raise BadResume("a resolved question needs its answer as the payload")
    return json.dumps(dict(payload), ensure_ascii=False)


def answer_text(asked: Sequence[Interrupt], entries: Sequence[Any]) -> str:
    """The answer the agent is asked, for resume entries that answer every interrupt of
    ``asked`` (checked by the caller): the one entry's answer; for several, the approvals
    approve together (``yes`` only when each does, else the first refusal's reason) and the
    questions' distinct answers go one a line.

    Args:
        asked: the paused run's interrupts.
        entries: the resume entries (``interrupt_id``, ``status``, ``payload``), one each.

    Raises:
        BadResume: an entry's payload cannot be an answer to its interrupt.
    """
    by_id = {i.id: i for i in asked}
    approvals: list[str] = []
    answers: list[str] = []
    for e in entries:
        i = by_id[e.interrupt_id]
        status = str(e.status)
        if i.reason == TOOL_APPROVAL:
            approvals.append(_approval(status, e.payload))
        else:
            answers.append(_answer(status, e.payload, i.response_schema))
    if approvals and not answers:
        return next((a for a in approvals if a != "yes"), "yes")
    if approvals:
        answers.insert(0, next((a for a in approvals if a != "yes"), "yes"))
    return "\n".join(dict.fromkeys(answers))
