"""How the gateway reaches agents: the agents clients may name, and one small asking interface.

:class:`AgentLink` is all the gateway needs of the chat transport: ``ask`` returns a
:class:`LinkedReply` (Messages as they arrive, ``cancel()``, a status and a ChatMessage count).
:class:`ChatLink` implements it with agent_stream's own client (:class:`StreamingChat`, tagged
questions). ``LinkedReply.cancel()`` is the client's ``Reply.cancel()``: it sends a ``cancel`` op
to the agent, whose model stops and whose streams end ``cancelled`` (docs/delivery.md); every
stop of the gateway (:meth:`~agent_stream.gateway.runs.Runs.cancel`: ``DELETE /v1/replies/{id}``,
A2A ``tasks/cancel``, the resume window running out) goes through it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agent_stream.conversation import Turn
from agent_stream.message import Message

__all__ = ["AgentLink", "AgentRef", "Agents", "ChatLink", "LinkedReply", "parse_agent_spec"]


class LinkedReply(Protocol):
    """One question's reply as the gateway reads it (iterated once)."""

    @property
    def status(self) -> str | None:
        """None while streaming, then how the reply ended."""

    @property
    def chat_messages(self) -> int:
        """ChatMessages received so far."""

    def __aiter__(self) -> AsyncIterator[Message]: ...

    def cancel(self) -> None: ...


class AgentLink(Protocol):
    """Asks agents questions."""

    async def ask(
        self,
        address: str,
        question: str,
        *,
        reasoning: bool = True,
        timeout: float = 120.0,
        history: Sequence[Turn] | None = None,
        session: uuid.UUID | None = None,
        card_response: Any = None,
    ) -> LinkedReply:
        """Ask the agent at ``address`` ``question``; returns once it is delivered.

        Args:
            address: the agent's address.
            question: the question's text.
            reasoning: ask for the reasoning channel too.
            timeout: seconds the whole reply may take.
            history: the client's conversation so far (None: the agent's own memory).
            session: the envelope session to ask in (None: a new one).
            card_response: a uagents-core ``CardResponse`` answering a card the agent sent in
                that session (None: the question is text alone).

        Returns:
            The reply, streaming.

        Raises:
            DeliveryError: the question was not delivered.
        """


class ChatLink:
    """:class:`AgentLink` over the chat protocol: a StreamingChat and the agent it sends as.

    Each question goes in an envelope session of its own unless ``session`` names one (an A2A
    context continued): the agent remembers turns per (sender, session), and every client of
    the gateway asks as the gateway's one address, so two clients never share a session.
    ``history``: the client's conversation so far, sent with the question (the agent uses it
    instead of what it stored, and stores nothing).

    Args:
        chat: the gateway agent's StreamingChat.
        agent: the gateway's agent, which asks.
        quiet_timeout: seconds of quiet that end a plain agent's reply once its answer began.
    """

    def __init__(self, chat: Any, agent: Any, quiet_timeout: float = 10.0) -> None:
        self.chat = chat
        self.agent = agent
        self.quiet_timeout = quiet_timeout

    async def ask(
        self,
        address: str,
        question: str,
        *,
        reasoning: bool = True,
        timeout: float = 120.0,
        history: Sequence[Turn] | None = None,
        session: uuid.UUID | None = None,
        card_response: Any = None,
    ) -> LinkedReply:
        """Ask the agent at ``address`` ``question``; returns once it is delivered.

        Args:
            address: the agent's address.
            question: the question's text.
            reasoning: ask for the reasoning channel too.
            timeout: seconds the whole reply may take.
            history: the client's conversation so far (None: the agent's own memory).
            session: the envelope session to ask in (None: a new one).
            card_response: a uagents-core ``CardResponse`` answering a card the agent sent in
                that session (None: the question is text alone).

        Returns:
            The reply, streaming.

        Raises:
            DeliveryError: the question was not delivered.
        """
        from agent_stream.uagents._compat import context_with_session

        ctx = context_with_session(self.agent, session or uuid.uuid4())
        channels = {"reasoning"} if reasoning else set()
        asked: Any = question
        if card_response is not None:
            asked = _card_answer(question, card_response, channels, history)
        reply = await self.chat.ask(
            ctx,
            address,
            asked,
            channels={"reasoning"} if reasoning else (),
            timeout=timeout,
            history=history,
            settle=self.quiet_timeout,
        )
        return _Relayed(reply)


def _card_answer(
    text: str, response: Any, channels: set[str], history: Sequence[Turn] | None
) -> Any:
    """The ChatMessage answering a card: the request tags (with ``history``), the card response
    as uagents-core writes it, and ``text`` (what the client showed as its answer) when any. No
    StartSessionContent: it continues the session the card was sent in."""
    from uagents_core.contrib.protocols.chat import ChatMessage, TextContent
    from uagents_core.contrib.protocols.chat.cards import create_card_response_content

    from agent_stream.adapters.chat.wire import request_tags
    from agent_stream.conversation import history_to_json

    content: list[Any] = [
        request_tags(channels, history=None if history is None else history_to_json(history)),
        create_card_response_content(
            card_id=response.card_id,
            text=response.text,
            selection=response.selection,
            cancelled=response.cancelled,
        ),
    ]
    if text.strip():
        content.append(TextContent(text=text))
    return ChatMessage(content=content)


class _Relayed:
    """A chat reply as the gateway reads it: once, each Message passed on and not kept
    (``Reply.consume``; kept, a thousand replies' Messages were most of the gateway's memory)."""

    __slots__ = ("reply",)

    def __init__(self, reply: Any) -> None:
        self.reply = reply

    @property
    def status(self) -> str | None:
        status: str | None = self.reply.status
        return status

    @property
    def chat_messages(self) -> int:
        return int(self.reply.chat_messages)

    def __aiter__(self) -> AsyncIterator[Message]:
        iterator: AsyncIterator[Message] = self.reply.consume()
        return iterator

    def cancel(self) -> None:
        self.reply.cancel()


@dataclass(frozen=True)
class AgentRef:
    """An agent a client may reach.

    Attributes:
        name: what clients say (OpenAI ``model``).
        address: the agent's address.
        endpoint: its endpoint (None: not known now).
    """

    name: str
    address: str
    endpoint: str | None = None


@dataclass(frozen=True)
class AgentSpec:
    """One ``--agent`` value: a directory name, or an address with or without its endpoint.

    Attributes:
        name: the directory name (None: given by address).
        address: the address (None: given by name).
        endpoint: the endpoint (None: looked up in the directory).
    """

    name: str | None
    address: str | None
    endpoint: str | None


def parse_agent_spec(spec: str) -> AgentSpec:
    """``NAME``, ``ADDRESS`` or ``ADDRESS=ENDPOINT``; ValueError saying what is wrong.

    Args:
        spec: ``NAME``, ``ADDRESS`` or ``ADDRESS=ENDPOINT``.

    Raises:
        ValueError: ``spec`` is none of these.
    """
    from uagents_core.identity import parse_identifier

    from agent_stream.uagents.local._agents import parse_peer

    spec = spec.strip()
    if not spec:
        raise ValueError("--agent: empty value")
    if "=" in spec:
        address, endpoint = parse_peer(spec)
        return AgentSpec(None, address, endpoint)
    _, _, address = parse_identifier(spec)
    if address and spec.split("://")[-1].startswith("agent1"):
        return AgentSpec(None, address, None)
    return AgentSpec(spec, None, None)


class Agents:
    """The agents the gateway serves: ``--agent`` values, else every agent in the directory.

    Names and addresses without an endpoint are looked up in the local directory on each use
    (agents restart with new endpoints); ``exclude`` is the gateway's own address (gateways,
    listed as ``gateway``, are never offered).

    Args:
        specs: the ``--agent`` values (empty: every agent in the directory).
        directory: the local directory to look names and endpoints up in (None: none).
        exclude: the gateway's own address, never offered.
    """

    def __init__(
        self, specs: Sequence[AgentSpec], directory: Any = None, exclude: str | None = None
    ) -> None:
        self.specs = list(specs)
        self.directory = directory
        self.exclude = exclude

    @property
    def static_peers(self) -> dict[str, str]:
        """``{address: endpoint}`` of the agents given with their endpoint."""
        return {s.address: s.endpoint for s in self.specs if s.address and s.endpoint}

    def _entries(self) -> dict[str, dict[str, Any]]:
        if self.directory is None:
            return {}
        try:
            entries: dict[str, dict[str, Any]] = self.directory.entries()
        except PermissionError:
            return {}
        return {
            a: e for a, e in entries.items() if a != self.exclude and e.get("name") != "gateway"
        }

    def listed(self) -> list[AgentRef]:
        """The agents clients may name now (directory entries are not probed here)."""
        entries = self._entries()
        out: list[AgentRef] = []
        if not self.specs:
            names = [e.get("name") for e in entries.values()]
            for a, e in sorted(entries.items(), key=lambda kv: -float(kv[1].get("started", 0))):
                n = e.get("name")
                # two running agents of one name are both listed, each as NAME@ADDRESS
                name = (
                    a
                    if not (isinstance(n, str) and n)
                    else n
                    if names.count(n) == 1
                    else f"{n}@{a}"
                )
                out.append(AgentRef(name, a, str(e["endpoint"])))
            return out
        for s in self.specs:
            if s.address:
                found = entries.get(s.address)
                out.append(
                    AgentRef(
                        s.address,
                        s.address,
                        s.endpoint or (str(found["endpoint"]) if found else None),
                    )
                )
                continue
            named = sorted(
                (
                    (float(e.get("started", 0)), a, str(e["endpoint"]))
                    for a, e in entries.items()
                    if e.get("name") == s.name
                ),
                reverse=True,
            )
            if len(named) > 1:  # never one of them at random: each as NAME@ADDRESS
                out.extend(AgentRef(f"{s.name}@{a}", a, e) for _, a, e in named)
            elif named:
                out.append(AgentRef(str(s.name), named[0][1], named[0][2]))
            else:
                out.append(AgentRef(str(s.name), "", None))
        return out

    def pick(self, name: str | None) -> AgentRef | None:
        """The agent called ``name`` (a name or an address); no name: the first one.

        Args:
            name: a name or an address (None or empty: the first agent).
        """
        agents = [a for a in self.listed() if a.address]
        if not name:
            return agents[0] if agents else None
        for a in agents:
            if name in (a.name, a.address):
                return a
        return None

    async def reachable(self, ref: AgentRef) -> bool:
        """Whether ``ref`` answers now (static endpoints are trusted).

        Args:
            ref: the agent.
        """
        if ref.address in self.static_peers:
            return True
        if self.directory is None or ref.endpoint is None:
            return False
        ok: bool = await asyncio.wait_for(
            self.directory.answers_async(ref.address, ref.endpoint), 2.0
        )
        return ok
