"""What agent_stream measures of a reply, without OpenTelemetry: the metrics side of the hooks.

:class:`ReplyObserver` follows one reply a responder streams (it sees every Message the responder
writes, through the pump's ``tap``) and records its figures once it is over; :func:`ask_ended`
records an asker's. :mod:`.spans` extends both with spans when tracing is on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from agent_stream.jsontext import utf8_size
from agent_stream.telemetry.metrics import METRICS

__all__ = ["ReplyObserver", "ask_ended", "fleet_ended_lost", "refused"]

RESPONDER = "responder"
ASKER = "asker"


class ReplyObserver:
    """One reply being streamed by this agent: time to first text, chunk sizes, usage.

    Args:
        agent: the answering agent's name.
    """

    __slots__ = ("agent", "chunk_bytes", "chunks", "first_text", "started", "usage")

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.started = time.monotonic()
        self.first_text: float | None = None
        self.chunks = 0
        self.chunk_bytes = 0
        self.usage: dict[str, Any] | None = None
        METRICS.add("agent_stream_replies_in_flight", 1.0)

    def tap(self, msg: Any) -> None:
        """One Message the responder wrote (the pump's ``tap``).

        Args:
            msg: the Message.
        """
        kind = msg.type
        if kind == "text":
            content = (msg.props or {}).get("content")
            if isinstance(content, str) and content:
                if self.first_text is None:
                    self.first_text = time.monotonic()
                self.chunks += 1
                self.chunk_bytes += utf8_size(content)
        elif kind == "event":
            self.event(msg)

    def event(self, msg: Any) -> None:
        """A lifecycle event: the stream_end's usage is kept.

        Args:
            msg: the event Message.
        """
        props = msg.props or {}
        if props.get("event") == "stream_end":
            data = props.get("data")
            usage = data.get("usage") if isinstance(data, dict) else None
            if isinstance(usage, dict):
                self.usage = usage

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """The responder runs inside this (with tracing: the reply's span is current)."""
        yield

    def end(
        self,
        status: str,
        *,
        chat_messages: int,
        resends: int,
        keepalives: int,
        repairs: int,
        answer: Callable[[], str] | None = None,
    ) -> None:
        """The reply is over: its figures go to the metrics.

        Args:
            status: how the reply ended (``completed``, ``error``, ``cancelled``...).
            chat_messages: the ChatMessages the reply took on the wire.
            resends: ChatMessages sent again, their delivery having failed or gone
                unacknowledged.
            keepalives: keepalive messages sent while the reply was quiet.
            repairs: the asker's repair requests served from the replay buffer.
            answer: returns the reply's whole text, called only when it is recorded
                (None: not recorded).
        """
        METRICS.add("agent_stream_replies_in_flight", -1.0)
        side = RESPONDER
        METRICS.add("agent_stream_replies_total", 1.0, side=side, status=status)
        METRICS.observe(
            "agent_stream_reply_duration_seconds",
            time.monotonic() - self.started,
            side=side,
            status=status,
        )
        METRICS.observe("agent_stream_reply_chat_messages", float(chat_messages), side=side)
        if self.first_text is not None:
            METRICS.observe(
                "agent_stream_time_to_first_text_seconds", self.first_text - self.started, side=side
            )
        if self.chunks:
            METRICS.observe(
                "agent_stream_reply_chunk_bytes", self.chunk_bytes / self.chunks, side=side
            )
        if resends:
            METRICS.add("agent_stream_resends_total", float(resends), side=side)
        if keepalives:
            METRICS.add("agent_stream_keepalives_total", float(keepalives), side=side)
        if repairs:
            METRICS.add("agent_stream_gaps_total", float(repairs), side=side, event="repaired")


def ask_ended(reply: Any) -> None:
    """An asker's reply is over: its delivery figures go to the metrics.

    Args:
        reply: the :class:`agent_stream.uagents.Reply` that ended.
    """
    status = str(reply.status or "completed")
    side = ASKER
    METRICS.add("agent_stream_replies_total", 1.0, side=side, status=status)
    end = reply.ended_at if reply.ended_at is not None else time.monotonic()
    METRICS.observe(
        "agent_stream_reply_duration_seconds", end - reply.asked_at, side=side, status=status
    )
    METRICS.observe("agent_stream_reply_chat_messages", float(reply.chat_messages), side=side)
    if reply.first_text_at is not None:
        METRICS.observe(
            "agent_stream_time_to_first_text_seconds",
            reply.first_text_at - reply.asked_at,
            side=side,
        )
    if reply.question_resends:
        METRICS.add("agent_stream_resends_total", float(reply.question_resends), side=side)
    with contextlib.suppress(Exception):
        if reply.keepalives:
            METRICS.add("agent_stream_keepalives_total", float(reply.keepalives), side=side)
        if reply.repair_requests:
            METRICS.add(
                "agent_stream_gaps_total",
                float(reply.repair_requests),
                side=side,
                event="requested",
            )
        if reply.gaps_repaired:
            METRICS.add(
                "agent_stream_gaps_total", float(reply.gaps_repaired), side=side, event="repaired"
            )


def refused(code: str) -> None:
    """A question was answered with an error: the refusals counter counts it.

    Args:
        code: the error's code (``busy``, ``question_too_large``...).
    """
    METRICS.add("agent_stream_refusals_total", 1.0, code=code)


def fleet_ended_lost(count: int) -> None:
    """A fleet replica ended ``count`` replies of dead replicas as ``lost``: counted.

    Args:
        count: how many replies it ended.
    """
    if count > 0:
        METRICS.add("agent_stream_fleet_replies_lost_total", float(count))
