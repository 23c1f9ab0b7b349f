"""A simulated lossy link between one ChatEncoder and one ChatDecoder, driven by the pure
delivery parts (Redelivery, ReplayBuffer, GapRepair, Keepalive) on a simulated clock."""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage

from agent_stream.adapters.chat import ChatDecoder, coalesce
from agent_stream.adapters.chat.delivery import (
    DeliveryPolicy,
    GapRepair,
    Keepalive,
    Redelivery,
    ReplayBuffer,
)
from agent_stream.adapters.chat.reorder import seq_number
from agent_stream.adapters.chat.wire import (
    OP_KEEPALIVE,
    OP_RESEND,
    control,
    control_of,
    tagged_items,
)
from agent_stream.message import Message

OUTCOMES = ("ok", "503", "drop", "dup")


def seq_range(chat: ChatMessage) -> tuple[int, int] | None:
    head = next(tagged_items(chat), None)
    if head is None:
        return None
    first = seq_number(head.get("seq"))
    if first is None:
        return None
    return first, seq_number(head.get("seq_last")) or first


@dataclass
class Link:
    """Both directions: the i-th envelope gets ``faults[i]`` (then ``ok``), delayed by
    ``delays[i % len]``."""

    faults: list[str]
    delays: list[float]
    sent: int = 0
    events: list[tuple[float, int, str, Any]] = field(default_factory=list)
    _n: Any = field(default_factory=itertools.count)

    def post(self, now: float, to: str, payload: Any) -> bool:
        i = self.sent
        self.sent += 1
        fault = self.faults[i] if i < len(self.faults) else "ok"
        if fault == "503":
            return False
        if fault == "drop":
            return True
        copies = 2 if fault == "dup" else 1
        for c in range(copies):
            d = self.delays[(i + c) % len(self.delays)] if self.delays else 0.0
            heapq.heappush(self.events, (now + d, next(self._n), to, payload))
        return True


def run_link(
    chats: list[ChatMessage],
    link: Link,
    policy: DeliveryPolicy,
    repair: bool = True,
    limit: float = 400.0,
) -> tuple[list[Message], ChatDecoder, int]:
    """Send ``chats`` over ``link``; returns what the receiver decoded, its decoder, and how
    many ChatMessages the sender gave up on (their redelivery budget ran out)."""
    conv = "C"
    dec = ChatDecoder(gap_timeout=10 * policy.within)
    rd: Redelivery[str, ChatMessage] = Redelivery(policy, peer_acks=True, rng=random.Random(7))
    buf: ReplayBuffer[ChatMessage] = ReplayBuffer(policy.replay_count, policy.replay_bytes)
    gr = GapRepair(policy)
    ka = Keepalive(policy.keepalive, 0.0)
    out: list[Message] = []
    high = 0
    now = 0.0
    stuck = 0

    def send(chat: ChatMessage) -> None:
        rd.sent(str(chat.msg_id), chat, link.post(now, "receiver", chat), now)
        ka.note_sent(now)

    for chat in chats:
        r = seq_range(chat)
        if r is not None:
            buf.add(r[0], r[1], chat, 1)
            high = max(high, r[1])
        send(chat)
        now += 0.01
    for _ in range(20000):
        if dec.finished("S", conv) or now > limit:
            break
        wake = [
            t
            for t in (
                link.events[0][0] if link.events else None,
                rd.next_deadline,
                ka.next_deadline if len(rd) else None,
                gr.next_deadline(dec.gaps()) if repair else None,
                dec.next_deadline,
            )
            if t is not None
        ]
        if not wake:
            break
        if min(wake) <= now and stuck > 100:
            raise AssertionError(f"the link made no progress at {now}: {wake}")
        stuck = stuck + 1 if min(wake) <= now else 0
        now = max(now, min(wake))
        while link.events and link.events[0][0] <= now:
            _, _, to, payload = heapq.heappop(link.events)
            if to == "sender":
                ctl = control_of(payload) if isinstance(payload, ChatMessage) else None
                if ctl is None:
                    rd.acknowledged(payload, now)
                elif ctl["op"] == OP_RESEND:
                    hi = seq_number(ctl.get("to"))
                    for again in buf.covering(int(ctl["from"]), hi):
                        link.post(now, "receiver", again)
            else:
                out += dec.feed("S", payload, now)
                link.post(now, "sender", str(payload.msg_id))
        for _key, chat in rd.due(now):
            send(chat)
        if len(rd) and ka.due(now):
            link.post(now, "receiver", control(OP_KEEPALIVE, conv, high=str(high)))
        if repair:
            for gap in gr.due(dec.gaps(), now):
                fields = {"from": str(gap.lo)}
                if gap.hi is not None:
                    fields["to"] = str(gap.hi)
                link.post(now, "sender", control(OP_RESEND, conv, **fields))
        d = dec.next_deadline
        if d is not None and d <= now:
            out += dec.poll(now)
    return out, dec, rd.given_up


def coalesced(chats: list[ChatMessage], runs: list[int]) -> list[ChatMessage]:
    """``chats`` with consecutive runs (lengths from ``runs``, cycled) sent as one."""
    out: list[ChatMessage] = []
    i = 0
    for n in itertools.cycle(runs or [1]):
        if i >= len(chats):
            break
        out.append(coalesce(chats[i : i + n]))
        i += n
    return out
