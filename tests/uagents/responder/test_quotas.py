"""Per-peer quotas: which peers get Agentverse's preset, the settings' validation, and the pace
one peer's sends keep."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from agent_stream.adapters.chat.quota import (
    ENVELOPE_OVERHEAD,
    envelope_bytes,
    is_agentverse_endpoint,
)
from agent_stream.uagents import AGENTVERSE_QUOTA, ChatSettings, PeerQuota, PeerQuotas
from agent_stream.uagents.responder._quotas import PeerPace, QuotaBook


@pytest.mark.parametrize(
    "url",
    [
        "https://agentverse.ai/v2/agents/mailbox/submit",
        "https://agentverse.ai/v2/agents/proxy/submit",
        "https://staging.agentverse.ai/v1/submit",
        "http://127.0.0.1:8123/v2/agents/mailbox/submit",  # a stand-in at uagents' own path
    ],
)
def test_agentverse_endpoints_are_recognised(url: str) -> None:
    assert is_agentverse_endpoint(url)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8001/submit",
        "https://notagentverse.ai/submit",
        "https://agentverse.ai.example.com/submit",
        "http://[::1/submit",
        "",
        "x" * 5000,
    ],
)
def test_other_endpoints_are_not(url: str) -> None:
    assert not is_agentverse_endpoint(url)


def test_the_envelope_estimate_bounds_a_real_signed_envelope() -> None:
    import uuid

    from uagents_core.contrib.protocols.chat import ChatMessage, TextContent
    from uagents_core.envelope import Envelope
    from uagents_core.identity import Identity

    from agent_stream.uagents._chat_json import chat_json

    me = Identity.from_seed("quota estimate test seed, throwaway", 0)
    for text in ("", "é" * 1000, "x" * 10_000):
        body = chat_json(ChatMessage(content=[TextContent(text=text)]))
        env = Envelope(
            version=1,
            sender=me.address,
            target=me.address,
            session=uuid.uuid4(),
            schema_digest="model:" + "a" * 64,
            protocol_digest="proto:" + "b" * 64,
        )
        env.encode_payload(body)
        env.sign(me)
        assert len(env.model_dump_json()) <= envelope_bytes(len(body.encode()))
    assert envelope_bytes(0) == ENVELOPE_OVERHEAD


@pytest.mark.parametrize(
    "bad",
    [
        {"messages_per_second": 0},
        {"messages_per_second": True},
        {"max_envelope_bytes": 100},
        {"max_envelope_bytes": 4096.5},
        {"ack_timeout": -1.0},
    ],
)
def test_a_bad_quota_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        PeerQuota(**bad)  # type: ignore[arg-type]


def test_the_settings_hold_the_quotas_and_the_agentverse_preset() -> None:
    s = ChatSettings()
    assert s.quotas.agentverse == AGENTVERSE_QUOTA and not s.quotas.default.limited
    assert AGENTVERSE_QUOTA.messages_per_second == 1.0
    s2 = s.with_quotas(default=PeerQuota(messages_per_second=5), agentverse_peers={"agent1x"})
    assert s2.quotas.default.messages_per_second == 5
    assert s2.quotas.agentverse_peers == frozenset({"agent1x"})
    with pytest.raises(ValueError):
        PeerQuotas(agentverse_peers="agent1x")  # type: ignore[arg-type]
    assert not PeerQuotas(detect=False).needs_lookup
    assert PeerQuotas().needs_lookup


async def test_a_peer_gets_the_preset_when_its_endpoint_is_agentverses_and_is_resolved_once() -> (
    None
):
    book = QuotaBook(PeerQuotas(agentverse_peers=frozenset({"listed"})))
    lookups: list[str] = []
    where = {"mailbox": ["https://agentverse.ai/v2/agents/mailbox/submit"], "direct": []}

    async def resolve(peer: str) -> list[str]:
        lookups.append(peer)
        if peer == "broken":
            raise RuntimeError("resolver down")
        return where.get(peer, ["http://127.0.0.1:9/submit"])

    mailbox = await book.terms_for("mailbox", resolve)
    assert mailbox.agentverse and mailbox.quota == AGENTVERSE_QUOTA and mailbox.pace is not None
    assert (await book.terms_for("mailbox", resolve)).pace is mailbox.pace  # one pace per peer
    assert not (await book.terms_for("direct", resolve)).agentverse
    assert (await book.terms_for("listed", resolve)).agentverse  # listed: no lookup
    broken = await book.terms_for("broken", resolve)
    assert not broken.agentverse and broken.pace is None  # the default quota
    assert lookups == ["mailbox", "direct", "broken"]


async def test_a_pace_spaces_sends_from_the_end_of_the_previous_one_in_turn() -> None:
    pace = PeerPace(20.0)  # 50 ms
    spans: list[tuple[float, float, int]] = []

    async def send(i: int) -> None:
        async with pace.slot():
            start = time.monotonic()
            await asyncio.sleep(0.01)
            spans.append((start, time.monotonic(), i))

    await asyncio.gather(*(send(i) for i in range(5)))
    assert [i for _, _, i in spans] == list(range(5))  # in the order they asked
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        assert start - end >= 0.05 - 0.002


async def test_on_the_runtimes_clock_a_pace_keeps_an_exact_schedule() -> None:
    from agent_stream.uagents import DrivenClock

    clock = DrivenClock()
    pace = PeerPace(2.0, clock)  # 0.5 s from the end of one send to the start of the next
    starts: list[float] = []

    async def send() -> None:
        async with pace.slot():
            starts.append(clock.now())
            await clock.sleep(0.1)  # the post takes 0.1 s

    tasks = [asyncio.ensure_future(send()) for _ in range(3)]
    await clock.run_until(lambda: all(t.done() for t in tasks))
    t0 = starts[0]
    assert [round(s - t0, 6) for s in starts] == [0.0, 0.6, 1.2]
