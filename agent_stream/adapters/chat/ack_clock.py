"""How long a peer takes to acknowledge: a retransmission timer per peer.

An asker sends a question again when it is not acknowledged in time (the delivery policy's
``ack_timeout``, 1 s). A peer answering a thousand questions at once acknowledges each late, and
sending them all again doubles its work at its busiest: measured, 987 of 1,000 questions to one
busy agent were sent twice. :class:`AckClock` keeps, per peer, TCP's estimator (RFC 6298: a
smoothed round trip and its variation, from questions acknowledged without being sent again) so
the asker waits as long as that peer has lately needed before sending again, never less than the
policy's ``ack_timeout`` and never more than its cap. Pure state: it is told the times.

A responder keeps one too, for its replies' ChatMessages (:meth:`AckClock.of` gives
:class:`~agent_stream.adapters.chat.delivery.Redelivery` one peer's view): a gateway taking a
thousand replies' first text at once acknowledges each late, and resending them at the fixed 1 s
(measured: 533 of 1,000) doubled both sides' work at their busiest.
"""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["AckClock", "PeerAckClock"]

ALPHA = 1 / 8  # weight of a new sample in the smoothed round trip
BETA = 1 / 4  # ... and in its variation
K = 4  # variations of margin


class AckClock:
    """Per-peer acknowledgement times (bounded: the least recently heard peers are forgotten).

    Args:
        max_peers: peers remembered at once.
    """

    def __init__(self, max_peers: int = 4096) -> None:
        self.max_peers = max_peers
        self._peers: OrderedDict[str, tuple[float, float]] = OrderedDict()  # srtt, rttvar

    def sample(self, peer: str, rtt: float) -> None:
        """A question to ``peer``, sent once, was acknowledged ``rtt`` seconds after sending.

        Args:
            peer: the peer's address.
            rtt: seconds from sending to the acknowledgement (negative or absurd ones ignored).
        """
        if not 0.0 <= rtt < 3600.0:
            return
        old = self._peers.pop(peer, None)
        if old is None:
            srtt, rttvar = rtt, rtt / 2
        else:
            srtt, rttvar = old
            rttvar = (1 - BETA) * rttvar + BETA * abs(srtt - rtt)
            srtt = (1 - ALPHA) * srtt + ALPHA * rtt
        self._peers[peer] = (srtt, rttvar)
        while len(self._peers) > self.max_peers:
            self._peers.popitem(last=False)

    def patience(self, peer: str) -> float:
        """Seconds to wait for ``peer``'s acknowledgement before sending again (0.0: nothing
        known of it yet).

        Args:
            peer: the peer's address.
        """
        known = self._peers.get(peer)
        if known is None:
            return 0.0
        srtt, rttvar = known
        return srtt + K * rttvar

    def of(self, peer: str) -> PeerAckClock:
        """This clock as one peer sees it (what a reply's redelivery is given).

        Args:
            peer: the peer's address.
        """
        return PeerAckClock(self, peer)


class PeerAckClock:
    """One peer's view of an :class:`AckClock`.

    Args:
        clock: the per-peer clock.
        peer: the peer's address.
    """

    __slots__ = ("clock", "peer")

    def __init__(self, clock: AckClock, peer: str) -> None:
        self.clock = clock
        self.peer = peer

    def sample(self, rtt: float) -> None:
        """Something sent once to the peer was acknowledged ``rtt`` seconds after sending.

        Args:
            rtt: seconds from sending to the acknowledgement.
        """
        self.clock.sample(self.peer, rtt)

    def patience(self) -> float:
        """Seconds to wait for the peer's acknowledgement (0.0: nothing known yet)."""
        return self.clock.patience(self.peer)
