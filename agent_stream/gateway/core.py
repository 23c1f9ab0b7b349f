"""What every endpoint of the gateway shares: the agents, the runs and the resume store.

:class:`Gateway` asks (one run per question, :mod:`.runs`), resolves resume cursors, and answers
a reply's log as a live response in its client's wire (:mod:`.views`).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import StreamingResponse

from agent_stream.conversation import Turn
from agent_stream.gateway.config import GatewayConfig
from agent_stream.gateway.intake import TurnBudget
from agent_stream.gateway.link import AgentLink, AgentRef, Agents
from agent_stream.gateway.middleware import HTTPError, caller
from agent_stream.gateway.runs import OWNER, Busy, Run, Runs, new_reply_id
from agent_stream.gateway.store import MemoryStore, ResumeStore, StoreFull
from agent_stream.gateway.views import framed, parse_cursor, wire_of

__all__ = ["KEEPALIVE", "SSE_HEADERS", "Gateway", "keepalive", "own_alias"]

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
KEEPALIVE = 15.0  # seconds of silence after which an SSE stream gets a comment line
# seconds a response waits for the reply's first message after stream_start: a refusal (an
# error) or the first block, which a reply opens with at once (a crowd of questions can delay
# both by seconds)
OPENING_WAIT = 10.0
RETRY = {"retry-after": "2"}  # a refused client may try again this many seconds later


def own_alias(who: str, name: str) -> str:
    """The alias of a name a client chose (an AG-UI run id, an AI SDK chat id) in the caller's
    own namespace: two callers picking the same name reach their own replies, and neither can
    take the name over from the other.

    Args:
        who: the caller (see :func:`~.middleware.caller`).
        name: the alias as the client names it (with its kind's prefix).
    """
    return f"{who}/{name}"


async def keepalive(source: AsyncIterator[str], every: float) -> AsyncIterator[str]:
    """``source``, with an SSE comment (``: keepalive``) after each ``every`` seconds of
    silence, so proxies and clients keep a slow reply's connection (a long tool call) open.
    Pieces already waiting are joined into one write.

    Args:
        source: the SSE text to forward.
        every: seconds of silence before a keepalive comment.

    Yields:
        The pieces of ``source``, and keepalive comments between them.
    """
    queue: asyncio.Queue[str | None] = asyncio.Queue(maxsize=64)
    failed: list[BaseException] = []

    async def pump() -> None:
        try:
            async for text in source:
                await queue.put(text)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failed.append(exc)
        await queue.put(None)

    task = asyncio.create_task(pump())
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), every)
            except asyncio.TimeoutError:
                yield ": keepalive\n\n"
                continue
            if item is None:
                break
            # what is already waiting goes out in the same write (fewer, larger HTTP chunks)
            batch = [item]
            while not queue.empty() and len(batch) < 256:
                nxt = queue.get_nowait()
                if nxt is None:
                    yield "".join(batch)
                    if failed:
                        raise failed[0]
                    return
                batch.append(nxt)
            yield "".join(batch)
        if failed:
            raise failed[0]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


class Gateway:
    """What every endpoint uses: settings, the agents, the runs and the resume store.

    Args:
        config: the gateway's settings.
        agents: the agents it serves.
        link: how it asks them.
        store: where replies are kept for resuming (None: in memory).
    """

    def __init__(
        self,
        config: GatewayConfig,
        agents: Agents,
        link: AgentLink,
        store: ResumeStore | None = None,
    ) -> None:
        self.config = config
        self.agents = agents
        self.store: ResumeStore = store if store is not None else MemoryStore()
        self.runs = Runs(
            link,
            self.store,
            window=config.resume_window,
            max_per_key=config.max_replies_per_key,
            max_runs=config.max_replies,
            timeout=config.reply_timeout,
        )
        self.intake = TurnBudget()
        # what else stops with the gateway (the MCP sessions), after the runs
        self.closing: list[Callable[[], Awaitable[None]]] = []

    async def close(self) -> None:
        """Cancel every run, then stop what registered in :attr:`closing`."""
        await self.runs.close()
        for stop in self.closing:
            await stop()

    # -- asking -----------------------------------------------------------------------------------
    def agent(self, name: str | None) -> AgentRef:
        """The agent a request names (none named: the default agent, else the first one);
        HTTPError 404 when there is none.

        Args:
            name: the agent's name or address (None or empty: the default agent).

        Raises:
            HTTPError: 404, no such agent is reachable.
        """
        name = name or self.config.default_agent
        ref = self.agents.pick(name)
        if ref is None:
            known = ", ".join(a.name for a in self.agents.listed() if a.address) or "none"
            what = f"no agent {name!r}" if name else "no agent is reachable"
            raise HTTPError(
                404, "model_not_found" if name else "no_agent", f"{what} (reachable: {known})"
            )
        return ref

    async def start(
        self,
        request: Request,
        *,
        agent: str | None,
        question: str,
        fmt: str,
        options: dict[str, Any],
        aliases: tuple[str, ...] = (),
        reply_id: str | None = None,
        sse: bool = True,
        history: tuple[Turn, ...] | None = (),
        session: uuid.UUID | None = None,
        card_response: Any = None,
    ) -> Run:
        """Ask: one run, its log created and the question delivered.

        Args:
            request: the HTTP request (its state names the API key; the agent and reply id are
                noted on it for the access log).
            agent: the agent's name or address (None: the default agent).
            question: the question's text.
            fmt: the wire the client reads (an accept value, or ``native``).
            options: the wire encoder's options.
            aliases: more names that find the reply (a run id, a chat id, a completion id).
            reply_id: the reply's id (None: a new one).
            sse: for ``native``: SSE framing, else JSON lines.
            history: the client's messages before the question, sent with it (empty too: the
                agent then keeps nothing of this question for the gateway's address; None: the
                agent's own memory of ``session``).
            session: the envelope session to ask in (the session of a reply this answers; None:
                a new one).
            card_response: a uagents-core ``CardResponse`` answering that reply's card (None:
                none; see :mod:`.answers`).

        Returns:
            The run, its reply streaming into the store.

        Raises:
            HTTPError: 404 no such agent, 413 the question is too large, 429 too many replies
                at once, 503 the store is full or the agent busy, 502 the agent unreachable.
        """
        await self.intake.take()  # a crowd's first questions go while the rest are prepared
        ref = self.agent(agent)
        request.state.agent = ref.name
        size = len(question.encode("utf-8"))
        if size > self.config.max_question_bytes:
            raise HTTPError(
                413,
                "question_too_large",
                f"the question is {size} bytes; the limit is {self.config.max_question_bytes}",
            )
        from agent_stream.uagents import DeliveryError

        try:
            run = await self.runs.start(
                key=caller(request),
                agent=ref,
                question=question,
                meta={"format": fmt, "options": options, "sse": sse},
                aliases=aliases,
                reply_id=reply_id or new_reply_id(),
                reasoning=self.config.reasoning,
                history=history,
                session=session,
                card_response=card_response,
            )
        except Busy as exc:
            raise HTTPError(429, "busy", str(exc), RETRY) from exc
        except StoreFull as exc:
            raise HTTPError(503, "store_full", str(exc)) from exc
        except DeliveryError as exc:
            raise HTTPError(502, "agent_unreachable", str(exc)) from exc
        request.state.reply = run.id
        await self._refused(run)
        return run

    async def _refused(self, run: Run) -> None:
        """HTTPError when the agent's reply opens with a refusal (it is at its limit: 503 with
        ``Retry-After``; the question is too large for it: 413), so that a client gets its own
        error format and status, not a 200 stream holding only an error. Waits for the reply's
        first message at most ``OPENING_WAIT`` seconds (then the reply streams as it comes)."""
        if run.opening is None:
            return
        try:
            first = await asyncio.wait_for(asyncio.shield(run.opening), OPENING_WAIT)
        except asyncio.TimeoutError:
            return
        if first is None or first.type != "error":
            return
        props = first.props or {}
        code, message = str(props.get("code") or ""), str(props.get("message") or "")
        if code == "busy":
            raise HTTPError(503, "agent_busy", message or "the agent is busy", RETRY)
        if code == "question_too_large":
            raise HTTPError(413, "question_too_large", message)

    async def resume_target(self, request: Request) -> tuple[str, int, dict[str, Any]] | None:
        """(reply id, cursor, metadata) when the request resumes, else None.

        A request resumes with a ``Last-Event-ID`` header or a ``last_event_id`` query.

        Args:
            request: the HTTP request.

        Raises:
            HTTPError: 404, the reply is unknown, expired, or another caller's.
        """
        raw = request.headers.get("last-event-id") or request.query_params.get("last_event_id")
        cursor = parse_cursor(raw)
        if cursor is None:
            return None
        found = await self.owned(request, cursor[0])
        if found is None:
            raise HTTPError(
                404,
                "unknown_reply",
                f"reply {cursor[0]!r} is unknown or past its "
                f"resume window ({self.config.resume_window:g} s)",
            )
        rid, meta = found
        request.state.reply = rid
        request.state.agent = meta.get("agent", "-")
        return rid, cursor[1], meta

    async def owned(self, request: Request, *names: str) -> tuple[str, dict[str, Any]] | None:
        """(reply id, metadata) of the first of ``names`` (reply ids or aliases) that finds a
        reply the request's caller started; None when none does: unknown, expired, or another
        caller's are one answer, so a reply id is no capability.

        Args:
            request: the HTTP request (its caller, see :func:`~.middleware.caller`).
            names: the names to try, in order.
        """
        me = caller(request)
        for name in names:
            rid = await self.store.resolve(name)
            meta = await self.store.meta(rid) if rid is not None else None
            # A log without an owner was written by a gateway from before replies had one (a
            # shared Redis store): whose it is cannot be told, so it is no one's. Refusing
            # costs its reader at most one resume window; accepting would hand any caller
            # another's reply.
            if rid is not None and meta is not None and meta.get(OWNER) == me:
                return rid, meta
        return None

    # -- answering --------------------------------------------------------------------------------
    def stream(
        self,
        reply_id: str,
        meta: dict[str, Any],
        *,
        after: int = -1,
        sse: bool = True,
        headers: dict[str, str] | None = None,
    ) -> StreamingResponse:
        """The reply's wire, live; a reader attached for as long as the response runs.

        Args:
            reply_id: the reply's id.
            meta: the reply's metadata (its ``format`` and encoder ``options``).
            after: the last event the client has (-1: from the start).
            sse: for ``native``: SSE framing, else JSON lines.
            headers: more response headers.
        """
        fmt, options = str(meta["format"]), dict(meta.get("options") or {})
        wire, framing = wire_of(fmt, sse)
        # keepalives come from the store's own wait, in the response's task: a wrapper with a
        # task and a queue of its own cost each event two more turns of a busy loop
        source = framed(
            self.store,
            reply_id,
            fmt,
            options,
            after=after,
            sse=sse,
            keepalive=KEEPALIVE if framing == "sse" else None,
            parsed=self.runs.parsed,
        )

        async def body() -> AsyncIterator[str]:
            await self.runs.attach(reply_id)
            try:
                async for text in source:
                    yield text
            finally:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.runs.detach(reply_id))

        return StreamingResponse(
            body(),
            media_type=wire.content_type(framing),
            headers={**SSE_HEADERS, "x-reply-id": reply_id, **wire.headers, **(headers or {})},
        )
