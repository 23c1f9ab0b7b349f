"""A client's conversation as the one question the chat protocol carries.

The chat protocol carries text, and an agent keeps its own memory per sender, so the gateway
asks one question per request: the last user turn. Earlier turns (and system prompts), when
there are any, go before it as a plain transcript the agent can read::

    Conversation so far:
    system: You are terse.
    user: Hi
    assistant: Hello!

    user: How do agents stream?
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from agent_stream.gateway.middleware import HTTPError

__all__ = ["from_aisdk", "from_openai", "from_turns", "text_of"]


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts (``text`` parts kept)."""
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


def from_turns(turns: Iterable[tuple[str, str]]) -> str:
    """(role, text) turns -> the question (HTTPError 400 when there is no user turn)."""
    kept = [(r, t) for r, t in turns if t.strip()]
    last = max((i for i, (r, _) in enumerate(kept) if r == "user"), default=None)
    if last is None:
        raise HTTPError(400, "no_question", "the conversation has no user message with text")
    question = kept[last][1]
    before = kept[:last]
    if not before:
        return question
    history = "\n".join(f"{r}: {t}" for r, t in before)
    return f"Conversation so far:\n{history}\n\nuser: {question}"


def _question(messages: Any, turn: Callable[[dict[str, Any]], tuple[str, str]]) -> str:
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


def from_openai(messages: Any) -> str:
    """OpenAI ``messages`` -> the question."""
    return _question(messages, _openai_turn)


def from_aisdk(messages: Any) -> str:
    """AI SDK UI messages (``parts``) -> the question."""
    return _question(messages, _aisdk_turn)
