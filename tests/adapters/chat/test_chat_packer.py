"""Batching: costs in ChatMessages, reasoning chunked like text, metadata riding with content, meta_delay."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chat_fixtures import (
    REASONING,
    TOKENS,
    decode,
    delta,
    encode,
    group_times,
    groups,
    hierarchical_reply,
    is_meta_only,
    items,
    msg_end,
    plain,
    run,
    thinking_groups,
    thinking_then_answer,
    timed,
    via_json,
    view,
)
from uagents_core.contrib.protocols.chat import (
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters.chat import ChatDecoder, ChatEncoder
from agent_stream.assemble import assemble
from agent_stream.message import (
    STREAM_END,
    STREAM_START,
    StreamEndData,
    StreamStartData,
    lifecycle,
    loading,
    tool_call,
)
from agent_stream.message import Message as M


def test_n_chunks_cost_at_most_n_plus_2_chat_messages_start_and_end_share() -> None:
    msgs = [delta(tok + " ", "M1") for tok in TOKENS] + [msg_end("M1", len(TOKENS))]
    chats = encode(msgs, close=False)
    texts = [i for i in items(chats) if isinstance(i, TextContent)]
    assert len(texts) >= 3
    assert len(chats) <= len(texts) + 2
    first = chats[0].content
    assert any(isinstance(i, StartStreamContent) for i in first)
    assert any(isinstance(i, TextContent) for i in first)  # start shares with the first chunk
    last = chats[-1].content
    assert any(isinstance(i, EndStreamContent) for i in last)
    assert any(isinstance(i, TextContent) for i in last)  # end shares with the last chunk


def test_time_based_release_through_poll_and_next_deadline() -> None:
    enc = ChatEncoder("conv", chunker={"max_delay": 0.25})
    assert enc.next_deadline is None
    assert enc.feed(delta("Hel", "M1"), 10.0) == []
    d = enc.next_deadline
    assert d is not None and 10.0 < d <= 10.25
    assert enc.poll(10.1) == []
    out = enc.poll(d)
    assert plain(out) == "Hel"
    assert enc.next_deadline is None


@pytest.mark.parametrize("tagged", [False, True])
def test_shared_thinking_is_chunked_like_text_costs_few_chat_messages_and_rebuilds_exactly(
    tagged: bool,
) -> None:
    msgs = thinking_then_answer()
    n_deltas = sum(1 for m in msgs if m.type == "thinking")
    assert n_deltas > 40
    chats, _ = timed(msgs, tagged=tagged, channels={"reasoning"})
    thinking = thinking_groups(chats)
    assert 2 <= len(thinking) <= n_deltas // 8  # merged deltas, not one per token
    assert "".join(json.loads(md["props"])["content"] for md in thinking) == REASONING
    assert assemble(msgs).get(None, "M1").props == {"content": REASONING}  # type: ignore[union-attr]
    assert all(md["delta"] == "true" and md["message_id"] == "M1" for md in thinking)
    texts = [i for i in items(chats) if isinstance(i, TextContent)]
    assert len(chats) <= len(texts) + len(thinking) + 2
    assert sum(map(is_meta_only, chats)) <= len(thinking)
    assert "Tool calls" not in plain(chats) and plain(chats) == assemble(msgs).text()
    decoded, warnings = decode(via_json(chats))
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(msgs))
    st = assemble(decoded).get(None, "M1")
    assert st is not None and st.status == "completed" and st.chunk_count == len(thinking)


def test_thinking_message_end_follows_its_chunks_with_the_rebuilt_chunk_count() -> None:
    msgs = thinking_then_answer()
    chats, _ = timed(msgs, tagged=True, channels={"reasoning"})
    m1 = [md for md, _ in groups(chats) if md.get("message_id") == "M1"]
    assert json.loads(m1[0]["props"])["event"] == "message_start"
    end = json.loads(m1[-1]["props"])
    assert end["event"] == "message_end"
    assert end["data"]["chunk_count"] == len(m1) - 2  # every merged delta between the two
    assert all(md.get("delta") == "true" for md in m1[1:-1])


def test_a_lost_thinking_chunk_still_shows_as_incomplete() -> None:
    msgs = thinking_then_answer()
    chats, _ = timed(
        msgs, tagged=True, channels={"reasoning"}, chunker={"min_chars": 10, "max_chars": 60}
    )
    carrying = [
        i
        for i, c in enumerate(chats)
        if 0 < i < len(chats) - 1
        and any(md.get("delta") == "true" and md.get("type") == "thinking" for md, _ in groups([c]))
        and "message_end" not in c.json()
    ]
    assert carrying
    del chats[carrying[0]]
    decoded, warnings = decode(chats, dec=ChatDecoder(reorder_window=0))
    assert [w.code for w in warnings] == ["gap"]
    st = assemble(decoded).get(None, "M1")
    assert st is not None and st.status == "incomplete"


def test_a_thinking_stream_already_short_of_chunks_stays_incomplete() -> None:
    msgs = thinking_then_answer()
    n = sum(1 for m in msgs if m.type == "thinking")
    lossy = thinking_then_answer(chunk_count=n + 1)
    assert assemble(lossy).get(None, "M1").status == "incomplete"  # type: ignore[union-attr]
    decoded, _ = decode(timed(lossy, tagged=True, channels={"reasoning"})[0])
    assert assemble(decoded).get(None, "M1").status == "incomplete"  # type: ignore[union-attr]


def test_string_appends_of_custom_types_are_merged_but_not_onto_other_content() -> None:
    words = [w + " " for w in TOKENS]
    msgs = [delta(w, "M1", typ="draft") for w in words]
    msgs += [M(type="notes", props={"content": ["first"]}, message_id="M2")]
    msgs += [
        M(type="notes", props={"content": [w]}, delta=True, message_id="M2") for w in words[:3]
    ]  # list items, one per delta (a string onto a list: DeltaError)
    msgs += [
        M(
            type="draft",
            props={"content": "x"},
            delta=True,
            delta_action="replace",
            delta_path="content",
            message_id="M1",
        ),
        delta("y", "M1", typ="draft"),
    ]
    msgs += [msg_end("M1", len(words) + 2, typ="draft"), msg_end("M2", 4, typ="notes")]
    chats = encode(msgs, tagged=True)
    m1 = [md for md, _ in groups(chats) if md.get("message_id") == "M1" and "delta" in md]
    assert len(m1) < len(words) // 2
    m2 = [md for md, _ in groups(chats) if md.get("message_id") == "M2" and "delta" in md]
    assert len(m2) == 3
    assert plain(chats) == ""
    decoded, warnings = decode(chats)
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(msgs))
    assert (
        assemble(decoded).get(None, "M2").props
        == {  # type: ignore[union-attr]
            "content": ["first", *words[:3]]
        }
    )
    assert all(st.status == "completed" for st in assemble(decoded).messages)


def test_metadata_waits_and_rides_with_the_next_chat_message_in_order() -> None:
    enc = ChatEncoder("conv", tagged=True, chunker={"min_chars": 5})
    assert enc.feed(lifecycle(STREAM_START, StreamStartData()), 1.0) == []
    assert enc.feed(tool_call("c1", "search", "{}", message_id="M1"), 1.02) == []
    assert enc.next_deadline == pytest.approx(1.1)  # the oldest waits meta_delay at most
    [chat] = enc.feed(delta("Hello there. And", "M2"), 1.05)
    got = groups([chat])
    assert [json.loads(md.get("props", "{}")).get("event") or md["type"] for md, _ in got] == [
        "stream_start",
        "tool_call",
        "text",
    ]
    md = next(i.metadata for i in chat.content if isinstance(i, MetadataContent))
    assert md["seq"] == "1"
    assert plain([chat]) == "Hello there. "
    assert enc.next_deadline == pytest.approx(1.05 + 0.5)  # only the chunker's now


def test_metadata_alone_goes_once_it_has_waited_meta_delay() -> None:
    enc = ChatEncoder("conv", tagged=True, meta_delay=0.2)
    assert enc.feed(tool_call("c1", "search", "{}", message_id="M1"), 10.0) == []
    assert enc.feed(loading("working", message_id="M2"), 10.15) == []
    d = enc.next_deadline
    assert d == pytest.approx(10.2)
    assert enc.poll(10.19) == []
    [chat] = enc.poll(d)  # type: ignore[arg-type]
    assert is_meta_only(chat)
    assert [md["type"] for md, _ in groups([chat])] == ["tool_call", "loading"]
    assert enc.next_deadline is None and enc.poll(11.0) == []
    # a feed that comes after the deadline sends what is due too
    assert enc.feed(loading("still", message_id="M3"), 12.0) == []
    assert enc.feed(delta("x", "M4"), 12.3) != []


def test_meta_delay_zero_sends_metadata_at_once() -> None:
    enc = ChatEncoder("conv", tagged=True, meta_delay=0)
    assert len(enc.feed(tool_call("c1", "search", "{}", message_id="M1"), 0.0)) == 1
    assert enc.next_deadline is None


def test_waiting_metadata_goes_at_close_and_end_streams_with_stream_end_last() -> None:
    enc = ChatEncoder("conv", session=True)
    assert enc.feed(tool_call("c1", "search", "{}", message_id="M1"), 0.0) == []
    [chat] = enc.close(0.0)
    assert [md["type"] for md, _ in groups([chat])] == ["tool_call", "event"]
    assert json.loads(groups([chat])[-1][0]["props"])["event"] == "stream_end"
    assert isinstance(chat.content[-1], EndSessionContent)
    assert enc.finished and enc.close(1.0) == [] and enc.next_deadline is None
    enc = ChatEncoder("conv")
    assert enc.feed(tool_call("c1", "search", "{}", message_id="M1"), 0.0) == []
    assert len(enc.end_streams(0.0)) == 1 and enc.next_deadline is None
    enc = ChatEncoder("conv")
    assert enc.feed(tool_call("c1", "search", "{}", message_id="M1"), 0.0) == []
    [chat] = enc.feed(lifecycle(STREAM_END, StreamEndData()), 0.0)  # stream_end: no waiting
    assert [md["type"] for md, _ in groups([chat])] == ["tool_call", "event"]


@pytest.mark.parametrize(
    ("tagged", "channels"),
    [(False, None), (True, None), (False, {"reasoning"}), (True, {"reasoning"})],
)
def test_waiting_never_reorders_groups_never_delays_content_and_lasts_meta_delay_at_most(
    tagged: bool, channels: set[str] | None
) -> None:
    msgs = run(hierarchical_reply) + thinking_then_answer()[1:]  # two replies' worth, one stream
    step = 1 / 150
    at_once, t0 = timed(msgs, step=step, tagged=tagged, channels=channels, meta_delay=0)
    batched, t1 = timed(msgs, step=step, tagged=tagged, channels=channels)
    assert groups(batched) == groups(at_once)  # same groups, same order
    if not tagged:  # a plain asker: every ChatMessage shows text, or ends a reply, whatever
        # meta_delay says; and content still goes when it is ready
        assert all(shows_text(c) or ends_stream(c) for c in batched + at_once)
        for (md, its), made, sent in zip(
            groups(at_once), group_times(at_once, t0), group_times(batched, t1), strict=True
        ):
            if its and any(isinstance(i, TextContent) and i.text for i in its):
                assert sent == made, md
        return
    assert len(batched) < len(at_once)
    assert sum(map(is_meta_only, batched)) < sum(map(is_meta_only, at_once))
    seqs = [
        next(i.metadata for i in c.content if isinstance(i, MetadataContent))["seq"]
        for c in batched
    ]
    assert seqs == [str(n) for n in range(1, len(batched) + 1)]
    for (md, its), made, sent in zip(
        groups(at_once), group_times(at_once, t0), group_times(batched, t1), strict=True
    ):
        if its:
            assert sent == made, md  # content goes when it is ready
        else:
            assert made <= sent <= made + 0.1 + step + 1e-9, md  # polled every step


def shows_text(chat: Any) -> bool:
    return any(isinstance(i, TextContent) and i.text for i in chat.content)


def ends_stream(chat: Any) -> bool:
    return any('"stream_end"' in md.get("props", "") for md, _ in groups([chat]))


@pytest.mark.parametrize("channels", [None, {"reasoning"}])
def test_a_plain_asker_gets_text_in_every_chat_message_and_the_answer_in_the_first(
    channels: set[str] | None,
) -> None:
    msgs = run(hierarchical_reply)
    chats, _ = timed(msgs, step=1 / 150, tagged=False, channels=channels)
    assert len(chats) > 3
    assert all(shows_text(c) for c in chats[:-1]), [plain([c]) for c in chats]
    first_text = next(m.props["content"] for m in msgs if m.type == "text" and m.props)
    assert plain(chats[:1]).startswith(first_text[:5])
    assert plain(chats) == "".join(plain([c]) for c in chats)  # nothing lost on the way
    # a tagged asker keeps its metadata-only ChatMessages (they carry no shown text for it)
    tagged, _ = timed(msgs, step=1 / 150, tagged=True, channels=channels)
    assert groups(tagged) == groups(chats)


def test_meta_delay_is_validated() -> None:
    for bad in (-0.1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="meta_delay"):
            ChatEncoder("conv", meta_delay=bad)
