"""A trusted peer (a gateway asking for many users) gets its own replies-at-once cap and the
whole refusal budget; everyone else keeps the per-sender caps; the total cap still holds."""

from __future__ import annotations

import asyncio

import pytest
from caps_helpers import Gate, asker, error_of
from inprocess_agents import Pair

from agent_stream.uagents import ChatSettings, ReplyLimits, StreamingChat
from agent_stream.uagents.responder._caps import ReplyCaps


async def test_a_trusted_peer_has_its_own_cap_and_others_keep_theirs(pair: Pair) -> None:
    gate = Gate()
    gateway_chat, gateway_ctx = await asker(pair, "trusted gateway")
    other_chat, other_ctx = await asker(pair, "ordinary peer")
    limits = ReplyLimits(
        max_replies_per_sender=1, max_replies=7, trusted={gateway_ctx.agent.address: 6}
    )
    server = pair.add("trusting server", StreamingChat(gate, settings=ChatSettings(caps=limits)))
    many = [
        await gateway_chat.ask(gateway_ctx, server.address, f"g{i}", timeout=10) for i in range(7)
    ]
    mine = [await other_chat.ask(other_ctx, server.address, f"o{i}", timeout=10) for i in range(2)]
    await asyncio.wait_for(mine[1].wait(), 5)
    assert error_of(mine[1])["code"] == "busy"  # one at a time for an ordinary peer
    await asyncio.wait_for(many[6].wait(), 5)
    err = error_of(many[6])
    assert err["code"] == "busy" and "at most 6 of yours" in err["message"]
    gate.open.set()
    for r in [*many[:6], mine[0]]:
        await asyncio.wait_for(r.wait(), 10)
        assert r.completed, r.status
    assert sorted(gate.asked) == sorted([f"g{i}" for i in range(6)] + ["o0"])


async def test_the_total_cap_bounds_a_trusted_peer_too(pair: Pair) -> None:
    gate = Gate()
    chat, ctx = await asker(pair, "trusted but bounded")
    server = pair.add(
        "bounded trusting server",
        StreamingChat(
            gate,
            settings=ChatSettings(
                caps=ReplyLimits(max_replies=3, trusted={ctx.agent.address: 100})
            ),
        ),
    )
    replies = [await chat.ask(ctx, server.address, f"q{i}", timeout=10) for i in range(4)]
    await asyncio.wait_for(replies[3].wait(), 5)
    assert error_of(replies[3])["code"] == "busy" and "(3)" in error_of(replies[3])["message"]
    gate.open.set()
    for r in replies[:3]:
        await asyncio.wait_for(r.wait(), 10)
        assert r.completed


def test_a_trusted_peer_may_use_the_whole_refusal_budget() -> None:
    caps = ReplyCaps(ReplyLimits(max_refusals=8, trusted={"agent1trusted": 2}))
    assert sum(caps.may_refuse("agent1trusted") for _ in range(10)) == 8
    caps = ReplyCaps(ReplyLimits(max_refusals=8))
    assert sum(caps.may_refuse("agent1plain") for _ in range(10)) == 2


@pytest.mark.parametrize("trusted", [{"agent1x": 0}, {"": 3}, {"agent1x": True}, ["agent1x"]])
def test_bad_trusted_limits_are_refused(trusted: object) -> None:
    with pytest.raises(ValueError, match="trusted"):
        ReplyLimits(trusted=trusted)  # type: ignore[arg-type]


async def test_a_burst_over_the_refusal_budget_is_answered_in_turn_not_dropped(pair: Pair) -> None:
    gate = Gate()
    chat, ctx = await asker(pair, "bursty asker")
    server = pair.add(
        "refusing in turn server",
        StreamingChat(gate, settings=ChatSettings(caps=ReplyLimits(max_replies=1, max_refusals=4))),
    )  # one refusal at a time to a peer
    replies = [await chat.ask(ctx, server.address, f"q{i}", timeout=10) for i in range(10)]
    for r in replies[1:]:
        await asyncio.wait_for(r.wait(), 8)
        assert r.status == "error" and error_of(r)["code"] == "busy"
    gate.open.set()
    await asyncio.wait_for(replies[0].wait(), 5)
    assert replies[0].completed
