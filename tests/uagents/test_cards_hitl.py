"""Human-in-the-loop through the chat protocol's cards, as a Fetch.ai chat front end does it: a
plain asker built from uagents-core (its card helpers, no agent_stream) asks an agent serving a
pydantic-ai app whose tool needs approval, reads the review card, and sends back the CTA's own
selection in the same session; real agents in one process."""

from __future__ import annotations

import asyncio
from typing import Any

from inprocess_agents import Pair
from uagents import Context, Protocol
from uagents_core.contrib.protocols.chat import (
    ChatAcknowledgement,
    ChatMessage,
    EndSessionContent,
    MetadataContent,
    StartSessionContent,
    TextContent,
    chat_protocol_spec,
)
from uagents_core.contrib.protocols.chat.cards import (
    ReviewCardPayload,
    create_card_response_content,
    extract_card,
)

from agent_stream.sources import responder_for
from agent_stream.sources.approvals import NOTHING_WAITS
from agent_stream.uagents import StreamingChat


def approval_agent(ran: list[str]) -> Any:
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.models.test import TestModel

    agent: Any = Agent(TestModel(), output_type=[str, DeferredToolRequests], name="ops")

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    return agent


class FrontEnd:
    """A chat front end: records what it gets (texts, cards, session ends), acknowledges."""

    def __init__(self, pair: Pair, name: str) -> None:
        self.chats: list[ChatMessage] = []
        proto = Protocol(spec=chat_protocol_spec)

        @proto.on_message(ChatMessage)
        async def got(ctx: Context, sender: str, msg: ChatMessage) -> None:
            self.chats.append(msg)
            await ctx.send(sender, ChatAcknowledgement(acknowledged_msg_id=msg.msg_id))

        @proto.on_message(ChatAcknowledgement)
        async def acked(ctx: Context, sender: str, msg: ChatAcknowledgement) -> None:
            return None

        self.agent = pair.add(name, proto)
        self.ctx = self.agent._build_context()  # one context: one session

    async def say(self, to: str, *content: Any) -> None:
        await self.ctx.send(to, ChatMessage(content=list(content)))

    def cards(self) -> list[Any]:
        return [
            card
            for m in self.chats
            for i in m.content
            if isinstance(i, MetadataContent) and (card := extract_card(i)) is not None
        ]

    def text(self) -> str:
        return "".join(i.text for m in self.chats for i in m.content if isinstance(i, TextContent))

    def ended(self) -> bool:
        return any(isinstance(i, EndSessionContent) for m in self.chats for i in m.content)

    async def until(self, check: Any, seconds: float = 10.0) -> None:
        for _ in range(int(seconds / 0.02)):
            if check():
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"timed out; got {self.text()!r}")


async def served(pair: Pair, ran: list[str]) -> Any:
    return pair.add("cards hitl server", StreamingChat(responder_for(approval_agent(ran))))


async def test_the_approve_button_runs_the_paused_tool_and_the_session_waits_for_it(
    pair: Pair,
) -> None:
    ran: list[str] = []
    server = await served(pair, ran)
    fe = FrontEnd(pair, "cards hitl front end one")
    await fe.say(server.address, StartSessionContent(), TextContent(text="delete a"))
    await fe.until(lambda: fe.cards())
    [card] = fe.cards()
    assert isinstance(card.payload, ReviewCardPayload)
    assert "Approve delete_file" in fe.text()  # the question, for a peer that renders no cards
    await asyncio.sleep(0.3)
    assert not fe.ended(), "the session stays open while the answer is awaited"
    assert ran == []
    await fe.say(
        server.address,
        create_card_response_content(
            card_id=card.card_id, selection=card.payload.approve_cta.selection
        ),
    )
    await fe.until(lambda: "deleted a" in fe.text())
    assert ran == ["a"]


async def test_the_reject_button_refuses_it_and_the_model_reads_why(pair: Pair) -> None:
    ran: list[str] = []
    server = await served(pair, ran)
    fe = FrontEnd(pair, "cards hitl front end two")
    await fe.say(server.address, StartSessionContent(), TextContent(text="delete b"))
    await fe.until(lambda: fe.cards())
    [card] = fe.cards()
    assert card.payload.reject_cta is not None
    before = len(fe.chats)
    await fe.say(
        server.address,
        create_card_response_content(
            card_id=card.card_id, selection=card.payload.reject_cta.selection
        ),
    )
    await fe.until(lambda: len(fe.chats) > before and "refused" in fe.text())
    assert ran == []


async def test_a_cta_selection_sent_as_json_text_is_an_answer_too(pair: Pair) -> None:
    import json

    ran: list[str] = []
    server = await served(pair, ran)
    fe = FrontEnd(pair, "cards hitl front end three")
    await fe.say(server.address, StartSessionContent(), TextContent(text="delete c"))
    await fe.until(lambda: fe.cards())
    [card] = fe.cards()
    await fe.say(server.address, TextContent(text=json.dumps(card.payload.approve_cta.selection)))
    await fe.until(lambda: "deleted a" in fe.text())  # (TestModel always asks for path "a")
    assert ran == ["a"]


async def test_a_card_answer_with_nothing_waiting_resumes_nothing_and_says_so(pair: Pair) -> None:
    ran: list[str] = []
    server = await served(pair, ran)
    owner = FrontEnd(pair, "cards hitl owner")
    await owner.say(server.address, StartSessionContent(), TextContent(text="delete d"))
    await owner.until(lambda: owner.cards())
    [card] = owner.cards()
    # another sender, the owner's card id and selection: nothing of its own waits
    other = FrontEnd(pair, "cards hitl other sender")
    await other.say(
        server.address,
        create_card_response_content(
            card_id=card.card_id, selection=card.payload.approve_cta.selection
        ),
    )
    await other.until(lambda: NOTHING_WAITS in other.text())
    assert ran == []
    # the owner's own answer still runs it
    await owner.say(
        server.address,
        create_card_response_content(
            card_id=card.card_id, selection=card.payload.approve_cta.selection
        ),
    )
    await owner.until(lambda: "deleted a" in owner.text())
    assert ran == ["a"]
