"""What a responder is given and what a reply's end reports: ``ChatRequest``, ``ReplyStats``.

Also the two shapes a responder may have (``Responder``) and how one is run (``invoke``), and the
channel policy's type (``ChannelPolicy``). :class:`StreamingChat` (:mod:`._streaming_chat`)
builds these; nothing here sends anything.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from uagents_core.contrib.protocols.chat import ChatMessage, TextContent

from agent_stream.conversation import Turn
from agent_stream.writer import StreamWriter

__all__ = ["ChannelPolicy", "ChatRequest", "ReplyStats", "Responder", "Turn", "invoke"]


@dataclass(frozen=True)
class ChatRequest:
    """A request a responder answers.

    Sending the reply is the plugin's job: write it to the StreamWriter.

    Attributes:
        sender: the asking agent's address.
        message: its ChatMessage.
        session: the envelope session (None: none).
        tagged: it declared agent_stream tag support.
        opens_session: it carried StartSessionContent.
        channels: the extra channels it asked for.
        storage: the agent's storage.
        logger: the agent's logger.
        ctx: the handler's uagents ``Context`` the request came with (for the agent's address,
            name or its own sends).
        history: the session's earlier turns, oldest first, without the current question
            (:class:`Turn`).
        client_history: True when the asker sent the history itself rather than the agent
            remembering it.
        card_response: the answer to an interactive card this message carries (uagents-core's
            ``CardResponse``: ``card_id``, ``selection``, ``text``, ``cancelled``), else None.
    """

    sender: str
    message: ChatMessage
    session: str | None = None
    tagged: bool = False
    opens_session: bool = False
    channels: frozenset[str] = frozenset()
    storage: Any = None
    logger: Any = None
    ctx: Any = field(default=None, repr=False, compare=False)
    history: tuple[Turn, ...] = ()
    client_history: bool = False
    card_response: Any = None
    _ending: list[bool] = field(default_factory=list, repr=False, compare=False)  # end_session()

    @property
    def text(self) -> str:
        """The question: the request's TextContent items concatenated."""
        return "".join(i.text for i in self.message.content if isinstance(i, TextContent))

    def end_session(self) -> None:
        """End the chat session with the reply: its last ChatMessage carries
        EndSessionContent, as when the asker opened a session."""
        if not self._ending:
            self._ending.append(True)

    @property
    def session_ended(self) -> bool:
        """Whether :meth:`end_session` was called."""
        return bool(self._ending)


@dataclass(frozen=True)
class ReplyStats:
    """How one streamed reply went: given to ``on_reply_end`` when it is over.

    Attributes:
        peer: the asker's address.
        conversation: the question's msg_id.
        status: completed | error | cancelled.
        chat_messages: ChatMessages delivered.
        failed: deliveries that failed.
        peak_in_flight: most ChatMessages unacknowledged at once.
        duration: seconds from the reply's start to its end.
        resends: ChatMessages sent again, unacknowledged.
        duplicates: the question arriving again (acknowledged, not answered twice).
        gaps_repaired: repair requests served from the replay buffer while the reply ran.
        keepalives: keepalives sent.
        at_risk: seconds during which some ChatMessage was possibly lost.
    """

    peer: str
    conversation: str
    status: str
    chat_messages: int
    failed: int
    peak_in_flight: int
    duration: float
    resends: int = 0
    duplicates: int = 0
    gaps_repaired: int = 0
    keepalives: int = 0
    at_risk: float = 0.0


Responder = (
    Callable[[ChatRequest, StreamWriter], Awaitable[None]]
    | Callable[[ChatRequest], AsyncIterator[str]]
)
"""What answers a request: an async function writing the reply to the StreamWriter, or an
async generator function whose text pieces become one text message (see :func:`invoke`)."""

ChannelPolicy = Collection[str] | Callable[[ChatRequest], Collection[str] | None] | None
"""Which extra channels a responder shares with a peer that asks for them: None (none), the
channels themselves, or a function of the request (see :func:`channels_for`)."""


def channels_for(policy: ChannelPolicy, request: ChatRequest) -> Collection[str]:
    """The channels ``request``'s recipient gets under ``policy``.

    Args:
        policy: the responder's channel policy (None: no extra channel; a collection: those
            also asked for; a callable: what it returns for ``request``).
        request: the request.
    """
    if policy is None:
        return ()
    if callable(policy):
        return frozenset(policy(request) or ())
    return frozenset(policy) & request.channels


async def invoke(responder: Responder, request: ChatRequest, out: StreamWriter) -> None:
    """Run ``responder`` on ``request``: an async function writes to ``out``; an async generator
    function's pieces become one text message in a block ``llm``.

    Args:
        responder: the responder (an async function or an async generator function).
        request: the request it answers.
        out: the writer of the reply.
    """
    call = getattr(responder, "__call__", None)  # noqa: B004 (an object's async-generator method)
    if inspect.isasyncgenfunction(responder) or inspect.isasyncgenfunction(call):
        gen: AsyncIterator[str] = responder(request)  # type: ignore[call-arg,assignment]
        async with out.block("llm") as b, b.message("text") as m:
            async for piece in gen:
                if piece:
                    await m.append(piece)
        return
    result = responder(request, out)  # type: ignore[call-arg]
    if inspect.isawaitable(result):
        await result
