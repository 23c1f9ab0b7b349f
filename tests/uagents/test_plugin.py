"""StreamingChat between two real uagents agents in this process (fast: no HTTP, no signing).

Agents in one process reach each other through uagents' in-process dispatcher (see
tests/inprocess_agents.py). One reply's pump alone is tested in test_outgoing.py; what crosses
processes over HTTP is covered by tests/integration.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import pytest
from inprocess_agents import Pair
from uagents.dispatch import dispatcher
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    MetadataContent,
    TextContent,
)

from agent_stream.uagents import (
    ChatRequest,
    ChatSettings,
    DeliveryError,
    ReplyStats,
    StreamingChat,
    local_agent,
    wrap_chat_handler,
)
from agent_stream.uagents.local._agents import free_port
from agent_stream.writer import StreamWriter


async def ask(
    pair: Pair, server_chat: StreamingChat, question: str = "q", **kw: Any
) -> tuple[Any, StreamingChat]:
    n = len(pair.agents)
    server = pair.add(f"plugin test server {n}", server_chat)
    client_chat = StreamingChat()
    client = pair.add(f"plugin test client {n}", client_chat)
    reply = await client_chat.ask(client._build_context(), server.address, question, **kw)
    await asyncio.wait_for(reply.wait(), 10)
    return reply, client_chat


async def test_async_generator_responder_streams_its_text(pair: Pair) -> None:
    async def words(request: ChatRequest) -> AsyncIterator[str]:
        for w in f"You asked: {request.text}. Here is a sentence. And another one.".split(" "):
            yield w + " "

    reply, _ = await ask(pair, StreamingChat(words), "hello")
    assert reply.completed and reply.tagged and reply.acknowledged
    assert reply.text() == "You asked: hello. Here is a sentence. And another one. "


async def test_flow_control_keeps_at_most_n_unacknowledged(pair: Pair) -> None:
    stats: list[ReplyStats] = []

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        for i in range(6):
            async with out.block("llm", label=f"part {i}") as b:
                await b.text(f"Part {i}.")
            await asyncio.sleep(0.01)

    chat = StreamingChat(
        respond,
        settings=ChatSettings().with_pump(max_in_flight=1, max_coalesce=1),
        on_reply_end=stats.append,
    )
    reply, _ = await ask(pair, chat)
    assert reply.completed
    assert reply.text() == "".join(f"Part {i}." for i in range(6))
    await _reply_ended(stats)  # the responder's reply ends once its last ChatMessage is acked
    (s,) = stats
    assert s.status == "completed" and s.chat_messages >= 6 and s.peak_in_flight == 1


async def test_without_flow_control_messages_pile_up_in_flight(pair: Pair) -> None:
    # The counterpart of the test above: the limit is what keeps the peak at 1.
    stats: list[ReplyStats] = []

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        for i in range(6):
            await out.text(f"Part {i}.")

    reply, _ = await ask(
        pair,
        StreamingChat(
            respond, settings=ChatSettings().with_pump(max_coalesce=1), on_reply_end=stats.append
        ),
    )
    await _reply_ended(stats)
    assert reply.completed and stats[0].peak_in_flight > 1


async def _reply_ended(stats: list[ReplyStats]) -> None:
    """Wait (at most 2 s) for on_reply_end: it runs once every ChatMessage was acknowledged."""
    for _ in range(200):
        if stats:
            return
        await asyncio.sleep(0.01)


async def test_responder_error_is_delivered_and_every_message_ends(pair: Pair) -> None:
    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        async with out.block("llm") as b, b.message("text") as m:
            await m.append("Half a sentence")
            raise ValueError("boom")

    reply, _ = await ask(pair, StreamingChat(respond))
    assert reply.status == "error" and not reply.completed
    t = reply.transcript
    assert [m.status for m in t.messages if m.type == "text"] == ["error"]
    assert t.messages[0].content == "Half a sentence"
    errors = [m for m in t.messages if m.type == "error"]
    assert errors and errors[0].props["message"] == "ValueError: boom"


async def test_shutdown_cancels_a_reply_in_flight_and_ends_its_streams(pair: Pair) -> None:
    started = asyncio.Event()

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        async with out.block("llm") as b, b.message("text") as m:
            await m.append("This sentence is complete. This one is not")
            started.set()
            await asyncio.sleep(30)

    chat = StreamingChat(respond)
    server = pair.add("shutdown server", chat)
    client_chat = StreamingChat()
    client = pair.add("shutdown client", client_chat)
    reply = await client_chat.ask(client._build_context(), server.address, "q")
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.wait_for(chat.shutdown(), 10)
    await asyncio.wait_for(reply.wait(), 5)
    assert reply.status == "cancelled"
    assert chat.active == 0
    (text,) = [m for m in reply.transcript.messages if m.type == "text"]
    assert text.status == "cancelled"
    assert text.content == "This sentence is complete. This one is not"  # buffer flushed


async def test_reasoning_needs_the_policy_and_the_request(pair: Pair) -> None:
    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        async with out.block("llm") as b:
            async with b.message("thinking") as m:
                await m.append("secret thoughts")
            await b.text("Answer.")

    def types(reply: Any) -> list[str]:
        return [m.type for m in reply.transcript.messages]

    shared = StreamingChat(respond, channels={"reasoning"})
    asked, _ = await ask(pair, shared, channels={"reasoning"})
    assert types(asked) == ["thinking", "text"]
    not_asked, _ = await ask(pair, StreamingChat(respond, channels={"reasoning"}))
    assert types(not_asked) == ["text"]
    not_shared, _ = await ask(pair, StreamingChat(respond), channels={"reasoning"})
    assert types(not_shared) == ["text"]
    decided: Callable[[ChatRequest], set[str]] = lambda request: {"reasoning"}  # noqa: E731
    by_callable, _ = await ask(pair, StreamingChat(respond, channels=decided))
    assert types(by_callable) == ["thinking", "text"]


async def test_the_lean_gather_window_reaches_each_replys_encoder(pair: Pair) -> None:
    # sentences every 50 ms for 1.5 s, each released as it ends: with no gather window they go
    # a few to a ChatMessage (the chunker's max_delay); with a long one, all but the first
    # text wait for the reply's end
    async def sentences(request: ChatRequest) -> AsyncIterator[str]:
        for i in range(30):
            yield f"Sentence {i}. "
            await asyncio.sleep(0.05)

    sent: dict[float, int] = {}
    chunker = {"min_chars": 5, "max_delay": 0.2}
    for window in (0.0, 10.0):
        chat = StreamingChat(sentences, chunker=chunker, lean_gather=window)
        reply, _ = await ask(pair, chat)
        assert reply.completed and reply.text() == "".join(f"Sentence {i}. " for i in range(30))
        sent[window] = chat.sent_chat_messages
    assert sent[10.0] <= 3 < sent[0.0]
    with pytest.raises(ValueError, match="lean_gather"):
        StreamingChat(sentences, lean_gather=-1.0)


async def test_cut_text_goes_to_an_asker_that_reads_it_not_to_one_of_the_previous_release(
    pair: Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sentences gathered into one ChatMessage (a long gather window): to an asker whose tag
    # says cuts=1 (request_tags' today) their chunks go as one TextContent and the group's
    # cuts; to one that says lean=1 alone (the previous release), a TextContent per chunk
    from agent_stream.adapters.chat import wire

    async def sentences(request: ChatRequest) -> AsyncIterator[str]:
        for i in range(20):
            yield f"Sentence {i}, 中文 😀. "
            await asyncio.sleep(0.01)

    want = "".join(f"Sentence {i}, 中文 😀. " for i in range(20))
    for previous in (False, True):
        sent: list[ChatMessage] = []
        chat = StreamingChat(sentences, chunker={"min_chars": 5, "max_delay": 0.2}, lean_gather=10)
        send = chat.send

        async def recording(
            ctx: Any, to: str, message: Any, send: Any = send, sent: Any = sent
        ) -> tuple[bool, str]:
            if isinstance(message, ChatMessage):
                sent.append(message)
            return cast("tuple[bool, str]", await send(ctx, to, message))

        monkeypatch.setattr(chat, "send", recording)
        if previous:  # the asker's tag without cuts=1 (a key the responder does not know)
            monkeypatch.setattr(wire, "CUTS_KEY", "cuts-unknown-to-the-responder")
        reply, _ = await ask(pair, chat)
        monkeypatch.undo()
        assert reply.completed and reply.text() == want
        texts = [[i.text for i in c.content if isinstance(i, TextContent)] for c in sent]
        cut = [
            i.metadata["cuts"]
            for c in sent
            for i in c.content
            if isinstance(i, MetadataContent) and "cuts" in i.metadata
        ]
        if previous:
            assert not cut and max(map(len, texts)) > 2
        else:
            assert cut and max(map(len, texts)) == 1
            assert max(len(c.split(",")) for c in cut) > 2


async def test_wrapping_an_existing_non_streaming_handler(pair: Pair) -> None:
    async def legacy(ctx: Any, sender: str, msg: ChatMessage) -> None:
        await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))
        answer = f"Echo: {msg.text()}"
        await ctx.send(sender, ChatMessage(content=[TextContent(text=answer)]))

    reply, _ = await ask(pair, StreamingChat(wrap_chat_handler(legacy)), "ping")
    assert reply.completed
    assert reply.text() == "Echo: ping"


async def test_asking_an_unknown_agent_raises_delivery_error(pair: Pair) -> None:
    chat = StreamingChat()
    client = pair.add("lonely client", chat)
    nobody = local_agent("nobody at all, anywhere", free_port(), directory=None).address
    dispatcher.unregister(nobody, next(iter(dispatcher.sinks[nobody])))
    started = asyncio.get_running_loop().time()
    with pytest.raises(DeliveryError):
        await chat.ask(client._build_context(), nobody, "anyone?", deliver_within=0.3)
    # retried for the window given, then given up
    assert 0.3 <= asyncio.get_running_loop().time() - started < 3.0


async def test_reply_traffic_nobody_waits_for_is_not_answered(pair: Pair) -> None:
    """Two answering agents must not answer each other's replies (no reply ping-pong)."""
    calls: list[str] = []

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        calls.append(request.text)
        await out.text("Answer.")

    a_chat, b_chat = StreamingChat(respond), StreamingChat(respond)
    a = pair.add("pingpong a", a_chat)
    b = pair.add("pingpong b", b_chat)
    reply = await a_chat.ask(a._build_context(), b.address, "question")
    await asyncio.wait_for(reply.wait(), 5)
    assert reply.completed and calls == ["question"]
    # A late tagged reply, then an untagged straggler: dropped, not answered.
    from agent_stream.adapters.chat import ChatEncoder
    from agent_stream.message import text

    enc = ChatEncoder("someone else's question", tagged=True)
    ctx = b._build_context()
    for chat in enc.feed(text("stray"), 0.0) + enc.close(0.0):
        await ctx.send(a.address, chat)
    await ctx.send(a.address, ChatMessage(content=[TextContent(text="straggler")]))
    await asyncio.sleep(0.2)
    assert calls == ["question"] and a_chat.active == 0
    # A new question (it opens a session) is answered.
    again = await b_chat.ask(ctx, a.address, "new question")
    await asyncio.wait_for(again.wait(), 5)
    assert again.completed and calls == ["question", "new question"]


def test_a_streaming_chat_imports_the_chunker_when_built_not_at_the_first_question() -> None:
    """Imported by the first reply's encoder, the chunker held back every question that came
    with the first (a fresh interpreter shows when it is imported)."""
    code = (
        "import sys\n"
        "from agent_stream.uagents import StreamingChat\n"
        "print('agent_stream.chunking' in sys.modules)\n"
        "StreamingChat()\n"
        "print('agent_stream.chunking' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out == ["False", "True"]
