"""The OpenAI wire's objects: ``chat.completion.chunk``s, the usage chunk, the error object and
``[DONE]``, each with its JSON (``json()``) and its JSON value (``data()``)."""

from __future__ import annotations

import json
from typing import Any

from agent_stream.adapters.framing import dumps, sse

__all__ = [
    "DONE",
    "FINISH_REASONS",
    "Chunk",
    "Done",
    "ErrorObject",
    "Head",
    "OpenAIItem",
    "UsageChunk",
    "created_from",
    "frame_sse",
    "known_usage",
]

FINISH_REASONS = frozenset(("stop", "length", "tool_calls", "content_filter", "function_call"))


class Head:
    """What every chunk of one completion repeats: id, created, model.

    Args:
        id: the completion's id (``chatcmpl-…``).
        created: its creation time, Unix seconds.
        model: the model's name.
    """

    __slots__ = ("created", "id", "model", "prefix")

    def __init__(self, id: str, created: int, model: str) -> None:
        self.id = id
        self.created = created
        self.model = model
        head = {"id": id, "object": "chat.completion.chunk", "created": created, "model": model}
        self.prefix = dumps(head)[:-1] + ',"choices":[{"index":0,"delta":'

    def fields(self) -> dict[str, Any]:
        """The fields every chunk repeats, as a JSON object."""
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }


class Chunk:
    """One ``chat.completion.chunk`` with choice 0: a delta, and the finish_reason or None.

    Args:
        head: what every chunk of the completion repeats.
        delta: choice 0's delta.
        finish_reason: choice 0's finish_reason (None: not finished).
    """

    __slots__ = ("delta", "finish_reason", "head")

    def __init__(self, head: Head, delta: dict[str, Any], finish_reason: str | None = None) -> None:
        self.head = head
        self.delta = delta
        self.finish_reason = finish_reason

    def data(self) -> dict[str, Any]:
        """The chunk as a JSON object."""
        return {
            **self.head.fields(),
            "choices": [
                {
                    "index": 0,
                    "delta": self.delta,
                    "logprobs": None,
                    "finish_reason": self.finish_reason,
                }
            ],
        }

    def json(self) -> str:
        """The chunk's JSON text."""
        f = self.finish_reason
        tail = (
            ',"logprobs":null,"finish_reason":null}]}'
            if f is None
            else ',"logprobs":null,"finish_reason":' + json.dumps(f) + "}]}"
        )
        return self.head.prefix + dumps(self.delta) + tail


class UsageChunk:
    """The last chunk with ``include_usage``: no choices, the usage.

    Args:
        head: what every chunk of the completion repeats.
        usage: the token counts.
    """

    __slots__ = ("head", "usage")

    def __init__(self, head: Head, usage: dict[str, Any]) -> None:
        self.head = head
        self.usage = usage

    def data(self) -> dict[str, Any]:
        """The chunk as a JSON object."""
        return {**self.head.fields(), "choices": [], "usage": self.usage}

    def json(self) -> str:
        """The chunk's JSON text."""
        return dumps(self.data())


class ErrorObject:
    """``{"error": {"message", "code"}}``: the stream failed (the openai package raises it).

    Args:
        message: what went wrong.
        code: a machine-readable code (None: none).
    """

    __slots__ = ("code", "message")

    def __init__(self, message: str, code: str | None) -> None:
        self.message = message
        self.code = code

    def data(self) -> dict[str, Any]:
        """The error as a JSON object."""
        return {"error": {"message": self.message, "code": self.code}}

    def json(self) -> str:
        """The error's JSON text."""
        return dumps(self.data())


class Done:
    """``[DONE]``, the end of the SSE stream."""

    __slots__ = ()

    def data(self) -> str:
        """``[DONE]``."""
        return "[DONE]"

    def json(self) -> str:
        """``[DONE]``."""
        return "[DONE]"


DONE = Done()
OpenAIItem = Chunk | UsageChunk | ErrorObject | Done


def created_from(ts: Any) -> int | None:
    """``created`` (Unix seconds) from a timestamp in s, ms, us or ns; None when unusable.

    Args:
        ts: the timestamp, of any type (only a positive number is usable).
    """
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or ts <= 0:
        return None
    if ts > 1e17:  # ns
        return int(ts // 1_000_000_000)
    if ts > 1e14:  # us
        return int(ts // 1_000_000)
    if ts > 1e11:  # ms
        return int(ts // 1000)
    return int(ts)


_TOKENS = ("prompt_tokens", "completion_tokens", "total_tokens")


def known_usage(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    """The usage to send: the stream's own, the third count worked out from the other two.

    Args:
        usage: the stream's usage (None: none).

    Returns:
        The usage, None when it is not known (no usage chunk is better than invented zeros).
    """
    if usage is None:
        return None
    p, c, t = (
        usage.get(k)
        if isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool)
        else None
        for k in _TOKENS
    )
    if t is None and p is not None and c is not None:
        t = p + c
    elif p is None and c is not None and t is not None:
        p = t - c
    elif c is None and p is not None and t is not None:
        c = t - p
    if p is None or c is None or t is None:
        return None
    return {**usage, "prompt_tokens": p, "completion_tokens": c, "total_tokens": t}


def frame_sse(item: OpenAIItem) -> str:
    """One item as the Server-Sent Event an OpenAI client reads.

    Args:
        item: a chunk, the usage chunk, an error object or ``DONE``.
    """
    return sse(item.json())
