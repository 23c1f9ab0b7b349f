"""A plain agent's reply (one that does not use agent_stream) ends when the agent says so: at
its EndSessionContent, or after a quiet period once its answer began; a status or metadata-only
ChatMessage sent first (as Fetch.ai's template agents do) never counts as the answer."""

from __future__ import annotations

import asyncio
import uuid

from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    MetadataContent,
    Resource,
    ResourceContent,
    TextContent,
)

from agent_stream.uagents.asker._client import Reply

PEER = "agent1q" + "p" * 58


def question() -> ChatMessage:
    return ChatMessage([TextContent(text="draw a cat")])


async def started(settle: float, timeout: float = 30.0) -> Reply:
    reply = Reply(PEER, question(), timeout=timeout, settle=settle)
    reply._start_watch()
    return reply


async def test_a_metadata_first_message_does_not_end_the_reply_its_answer_comes_later() -> None:
    reply = await started(settle=0.2)
    reply.feed(ChatMessage([MetadataContent(metadata={"attachments": "true"})]))
    await asyncio.sleep(0.6)  # three quiet periods: only metadata came, so no answer yet
    assert not reply.done
    reply.feed(ChatMessage([TextContent(text="Here is the answer.")]))
    await asyncio.wait_for(reply.wait(), 5)
    assert reply.completed and reply.ended_by == "quiet"
    assert reply.transcript.text() == "Here is the answer."


async def test_a_status_then_an_image_both_arrive_in_order() -> None:
    reply = await started(settle=0.3)
    reply.feed(ChatMessage([TextContent(text="Generating your image...")]))
    await asyncio.sleep(0.1)
    image = Resource(uri="https://example.invalid/cat.png", metadata={"mime_type": "image/png"})
    reply.feed(ChatMessage([ResourceContent(resource_id=uuid.uuid4(), resource=image)]))
    await asyncio.wait_for(reply.wait(), 5)
    kinds = [
        (m.type, m.props.get("content") or m.props.get("url")) for m in reply.transcript.messages
    ]
    assert kinds == [
        ("text", "Generating your image..."),
        ("image", "https://example.invalid/cat.png"),
    ]
    assert reply.ended_by == "quiet"


async def test_end_session_ends_it_at_once_without_waiting_for_quiet() -> None:
    reply = await started(settle=30.0)
    reply.feed(ChatMessage([MetadataContent(metadata={"attachments": "true"})]))
    reply.feed(ChatMessage([TextContent(text="Done."), EndSessionContent()]))
    await asyncio.wait_for(reply.wait(), 2)
    assert reply.completed and reply.ended_by == "end_session"
    assert reply.transcript.text() == "Done."


async def test_a_peer_that_sends_only_metadata_is_bounded_by_the_overall_timeout() -> None:
    reply = await started(settle=0.05, timeout=0.6)
    for _ in range(5):
        reply.feed(ChatMessage([MetadataContent(metadata={"status": "thinking"})]))
        await asyncio.sleep(0.05)
    await asyncio.wait_for(reply.wait(), 5)
    assert reply.status == "timeout" and reply.ended_by == "timeout"


async def test_a_streamed_plain_answer_ends_soon_after_its_streams_close() -> None:
    from uagents_core.contrib.protocols.chat import EndStreamContent, StartStreamContent

    from agent_stream.uagents.asker._client import STREAM_SETTLE

    reply = await started(settle=30.0)
    sid = uuid.uuid4()
    reply.feed(ChatMessage([StartStreamContent(stream_id=sid)]))
    for token in ("One ", "token ", "each."):
        reply.feed(ChatMessage([TextContent(text=token)]))
    reply.feed(ChatMessage([EndStreamContent(stream_id=sid)]))
    await asyncio.wait_for(reply.wait(), STREAM_SETTLE + 2)
    assert reply.completed and reply.ended_by == "quiet"
    assert reply.transcript.text() == "One token each."
