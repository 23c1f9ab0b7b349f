"""The send lanes when their agent stops: they get what is left of the agent's one stop deadline
(agent_stream.uagents._shutdown), not a timeout of their own, to finish; a post to a peer that
hangs (a real socket on 127.0.0.1 that never answers) is given up then and its sender told."""

from __future__ import annotations

import asyncio
import socket
import time

from lane_helpers import A, post
from uagents_core.types import DeliveryStatus

from agent_stream.uagents.transport._lanes import NOT_SENT, LaneLimits, PeerDispenser


async def test_stopping_lanes_give_up_a_hanging_post_at_the_agent_deadline() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        hanging = f"http://127.0.0.1:{s.getsockname()[1]}/submit"
        d = PeerDispenser(LaneLimits(post_timeout=30, drain_timeout=30))
        d.stop.budget = 0.3
        runner = asyncio.create_task(d.run())
        stuck = post(d, A, hanging, "to the hanging peer")
        await asyncio.sleep(0.1)  # its post is under way
        assert not stuck.done()
        d.stop.begin()  # an earlier stage began the stop
        await asyncio.sleep(0.2)  # ... and used most of it
        began = time.monotonic()
        runner.cancel()
        await asyncio.wait_for(asyncio.gather(runner, return_exceptions=True), 10)
        assert time.monotonic() - began < 2.0  # what was left of 0.3 s, not drain_timeout's 30
        result = await asyncio.wait_for(stuck, 1)
        assert result.status == DeliveryStatus.FAILED and result.detail == NOT_SENT


async def test_what_the_stock_queue_holds_for_a_hanging_peer_is_given_up_at_the_deadline() -> None:
    """Envelopes of other protocols go the uagents way (minutes of timeout per post); when the
    agent stops, sending what is queued of them ends at the stop deadline too."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        hanging = f"http://127.0.0.1:{s.getsockname()[1]}/submit"
        d = PeerDispenser()
        d.stop.budget = 0.3
        runner = asyncio.create_task(d.run())
        queued = [post(d, A, hanging, f"other {i}", digest="model:other") for i in range(3)]
        await asyncio.sleep(0.1)  # the first one's post is under way, the others wait
        assert not any(f.done() for f in queued)
        began = time.monotonic()
        runner.cancel()
        await asyncio.wait_for(asyncio.gather(runner, return_exceptions=True), 10)
        assert time.monotonic() - began < 2.0
