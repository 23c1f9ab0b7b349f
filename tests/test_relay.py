"""Relay in the author API, in one process: a sub-reply streamed into the caller's stream."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from relay_fixtures import (
    PEER,
    FakeReply,
    assert_placed,
    keys_unique,
    relay_blocks,
    replay_stream_async,
    subtree,
)

from agent_stream.assemble import assemble
from agent_stream.message import Message, error
from agent_stream.relay import (
    RelayError,
    RelayRefused,
    check_delegation,
    delegation_path,
    end_status,
)
from agent_stream.writer import StreamWriter, ThreadScope, collect

Q1 = "How should agents stream?"
Q2 = "A quick pasta recipe for dinner"


async def test_relay_places_the_sub_reply_under_its_block_and_ids_never_collide() -> None:
    sub = await replay_stream_async(Q1)
    got: dict[str, Any] = {}

    async def body(out: StreamWriter) -> None:
        await out.text("before")  # the caller's own M1
        async with out.block("plan", label="Plan") as b:
            got["t"] = await b.relay(FakeReply(sub), name="researcher")
            await b.text("after")

    msgs = await collect(body)
    assert keys_unique(msgs)
    whole = assemble(msgs)
    assert whole.status == "completed" and not whole.warnings
    assert all(m.status == "completed" for m in whole.messages)
    ((root, data),) = relay_blocks(msgs)
    assert data["agent"] == PEER and data["agent_name"] == "researcher"
    assert data["label"] == "researcher" and data["type"] == "agent"
    assert data["parent_block_id"] == "B1"  # the Plan block
    assert_placed(assemble(sub), msgs, root)
    assert got["t"].text() == assemble(sub).text()
    assert whole.text().startswith("before") and whole.text().endswith("after")
    assert whole.block(root).status == "completed"  # type: ignore[union-attr]


async def test_text_deltas_stay_deltas_chunk_for_chunk() -> None:
    sub = await replay_stream_async(Q1)

    async def body(out: StreamWriter) -> None:
        await out.relay(FakeReply(sub))

    msgs = await collect(body)
    deltas = [m for m in msgs if m.type == "text" and m.delta]
    assert [m.props for m in deltas] == [m.props for m in sub if m.type == "text" and m.delta]
    assert len({m.message_id for m in deltas}) == 1


async def test_parallel_relays_become_threads_of_the_caller() -> None:
    a, b = await replay_stream_async(Q1), await replay_stream_async(Q2)

    async def body(out: StreamWriter) -> None:
        await out.parallel(
            lambda t: t.relay(FakeReply(a, pause=0.0005), name="a"),
            lambda t: t.relay(FakeReply(b, pause=0.0005), name="b"),
            labels=["A", "B"],
        )

    msgs = await collect(body)
    assert keys_unique(msgs)
    whole = assemble(msgs)
    roots = relay_blocks(msgs)
    assert [d["agent_name"] for _, d in roots] == ["a", "b"]
    for (root, _), sub in zip(roots, (a, b), strict=True):
        assert_placed(assemble(sub), msgs, root)
    # the sub-replies' own threads hang under each relay's thread
    t_a, t_b = (whole.thread(t) for t in ("T1", "T2"))
    assert t_a is not None and t_b is not None and (t_a.label, t_b.label) == ("A", "B")
    parents = {
        m.event_data.get("parent_thread_id")
        for m in msgs
        if m.event == "thread_start" and m.event_data.get("parent_thread_id")
    }
    assert parents == {"T1", "T2"}
    _, threads_a = subtree(msgs, roots[0][0])
    _, threads_b = subtree(msgs, roots[1][0])
    assert len(threads_a) == len(threads_b) == 2 and not threads_a & threads_b


async def test_sub_agent_error_ends_the_relay_block_error_and_raises() -> None:
    async def failing(out: StreamWriter) -> None:
        async with out.block("llm") as b, b.message("text") as m:
            await m.append("half an ans")
            raise RuntimeError("model crashed")

    with pytest.raises(RuntimeError):
        await collect(failing)
    sub: list[Message] = []

    async def keep(m: Message) -> None:
        sub.append(m)

    with pytest.raises(RuntimeError):
        async with StreamWriter(keep) as w:
            try:
                await failing(w)
            except RuntimeError:
                await w.send(error("model crashed", code="responder_error"))
                raise
    caught: list[RelayError] = []

    async def body(out: StreamWriter) -> None:
        try:
            await out.relay(FakeReply(sub), name="worker")
        except RelayError as exc:
            caught.append(exc)
        await out.text("going on without it")

    msgs = await collect(body)
    whole = assemble(msgs)
    ((root, _),) = relay_blocks(msgs)
    assert whole.block(root).status == "error"  # type: ignore[union-attr]
    assert whole.status == "completed" and whole.text().endswith("going on without it")
    assert caught and caught[0].status == "error" and caught[0].peer == PEER
    errors = [m for m in whole.messages if m.type == "error"]
    assert len(errors) == 1 and errors[0].props["code"] == "responder_error"  # the sub's own
    assert caught[0].transcript.text() == "half an ans"


async def test_lost_sub_agent_ends_what_it_left_open() -> None:
    full = await replay_stream_async(Q1)
    cut = full[: len(full) // 2]  # the sub-agent dies mid-reply
    caught: list[RelayError] = []

    async def body(out: StreamWriter) -> None:
        try:
            await out.relay(FakeReply(cut, status="lost"), name="worker")
        except RelayError as exc:
            caught.append(exc)

    msgs = await collect(body)
    whole = assemble(msgs)
    assert caught[0].status == "lost"
    assert all(m.status != "streaming" for m in whole.messages)
    assert all(b.status != "streaming" for b in whole.blocks)
    assert all(t.status != "streaming" for t in whole.threads)
    ((root, _),) = relay_blocks(msgs)
    assert whole.block(root).status == "error"  # type: ignore[union-attr]
    ends = [m for m in msgs if m.event == "block_end" and m.block_id == root]
    assert ends[0].event_data["relay_status"] == "lost"
    errs = [m for m in whole.messages if m.type == "error"]
    assert errs[-1].props["code"] == "lost" and errs[-1].block_id == root


async def test_cancelling_the_caller_cancels_the_sub_reply() -> None:
    full = await replay_stream_async(Q1)
    reply = FakeReply(full, pause=0.01)
    sink: list[Message] = []

    async def keep(m: Message) -> None:
        sink.append(m)

    async def run() -> None:
        async with StreamWriter(keep) as out:
            await out.relay(reply)

    task = asyncio.create_task(run())
    await asyncio.sleep(0.15)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert reply.cancelled
    whole = assemble(sink)
    assert whole.status == "cancelled"
    ((root, _),) = relay_blocks(sink)
    assert whole.block(root).status == "cancelled"  # type: ignore[union-attr]
    opened = [m for m in whole.messages if m.status == "streaming"]
    assert not opened


async def test_a_refused_delegation_is_an_error_in_its_block() -> None:
    async def refused() -> FakeReply:
        raise RelayRefused("delegation loop: x is already in the chain", "loop")

    async def body(out: StreamWriter) -> None:
        with pytest.raises(RelayError) as info:
            await out.relay(refused(), name="x", agent=PEER)
        assert info.value.status == "loop" and info.value.transcript is None

    msgs = await collect(body)
    whole = assemble(msgs)
    ((root, data),) = relay_blocks(msgs)
    assert data["agent"] == PEER
    assert whole.block(root).status == "error"  # type: ignore[union-attr]
    assert [m.props["code"] for m in whole.messages if m.type == "error"] == ["loop"]


async def test_repeated_chunks_of_the_sub_reply_are_dropped() -> None:
    sub = await replay_stream_async(Q1)
    doubled = [m for m in sub for _ in (0, 1)]

    async def body(out: StreamWriter) -> None:
        await out.relay(FakeReply(doubled))

    msgs = await collect(body)
    assert assemble(msgs).text() == assemble(sub).text()


async def test_relay_in_a_thread_keeps_the_thread() -> None:
    sub = await replay_stream_async(Q2)

    async def one(t: ThreadScope) -> None:
        await t.relay(FakeReply(sub))

    async def body(out: StreamWriter) -> None:
        await out.parallel(one, labels=["only"])

    msgs = await collect(body)
    ((root, _),) = relay_blocks(msgs)
    start = next(m for m in msgs if m.event == "block_start" and m.block_id == root)
    assert start.thread_id == "T1"
    top = [m for m in assemble(msgs).messages if m.block_id == root]
    assert all(m.thread_id == "T1" for m in top)


def test_delegation_chain_rules() -> None:
    assert delegation_path([], "client") == ("client",)
    assert delegation_path(["client", "a"], "a") == ("client", "a")
    assert delegation_path(["client"], "a") == ("client", "a")
    check_delegation(("client",), "a", "b", 4)  # hop 2
    check_delegation(("c", "a", "b"), "x", "y", 4)  # hop 4: the last allowed
    with pytest.raises(RelayRefused) as info:
        check_delegation(("c", "a", "b", "x"), "y", "z", 4)
    assert info.value.code == "hop_limit"
    with pytest.raises(RelayRefused) as info:
        check_delegation(("c", "a"), "b", "a", 4)
    assert info.value.code == "loop"
    with pytest.raises(RelayRefused) as info:
        check_delegation(("c", "b"), "b", "z", 4)  # a request that came back to us
    assert info.value.code == "loop"
    with pytest.raises(RelayRefused):
        check_delegation(("c",), "b", "b", 4)  # asking ourselves
    assert [end_status(s) for s in ("completed", "cancelled", "lost", "timeout", None)] == [
        "completed",
        "cancelled",
        "error",
        "error",
        "error",
    ]


async def test_each_relayed_chunk_asks_the_sink_to_flush_its_message() -> None:
    sub = await replay_stream_async(Q1)
    flushed: list[tuple[str | None, str]] = []
    sink: list[Message] = []

    async def keep(m: Message) -> None:
        sink.append(m)

    async def flush(thread_id: str | None, message_id: str) -> None:
        flushed.append((thread_id, message_id))

    async with StreamWriter(keep, flush=flush) as out:
        await out.text("mine")  # not relayed: no flush
        await out.relay(FakeReply(sub))
    deltas = [(m.thread_id, m.message_id) for m in sink if m.delta]
    assert flushed == deltas and len(deltas) == sum(1 for m in sub if m.delta)


def test_the_chat_encoder_sends_a_flushed_chunk_at_once() -> None:
    from uagents_core.contrib.protocols.chat import TextContent

    from agent_stream.adapters.chat import ChatEncoder
    from agent_stream.message import MessageStartData, lifecycle

    enc = ChatEncoder("conv", tagged=True)
    enc.feed(
        lifecycle("message_start", MessageStartData(message_id="M1", type="text"), message_id="M1"),
        0.0,
    )
    held = enc.feed(
        Message(
            type="text", props={"content": "One short sentence. "}, delta=True, message_id="M1"
        ),
        0.0,
    )
    assert not any(isinstance(i, TextContent) for c in held for i in c.content)  # buffered
    out = enc.flush(None, "M1", 0.001)
    texts = [i.text for c in out for i in c.content if isinstance(i, TextContent)]
    assert texts == ["One short sentence. "]
    assert enc.flush(None, "M1", 0.002) == [] and enc.flush(None, "M9", 0.002) == []


def test_a_delegated_question_carries_the_chain_and_the_lowest_hop_limit() -> None:
    from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

    from agent_stream.adapters.chat import request_tags
    from agent_stream.adapters.chat.wire import chain_of, max_hops_of
    from agent_stream.uagents import ChatRequest
    from agent_stream.uagents.asker._delegation import delegated_question

    def request(chain: tuple[str, ...] = (), max_hops: int | None = None) -> ChatRequest:
        msg = ChatMessage(
            content=[
                request_tags({"reasoning"}, chain=chain, max_hops=max_hops),
                TextContent(text="q"),
            ]
        )
        return ChatRequest(
            sender=chain[-1] if chain else "client", message=msg, channels=frozenset({"reasoning"})
        )

    q = delegated_question(request(), "a", "b", "sub-question")
    assert chain_of(q) == ("client", "a") and max_hops_of(q) == 4
    assert q.text() == "sub-question"
    q = delegated_question(request(("client", "a"), 3), "b", "c", "x", max_hops=6)
    assert chain_of(q) == ("client", "a", "b") and max_hops_of(q) == 3  # never raised
    with pytest.raises(RelayRefused) as info:
        delegated_question(request(("client", "a", "b"), 3), "c", "d", "x")
    assert info.value.code == "hop_limit" and info.value.peer == "d"
    with pytest.raises(RelayRefused) as info:
        delegated_question(request(("client", "a")), "b", "a", "x")
    assert info.value.code == "loop"


async def test_an_undelivered_question_is_an_error_in_its_block() -> None:
    from agent_stream.uagents import DeliveryError

    async def undelivered() -> FakeReply:
        raise DeliveryError("question to agent1q... not delivered: connection refused")

    async def body(out: StreamWriter) -> None:
        with pytest.raises(RelayError) as info:
            await out.relay(undelivered(), name="gone")
        assert info.value.status == "undelivered"

    msgs = await collect(body)
    assert [m.props["code"] for m in assemble(msgs).messages if m.type == "error"] == [
        "undelivered"
    ]


async def test_the_live_renderer_labels_relayed_sections_with_the_agent() -> None:
    import io

    from agent_stream.render import LiveRenderer, make_console

    sub = await replay_stream_async(Q1)

    async def body(out: StreamWriter) -> None:
        await out.parallel(
            lambda t: t.relay(FakeReply(sub), label="Researcher"), labels=["research"]
        )

    buf = io.StringIO()
    renderer = LiveRenderer(make_console(buf, color=False))
    for m in await collect(body):
        renderer.feed(m)
    shown = buf.getvalue()
    assert "Researcher › Thinking" in shown and "Researcher › Answer" in shown
    assert "[research › spec]" in shown  # the sub-agent's own thread, under the relay's
