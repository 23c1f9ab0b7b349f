"""A client's conversation as the question the chat protocol carries, and its history.

OpenAI-style clients send the whole conversation with every call. The gateway asks its last
user message as the question and sends the messages before it as the question's history (the
agent_stream tag's ``history``, see :mod:`agent_stream.conversation`): roles kept, a system or
developer message as a ``system`` turn, so the agent's responder gets them as
``request.history``. Messages without text (an assistant's bare tool calls) and roles a turn
cannot have (``tool``) are left out, and so is anything after the last user message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from agent_stream.conversation import ROLES, Role, Turn
from agent_stream.gateway.middleware import HTTPError

__all__ = ["Question", "from_aisdk", "from_openai", "from_turns", "text_of"]


@dataclass(frozen=True)
class Question:
    """What the gateway asks.

    Attributes:
        text: the last user message.
        history: the turns before it, oldest first.
    """

    text: str
    history: tuple[Turn, ...] = ()


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts (``text`` parts kept).

    Args:
        content: a message's content (a string, a list of parts, or anything else: no text).
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type") in ("text", "input_text"):
                t = part.get("text")
                if isinstance(t, str):
                    out.append(t)
            else:
                t = getattr(part, "text", None)
                if isinstance(t, str):
                    out.append(t)
        return "".join(out)
    return ""


def from_turns(turns: Iterable[tuple[str, str]]) -> Question:
    """(role, text) turns -> the question and its history.

    Args:
        turns: the (role, text) turns, oldest first (``developer`` is taken as ``system``).

    Raises:
        HTTPError: 400, there is no user turn.
    """
    named = (("system" if r == "developer" else r, t) for r, t in turns)
    kept = [(r, t) for r, t in named if t.strip() and r in ROLES]
    last = max((i for i, (r, _) in enumerate(kept) if r == "user"), default=None)
    if last is None:
        raise HTTPError(400, "no_question", "the conversation has no user message with text")
    return Question(kept[last][1], tuple(Turn(cast(Role, r), t) for r, t in kept[:last]))


def _question(messages: Any, turn: Callable[[dict[str, Any]], tuple[str, str]]) -> Question:
    """The question of a list of message objects, ``turn`` reading each one's (role, text)."""
    if not isinstance(messages, list) or not messages:
        raise HTTPError(400, "invalid_messages", "'messages' must be a non-empty list")
    turns = []
    for m in messages:
        if not isinstance(m, dict):
            raise HTTPError(400, "invalid_messages", "each message must be an object")
        turns.append(turn(m))
    return from_turns(turns)


def _openai_turn(m: dict[str, Any]) -> tuple[str, str]:
    """One OpenAI message's (role, text); a ``developer`` message is a system turn."""
    role = str(m.get("role") or "user")
    return ("system" if role == "developer" else role), text_of(m.get("content"))


def _aisdk_turn(m: dict[str, Any]) -> tuple[str, str]:
    """One AI SDK UI message's (role, text): its ``parts``, else its ``content``."""
    parts = m.get("parts")
    text = text_of(parts) if parts is not None else text_of(m.get("content"))
    return str(m.get("role") or "user"), text


def from_openai(messages: Any) -> Question:
    """OpenAI ``messages`` -> the question and its history.

    Args:
        messages: the request's ``messages``.

    Raises:
        HTTPError: 400, they are not messages, or there is no user message.
    """
    return _question(messages, _openai_turn)


def from_aisdk(messages: Any) -> Question:
    """AI SDK UI messages (``parts``) -> the question and its history.

    Args:
        messages: the request's ``messages``.

    Raises:
        HTTPError: 400, they are not messages, or there is no user message.
    """
    return _question(messages, _aisdk_turn)
