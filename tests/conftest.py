"""Fixtures shared by every test directory, and the order the workers take the tests in."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from inprocess_agents import Pair
from redis_server import redis_server

# The tests that take longest (7-48 s each on two cores, mostly waiting on real agents and
# faults), slowest first. With several workers each starts its share of the suite with one of
# them: pytest-xdist's worksteal gives each worker a contiguous share of the tests, and one of
# these at the end of a share kept the whole run waiting for it. A name not found is ignored.
LONG_FIRST = (
    "tests/integration/test_delivery_faults.py::test_fifty_replies_through_faults_in_both_directions_equal_a_clean_run",
    "tests/integration/test_fleet.py::test_kill_mid_reply_loses_only_that_replicas_reply",
    "tests/integration/test_fleet.py::test_next_turn_on_another_replica_sees_the_first",
    "tests/integration/test_fleet_lost.py::test_a_killed_replicas_reply_ends_lost_long_before_the_idle_timeout",
    "tests/adapters/chat/test_chat_hostile_props.py::test_a_flood_at_the_default_limits_stays_under_the_documented_64_mib",
    "tests/integration/test_terminal_render.py::test_demo_team_draws_markdown_and_keeps_parallel_agents_apart",
    "tests/test_docs_site.py::test_the_site_builds_strict_with_the_generated_pages",
    "tests/integration/test_plain_peers.py::test_a_status_then_an_image_later_are_both_shown_and_the_quiet_ends_it",
    "tests/integration/test_agentverse_quota.py::test_an_agent_on_uagents_own_mailbox_gets_every_reply_whole_without_a_resend_storm",
    "tests/integration/test_coalesced_acks.py::test_an_askers_acknowledgements_of_a_reply_coalesce_and_cover_every_chatmessage",
    "tests/commands/test_agent_commands.py::test_a_dead_endpoint_is_one_line_with_the_reason",
    "tests/integration/test_delivery_faults.py::test_a_paused_model_is_slow_not_lost",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With N xdist workers, order the tests so that each of the N contiguous shares
    worksteal first hands out begins with LONG_FIRST tests, dealt in turn."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if workers < 2:
        return
    rank = {nodeid: i for i, nodeid in enumerate(LONG_FIRST)}
    long = sorted((i for i in items if i.nodeid in rank), key=lambda i: rank[i.nodeid])
    if not long:
        return
    rest = [i for i in items if i.nodeid not in rank]
    shares, left, taken = [], len(items), 0
    for w in range(workers):  # the sizes worksteal's first split gives: what is left // nodes left
        size = left // (workers - w)
        heads = long[w::workers]
        fill = max(0, size - len(heads))
        shares.append(heads + rest[taken : taken + fill])
        taken += fill
        left -= size
    shares[-1] += rest[taken:]
    items[:] = [item for share in shares for item in share]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real redis-server on 127.0.0.1, started for this module."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest_asyncio.fixture
async def pair() -> AsyncIterator[Pair]:
    """In-process agents, added by the test; all stopped afterwards."""
    p = Pair()
    try:
        yield p
    finally:
        await p.close()
