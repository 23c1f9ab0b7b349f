"""ChatEncoder / ChatDecoder: Messages <-> uagents ChatMessages, as plain function calls."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import pytest
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    EndStreamContent,
    MetadataContent,
    ResourceContent,
    StartSessionContent,
    StartStreamContent,
    TextContent,
)

from agent_stream.adapters.chat import (
    TAG_KEY,
    ChatDecoder,
    ChatEncoder,
    coalesce,
    conversation_of,
    is_tagged_request,
    opens_session,
    parse_chat,
    request_tags,
    requested_channels,
    stream_id_for,
)
from agent_stream.assemble import Transcript, assemble
from agent_stream.errors import WireError
from agent_stream.message import (
    EVENT,
    MESSAGE_END,
    STREAM_END,
    STREAM_START,
    MessageEndData,
    StreamEndData,
    StreamStartData,
    action,
    error,
    image,
    lifecycle,
    loading,
    text,
    tool_call,
)
from agent_stream.message import Message as M
from agent_stream.writer import StreamWriter, collect

# -- helpers ------------------------------------------------------------------------------------


def run(body: Callable[[StreamWriter], Awaitable[Any]]) -> list[M]:
    return asyncio.run(collect(body))


def delta(content: str, mid: str, tid: str | None = None, typ: str = "text", **kw: Any) -> M:
    return M(type=typ, props={"content": content}, message_id=mid, thread_id=tid, delta=True,
             **kw)


def msg_end(mid: str, count: int | None, tid: str | None = None, status: str = "completed",
            typ: str = "text") -> M:
    return lifecycle(MESSAGE_END, MessageEndData(message_id=mid, type=typ, thread_id=tid,
                                                 chunk_count=count, status=status),
                     message_id=mid, thread_id=tid)


def encode(msgs: Iterable[M], *, close: bool = False, now: float = 0.0,
           **kw: Any) -> list[ChatMessage]:
    kw.setdefault("conversation", "conv")
    enc = ChatEncoder(kw.pop("conversation"), **kw)
    out: list[ChatMessage] = []
    for m in msgs:
        out += enc.feed(m, now)
    out += enc.close(now) if close else enc.end_streams(now)
    return out


def decode(chats: Iterable[ChatMessage], sender: str = "agent1",
           dec: ChatDecoder | None = None) -> tuple[list[M], list[Any]]:
    dec = dec or ChatDecoder()
    out: list[M] = []
    for c in chats:
        out += dec.feed(sender, c, 0.0)
    return out, dec.drain_warnings()


def view(t: Transcript) -> dict[tuple[str | None, str | None], dict[str, Any]]:
    return {(m.thread_id, m.message_id): {"type": m.type, "props": m.props,
                                          "block_id": m.block_id, "status": m.status}
            for m in t.messages}


def items(chats: Iterable[ChatMessage]) -> list[Any]:
    return [item for c in chats for item in c.content]


def plain(chats: Iterable[ChatMessage]) -> str:
    return "".join(c.text() for c in chats)


def via_json(chats: Iterable[ChatMessage]) -> list[ChatMessage]:
    """What the recipient gets: each ChatMessage serialised as uagents does and parsed back."""
    return [parse_chat(c.json()) for c in chats]


SENTENCES = ("Streaming works. It sends whole sentences, not tokens, so the peer is not "
             "flooded. Each chunk ends at a natural boundary. Here is a third sentence to make "
             "it longer. And a last one.")
TOKENS = SENTENCES.split()


async def _hierarchical(out: StreamWriter) -> None:
    async with out.block("llm", label="Answer") as b:
        async with b.message("thinking") as m:
            await m.append("Let me think about secrets. ")
            await m.append("Hidden reasoning.")
        await b.send(tool_call(id="c1", name="search", arguments='{"q":"x"}'))
        async with b.message() as m:
            for i, tok in enumerate(TOKENS):
                await m.append(tok if i == len(TOKENS) - 1 else tok + " ")

    async def weather(th: Any) -> None:
        async with th.message() as m:
            await m.append("Weather: Sunny")
            await m.append(", 25°C. ")

    async def news(th: Any) -> None:
        async with th.message() as m:
            await m.append("News: all quiet. ")
        await th.send(loading("fetching", done=True))

    await out.parallel(weather, news)


# -- stream ids -----------------------------------------------------------------------------------


def test_stream_ids_are_valid_uuid4_stable_and_distinct_per_thread_and_message() -> None:
    a = stream_id_for("conv", "T1", "M1")
    assert a == stream_id_for("conv", "T1", "M1")
    assert a.version == 4 and a.variant == uuid.RFC_4122
    StartStreamContent(stream_id=a)  # uagents accepts it
    others = {stream_id_for("conv", "T2", "M1"), stream_id_for("conv", None, "M1"),
              stream_id_for("conv", "T1", "M2"), stream_id_for("conv2", "T1", "M1")}
    assert a not in others and len(others) == 4


# -- round trip -----------------------------------------------------------------------------------


@pytest.mark.parametrize("tagged", [False, True])
def test_writer_stream_round_trips_to_the_same_transcript_except_withheld_thinking(
        tagged: bool) -> None:
    msgs = run(_hierarchical)
    chats = encode(msgs, tagged=tagged)
    decoded, warnings = decode(via_json(chats))
    assert warnings == []
    want = {k: v for k, v in view(assemble(msgs)).items() if v["type"] != "thinking"}
    got = view(assemble(decoded))
    assert got == want
    assert all(v["status"] == "completed" for v in got.values())
    assert assemble(decoded).finished


def test_thinking_is_not_sent_at_all_by_default() -> None:
    chats = encode(run(_hierarchical))
    wire = "".join(c.json() for c in chats)
    assert "secrets" not in wire and "Hidden" not in wire and "thinking" not in wire


def test_reasoning_channel_sends_thinking_as_metadata_only() -> None:
    msgs = run(_hierarchical)
    chats = encode(msgs, channels={"reasoning"})
    assert "Hidden" not in plain(chats)
    assert "Hidden reasoning" in "".join(c.json() for c in chats)
    decoded, warnings = decode(via_json(chats))
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_plain_peer_reads_exactly_the_answer_text() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            await b.send(tool_call(id="c1", name="search", arguments="{}"))
            async with b.message("thinking") as m:
                await m.append("private")
            async with b.message() as m:
                for tok in TOKENS:
                    await m.append(tok + " ")
            await b.send(action("open", {"x": 1}))
            await b.text("Second message.")

    msgs = run(body)
    chats = encode(msgs)
    assert plain(chats) == assemble(msgs).text()


def test_every_chat_message_is_valid_for_uagents_with_string_metadata_and_no_empty_ids() -> None:
    chats = encode(run(_hierarchical), channels={"reasoning"}, session=True)
    for c in chats:
        again = ChatMessage.parse_raw(c.json())  # what the recipient's uagents does
        assert again.json() == c.json()
        for item in c.content:
            if isinstance(item, MetadataContent):
                for k, v in item.metadata.items():
                    assert isinstance(v, str)
                    assert v not in ("", "None", "null"), k


def test_ids_travel_only_in_metadata() -> None:
    for item in items(encode(run(_hierarchical))):
        if isinstance(item, TextContent):
            assert "M3" not in item.text and "agent_stream" not in item.text
        else:
            assert isinstance(item, (MetadataContent, StartStreamContent, EndStreamContent,
                                     ResourceContent, EndSessionContent))


# -- costs ------------------------------------------------------------------------------------------


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


# -- batching: shared reasoning chunked like text, metadata riding with content -----------------------

REASONING = ("The user asks how agents should stream. Tokens one by one would flood the peer. "
             "Sentences are a better unit. Tool calls and events can ride along with them. "
             "That keeps the number of signed envelopes low. ") * 2


def timed(msgs: Iterable[M], *, step: float = 1 / 150, close: bool = True,
          **kw: Any) -> tuple[list[ChatMessage], list[float]]:
    """Encode as a transport does: a Message every ``step`` s, polling before each one.

    Returns the ChatMessages and the time each was produced.
    """
    kw.setdefault("conversation", "conv")
    enc = ChatEncoder(kw.pop("conversation"), **kw)
    chats: list[ChatMessage] = []
    times: list[float] = []
    t = 0.0

    def take(out: list[ChatMessage]) -> None:
        chats.extend(out)
        times.extend([t] * len(out))

    for m in msgs:
        t += step
        take(enc.poll(t))
        take(enc.feed(m, t))
    take(enc.close(t) if close else enc.end_streams(t))
    return chats, times


def groups(chats: Iterable[ChatMessage]) -> list[tuple[dict[str, str], list[str]]]:
    """Every group on the wire in order: (its metadata without seq/conversation, item types)."""
    out: list[tuple[dict[str, str], list[str]]] = []
    for c in chats:
        for i in c.content:
            if isinstance(i, MetadataContent) and TAG_KEY in i.metadata:
                out.append(({k: v for k, v in i.metadata.items()
                             if k not in ("seq", "seq_last", "conversation")}, []))
            else:
                out[-1][1].append(i.json())
    return out


def is_meta_only(c: ChatMessage) -> bool:
    return all(isinstance(i, MetadataContent) for i in c.content)


def _thinking_then_answer(chunk_count: int | None = None) -> list[M]:
    async def body(out: StreamWriter) -> None:
        async with out.block("llm") as b:
            async with b.message("thinking") as m:
                for tok in REASONING.split():
                    await m.append(tok + " ")
            await b.send(tool_call(id="c1", name="search", arguments="{}"))
            async with b.message() as m:
                for tok in TOKENS:
                    await m.append(tok + " ")

    msgs = run(body)
    if chunk_count is not None:  # a sender that says more chunks were written than it sent
        for m in msgs:
            if m.event == MESSAGE_END and m.event_data.get("type") == "thinking":
                m.props["data"]["chunk_count"] = chunk_count  # type: ignore[index]
    return msgs


def _thinking_groups(chats: Iterable[ChatMessage]) -> list[dict[str, str]]:
    return [md for md, _ in groups(chats) if md.get("type") == "thinking"]


@pytest.mark.parametrize("tagged", [False, True])
def test_shared_thinking_is_chunked_like_text_costs_few_chat_messages_and_rebuilds_exactly(
        tagged: bool) -> None:
    msgs = _thinking_then_answer()
    n_deltas = sum(1 for m in msgs if m.type == "thinking")
    assert n_deltas > 40
    chats, _ = timed(msgs, tagged=tagged, channels={"reasoning"})
    thinking = _thinking_groups(chats)
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
    msgs = _thinking_then_answer()
    chats, _ = timed(msgs, tagged=True, channels={"reasoning"})
    m1 = [md for md, _ in groups(chats) if md.get("message_id") == "M1"]
    assert json.loads(m1[0]["props"])["event"] == "message_start"
    end = json.loads(m1[-1]["props"])
    assert end["event"] == "message_end"
    assert end["data"]["chunk_count"] == len(m1) - 2  # every merged delta between the two
    assert all(md.get("delta") == "true" for md in m1[1:-1])


def test_a_lost_thinking_chunk_still_shows_as_incomplete() -> None:
    msgs = _thinking_then_answer()
    chats, _ = timed(msgs, tagged=True, channels={"reasoning"},
                     chunker={"min_chars": 10, "max_chars": 60})
    carrying = [i for i, c in enumerate(chats) if 0 < i < len(chats) - 1
                and any(md.get("delta") == "true" and md.get("type") == "thinking"
                        for md, _ in groups([c]))
                and "message_end" not in c.json()]
    assert carrying
    del chats[carrying[0]]
    decoded, warnings = decode(chats, dec=ChatDecoder(reorder_window=0))
    assert [w.code for w in warnings] == ["gap"]
    st = assemble(decoded).get(None, "M1")
    assert st is not None and st.status == "incomplete"


def test_a_thinking_stream_already_short_of_chunks_stays_incomplete() -> None:
    msgs = _thinking_then_answer()
    n = sum(1 for m in msgs if m.type == "thinking")
    lossy = _thinking_then_answer(chunk_count=n + 1)
    assert assemble(lossy).get(None, "M1").status == "incomplete"  # type: ignore[union-attr]
    decoded, _ = decode(timed(lossy, tagged=True, channels={"reasoning"})[0])
    assert assemble(decoded).get(None, "M1").status == "incomplete"  # type: ignore[union-attr]


def test_string_appends_of_custom_types_are_merged_but_not_onto_other_content() -> None:
    words = [w + " " for w in TOKENS]
    msgs = [delta(w, "M1", typ="draft") for w in words]
    msgs += [M(type="notes", props={"content": ["first"]}, message_id="M2")]
    msgs += [delta(w, "M2", typ="notes") for w in words[:3]]  # list items, one per delta
    msgs += [M(type="draft", props={"content": "x"}, delta=True, delta_action="replace",
               delta_path="content", message_id="M1"), delta("y", "M1", typ="draft")]
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
    assert assemble(decoded).get(None, "M2").props == {  # type: ignore[union-attr]
        "content": ["first", *words[:3]]}
    assert all(st.status == "completed" for st in assemble(decoded).messages)


def test_metadata_waits_and_rides_with_the_next_chat_message_in_order() -> None:
    enc = ChatEncoder("conv", chunker={"min_chars": 5})
    assert enc.feed(lifecycle(STREAM_START, StreamStartData()), 1.0) == []
    assert enc.feed(tool_call("c1", "search", "{}", message_id="M1"), 1.02) == []
    assert enc.next_deadline == pytest.approx(1.1)  # the oldest waits meta_delay at most
    [chat] = enc.feed(delta("Hello there. And", "M2"), 1.05)
    got = groups([chat])
    assert [json.loads(md.get("props", "{}")).get("event") or md["type"] for md, _ in got] == [
        "stream_start", "tool_call", "text"]
    md = next(i.metadata for i in chat.content if isinstance(i, MetadataContent))
    assert md["seq"] == "1"
    assert plain([chat]) == "Hello there. "
    assert enc.next_deadline == pytest.approx(1.05 + 0.5)  # only the chunker's now


def test_metadata_alone_goes_once_it_has_waited_meta_delay() -> None:
    enc = ChatEncoder("conv", meta_delay=0.2)
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
    enc = ChatEncoder("conv", meta_delay=0)
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


def _group_times(chats: list[ChatMessage], times: list[float]) -> list[float]:
    return [t for c, t in zip(chats, times, strict=True) for _ in groups([c])]


@pytest.mark.parametrize(("tagged", "channels"), [(False, None), (True, None),
                                                  (False, {"reasoning"}), (True, {"reasoning"})])
def test_waiting_never_reorders_groups_never_delays_content_and_lasts_meta_delay_at_most(
        tagged: bool, channels: set[str] | None) -> None:
    msgs = run(_hierarchical) + _thinking_then_answer()[1:]  # two replies' worth, one stream
    step = 1 / 150
    at_once, t0 = timed(msgs, step=step, tagged=tagged, channels=channels, meta_delay=0)
    batched, t1 = timed(msgs, step=step, tagged=tagged, channels=channels)
    assert groups(batched) == groups(at_once)  # same groups, same order
    assert len(batched) < len(at_once)
    assert sum(map(is_meta_only, batched)) < sum(map(is_meta_only, at_once))
    seqs = [next(i.metadata for i in c.content if isinstance(i, MetadataContent))["seq"]
            for c in batched]
    assert seqs == [str(n) for n in range(1, len(batched) + 1)]
    for (md, its), made, sent in zip(groups(at_once), _group_times(at_once, t0),
                                     _group_times(batched, t1), strict=True):
        if its:
            assert sent == made, md  # content goes when it is ready
        else:
            assert made <= sent <= made + 0.1 + step + 1e-9, md  # polled every step


def test_meta_delay_is_validated() -> None:
    for bad in (-0.1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="meta_delay"):
            ChatEncoder("conv", meta_delay=bad)


# -- serialisation and interleaving ------------------------------------------------------------------

def _interleaved() -> list[M]:
    a = ["Alpha one. ", "Alpha two is longer than forty characters. ", "Alpha three."]
    b = ["Beta one. ", "Beta two is also longer than forty characters. ", "Beta three."]
    out: list[M] = []
    for x, y in zip(a, b, strict=True):
        out += [delta(x, "M1", "T1"), delta(y, "M1", "T2")]
    return [*out, msg_end("M1", 3, "T1"), msg_end("M1", 3, "T2")]


def _open_at_once(chats: list[ChatMessage]) -> int:
    open_, most = set(), 0
    for item in items(chats):
        if isinstance(item, StartStreamContent):
            open_.add(item.stream_id)
            most = max(most, len(open_))
        elif isinstance(item, EndStreamContent):
            open_.remove(item.stream_id)
    assert not open_
    return most


def test_plain_peer_never_sees_two_messages_interleaved() -> None:
    msgs = _interleaved()
    chats = encode(msgs)
    assert _open_at_once(chats) == 1
    t = assemble(msgs)
    a, b = t.get("T1", "M1").content, t.get("T2", "M1").content  # type: ignore[union-attr]
    assert plain(chats) in (a + b, b + a)
    decoded, warnings = decode(chats)
    assert warnings == [] and view(assemble(decoded)) == view(t)


def test_tagged_recipient_gets_streams_interleaved_as_produced() -> None:
    msgs = _interleaved()
    chats = encode(msgs, tagged=True, chunker={"min_chars": 1})
    assert _open_at_once(chats) == 2
    decoded, warnings = decode(chats)
    assert warnings == [] and view(assemble(decoded)) == view(assemble(msgs))


# -- every stream ends -----------------------------------------------------------------------------


def test_close_ends_open_streams_flushes_and_sends_stream_end_once() -> None:
    enc = ChatEncoder("conv")
    out = enc.feed(delta("Half a sent", "M1"), 0.0)
    assert not enc.finished
    out += enc.close(0.0, status="error", error="boom")
    assert enc.finished and enc.close(1.0) == []
    assert _open_at_once(out) == 1
    assert plain(out) == "Half a sent\n\nError: boom"
    decoded, _ = decode(out)
    t = assemble(decoded)
    assert t.finished and t.status == "error"
    assert t.get(None, "M1").props == {"content": "Half a sent"}  # type: ignore[union-attr]


def test_raising_responder_ends_its_streams_and_delivers_the_error() -> None:
    msgs: list[M] = []

    async def sink(m: M) -> None:
        msgs.append(m)

    async def body() -> None:
        async with StreamWriter(sink) as out, out.block("llm") as b, b.message() as m:
            await m.append("Partial answer. ")
            raise RuntimeError("model went away")

    with pytest.raises(RuntimeError):
        asyncio.run(body())
    chats = encode(msgs, close=False)
    assert _open_at_once(chats) == 1
    assert plain(chats) == "Partial answer. \n\nError: RuntimeError: model went away"
    last = chats[-1]
    assert any("stream_end" in i.metadata.get("props", "") for i in last.content
               if isinstance(i, MetadataContent))
    decoded, warnings = decode(chats)
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(msgs))
    assert assemble(decoded).status == "error"


def test_session_reply_ends_with_end_session_and_stream_end() -> None:
    chats = encode(run(_hierarchical), session=True)
    last = chats[-1].content
    assert isinstance(last[-1], EndSessionContent)
    assert sum(isinstance(i, EndSessionContent) for i in items(chats)) == 1
    assert any('"stream_end"' in i.metadata.get("props", "") for i in last
               if isinstance(i, MetadataContent))


def test_end_streams_ends_streams_but_not_the_reply() -> None:
    chats = encode([delta("No end in sight", "M1")], close=False)
    assert _open_at_once(chats) == 1
    decoded, warnings = decode(chats)
    assert warnings == []
    t = assemble(decoded)
    assert not t.finished and t.get(None, "M1").status == "streaming"  # type: ignore[union-attr]


# -- chunk counts --------------------------------------------------------------------------------------


def test_message_end_chunk_count_is_rewritten_to_what_the_decoder_rebuilds() -> None:
    msgs = [delta(tok + " ", "M1") for tok in TOKENS] + [msg_end("M1", len(TOKENS))]
    chats = encode(msgs)
    decoded, _ = decode(chats)
    st = assemble(decoded).get(None, "M1")
    assert st is not None and st.status == "completed"
    assert st.chunk_count < len(TOKENS)  # rebuilt from sentence chunks, not tokens


def test_a_lost_chat_message_shows_as_incomplete() -> None:
    msgs = [delta(tok + " ", "M1") for tok in TOKENS] + [msg_end("M1", len(TOKENS))]
    chats = encode(msgs, chunker={"min_chars": 10, "max_chars": 60})
    middle = [i for i, c in enumerate(chats)
              if any(isinstance(x, TextContent) for x in c.content)
              and not any(isinstance(x, (StartStreamContent, EndStreamContent))
                          for x in c.content)]
    assert middle
    del chats[middle[0]]
    decoded, warnings = decode(chats, dec=ChatDecoder(reorder_window=0))
    assert [w.code for w in warnings] == ["gap"]
    t = assemble(decoded)
    assert t.get(None, "M1").status == "incomplete"  # type: ignore[union-attr]
    assert [w.code for w in t.warnings] == ["chunks_lost"]


def test_a_message_already_short_of_chunks_stays_incomplete() -> None:
    msgs = [delta("One. ", "M1"), delta("Two.", "M1"), msg_end("M1", 5)]
    assert assemble(msgs).get(None, "M1").status == "incomplete"  # type: ignore[union-attr]
    decoded, _ = decode(encode(msgs))
    assert assemble(decoded).get(None, "M1").status == "incomplete"  # type: ignore[union-attr]


# -- types -------------------------------------------------------------------------------------------


def test_tool_call_loading_action_and_events_travel_as_metadata_only() -> None:
    msgs = [tool_call("c1", "search", '{"q":1}', message_id="M1"),
            loading("working", message_id="M2"),
            action("navigate", {"to": "/x"}, message_id="M3"),
            M(type=EVENT, props={"event": "progress", "data": {"pct": 50}}, chunk_id="C9")]
    chats = encode(msgs)
    assert plain(chats) == ""
    assert not any(isinstance(i, (TextContent, StartStreamContent)) for i in items(chats))
    decoded, warnings = decode(chats)
    assert warnings == []
    assert [m.to_dict() for m in decoded[:3]] == [m.to_dict() for m in msgs[:3]]
    assert [(m.type, m.props, m.status) for m in assemble(decoded).messages] == [
        (m.type, m.props, m.status) for m in assemble(msgs).messages]


def test_image_goes_as_resource_with_mime_type() -> None:
    msgs = [image("https://x.test/cat.png", alt="a cat", message_id="M1")]
    chats = encode(msgs)
    res = [i for i in items(chats) if isinstance(i, ResourceContent)]
    assert len(res) == 1
    r = res[0].resource
    assert r.uri == "https://x.test/cat.png"  # type: ignore[union-attr]
    assert r.metadata["mime_type"] == "image/png"  # type: ignore[union-attr]
    assert res[0].resource_id.version == 4
    decoded, _ = decode(chats)
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_error_is_a_readable_line_plus_error_metadata() -> None:
    msgs = [text("Looking it up.", message_id="M1"),
            error("upstream timed out", code="timeout", message_id="M2")]
    chats = encode(msgs)
    assert plain(chats) == "Looking it up.\n\nError (timeout): upstream timed out"
    decoded, _ = decode(chats)
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_type_change_text_to_custom_after_text_was_sent() -> None:
    msgs = [delta("Some text that was sent already. ", "M1"),
            M(type="table", type_change=True, message_id="M1", props={"rows": []}),
            M(type="table", delta=True, delta_path="rows", delta_action="append",
              props={"rows": [{"a": 1}]}, message_id="M1"),
            msg_end("M1", 3, typ="table")]
    chats = encode(msgs)
    assert plain(chats) == "Some text that was sent already. "  # what a plain peer keeps
    assert _open_at_once(chats) == 1  # the stream ended at the change
    decoded, warnings = decode(chats)
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_type_change_to_text_makes_the_content_visible() -> None:
    msgs = [M(type="draft", props={"content": "Draft answer. "}, message_id="M1"),
            M(type="text", type_change=True, message_id="M1",
              props={"content": "Draft answer. "}),
            delta("More.", "M1"), msg_end("M1", 3)]
    chats = encode(msgs)
    assert plain(chats) == "Draft answer. More."
    decoded, _ = decode(chats)
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_type_change_text_to_thinking_ends_the_stream_and_withholds_the_rest() -> None:
    msgs = [delta("Let me think. ", "M1"), delta("Okay, so", "M1"),
            M(type="thinking", type_change=True, message_id="M1"),
            delta("secret reasoning", "M1", typ="thinking"), msg_end("M1", 4, typ="thinking")]
    chats = encode(msgs, chunker={"min_chars": 5})
    assert plain(chats) == "Let me think. "  # sent before the change: a plain peer keeps it
    wire = "".join(c.json() for c in chats)
    assert "secret" not in wire and "Okay" not in wire  # buffered text is reasoning now
    assert _open_at_once(chats) == 1
    decoded, warnings = decode(chats)
    assert warnings == []
    st = assemble(decoded).get(None, "M1")
    assert st is not None and st.type == "thinking" and st.props == {"content": "Let me think. "}
    assert st.status == "completed"


def test_type_change_to_thinking_before_anything_was_sent_withholds_it_whole() -> None:
    msgs = [delta("Let me think", "M1"), M(type="thinking", type_change=True, message_id="M1"),
            msg_end("M1", 2, typ="thinking")]
    chats = encode(msgs)
    assert chats == [] or "M1" not in "".join(c.json() for c in chats)


def test_type_change_thinking_to_text_starts_fresh_without_revealing_reasoning() -> None:
    msgs = [delta("secret reasoning. ", "M1", typ="thinking"),
            M(type="text", type_change=True, message_id="M1", props={"content": "Answer: "}),
            delta("42.", "M1"), msg_end("M1", 3)]
    chats = encode(msgs)
    assert "secret" not in "".join(c.json() for c in chats)
    assert plain(chats) == "Answer: 42."
    decoded, _ = decode(chats)
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_withheld_message_start_and_end_are_withheld_too() -> None:
    async def body(out: StreamWriter) -> None:
        async with out.message("thinking") as m:
            await m.append("hmm")

    chats = encode(run(body))
    assert "M1" not in "".join(c.json() for c in chats)


def test_non_append_text_deltas_and_replacements_round_trip() -> None:
    msgs = [delta("Hello wrld. ", "M1"),
            M(type="text", props={"content": "Hello world. "}, delta=True,
              delta_action="replace", delta_path="content", message_id="M1"),
            delta("Bye.", "M1"),
            M(type="text", props={"content": "Whole", "lang": "en"}, message_id="M2"),
            msg_end("M1", 3)]
    decoded, warnings = decode(encode(msgs))
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_empty_text_message_round_trips() -> None:
    msgs = [delta("", "M1"), msg_end("M1", 1)]
    decoded, _ = decode(encode(msgs))
    assert view(assemble(decoded)) == view(assemble(msgs))


def test_whole_text_without_ids_is_one_text_content() -> None:
    chats = encode([text("Hi there.")], close=False)
    assert len(chats) == 1 and plain(chats) == "Hi there."
    assert not any(isinstance(i, StartStreamContent) for i in items(chats))
    decoded, _ = decode(chats)
    assert [(m.type, m.props) for m in assemble(decoded).messages] == [
        ("text", {"content": "Hi there."})]


def test_duplicate_chunk_ids_are_dropped_like_the_assembler_does() -> None:
    a = delta("Once. ", "M1", chunk_id="C1")
    msgs = [a, a, msg_end("M1", 1)]
    decoded, _ = decode(encode(msgs))
    assert view(assemble(decoded)) == view(assemble(msgs))


# -- decoder: untagged peers ---------------------------------------------------------------------------


def test_untagged_single_text_is_a_standalone_message_without_warning() -> None:
    dec = ChatDecoder()
    out = dec.feed("plain", ChatMessage(content=[TextContent(text="Hello!")]), 0.0)
    assert dec.drain_warnings() == []
    t = assemble(out)
    [m] = t.messages
    assert m.type == "text" and m.props == {"content": "Hello!"} and m.status == "completed"
    assert m.message_id


def test_untagged_one_chat_message_per_token_is_one_message() -> None:
    sid = uuid.uuid4()
    chats = [ChatMessage(content=[StartStreamContent(stream_id=sid)])]
    chats += [ChatMessage(content=[TextContent(text=t)]) for t in ["Hel", "lo", " world"]]
    chats += [ChatMessage(content=[EndStreamContent(stream_id=sid)])]
    decoded, warnings = decode(chats, sender="plain")
    assert warnings == []
    [m] = assemble(decoded).messages
    assert m.props == {"content": "Hello world"} and m.status == "completed"
    assert m.chunk_count == 3


def test_untagged_text_goes_to_the_most_recently_started_open_stream() -> None:
    s1, s2 = uuid.uuid4(), uuid.uuid4()
    chats = [ChatMessage(content=[StartStreamContent(stream_id=s1), TextContent(text="a")]),
             ChatMessage(content=[StartStreamContent(stream_id=s2), TextContent(text="b")]),
             ChatMessage(content=[TextContent(text="c")]),
             ChatMessage(content=[EndStreamContent(stream_id=s2)]),
             ChatMessage(content=[TextContent(text="d")]),
             ChatMessage(content=[EndStreamContent(stream_id=s1)])]
    decoded, warnings = decode(chats, sender="plain")
    assert warnings == []
    assert [m.props["content"] for m in assemble(decoded).messages] == ["ad", "bc"]


def test_one_sender_cannot_touch_another_senders_stream() -> None:
    sid = uuid.uuid4()
    dec = ChatDecoder()
    dec.feed("alice", ChatMessage(content=[StartStreamContent(stream_id=sid)]), 0.0)
    dec.feed("mallory", ChatMessage(content=[EndStreamContent(stream_id=sid)]), 0.0)
    assert [w.code for w in dec.drain_warnings()] == ["unknown_stream_end"]
    assert dec.open_streams("alice") == 1
    out = dec.feed("mallory", ChatMessage(content=[TextContent(text="injected")]), 0.0)
    assert not out[0].delta and out[0].message_id != "U1"  # mallory's own standalone message
    out = dec.feed("alice", ChatMessage(content=[TextContent(text="mine")]), 0.0)
    assert out[0].delta and out[0].message_id == "U1"  # alice's text joins alice's stream


# -- decoder: tagged order, duplicates, gaps -------------------------------------------------------------


def _reply() -> list[ChatMessage]:
    msgs = [delta(tok + " ", "M1") for tok in TOKENS] + [msg_end("M1", len(TOKENS))]
    return encode(msgs, chunker={"min_chars": 10, "max_chars": 60})


def test_duplicate_chat_messages_are_dropped() -> None:
    chats = _reply()
    decoded, warnings = decode(chats + chats[:2])
    assert {w.code for w in warnings} == {"duplicate_chat_message"}
    assert view(assemble(decoded)) == view(assemble(decode(chats)[0]))


def test_out_of_order_chat_messages_are_put_back_in_order() -> None:
    chats = _reply()
    assert len(chats) >= 4
    shuffled = [chats[1], chats[3], chats[0], chats[2], *chats[4:]]
    decoded, warnings = decode(shuffled)
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(decode(chats)[0]))


def test_coalesced_chat_messages_read_and_decode_the_same() -> None:
    chats = _reply()
    assert len(chats) >= 4
    one = coalesce(chats[1:3])
    md = next(i.metadata for i in one.content if isinstance(i, MetadataContent))
    assert (md["seq"], md["seq_last"]) == ("2", "3")
    ChatMessage.parse_raw(one.json())  # still valid for uagents
    wire = [chats[0], one, *chats[3:]]
    assert plain(wire) == plain(chats)
    decoded, warnings = decode(wire)
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(decode(chats)[0]))
    decoded, warnings = decode([chats[0], *chats[3:], one])  # late, still put back in order
    assert warnings == []
    assert view(assemble(decoded)) == view(assemble(decode(chats)[0]))


def test_a_gap_is_reported_after_gap_timeout_not_papered_over() -> None:
    chats = _reply()
    dec = ChatDecoder(gap_timeout=2.0)
    assert dec.feed("a", chats[0], 0.0)
    assert dec.feed("a", chats[2], 1.0) == []  # held back, waiting for 2
    assert dec.next_deadline is not None and dec.next_deadline <= 3.0
    assert dec.poll(2.5) == []
    out = dec.poll(3.0)
    assert out  # released without the missing one
    [w] = dec.drain_warnings()
    assert w.code == "gap" and "2" in w.detail
    dec.feed("a", chats[1], 3.5)  # too late now
    assert [w.code for w in dec.drain_warnings()] == ["late_chat_message"]


def test_a_new_reply_reusing_the_conversation_id_starts_over() -> None:
    dec = ChatDecoder()
    for word in ("First.", "Second."):
        chats = encode([text(word, message_id="M1")], close=True)  # seq 1, 2 each time
        out, warnings = decode(chats, dec=dec)
        assert warnings == [] and [m.props for m in out if m.type == "text"] == [
            {"content": word}]


def test_hostile_sequence_numbers_do_not_raise() -> None:
    dec = ChatDecoder()
    for seq in ("²", "-1", "9" * 40, ""):
        dec.feed("a", ChatMessage(content=[_tag(op="text", seq=seq, conversation="c",
                                                type="text"), TextContent(text="x")]), 0.0)
    assert dec.drain_warnings() == []


def test_reorder_window_overflow_reports_the_gap_at_once() -> None:
    chats = _reply()
    dec = ChatDecoder(reorder_window=1)
    dec.feed("a", chats[0], 0.0)
    assert dec.feed("a", chats[2], 0.0) == []
    assert dec.feed("a", chats[3], 0.0)
    assert [w.code for w in dec.drain_warnings()] == ["gap"]


# -- decoder: protocol faults and limits ---------------------------------------------------------------


def _tag(**kw: str) -> MetadataContent:
    return MetadataContent(metadata={TAG_KEY: "1", **kw})


def test_tagged_faults_warn_and_the_conversation_goes_on() -> None:
    sid = str(stream_id_for("c", None, "M1"))
    dec = ChatDecoder()
    feed = [
        [_tag(op="chunk", stream_id=sid), TextContent(text="orphan")],  # stream not open
        [_tag(op="end", stream_id=sid), EndStreamContent(stream_id=uuid.UUID(sid))],  # unknown
        [_tag(op="chunk", stream_id=sid, message_id="M1", type="text"),
         StartStreamContent(stream_id=uuid.UUID(sid)), TextContent(text="ok ")],
        [_tag(op="chunk", stream_id=sid, message_id="M1", type="text"),
         StartStreamContent(stream_id=uuid.UUID(sid)), TextContent(text="still ok")],  # again
        [_tag(op="message", type="text", props="{not json")],
        [_tag(op="message", props="{}")],  # no type
        [_tag(op="bogus")],
    ]
    out: list[M] = []
    for content in feed:
        out += dec.feed("a", ChatMessage(content=content), 0.0)
    codes = [w.code for w in dec.drain_warnings()]
    assert codes == ["stream_not_open", "unknown_stream_end", "duplicate_stream_start",
                     "bad_metadata", "bad_metadata", "bad_metadata"]
    assert assemble(out).get(None, "M1").props == {"content": "ok still ok"}  # type: ignore[union-attr]


def test_max_open_streams_per_sender() -> None:
    dec = ChatDecoder(max_open_streams=2)
    for _ in range(3):
        dec.feed("a", ChatMessage(content=[StartStreamContent(stream_id=uuid.uuid4())]), 0.0)
    assert [w.code for w in dec.drain_warnings()] == ["too_many_streams"]
    assert dec.open_streams("a") == 2
    dec.feed("b", ChatMessage(content=[StartStreamContent(stream_id=uuid.uuid4())]), 0.0)
    assert dec.drain_warnings() == []  # the limit is per sender


def test_max_stream_bytes_drops_the_rest_and_marks_the_message_error() -> None:
    sid = uuid.uuid4()
    dec = ChatDecoder(max_stream_bytes=10)
    out = dec.feed("a", ChatMessage(content=[StartStreamContent(stream_id=sid),
                                             TextContent(text="12345"),
                                             TextContent(text="67890"),
                                             TextContent(text="overflow"),
                                             TextContent(text="more"),
                                             EndStreamContent(stream_id=sid)]), 0.0)
    assert [w.code for w in dec.drain_warnings()] == ["stream_too_large"]
    [m] = assemble(out).messages
    assert m.props == {"content": "1234567890"} and m.status == "error"


def test_max_message_bytes_for_tagged_messages() -> None:
    msgs = [M(type="table", props={"rows": ["x" * 50]}, message_id="M1"),
            M(type="table", props={"rows": ["y"]}, delta=True, delta_path="rows",
              message_id="M1")]
    decoded, warnings = decode(encode(msgs), dec=ChatDecoder(max_message_bytes=40))
    assert [w.code for w in warnings] == ["message_too_large"]
    assert all(m.message_id != "M1" or m.type == "event" for m in decoded)


def test_idle_stream_is_closed_as_timed_out_by_poll() -> None:
    sid = uuid.uuid4()
    dec = ChatDecoder(idle_timeout=5.0)
    out = dec.feed("a", ChatMessage(content=[StartStreamContent(stream_id=sid),
                                             TextContent(text="partial")]), 0.0)
    assert dec.next_deadline == 5.0
    assert dec.poll(4.9) == []
    out += dec.poll(5.0)
    assert [w.code for w in dec.drain_warnings()] == ["stream_timeout"]
    assert dec.open_streams("a") == 0 and dec.next_deadline is None
    [m] = assemble(out).messages
    assert m.status == "error" and m.props == {"content": "partial"}


def test_finished_per_sender() -> None:
    chats = encode([delta("Done.", "M1"), msg_end("M1", 1)], close=True)
    dec = ChatDecoder()
    for c in chats[:-1]:
        dec.feed("a", c, 0.0)
    assert not dec.finished("a")
    dec.feed("a", chats[-1], 0.0)
    assert dec.finished("a") and dec.finished("a", "conv") and not dec.finished("b")


def test_decoder_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_open_streams"):
        ChatDecoder(max_open_streams=0)


# -- request side --------------------------------------------------------------------------------------


def test_request_tags_and_session_helpers() -> None:
    plain_req = ChatMessage(content=[StartSessionContent(), TextContent(text="hi")])
    assert not is_tagged_request(plain_req) and opens_session(plain_req)
    req = ChatMessage(content=[request_tags(channels=["reasoning"]), TextContent(text="hi")])
    assert is_tagged_request(req) and not opens_session(req)
    assert requested_channels(req) == {"reasoning"}
    assert request_tags().metadata[TAG_KEY]
    assert conversation_of(encode([text("x")])[0]) == "conv"
    assert conversation_of(plain_req) is None


# -- parsing the wire ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("line", "reason"), [
    ("{not json", "not JSON"),
    ("[]", "must be a JSON object"),
    ('{"content": [], "extra": 1}', "unknown field(s) 'extra'"),
    (f'{{"msg_id": "{uuid.uuid4()}"}}', "missing field 'content'"),
    ('{"content": [{"type": "text", "text": "x", "stream_id": "y"}]}',
     "content.0 (text): unknown field(s) 'stream_id'"),
    (f'{{"content": [{{"type": "start-stream", "stream_id": "{uuid.uuid1()}"}}]}}',
     "uuid version 4 expected"),
    ('{"content": [{"type": "video-frame"}]}', "unknown content type 'video-frame'"),
    ('{"content": [{"type": "metadata", "metadata": {"a": null}}]}',
     "content.0.metadata.a: none is not an allowed value"),
    ('{"content": [], "msg_id": "nope"}', "msg_id: value is not a valid uuid"),
])
def test_parse_chat_reports_what_uagents_would_reject(line: str, reason: str) -> None:
    with pytest.raises(WireError) as info:
        parse_chat(line)
    assert reason in str(info.value)
    assert "\n" not in str(info.value)


def test_parse_chat_round_trips_valid_messages() -> None:
    c = ChatMessage(content=[TextContent(text="hi"), MetadataContent(metadata={"k": "v"})])
    assert parse_chat(c.json()).json() == c.json()
    assert parse_chat(json.loads(c.json())) == c
