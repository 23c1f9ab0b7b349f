"""The inbox guard: no payload, whatever its bytes, can stop an agent from handling messages.

The upstream cause (uagents 0.26.1, uagents-core 0.4.12): ``Agent.handle_message`` only queues
``(schema_digest, sender, payload, session)``; the agent's one ``_process_message_queue`` task
later runs ``model_class.parse_raw(payload)`` inside ``except ValidationError`` -- pydantic
*v2*'s. The models (``uagents_core.models.Model``, the chat protocol's included) are pydantic
*v1*, so a v1 ValidationError, a TypeError (an unknown top-level key), a JSONDecodeError (a
payload that is not JSON) or anything else escapes and ends that task: from then on the agent
handles nothing, while HTTP still answers 200. Unsigned envelopes from ``user...`` addresses
reach the same code, so no key is needed to do it.

:func:`install` (idempotent, process-wide: every Agent of the process, every protocol on it)
wraps two uagents methods:

- ``Agent.handle_message`` (where an envelope's payload is queued): the payload is parsed with
  the model the agent registered for its digest first. One that fails is dropped and logged
  (one warning line naming sender, schema and reason; at most ``log_burst`` lines per
  ``log_period`` seconds, then a count of what was not logged), and the sender gets uagents'
  usual ``ErrorMessage("Message does not conform to expected schema: ...")`` (at most one per
  sender per ``error_interval`` seconds, ``max_error_replies`` in flight). A payload for a digest
  the agent has no model for is dropped the same way (uagents would log and drop it). While the
  inbox holds ``max_queued`` payloads or ``max_queued_bytes``, new ones are dropped.
- ``ASGIServer.__call__`` (the HTTP edge, :mod:`agent_stream.uagents.edge`): size and
  admission limits before uagents reads and verifies an envelope, and a 400 instead of a 500
  with a traceback when uagents' envelope handling fails.

Tested against uagents >=0.26,<0.27 (the range pinned in pyproject.toml). Should a later
uagents catch every parse error itself, the guard stays harmless: valid payloads pass unchanged
(parsed once more), invalid ones are answered the way uagents answers them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

from uagents import Agent
from uagents.asgi import ASGIServer
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    ResourceContent,
    StartSessionContent,
    StartStreamContent,
    TextContent,
)
from uagents_core.models import ErrorMessage

from agent_stream.uagents.ratelog import RateLimitedLog

__all__ = ["GuardSettings", "RateLimitedLog", "install", "installed", "reset", "settings",
           "stats", "uninstall"]

LOG = logging.getLogger("agent_stream.uagents.guard")


@dataclass
class GuardSettings:
    """The guard's limits (module-wide: :data:`settings`)."""

    max_envelope_bytes: int = 4 * 1024 * 1024  # an HTTP body over this: 413
    new_senders_per_second: float = 25.0  # signed envelopes from senders not verified lately
    sender_envelopes_per_second: float = 200.0  # signed envelopes of one verified sender
    unsigned_per_second: float = 50.0  # unsigned envelopes, all senders together
    max_queued: int = 1024  # payloads waiting in one agent's inbox
    max_queued_bytes: int = 32 * 1024 * 1024  # their bytes
    max_content_items: int = 1024  # content items in one ChatMessage
    error_interval: float = 1.0  # at most one ErrorMessage per sender per this many seconds
    error_rate: float = 20.0  # ErrorMessages per second in all (beyond: not sent)
    max_error_replies: int = 32  # ErrorMessages being sent at once (beyond: not sent)
    error_timeout: int = 5  # seconds to deliver one ErrorMessage
    log_burst: int = 5  # warning lines per log_period...
    log_period: float = 10.0  # ...seconds; the rest are counted


settings = GuardSettings()
stats: dict[str, int] = {"dropped": 0, "error_replies": 0, "http_refused": 0}


_log = RateLimitedLog(LOG, settings.log_burst, settings.log_period)
_originals: dict[str, Any] = {}
_last_error_reply: dict[str, float] = {}
_error_budget = [0.0, 0.0]  # tokens, when last refilled
_error_tasks: set[asyncio.Task[Any]] = set()


def short(value: object, limit: int = 160) -> str:
    text = " ".join(str(value).split())  # one line, whatever the peer put in it
    return text if len(text) <= limit else text[:limit] + "..."


def _inbox_full(agent: Any, size: int) -> bool:
    queue = getattr(agent, "_message_queue", None)
    if not isinstance(queue, asyncio.Queue):
        return False
    n = queue.qsize()
    if n >= settings.max_queued:
        return True
    if n < 8:  # cheap path: a few payloads can never add up to the bytes cap
        return size > settings.max_queued_bytes
    held = sum(len(item[2]) for item in getattr(queue, "_queue", ()) if len(item) > 2)
    return held + size > settings.max_queued_bytes


_CHAT_ITEMS: dict[Any, Any] = {
    "text": TextContent, "resource": ResourceContent, "metadata": MetadataContent,
    "start-session": StartSessionContent, "end-session": EndSessionContent,
    "start-stream": StartStreamContent, "end-stream": EndStreamContent,
}
_CHAT_FIELDS = frozenset(("timestamp", "msg_id", "content"))


def _chat_shape(data: Any) -> str | None:
    """A ChatMessage checked item by item against the item's own model: pydantic v1 tries
    every member of the content union on a bad item (~0.4 ms each), this fails at the first."""
    if not isinstance(data, dict):
        return "not a JSON object"
    extra = set(data) - _CHAT_FIELDS
    if extra:
        return f"unknown field {short(sorted(map(str, extra))[0], 40)!r}"
    content = data.get("content")
    if not isinstance(content, list):
        return "content missing or not a list"
    if len(content) > settings.max_content_items:
        return f"{len(content)} content items (at most {settings.max_content_items})"
    for i, item in enumerate(content):
        model = _CHAT_ITEMS.get(item.get("type")) if isinstance(item, dict) else None
        if model is None:
            return f"content[{i}] is not a known content item"
        try:
            model.parse_obj(item)
        except Exception as exc:
            return f"content[{i}]: {type(exc).__name__}: {short(exc)}"
    return None


def check(agent: Any, schema_digest: str, message: Any) -> str | None:
    """Why ``agent`` must not queue ``message`` for ``schema_digest`` (None: it may)."""
    models: MutableMapping[str, Any] = getattr(agent, "_models", {})
    model = models.get(schema_digest)
    if model is None:
        return "no model for this schema digest"
    if not isinstance(message, str):
        return "payload is not text"
    if _inbox_full(agent, len(message)):
        return "inbox full"
    try:
        data = json.loads(message)
        reason = _chat_shape(data) if model is ChatMessage else None
        if reason is None:
            model.parse_obj(data)  # what uagents will do with it
    except Exception as exc:  # pydantic v1 or v2 errors, TypeError, ValueError, anything
        return f"{type(exc).__name__}: {short(exc)}"
    return reason


def _model_name(agent: Any, schema_digest: str) -> str:
    model = getattr(agent, "_models", {}).get(schema_digest)
    return f"{model.__name__} " if model is not None else ""


async def _guarded_handle_message(self: Any, sender: Any, schema_digest: Any, message: Any,
                                  session: Any) -> None:
    reason = check(self, schema_digest, message)
    if reason is None:
        await _originals["handle_message"](self, sender, schema_digest, message, session)
        return
    stats["dropped"] += 1
    _log.burst, _log.period = settings.log_burst, settings.log_period
    _log.warning("%s: dropped a payload from %s (schema %s%s): %s", short(self.address, 20),
                 short(sender, 80), _model_name(self, schema_digest), short(schema_digest, 24),
                 reason)
    if reason != "inbox full" and reason != "no model for this schema digest":
        _reply_error(self, str(sender), reason)


def _reply_error(agent: Any, sender: str, reason: str) -> None:
    """uagents' usual answer to a payload that does not parse, rate-limited per sender."""
    now = time.monotonic()
    last = _last_error_reply.get(sender)
    if last is not None and now - last < settings.error_interval:
        return
    if len(_error_tasks) >= settings.max_error_replies or not _spend(now):
        return
    if len(_last_error_reply) > 4096:
        _last_error_reply.clear()
    _last_error_reply[sender] = now
    build = getattr(agent, "_build_context", None)
    if build is None:
        return

    async def send() -> None:
        ctx = build()
        await ctx.send(sender, ErrorMessage(
            error=f"Message does not conform to expected schema: {reason}"),
            timeout=settings.error_timeout)
        stats["error_replies"] += 1

    task = asyncio.ensure_future(send())
    _error_tasks.add(task)
    task.add_done_callback(_done)


def _spend(now: float) -> bool:
    """Take one ErrorMessage from the budget (``error_rate`` per second, a second's burst)."""
    tokens, then = _error_budget
    rate = settings.error_rate
    tokens = min(rate, tokens + (now - then) * rate)
    if tokens < 1.0:
        _error_budget[:] = [tokens, now]
        return False
    _error_budget[:] = [tokens - 1.0, now]
    return True


def _done(task: asyncio.Task[Any]) -> None:
    _error_tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        _log.warning("could not send an ErrorMessage: %s", short(task.exception()))


# -- installing ------------------------------------------------------------------------------------
def install() -> None:
    """Guard every Agent of this process (idempotent; see the module doc)."""
    if _originals:
        return
    from agent_stream.uagents.edge import guarded_asgi_call

    _originals["handle_message"] = Agent.handle_message
    _originals["asgi_call"] = ASGIServer.__call__
    Agent.handle_message = _guarded_handle_message
    ASGIServer.__call__ = guarded_asgi_call


def uninstall() -> None:
    """Remove the guard (for tests). Idempotent."""
    if not _originals:
        return
    Agent.handle_message = _originals.pop("handle_message")
    ASGIServer.__call__ = _originals.pop("asgi_call")


def reset() -> None:
    """Forget the rate limits' state: who was answered when, what was logged, which senders
    were verified (for tests)."""
    global _log
    from agent_stream.uagents import edge

    _log = RateLimitedLog(LOG, settings.log_burst, settings.log_period)
    _last_error_reply.clear()
    _error_budget[:] = [0.0, 0.0]
    edge.reset()


def original(name: str) -> Any:
    """The uagents function the guard replaced (``handle_message``, ``asgi_call``)."""
    return _originals[name]


def installed() -> bool:
    """Whether the guard is in place."""
    return bool(_originals)
