"""Shared helpers for the chat codec tests: replies to encode, encode/decode runners, wire readers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndStreamContent,
    MetadataContent,
    StartStreamContent,
)

from agent_stream.adapters.chat import TAG_KEY, ChatDecoder, ChatEncoder, parse_chat
from agent_stream.assemble import Transcript
from agent_stream.message import MESSAGE_END, MessageEndData, lifecycle, loading, tool_call
from agent_stream.message import Message as M
from agent_stream.writer import StreamWriter, collect


def run(body: Callable[[StreamWriter], Awaitable[Any]]) -> list[M]:
    return asyncio.run(collect(body))


def delta(content: str, mid: str, tid: str | None = None, typ: str = "text", **kw: Any) -> M:
    return M(type=typ, props={"content": content}, message_id=mid, thread_id=tid, delta=True, **kw)


def msg_end(
    mid: str,
    count: int | None,
    tid: str | None = None,
    status: str = "completed",
    typ: str = "text",
) -> M:
    return lifecycle(
        MESSAGE_END,
        MessageEndData(message_id=mid, type=typ, thread_id=tid, chunk_count=count, status=status),
        message_id=mid,
        thread_id=tid,
    )


def encode(
    msgs: Iterable[M], *, close: bool = False, now: float = 0.0, **kw: Any
) -> list[ChatMessage]:
    kw.setdefault("conversation", "conv")
    enc = ChatEncoder(kw.pop("conversation"), **kw)
    out: list[ChatMessage] = []
    for m in msgs:
        out += enc.feed(m, now)
    out += enc.close(now) if close else enc.end_streams(now)
    return out


def decode(
    chats: Iterable[ChatMessage], sender: str = "agent1", dec: ChatDecoder | None = None
) -> tuple[list[M], list[Any]]:
    dec = dec or ChatDecoder()
    out: list[M] = []
    for c in chats:
        out += dec.feed(sender, c, 0.0)
    return out, dec.drain_warnings()


def view(t: Transcript) -> dict[tuple[str | None, str | None], dict[str, Any]]:
    return {
        (m.thread_id, m.message_id): {
            "type": m.type,
            "props": m.props,
            "block_id": m.block_id,
            "status": m.status,
        }
        for m in t.messages
    }


def items(chats: Iterable[ChatMessage]) -> list[Any]:
    return [item for c in chats for item in c.content]


def plain(chats: Iterable[ChatMessage]) -> str:
    return "".join(c.text() for c in chats)


def via_json(chats: Iterable[ChatMessage]) -> list[ChatMessage]:
    """What the recipient gets: each ChatMessage serialised as uagents does and parsed back."""
    return [parse_chat(c.json()) for c in chats]


SENTENCES = (
    "Streaming works. It sends whole sentences, not tokens, so the peer is not "
    "flooded. Each chunk ends at a natural boundary. Here is a third sentence to make "
    "it longer. And a last one."
)


TOKENS = SENTENCES.split()


async def hierarchical_reply(out: StreamWriter) -> None:
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


REASONING = (
    "The user asks how agents should stream. Tokens one by one would flood the peer. "
    "Sentences are a better unit. Tool calls and events can ride along with them. "
    "That keeps the number of signed envelopes low. "
) * 2


def timed(
    msgs: Iterable[M], *, step: float = 1 / 150, close: bool = True, **kw: Any
) -> tuple[list[ChatMessage], list[float]]:
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
                out.append(
                    (
                        {
                            k: v
                            for k, v in i.metadata.items()
                            if k not in ("seq", "seq_last", "conversation")
                        },
                        [],
                    )
                )
            else:
                out[-1][1].append(i.json())
    return out


def is_meta_only(c: ChatMessage) -> bool:
    return all(isinstance(i, MetadataContent) for i in c.content)


def thinking_then_answer(chunk_count: int | None = None) -> list[M]:
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


def thinking_groups(chats: Iterable[ChatMessage]) -> list[dict[str, str]]:
    return [md for md, _ in groups(chats) if md.get("type") == "thinking"]


def group_times(chats: list[ChatMessage], times: list[float]) -> list[float]:
    return [t for c, t in zip(chats, times, strict=True) for _ in groups([c])]


def open_at_once(chats: list[ChatMessage]) -> int:
    open_, most = set(), 0
    for item in items(chats):
        if isinstance(item, StartStreamContent):
            open_.add(item.stream_id)
            most = max(most, len(open_))
        elif isinstance(item, EndStreamContent):
            open_.remove(item.stream_id)
    assert not open_
    return most


def tag_meta(**kw: str) -> MetadataContent:
    return MetadataContent(metadata={TAG_KEY: "1", **kw})
