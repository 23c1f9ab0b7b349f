"""The responder's delivery desk: cancels only from the asker of an open reply, EndSession
cancels, questions answered once, resends from the replay buffer; and the decoder: a reply in
any order or with any one ChatMessage missing is never whole unless it is."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from uagents_core.contrib.protocols.chat import (
    ChatMessage,
    EndSessionContent,
    TextContent,
)

from agent_stream.adapters.chat import ChatDecoder, ChatEncoder
from agent_stream.adapters.chat.incoming import read_chat
from agent_stream.adapters.chat.wire import OP_CANCEL, OP_RESEND, control, control_of
from agent_stream.message import Message
from agent_stream.uagents._chat_json import chat_json
from agent_stream.uagents.responder._delivery import ResponderDelivery


class FakeReply:
    """What the desk uses of an Outgoing."""

    def __init__(self, peer: str, conversation: str) -> None:
        self.peer = peer
        self.conversation = conversation
        self.cancelled = 0
        self.resent: list[Any] = []

    def cancel(self) -> bool:
        self.cancelled += 1
        return True

    async def resend(self, chats: list[Any]) -> None:
        self.resent += chats


def op(chat: ChatMessage) -> dict[str, str]:
    got = control_of(chat)
    assert got is not None
    return got


async def nothing(chat: ChatMessage) -> None:
    raise AssertionError("nothing should be sent")


def test_cancel_only_from_the_asker_of_an_open_conversation() -> None:
    desk = ResponderDelivery()
    r = FakeReply("asker", "conv")
    replies: Any = [r]
    assert desk.control("someone else", op(control(OP_CANCEL, "conv")), replies, nothing) is None
    assert desk.control("asker", op(control(OP_CANCEL, "other")), replies, nothing) is None
    assert r.cancelled == 0
    desk.control("asker", op(control(OP_CANCEL, "conv")), replies, nothing)
    assert r.cancelled == 1 and desk.cancels == 1


def test_end_session_from_the_asker_cancels_its_replies_but_a_question_does_not() -> None:
    desk = ResponderDelivery()
    r, other = FakeReply("asker", "c1"), FakeReply("someone", "c2")
    replies: Any = [r, other]
    question = ChatMessage(content=[TextContent(text="hi"), EndSessionContent()])
    assert not desk.session_cancels("asker", read_chat(question), replies)
    ending = read_chat(ChatMessage(content=[EndSessionContent()]))
    assert desk.session_cancels("asker", ending, replies)
    assert r.cancelled == 1 and other.cancelled == 0


def test_a_question_is_answered_once() -> None:
    desk = ResponderDelivery()
    q = ChatMessage(content=[TextContent(text="hi")])
    assert not desk.seen_before("a", str(q.msg_id))
    assert desk.seen_before("a", str(q.msg_id))
    assert not desk.seen_before("b", str(q.msg_id))


def test_resend_from_the_replay_buffer_open_or_finished() -> None:
    desk = ResponderDelivery()
    buf = desk.buffer_for("asker", "conv")
    chats = [ChatMessage(content=[TextContent(text=str(i))]) for i in range(4)]
    for i, c in enumerate(chats, 1):
        buf.add(i, i, chat_json(c), 100)  # kept as JSON, sent again as the ChatMessage
    r = FakeReply("asker", "conv")
    work = desk.control(
        "asker", op(control(OP_RESEND, "conv", **{"from": "2", "to": "3"})), [r], nothing
    )  # type: ignore[list-item]
    assert work is not None
    asyncio.run(work)  # type: ignore[arg-type]
    assert r.resent == chats[1:3]
    desk.ended("asker", "conv")  # finished: still served from the lingering buffer
    sent: list[ChatMessage] = []

    async def send(chat: ChatMessage) -> None:
        sent.append(chat)

    work = desk.control("asker", op(control(OP_RESEND, "conv", **{"from": "1"})), [], send)
    assert work is not None
    asyncio.run(work)  # type: ignore[arg-type]
    assert sent == chats and desk.repairs == 2
    assert desk.control("x", op(control(OP_RESEND, "conv", **{"from": "1"})), [], send) is None


def _chats() -> list[ChatMessage]:
    enc = ChatEncoder(
        "C", tagged=True, chunker={"min_chars": 1, "max_chars": 5, "first_chars": None}
    )
    out: list[ChatMessage] = []
    for i in range(8):
        out += enc.feed(
            Message(type="text", props={"content": f"part {i}. "}, delta=True, message_id="M"),
            float(i),
        )
    return out + enc.close(9.0)


@settings(max_examples=80, deadline=None)
@given(
    order=st.permutations(range(len(_chats()))),
    missing=st.one_of(st.none(), st.integers(0, len(_chats()) - 1)),
)
def test_any_order_any_one_missing_is_whole_only_when_whole(
    order: list[int], missing: int | None
) -> None:
    chats = _chats()
    dec = ChatDecoder(gap_timeout=5.0)
    now = 0.0
    for i in order:
        if i != missing:
            dec.feed("S", chats[i], now)
        now += 0.1
    dec.poll(now + 10)
    dec.close()
    assert dec.whole("S", "C") == (missing is None)
