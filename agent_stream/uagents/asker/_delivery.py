"""The asker side of delivery for one Reply: liveness, gap repair, the cancel grace,
and sending the question again.

Decisions come from :mod:`agent_stream.adapters.chat.delivery` (:class:`IdleWatch`,
:class:`GapRepair`, :class:`Redelivery`); this module sends the ops they ask for
(``resend``, ``cancel``) with the Reply's send function.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat import ChatDecoder
from agent_stream.adapters.chat.delivery import DeliveryPolicy, GapRepair, IdleWatch, Redelivery
from agent_stream.adapters.chat.wire import OP_CANCEL, OP_RESEND, control
from agent_stream.uagents._clock import LOOP_CLOCK, Clock

__all__ = ["CANCEL", "LOST", "AskerDelivery", "SendControl", "resend_question"]

SendControl = Callable[[ChatMessage], Awaitable[Any]]
LOST = "lost"
CANCEL = "cancelled"


class AskerDelivery:
    """Delivery state of one reply to a question: what to ask for, when it is lost, figures
    (``gaps_repaired``, ``repair_requests``, :meth:`at_risk`).

    Args:
        peer: the responder's address.
        conversation: the question's msg_id.
        decoder: the reply's decoder (its gaps are what is repaired).
        policy: the delivery policy.
        idle_timeout: seconds of silence after which the reply is lost (None: the policy's).
        send: sends a control op to the responder (None: no repair, no cancel op).
        cancel_grace: seconds to wait for the responder to confirm a cancel.
        watch_idle: read silence as loss (the responder sends keepalives: the question was
            tagged). A reply to an untagged question gets none, however tagged the reply is.
        clock: the runtime's clock.
    """

    def __init__(
        self,
        peer: str,
        conversation: str,
        decoder: ChatDecoder,
        policy: DeliveryPolicy,
        idle_timeout: float | None,
        send: SendControl | None,
        cancel_grace: float,
        watch_idle: bool = True,
        clock: Clock = LOOP_CLOCK,
    ) -> None:
        self.clock = clock
        self.peer = peer
        self.watch_idle = watch_idle
        self.conversation = conversation
        self.decoder = decoder
        self.idle = IdleWatch(
            idle_timeout if idle_timeout is not None else policy.idle_timeout, clock.now()
        )
        self.repair = GapRepair(policy)
        self.send = send
        self.cancel_grace = cancel_grace
        self.cancel_at: float | None = None
        self._risk_since: float | None = None
        self._risk_total = 0.0

    def cancel(self) -> bool:
        """Send the cancel op; False when there is no way to send (stop waiting at once)."""
        if self.send is None:
            return False
        if self.cancel_at is None:
            self.cancel_at = self.clock.now()
            self._spawn(control(OP_CANCEL, self.conversation))
        return True

    def deadlines(self, tagged: bool) -> list[float]:
        """When :meth:`step` has something to do.

        Args:
            tagged: the reply is tagged (only a tagged reply is watched for silence and gaps).

        Returns:
            The clock's times, in no order.
        """
        out = []
        if tagged:
            if self.watch_idle:
                out.append(self.idle.deadline)
            d = self.repair.next_deadline(self.decoder.gaps(self.peer))
            if d is not None:
                out.append(d)
        if self.cancel_at is not None:
            out.append(self.cancel_at + self.cancel_grace)
        return out

    def step(self, now: float, tagged: bool) -> str | None:
        """Liveness, gap repair, the cancel grace; the status to end the reply with, if any.

        Args:
            now: the clock's time.
            tagged: the reply is tagged (only a tagged reply is watched for silence and gaps).
        """
        if self.cancel_at is not None and now >= self.cancel_at + self.cancel_grace:
            return CANCEL
        if not tagged:
            return None
        if self.watch_idle and self.idle.lost(now):
            return LOST
        gaps = self.decoder.gaps(self.peer)
        if gaps and self._risk_since is None:
            self._risk_since = min(g.since for g in gaps)
        elif not gaps and self._risk_since is not None:
            self._risk_total += now - self._risk_since
            self._risk_since = None
        if self.send is not None:
            for gap in self.repair.due(gaps, now, self._skipped()):
                fields = {"from": str(gap.lo)}
                if gap.hi is not None:
                    fields["to"] = str(gap.hi)
                self._spawn(control(OP_RESEND, self.conversation, **fields))
        return None

    def close(self) -> None:
        """The reply is over: gaps asked for that filled since the last step count."""
        self.repair.due(self.decoder.gaps(self.peer), float("-inf"), self._skipped())

    def at_risk(self, now: float) -> float:
        """Seconds during which a gap in the reply was open.

        Args:
            now: the clock's time.
        """
        extra = now - self._risk_since if self._risk_since is not None else 0.0
        return self._risk_total + extra

    def _skipped(self) -> dict[tuple[str, str], int]:
        return {(self.peer, self.conversation): self.decoder.skipped(self.peer, self.conversation)}

    def _spawn(self, chat: ChatMessage) -> None:
        assert self.send is not None
        task = asyncio.ensure_future(self.send(chat))
        task.add_done_callback(retrieved)


def retrieved(task: asyncio.Future[Any]) -> None:
    """Retrieve a task's outcome (sending never raises; nothing to log).

    Args:
        task: the finished task or future.
    """
    if not task.cancelled():
        task.exception()


async def resend_question(
    send: Callable[[ChatMessage], Awaitable[tuple[bool, str]]],
    chat: ChatMessage,
    answered: Callable[[], bool],
    policy: DeliveryPolicy,
    on_resend: Callable[[], None],
    patience: Callable[[], float] | None = None,
    clock: Clock = LOOP_CLOCK,
) -> bool:
    """Send the question again while ``answered()`` is False (no acknowledgement, no reply
    traffic: a silently dropped question; the responder answers a msg_id once); calls
    ``on_resend()`` for each time.

    The policy's budget (``tries`` sends within ``within`` seconds) runs on a clock that stops
    while the peer's ``patience`` holds a resend back: a peer slow to acknowledge still gets
    every try, each at its own pace. That stretches the budget by at most ``tries`` times
    ``max_delay``; the caller stops it sooner (``answered()``) when the reply ends.

    Args:
        send: delivers the question, ``-> (delivered?, detail)``.
        chat: the question.
        answered: whether it was acknowledged, reply traffic arrived, or the reply is over.
        policy: the delivery policy (backoff, tries, time budget).
        on_resend: called before each resend.
        patience: seconds the peer has lately taken to acknowledge (an
            :class:`~agent_stream.adapters.chat.ack_clock.AckClock`'s): no resend sooner than
            that after the last delivered send (capped at the policy's ``max_delay``); asked
            again when a resend comes due, so acknowledgements of other questions meanwhile
            count. A send that failed is retried on the policy's own schedule.
        clock: the runtime's clock.

    Returns:
        True when the budget ran out with the question still unanswered (the last send's
        acknowledgement was waited for too); False once ``answered()``.
    """
    rd: Redelivery[str, ChatMessage] = Redelivery(policy, peer_acks=True)
    key = str(chat.msg_id)
    last, delivered = clock.now(), True
    held = 0.0  # seconds the peer's patience held resends back: the budget's clock stood still
    rd.sent(key, chat, True, last)

    def wait_until() -> float:
        if patience is None or not delivered:  # a failed send awaits no acknowledgement
            return 0.0
        return last + min(patience(), policy.max_delay)

    while not answered():
        d = rd.next_deadline
        if d is None:
            return True
        await clock.sleep(max(0.0, max(d + held, wait_until()) - clock.now()))
        if answered():
            break
        now = clock.now()
        if now < wait_until():  # the peer has become slower to acknowledge meanwhile
            continue
        held += max(0.0, wait_until() - (d + held))
        for _, again in rd.due(now - held):
            on_resend()
            ok, _ = await send(again)
            last, delivered = clock.now(), ok
            rd.sent(key, again, ok, last - held)
    return False
