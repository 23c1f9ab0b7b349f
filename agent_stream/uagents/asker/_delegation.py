"""Asking another agent on behalf of a request, with the delegation chain in the tags.

    from agent_stream.uagents import delegate

    async def respond(request, out):
        async with out.block("plan", label="Plan") as b:
            facts = await b.relay(delegate(chat, request, researcher, request.text),
                                  name="researcher")

:func:`delegate` is ``chat.ask`` for a responder: the question carries the chain of agents the
request came through (tag ``chain``) and the hop limit (tag ``max_hops``, default
:data:`~agent_stream.relay.DEFAULT_MAX_HOPS`, never raised by a later hop), and asks for the
channels the request asked for that this agent's channel policy lets through (the sub-agent
shares what its own policy allows). A delegation that would exceed the hop limit or loop back to
an agent already in the chain is not sent: :class:`~agent_stream.relay.RelayRefused` is raised,
which ``Scope.relay`` turns into an ``error`` in the relay block.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from uagents_core.contrib.protocols.chat import ChatMessage, StartSessionContent, TextContent
from uagents_core.identity import parse_identifier

from agent_stream.adapters.chat.wire import chain_of, max_hops_of, request_tags
from agent_stream.errors import StreamError
from agent_stream.relay import DEFAULT_MAX_HOPS, RelayRefused, check_delegation, delegation_path

if TYPE_CHECKING:
    from agent_stream.uagents import ChatRequest, Reply, StreamingChat

__all__ = ["delegate", "delegated_question"]


def delegated_question(
    request: ChatRequest,
    me: str,
    target: str,
    question: str,
    *,
    channels: Collection[str] | None = None,
    max_hops: int | None = None,
    session: bool = True,
) -> ChatMessage:
    """The ChatMessage asking ``target`` ``question`` for ``request`` (answered by ``me``).

    Args:
        request: the question this agent is answering.
        me: this agent's address.
        target: the address of the agent to ask.
        question: the text to ask it.
        channels: extra channels to ask for (None: those ``request`` asked for).
        max_hops: this agent's hop limit (None: the default); the request's own limit, when
            lower, wins.
        session: open a session with ``target``.

    Returns:
        The question, its delegation chain and hop limit in its tag.

    Raises:
        RelayRefused: the hop limit or a loop forbids it.
    """
    path = delegation_path(chain_of(request.message), request.sender)
    carried = max_hops_of(request.message)
    own = max_hops if max_hops is not None else DEFAULT_MAX_HOPS
    limit = min(own, carried) if carried is not None else own
    try:
        check_delegation(path, me, target, limit)
    except RelayRefused as exc:
        exc.peer = target
        raise
    wanted = request.channels if channels is None else frozenset(channels)
    content: list[Any] = [StartSessionContent()] if session else []
    content.append(request_tags(wanted, chain=(*path, me), max_hops=limit))
    content.append(TextContent(text=question))
    return ChatMessage(content=content)


async def delegate(
    chat: StreamingChat,
    request: ChatRequest,
    to: str,
    question: str,
    *,
    channels: Collection[str] | None = None,
    max_hops: int | None = None,
    session: bool = True,
    **ask: Any,
) -> Reply:
    """``chat.ask`` of ``to`` on behalf of ``request`` (see the module doc).

    Args:
        chat: this agent's plugin.
        request: the question this agent is answering.
        to: the agent to ask (address or ``prefix://address``).
        question: the text to ask it.
        channels: extra channels to ask for (None: those the asker wants and this agent's
            channel policy lets it pass on).
        max_hops: this agent's hop limit (None: the default); the request's own limit, when
            lower, wins.
        session: open a session with ``to``.
        **ask: more keyword arguments for :meth:`StreamingChat.ask` (``timeout``,
            ``deliver_within``...).

    Returns:
        The delegate's reply, streaming.

    Raises:
        StreamError: ``request`` was not received by a StreamingChat.
        RelayRefused: the hop limit or a loop forbids it.
    """
    ctx = request.ctx
    me = getattr(getattr(ctx, "agent", None), "address", None)
    if ctx is None or not me:
        raise StreamError("delegate needs a request received by a StreamingChat")
    _, _, target = parse_identifier(to)
    if channels is None:  # what the asker wants and this agent may pass on
        policy = chat.channels
        allowed = (
            frozenset()
            if policy is None
            else frozenset(policy(request) or ())
            if callable(policy)
            else frozenset(policy)
        )
        channels = request.channels & allowed
    msg = delegated_question(
        request, me, target or to, question, channels=channels, max_hops=max_hops, session=session
    )
    return await chat.ask(ctx, to, msg, **ask)
