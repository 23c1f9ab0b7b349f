"""A fleet replica dies holding two open replies, one to a question that opened a chat session:
a surviving replica ends both ``lost``, and the end of the session's reply ends the session too
(EndSessionContent last), as the dead replica's own last ChatMessage would have; the other's does
not. What the plugin tells its mirror (``fleet.mirror(..., session=...)``) is what says so.

Real agents in one process (a responder replica with the plugin and a Fleet, a survivor replica
of the same seed, an asker that records every ChatMessage it gets) and a real redis-server on
127.0.0.1. The crash is what ``kill -9`` leaves, 5 s later: the replica neither sends nor writes
to Redis any more and its liveness key has expired.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

import redis
from inprocess_agents import Pair
from uagents import Context, Protocol
from uagents.dispatch import dispatcher
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndSessionContent,
    chat_protocol_spec,
)

from agent_stream.adapters.chat import ChatDecoder, conversation_of
from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.assemble import Assembler
from agent_stream.uagents import ChatRequest, ChatSettings, StreamingChat
from agent_stream.uagents.asker._client import build_question
from agent_stream.uagents.fleet._fleet import Fleet
from agent_stream.uagents.fleet._lost import LOST_DETAIL, is_final
from agent_stream.writer import StreamWriter

# no keepalive from the hung replica while the test runs: only the survivor's end is sent
QUIET = ChatSettings(delivery=DeliveryPolicy(keepalive=60.0))


def recording_asker(got: list[ChatMessage]) -> Protocol:
    """Records every ChatMessage it gets and acknowledges each, as the protocol says."""
    proto = Protocol(spec=chat_protocol_spec)

    @proto.on_message(ChatMessage)  # type: ignore[untyped-decorator]
    async def on_chat(ctx: Context, sender: str, msg: ChatMessage) -> None:
        got.append(msg)
        await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))

    @proto.on_message(ChatAcknowledgement)  # type: ignore[untyped-decorator]
    async def on_ack(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
        pass

    return proto


async def until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


def of(got: list[ChatMessage], conversation: str) -> list[ChatMessage]:
    return [c for c in got if conversation_of(c) == conversation]


async def test_a_dead_replicas_reply_to_a_session_question_ends_the_session_too(
    redis_url: str,
) -> None:
    seed = f"fleet mirror session replica {uuid.uuid4()}"
    hang = asyncio.Event()

    async def respond(request: ChatRequest, out: StreamWriter) -> None:
        await out.text("The first sentence of the answer. ")
        await asyncio.sleep(0.1)
        await out.text("The second sentence of the answer. ")
        await hang.wait()  # mid-reply when its replica dies

    pair = Pair()
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    holder_fleet = Fleet(redis_url, replica="holder")
    holder_chat = StreamingChat(respond, fleet=holder_fleet, settings=QUIET)
    survivor_fleet = Fleet(redis_url, replica="survivor")
    survivor_chat = StreamingChat(respond, fleet=survivor_fleet, settings=QUIET)
    try:
        holder = pair.add(seed, holder_chat)
        got: list[ChatMessage] = []
        asker = pair.add(f"fleet mirror session asker {uuid.uuid4()}", recording_asker(got))

        def key(*parts: str) -> str:
            return ":".join(("agent_stream:fleet", holder.address, *parts))

        opened = build_question("Open a session and stream", session=True)
        plain = build_question("Stream without a session", session=False)
        ctx = asker._build_context()
        for question in (opened, plain):
            await ctx.send(holder.address, question)
        convs = {"opened": str(opened.msg_id), "plain": str(plain.msg_id)}

        def mirrored() -> bool:
            return all(raw.hlen(key("replay", asker.address, c)) >= 2 for c in convs.values())

        await until(mirrored, 10, "the replies did not reach the mirror")
        assert all(len(of(got, c)) >= 2 for c in convs.values())
        assert raw.hget(key("replay", asker.address, convs["opened"]), "session") == "1"
        assert raw.hget(key("replay", asker.address, convs["plain"]), "session") is None
        before = {name: len(of(got, c)) for name, c in convs.items()}

        # the holder dies: it sends nothing more, writes nothing more, its liveness key is gone
        dispatcher.unregister(holder.address, holder)
        tasks = list(holder_fleet._tasks)
        for t in tasks:
            t.cancel()
        await asyncio.wait(tasks, timeout=2)
        raw.delete(key("replica", "holder"))

        survivor = pair.add(seed, survivor_chat)
        assert survivor.address == holder.address
        await survivor_chat.join(survivor._build_context())  # joins the fleet, sweeps each second

        def ended() -> bool:
            return all(len(of(got, c)) > before[n] for n, c in convs.items())

        await until(ended, 10, "the survivor did not end the dead replica's replies")
        assert survivor_fleet.ended_lost == 2

        for name, conv in convs.items():
            chats = of(got, conv)
            end = chats[-1]
            assert is_final(end)
            # the session's reply ends its session as the replica itself would have: last
            ends_session = [isinstance(i, EndSessionContent) for i in end.content]
            assert ends_session == [False] * (len(end.content) - 1) + [name == "opened"], name
            assert not any(isinstance(i, EndSessionContent) for c in chats[:-1] for i in c.content)
            # and the asker reads it as the reply's end: status lost, nothing missing
            decoder, answer = ChatDecoder(), Assembler()
            for chat in chats:
                for msg in decoder.feed(holder.address, chat, 0.0):
                    answer.feed(msg)
            assert decoder.finished(holder.address, conv)
            assert decoder.whole(holder.address, conv)
            assert answer.transcript.status == "lost"
            assert answer.transcript.to_dict()["error"] == LOST_DETAIL
            assert "The first sentence" in answer.transcript.text()
    finally:
        hang.set()
        await holder_chat.shutdown()
        await survivor_chat.shutdown()
        await pair.close()
        raw.close()
