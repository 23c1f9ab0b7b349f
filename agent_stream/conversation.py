"""Turns of a conversation, and the history a client sends with its question.

A conversation is a sequence of :class:`Turn` objects: a user's question, the assistant's answer
as the asker was given it, and (only in history a client sent) system instructions. The history
travels in a question's agent_stream tags as JSON, ``[{"role": "user", "text": "..."}, ...]``;
:func:`history_from_json` reads it back under caps, refusing anything else with a ValueError
that says why. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast

from agent_stream import jsontext

__all__ = ["ROLES", "HistoryLimits", "Role", "Turn", "history_from_json", "history_to_json"]

Role = Literal["user", "assistant", "system"]
ROLES: frozenset[str] = frozenset(("user", "assistant", "system"))


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier turn of a conversation.

    Attributes:
        role: ``"user"`` (a question), ``"assistant"`` (an answer) or ``"system"`` (only in
            history a client sent).
        text: the question, or the answer as the asker was given it (what a plain peer read).
    """

    role: Role
    text: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"a turn's role is user, assistant or system, not {self.role!r}")
        if not isinstance(self.text, str):
            raise ValueError(f"a turn's text is a string, not {type(self.text).__name__}")

    def size(self) -> int:
        """The UTF-8 bytes of its text."""
        return len(self.text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class HistoryLimits:
    """Caps on the history a client sends with a question (not counted in the question's size).

    Attributes:
        max_turns: turns in it.
        max_bytes: its JSON, in bytes.
    """

    max_turns: int = 256
    max_bytes: int = 256 * 1024


def history_to_json(turns: Iterable[Turn]) -> str:
    """Turns as the JSON a question's tags carry.

    Args:
        turns: the conversation's turns, oldest first.
    """
    return json.dumps(
        [{"role": t.role, "text": t.text} for t in turns], ensure_ascii=False, separators=(",", ":")
    )


def history_from_json(raw: Any, limits: HistoryLimits | None = None) -> tuple[Turn, ...]:
    """The turns in a question's history tag.

    Args:
        raw: the tag's JSON text.
        limits: the bounds it must keep within (None: the defaults of HistoryLimits).

    Raises:
        ValueError: it is not a list of ``{"role", "text"}`` objects within ``limits``; the
            error says why.
    """
    limits = limits or HistoryLimits()
    if not isinstance(raw, str):
        raise ValueError("history is not a JSON string")
    if len(raw.encode("utf-8", "surrogatepass")) > limits.max_bytes:
        raise ValueError(f"history over {limits.max_bytes} bytes")
    try:
        data = jsontext.loads(raw)
    except ValueError as exc:
        raise ValueError(f"history is not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise ValueError("history is not a list")
    if len(data) > limits.max_turns:
        raise ValueError(f"history has {len(data)} turns (at most {limits.max_turns})")
    turns: list[Turn] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or set(item) != {"role", "text"}:
            raise ValueError(f"history[{i}] is not an object with exactly role and text")
        role, text = item["role"], item["text"]
        if role not in ROLES or not isinstance(text, str):
            raise ValueError(
                f"history[{i}]: role must be user, assistant or system and text a string"
            )
        turns.append(Turn(cast(Role, role), text))
    return tuple(turns)
