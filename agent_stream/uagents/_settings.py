"""The streaming chat plugin's configuration: one frozen object, every limit in one place.

    from agent_stream.uagents import ChatSettings, ReplyLimits, StreamingChat

    settings = ChatSettings(caps=ReplyLimits(max_replies_per_sender=64, max_replies=256))
    chat = StreamingChat(respond, settings=settings)

Groups, each a frozen dataclass with documented defaults:

- ``pump`` (:class:`PumpLimits`): how one reply is sent (buffering, coalescing, flow control);
- ``caps`` (:class:`ReplyLimits`): what peers can make the agent hold (replies at once, question
  size, refusals);
- ``delivery`` (:class:`DeliveryPolicy`): redelivery, replay buffers, keepalive, idle detection;
- ``protection`` (:class:`Protection`): the inbox guard and the per-peer send lanes, applied to
  the agent the plugin serves when it is not protected yet;
- ``sessions`` (:class:`SessionLimits`): conversation memory (turns and bytes per session,
  sessions per sender and in all, idle expiry);
- ``history`` (:class:`HistoryLimits`): the history a client may send with its question;
- ``quotas`` (:class:`PeerQuotas`): what the replies to one peer may send it (ChatMessages per
  second, envelope size), with the preset for peers reached through Agentverse;
- ``send_timeout``: seconds one ``ctx.send`` may take;
- ``clock``: the runtime's time (:class:`Clock`; a test passes a :class:`DrivenClock`).

``dataclasses.replace(settings, ...)`` derives a variant; :meth:`ChatSettings.with_caps` and
friends do the same for one field of a group.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.adapters.chat.quota import AGENTVERSE_QUOTA, PeerQuota
from agent_stream.conversation import HistoryLimits
from agent_stream.uagents._clock import LOOP_CLOCK, Clock
from agent_stream.uagents._protection import Protection
from agent_stream.uagents.responder._pump import PumpLimits
from agent_stream.uagents.responder._quotas import PeerQuotas
from agent_stream.uagents.responder._sessions import SessionLimits

__all__ = [
    "AGENTVERSE_QUOTA",
    "ChatSettings",
    "DeliveryPolicy",
    "HistoryLimits",
    "PeerQuota",
    "PeerQuotas",
    "Protection",
    "PumpLimits",
    "ReplyLimits",
    "SessionLimits",
]


@dataclass(frozen=True)
class ReplyLimits:
    """Caps on what peers can make a streaming agent hold.

    Attributes:
        max_replies_per_sender: replies being produced at once for one peer.
        max_replies: replies being produced at once in all.
        max_question_bytes: a question's size (its text, metadata and resource strings, UTF-8)
            beyond which it is refused (None: no cap).
        max_refusals: error replies ("busy", "question too large") being sent at once, a
            quarter of them to one peer; beyond, requests are dropped with a warning.
        trusted: peers trusted with more, ``{address: replies at once}``: such a peer (a
            gateway asking for many users) may have that many replies at once instead of
            ``max_replies_per_sender`` (``max_replies`` still bounds the total), and all of
            ``max_refusals`` rather than a quarter. E.g.
            ``ReplyLimits(max_replies=1000, trusted={GATEWAY_ADDRESS: 1000})``.
    """

    max_replies_per_sender: int = 4
    max_replies: int = 64
    max_question_bytes: int | None = 64 * 1024
    max_refusals: int = 128
    trusted: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("max_replies_per_sender", "max_replies", "max_refusals"):
            _at_least_one(name, getattr(self, name))
        if self.max_question_bytes is not None:
            _at_least_one("max_question_bytes", self.max_question_bytes)
        if not isinstance(self.trusted, Mapping):
            raise ValueError(f"trusted must map addresses to replies at once, got {self.trusted!r}")
        for address, replies in self.trusted.items():
            if not isinstance(address, str) or not address:
                raise ValueError(f"trusted: {address!r} is not an agent address")
            _at_least_one(f"trusted[{address[:24]!r}]", replies)


@dataclass(frozen=True)
class ChatSettings:
    """Every setting of a :class:`~agent_stream.uagents.StreamingChat` (see the module doc).

    Attributes:
        pump: how each reply is sent (buffering, coalescing, messages in flight).
        caps: how many replies and how big a question this agent takes.
        delivery: acknowledgements, resends, idle and cancel timeouts.
        protection: the guard's limits and the send lanes' bounds.
        sessions: how many conversation turns are kept, for whom and how long.
        history: how much of the kept conversation a responder is given.
        quotas: what the replies to one peer may send it (per-peer ceiling on ChatMessages per
            second, envelope size), and the preset for peers reached through Agentverse.
        send_timeout: seconds one ``ctx.send`` may take.
        clock: where the runtime reads time, sleeps and sets timers (real time by default).
    """

    pump: PumpLimits = field(default_factory=PumpLimits)
    caps: ReplyLimits = field(default_factory=ReplyLimits)
    delivery: DeliveryPolicy = field(default_factory=DeliveryPolicy)
    protection: Protection = field(default_factory=Protection)
    sessions: SessionLimits = field(default_factory=SessionLimits)
    history: HistoryLimits = field(default_factory=HistoryLimits)
    quotas: PeerQuotas = field(default_factory=PeerQuotas)
    send_timeout: int = 30
    clock: Clock = field(default=LOOP_CLOCK, compare=False, repr=False)

    def __post_init__(self) -> None:
        _at_least_one("send_timeout", self.send_timeout)
        if self.pump.max_in_flight is not None:
            _at_least_one("pump.max_in_flight", self.pump.max_in_flight)

    def with_pump(self, **changes: Any) -> ChatSettings:
        """A copy with these :class:`PumpLimits` fields changed."""
        return dataclasses.replace(self, pump=dataclasses.replace(self.pump, **changes))

    def with_caps(self, **changes: Any) -> ChatSettings:
        """A copy with these :class:`ReplyLimits` fields changed."""
        return dataclasses.replace(self, caps=dataclasses.replace(self.caps, **changes))

    def with_delivery(self, **changes: Any) -> ChatSettings:
        """A copy with these :class:`DeliveryPolicy` fields changed."""
        return dataclasses.replace(self, delivery=dataclasses.replace(self.delivery, **changes))

    def with_quotas(self, **changes: Any) -> ChatSettings:
        """A copy with these :class:`PeerQuotas` fields changed, e.g.
        ``with_quotas(default=PeerQuota(messages_per_second=5))``."""
        return dataclasses.replace(self, quotas=dataclasses.replace(self.quotas, **changes))


def _at_least_one(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
