"""The open-replies index answers every lookup exactly as a scan of all open replies would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stream.uagents.responder._open_replies import OpenReplies


@dataclass(eq=False)  # identity, as Outgoing
class Reply:
    peer: str
    conversation: str


PEERS = ["p1", "p2", "p3"]
CONVS = ["c1", "c2"]
POOL = [Reply(p, c) for p in PEERS for c in CONVS for _ in range(2)]  # two replies may share ids

ops = st.lists(st.tuples(st.sampled_from(["add", "discard"]), st.integers(0, len(POOL) - 1)))


@settings(max_examples=300)
@given(ops)
def test_lookups_match_a_scan_of_every_open_reply(steps: list[tuple[str, int]]) -> None:
    index = OpenReplies()
    ref: list[Reply] = []
    for op, i in steps:
        r = POOL[i]
        if op == "add":
            index.add(cast(Any, r))
            if not any(x is r for x in ref):
                ref.append(r)
        else:
            index.discard(cast(Any, r))
            ref = [x for x in ref if x is not r]
        assert len(index) == len(ref)
        assert {id(x) for x in index} == {id(x) for x in ref}
        for p in [*PEERS, "nobody"]:
            assert index.has_peer(p) == any(x.peer == p for x in ref)
            assert {id(x) for x in index.of_peer(p)} == {id(x) for x in ref if x.peer == p}
            for c in [*CONVS, "none"]:
                want = {id(x) for x in ref if x.peer == p and x.conversation == c}
                assert {id(x) for x in index.find(p, c)} == want
        for x in POOL:
            assert (x in index) == any(y is x for y in ref)


def test_iterating_while_a_reply_ends_is_safe() -> None:
    index = OpenReplies()
    replies = [Reply("p", f"c{i}") for i in range(5)]
    for r in replies:
        index.add(cast(Any, r))
    seen = []
    for r in index:
        seen.append(r)
        index.discard(r)
    assert len(seen) == 5 and len(index) == 0 and not index.has_peer("p")


def test_a_peers_replies_are_read_only_when_asked_for() -> None:
    """Every incoming ChatMessage offers the asker's open replies to the session-end check,
    which reads them only for a session end: as a list, a gateway's thousand questions each
    copied the replies opened before it."""
    index = OpenReplies()
    index.add(cast(Any, POOL[0]))
    offered = index.of_peer(POOL[0].peer)  # not read yet
    index.add(cast(Any, POOL[2]))  # same peer, opened after the offer
    assert {id(x) for x in offered} == {id(POOL[0]), id(POOL[2])}
