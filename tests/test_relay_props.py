"""Property tests of re-identification: for random caller and sub-agent streams (blocks,
threads, parallel work, deltas), relaying never makes ids collide and keeps the hierarchy."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from relay_fixtures import FakeReply, assert_placed, keys_unique, relay_blocks, subtree
from strategies import any_message

from agent_stream.assemble import assemble
from agent_stream.ids import IdGenerator
from agent_stream.message import Message, tool_call
from agent_stream.relay import Reidentifier, RelayError
from agent_stream.writer import Scope, StreamWriter, collect

_pieces = st.lists(st.text(min_size=1, max_size=4), min_size=1, max_size=4)
_leaf = st.one_of(
    st.tuples(st.just("text"), _pieces),
    st.tuples(st.just("thinking"), _pieces),
    st.tuples(st.just("tool"), st.sampled_from(["search", "fetch"])),
    st.tuples(st.just("whole"), st.text(max_size=5)),
)
program = st.recursive(
    st.lists(_leaf, max_size=3),
    lambda inner: st.lists(
        st.one_of(
            _leaf,
            st.tuples(st.just("block"), st.sampled_from(["llm", "tool"]), inner),
            st.tuples(st.just("parallel"), st.lists(inner, min_size=1, max_size=3)),
        ),
        max_size=3,
    ),
    max_leaves=12,
)


async def run(scope: Scope, nodes: list[Any], relay: Any = None) -> None:
    """Write ``nodes`` into ``scope``; the node ``("relay",)`` relays ``relay()``."""
    for node in nodes:
        kind = node[0]
        if kind in ("text", "thinking"):
            async with scope.message(kind) as m:
                for p in node[1]:
                    await m.append(p)
        elif kind == "tool":
            await scope.send(tool_call(id="c1", name=node[1], arguments="{}"))
        elif kind == "whole":
            await scope.text(node[1])
        elif kind == "block":
            async with scope.block(node[1], label=node[1]) as b:
                await run(b, node[2], relay)
        elif kind == "parallel":
            await scope.parallel(
                *(lambda t, n=n: run(t, n, relay) for n in node[1]),
                labels=[f"p{i}" for i in range(len(node[1]))],
            )
        elif kind == "relay":
            with contextlib.suppress(RelayError):
                await scope.relay(relay(), name="sub")


def _insert(nodes: list[Any], where: int, relay: bool = True) -> list[Any]:
    """``nodes`` with a block holding a relay (or nothing) at ``where`` of the top level."""
    at = min(where, len(nodes))
    return [*nodes[:at], ("block", "plan", [("relay",)] if relay else []), *nodes[at:]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    caller=program,
    sub_prog=program,
    where=st.integers(0, 3),
    cut=st.one_of(st.none(), st.integers(0, 40)),
)
def test_relayed_ids_never_collide_and_the_hierarchy_is_kept(
    caller: list[Any], sub_prog: list[Any], where: int, cut: int | None
) -> None:
    sub = asyncio.run(collect(lambda out: run(out, sub_prog)))
    status = None
    if cut is not None and cut < len(sub):
        sub, status = sub[:cut], "lost"  # the sub-agent was lost mid-reply

    def reply() -> FakeReply:
        return FakeReply(sub, status=status)

    prog = _insert(caller, where)
    msgs = asyncio.run(collect(lambda out: run(out, prog, reply)))
    assert keys_unique(msgs)
    whole = assemble(msgs)
    assert not whole.warnings
    assert all(m.status != "streaming" for m in whole.messages)
    assert all(b.status != "streaming" for b in whole.blocks)
    ((root, _),) = relay_blocks(msgs)
    if status is None:
        assert_placed(assemble(sub), msgs, root)
    # the caller's own messages are exactly those it writes without the relay
    alone = assemble(
        asyncio.run(collect(lambda out: run(out, _insert(caller, where, relay=False))))
    )
    blocks, _ = subtree(msgs, root)
    own = [m for m in whole.messages if m.block_id not in blocks]
    assert [(m.type, m.props) for m in own] == [(m.type, m.props) for m in alone.messages]


@settings(max_examples=200, deadline=None)
@given(st.lists(any_message(), max_size=30))
def test_any_sub_stream_maps_consistently(sub: list[Message]) -> None:
    ids = IdGenerator()
    for _ in range(3):  # the caller's own ids so far
        ids.message(), ids.block(), ids.thread()
    rid = Reidentifier(ids, block_id="B1", thread_id="T1")
    out = [o for m in sub for o in rid.feed(m)] + rid.close("error")
    seen_threads: dict[str | None, str | None] = {}
    for m in out:
        assert m.chunk_id is None
        assert m.block_id is not None  # everything lands in the relay block or below
        assert m.message_id not in ("M1", "M2", "M3")  # the caller's own never reused
        assert m.block_id == "B1" or m.block_id not in ("B2", "B3")
        seen_threads.setdefault(m.thread_id, m.thread_id)
    # one sub id -> one caller id, and two sub ids never share one
    for table in (rid._threads, rid._blocks, rid._messages):
        assert len(set(table.values())) == len(table)
    assert "T1" not in rid._threads.values() and "B1" not in rid._blocks.values()


def test_relay_of_empty_sub_stream_is_an_empty_completed_block() -> None:
    async def body(out: StreamWriter) -> None:
        await out.relay(
            FakeReply(
                [
                    Message(
                        type="event", props={"event": "stream_end", "data": {"status": "completed"}}
                    )
                ]
            )
        )

    msgs = asyncio.run(collect(body))
    ((root, _),) = relay_blocks(msgs)
    assert assemble(msgs).block(root).status == "completed"  # type: ignore[union-attr]
