"""What one peer may be sent: ChatMessages per second and envelope size, and Agentverse's preset.

A peer reached through Agentverse (its endpoint is Agentverse's mailbox or proxy) reads what it
is sent by polling once a second (uagents' ``MAILBOX_POLL_INTERVAL_SECONDS``), and every message
and byte counts against its owner's quotas (reading the mailbox counts too); envelopes should stay
under ~1 MB. :data:`AGENTVERSE_QUOTA` keeps a reply well inside that: one ChatMessage a second at
most (what a poll reads at once anyway), each envelope under 256 KiB, and an acknowledgement
awaited over three polls before a ChatMessage is sent again. The text is the same; it comes in
fewer, larger ChatMessages (what waits for the next send goes as one).

Pure: :func:`is_agentverse_endpoint` reads a URL, :func:`envelope_bytes` estimates a signed
envelope's size from its payload's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlsplit

from uagents_core.config import DEFAULT_AGENTVERSE_URL, DEFAULT_MAILBOX_PATH, DEFAULT_PROXY_PATH

__all__ = [
    "AGENTVERSE_QUOTA",
    "ENVELOPE_OVERHEAD",
    "PeerQuota",
    "envelope_bytes",
    "is_agentverse_endpoint",
]

#: Bytes a signed envelope adds around its base64 payload (addresses, session, digests,
#: signature): measured 565 with uagents-core 0.4.12, rounded up.
ENVELOPE_OVERHEAD = 1024


@dataclass(frozen=True)
class PeerQuota:
    """What the replies to one peer may send it.

    Attributes:
        messages_per_second: ChatMessages to one peer per second, all its replies together,
            resends and keepalives included; each send starts at least ``1 / rate`` seconds
            after the previous one to that peer ended (None: no ceiling).
        max_envelope_bytes: the largest estimated signed envelope (UTF-8 JSON) that queued
            ChatMessages are coalesced into; they go as one only while they fit (None: no
            limit). One ChatMessage larger than it alone goes as it is, with a warning (a huge
            tool result; a message's ``message_end`` repeats its whole text).
        ack_timeout: seconds a ChatMessage to this peer waits for its acknowledgement before it
            is sent again, at least (None: the delivery policy's).
    """

    messages_per_second: float | None = None
    max_envelope_bytes: int | None = None
    ack_timeout: float | None = None

    def __post_init__(self) -> None:
        rate = self.messages_per_second
        if rate is not None and (isinstance(rate, bool) or not 0 < rate <= 1000):
            raise ValueError(f"messages_per_second must be in (0, 1000] or None, got {rate!r}")
        size = self.max_envelope_bytes
        if size is not None and (
            isinstance(size, bool) or not isinstance(size, int) or size < 2 * ENVELOPE_OVERHEAD
        ):
            raise ValueError(
                f"max_envelope_bytes must be an integer >= {2 * ENVELOPE_OVERHEAD} or None, "
                f"got {size!r}"
            )
        wait = self.ack_timeout
        if wait is not None and (isinstance(wait, bool) or not 0 < wait <= 60):
            raise ValueError(f"ack_timeout must be in (0, 60] or None, got {wait!r}")

    @property
    def limited(self) -> bool:
        """Whether this quota limits anything."""
        return (
            self.messages_per_second is not None
            or self.max_envelope_bytes is not None
            or self.ack_timeout is not None
        )


#: The preset for a peer reached through Agentverse (see the module doc).
AGENTVERSE_QUOTA = PeerQuota(
    messages_per_second=1.0, max_envelope_bytes=256 * 1024, ack_timeout=3.0
)

_AGENTVERSE_PATHS = (DEFAULT_MAILBOX_PATH, DEFAULT_PROXY_PATH)


def is_agentverse_endpoint(url: str) -> bool:
    """Whether ``url`` is Agentverse's: its host is ``agentverse.ai`` (or under it), or its path
    is uagents' mailbox or proxy submit path (``/v2/agents/mailbox/submit``, ``.../proxy/submit``).

    Args:
        url: an endpoint a peer's address resolved to.
    """
    if not isinstance(url, str) or len(url) > 2048:
        return False
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    if host == DEFAULT_AGENTVERSE_URL or host.endswith("." + DEFAULT_AGENTVERSE_URL):
        return True
    path = parts.path.rstrip("/")
    return any(path.endswith(p) for p in _AGENTVERSE_PATHS)


def envelope_bytes(payload_bytes: int) -> int:
    """The estimated size of a signed envelope carrying ``payload_bytes`` of JSON (an upper
    bound: base64 and :data:`ENVELOPE_OVERHEAD`).

    Args:
        payload_bytes: the payload's size, UTF-8.
    """
    return ENVELOPE_OVERHEAD + 4 * math.ceil(payload_bytes / 3)
