"""Replies in flight: each HTTP question becomes one run that outlives its connection.

A run asks the agent through the :class:`~agent_stream.gateway.link.AgentLink` and writes every
Message into the resume store; HTTP responses only *read* the store. So:

- a dropped connection is not a stop: the run goes on; when no reader has been attached for
  ``window`` seconds, it is cancelled (status ``cancelled``, error "abandoned");
- a stop (:meth:`Runs.cancel`: ``DELETE /v1/replies/{id}``, A2A ``tasks/cancel``) cancels at once;
- every run ends with an end entry in its log, whatever happens; the log is kept ``window``
  seconds after the end, for late readers.

A run is its caller's (the API key, or the client's address when no keys are set): its log's
metadata names it as :data:`OWNER`, and the gateway answers anyone else asking for the reply as
it answers an unknown id.

Limits: ``max_per_key`` runs at once per API key (or per client address when no keys are set),
and ``max_runs`` in all; over either, :class:`Busy` (HTTP 429).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_stream.conversation import Turn
from agent_stream.gateway.answers import SESSION
from agent_stream.gateway.link import AgentLink, AgentRef, LinkedReply
from agent_stream.gateway.parsed import ParsedEntries
from agent_stream.gateway.store import ResumeStore, StoreFull, end_entry

if TYPE_CHECKING:
    from agent_stream.message import Message

__all__ = ["OWNER", "Busy", "Run", "Runs", "new_reply_id"]

LOG = logging.getLogger("agent_stream.gateway")
OWNER = "owner"  # the metadata field naming the caller that started a reply


class Busy(RuntimeError):
    """Too many replies at once (for this key, or in all)."""


def _stream_start(msg: Message) -> bool:
    return msg.type == "event" and (msg.props or {}).get("event") == "stream_start"


def new_reply_id() -> str:
    """A fresh reply id (``r`` + 24 hex digits)."""
    return "r" + secrets.token_hex(12)


@dataclass
class Run:
    """One reply being produced here.

    Attributes:
        id: the reply's id.
        agent: the agent asked.
        key: whom it counts against: the API key, or the client's address when no keys are set.
        question: the question's text.
        history: the client's conversation before the question (None: the agent's own).
        session: the envelope session to ask in (an A2A context, the session of a reply it
            answers; a new one otherwise, kept in the reply log's metadata).
        card_response: the card response it answers with (None: the question is text).
        started: when it started (``time.monotonic()``).
        reply: the agent's reply, once the question was delivered.
        task: the task writing the reply into the store.
        delivered: done once the question was delivered (or failed).
        status: the reply's final status (None while it runs).
        error: its error text (None: none).
        cancel_reason: why it was cancelled (None: it was not).
        first_text_at: when its first text came (``time.monotonic()``; None: none yet).
        ended_at: when it ended (``time.monotonic()``; None: still running).
        abandon: the timer cancelling it once no reader has been attached for ``window``
            seconds.
        opening: the reply's first message after stream_start (None: none came): a refusal
            is answered in the client's own error format before any response starts.
    """

    id: str
    agent: AgentRef
    key: str
    question: str
    history: tuple[Turn, ...] | None = None
    session: uuid.UUID | None = None
    card_response: Any = None
    started: float = field(default_factory=time.monotonic)
    reply: LinkedReply | None = None
    task: asyncio.Task[None] | None = None
    delivered: asyncio.Future[None] | None = None
    status: str | None = None
    error: str | None = None
    cancel_reason: str | None = None
    first_text_at: float | None = None
    ended_at: float | None = None
    abandon: asyncio.TimerHandle | None = None
    opening: asyncio.Future[Message | None] | None = None

    @property
    def chat_messages(self) -> int:
        return self.reply.chat_messages if self.reply is not None else 0

    def stats(self) -> dict[str, Any]:
        """What the page's footer and ``GET /v1/replies/{id}`` show."""

        def secs(t: float | None) -> float | None:
            return round(t - self.started, 3) if t is not None else None

        return {
            "id": self.id,
            "agent": self.agent.name,
            "status": self.status,
            "error": self.error,
            "chat_messages": self.chat_messages,
            "first_text_s": secs(self.first_text_at),
            "total_s": secs(self.ended_at),
        }


class Runs:
    """Starts, tracks, stops and forgets runs.

    Args:
        link: how the agents are asked.
        store: where the replies' logs are written.
        window: seconds a run without readers goes on, and a finished log is kept.
        max_per_key: runs at once per API key (or client address).
        max_runs: runs at once in all.
        timeout: seconds one reply may take.
    """

    def __init__(
        self,
        link: AgentLink,
        store: ResumeStore,
        *,
        window: float = 60.0,
        max_per_key: int = 8,
        max_runs: int = 256,
        timeout: float = 300.0,
    ) -> None:
        self.link = link
        self.store = store
        self.window = window
        self.max_per_key = max_per_key
        self.max_runs = max_runs
        self.timeout = timeout
        self.runs: dict[str, Run] = {}
        self._per_key: dict[str, int] = {}  # open runs per key (counted, not scanned for)
        self.parsed = ParsedEntries()  # what the pumps stored, for this process's readers
        self.finished: dict[str, Run] = {}  # kept for ``stats`` while their log is kept

    @property
    def open_count(self) -> int:
        return len(self.runs)

    def _open(self, run: Run) -> None:
        self.runs[run.id] = run
        self._per_key[run.key] = self._per_key.get(run.key, 0) + 1

    def _close(self, run: Run) -> None:
        if self.runs.get(run.id) is not run:
            return
        del self.runs[run.id]
        left = self._per_key.get(run.key, 0) - 1
        if left > 0:
            self._per_key[run.key] = left
        else:
            self._per_key.pop(run.key, None)

    def _check_limits(self, key: str) -> None:
        if len(self.runs) >= self.max_runs:
            raise Busy(f"the gateway is at its limit of {self.max_runs} replies at once")
        if self._per_key.get(key, 0) >= self.max_per_key:
            raise Busy(f"at most {self.max_per_key} replies at once per API key")

    async def start(
        self,
        *,
        key: str,
        agent: AgentRef,
        question: str,
        meta: dict[str, Any],
        aliases: tuple[str, ...] = (),
        reply_id: str | None = None,
        reasoning: bool = True,
        history: tuple[Turn, ...] | None = None,
        session: uuid.UUID | None = None,
        card_response: Any = None,
    ) -> Run:
        """Create the log and ask; returns once the question is delivered.

        Nothing is left behind when it raises.

        Args:
            key: whom the run counts against (API key or client address).
            agent: the agent to ask.
            question: the question's text.
            meta: the log's metadata (format, encoder options, ...); the agent is added, and
                ``key`` as its :data:`OWNER`.
            aliases: more names that find the reply (a run id, a chat id, a completion id).
            reply_id: the reply's id (None: a new one).
            reasoning: ask for the reasoning channel too.
            history: the client's conversation before the question (None: the agent's own).
            session: the envelope session to ask in (None: a new one); the log's metadata
                keeps it, so that a later question can answer this reply in it.
            card_response: a uagents-core ``CardResponse`` to answer with (None: none).

        Returns:
            The run, its reply streaming into the store.

        Raises:
            Busy: over ``max_per_key`` or ``max_runs``.
            StoreFull: the store cannot take another reply.
            DeliveryError: the question was not delivered.
        """
        self._check_limits(key)
        rid = reply_id or new_reply_id()
        session = session or uuid.uuid4()
        run = Run(
            rid,
            agent,
            key,
            question,
            history=history,
            session=session,
            card_response=card_response,
        )
        run.delivered = asyncio.get_running_loop().create_future()
        run.opening = asyncio.get_running_loop().create_future()
        self._open(run)  # counted from now on (the limits hold across the awaits below)
        try:
            # the owner: only the caller that started a reply may read, resume or stop it
            await self.store.create(
                rid,
                {
                    **meta,
                    "agent": agent.name,
                    "address": agent.address,
                    OWNER: key,
                    SESSION: str(session),
                },
            )
            for a in aliases:
                await self.store.alias(a, rid)
        except BaseException:
            self._close(run)
            raise
        run.task = asyncio.create_task(self._pump(run, reasoning), name=f"gateway run {rid}")
        try:
            await asyncio.shield(run.delivered)
        except BaseException:
            if not run.task.done():
                run.task.cancel()
            raise
        return run

    async def _pump(self, run: Run, reasoning: bool) -> None:
        assert run.delivered is not None and run.opening is not None
        status, error = "error", None
        try:
            extra: dict[str, Any] = {}
            if run.history is not None:
                extra["history"] = run.history
            if run.session is not None:
                extra["session"] = run.session
            if run.card_response is not None:
                extra["card_response"] = run.card_response
            run.reply = await self.link.ask(
                run.agent.address, run.question, reasoning=reasoning, timeout=self.timeout, **extra
            )
            run.delivered.set_result(None)
            async for msg in run.reply:
                if not run.opening.done() and not _stream_start(msg):
                    run.opening.set_result(msg)
                if (
                    run.first_text_at is None
                    and msg.type == "text"
                    and (msg.props or {}).get("content")
                ):
                    run.first_text_at = time.monotonic()
                entry = msg.to_json()
                self.parsed.keep(entry, msg)
                await self.store.append(run.id, [entry])
            status = run.reply.status or "error"
            if status == "timeout":
                status, error = "error", f"no complete reply within {self.timeout:g} s"
            elif status == "cancelled":
                error = run.cancel_reason
            elif status not in ("completed", "error", "cancelled"):
                status, error = "error", f"the reply ended with status {status}"
        except asyncio.CancelledError:
            status, error = "cancelled", run.cancel_reason
            if run.reply is not None:
                run.reply.cancel()
        except StoreFull as exc:
            status, error = "error", str(exc)
            if run.reply is not None:
                run.reply.cancel()
        except Exception as exc:
            if not run.delivered.done():
                run.delivered.set_exception(exc)
                status, error = "error", str(exc)
            else:
                LOG.exception("gateway run %s failed", run.id)
                status, error = "error", f"the gateway failed: {exc}"
        finally:
            if not run.delivered.done():
                run.delivered.set_exception(asyncio.CancelledError())
            if not run.opening.done():
                run.opening.set_result(None)
            run.status, run.error = status, error
            run.ended_at = time.monotonic()
            with contextlib.suppress(StoreFull):
                await self.store.append(run.id, [end_entry(status, error)])
            await self.store.drop(run.id, self.window)
            self._close(run)
            if run.abandon is not None:
                run.abandon.cancel()
            self._remember(run)

    def _remember(self, run: Run) -> None:
        # Oldest first (they come in the order they ended): the expired ones are at the front,
        # so each end looks at those it forgets and one more, not at every run kept.
        now = time.monotonic()
        expired = []
        for rid, x in self.finished.items():
            if x.ended_at is None or now - x.ended_at <= self.window:
                break
            expired.append(rid)
        for rid in expired:
            del self.finished[rid]
        self.finished[run.id] = run

    def get(self, reply_id: str) -> Run | None:
        """A run of this process, open or recently finished.

        Args:
            reply_id: the reply's id.
        """
        return self.runs.get(reply_id) or self.finished.get(reply_id)

    async def cancel(self, reply_id: str, reason: str = "stopped by the client") -> bool:
        """Stop a run now; False when it is not running here.

        Args:
            reply_id: the reply's id.
            reason: the reply's error text.
        """
        run = self.runs.get(reply_id)
        if run is None:
            return False
        run.cancel_reason = reason
        if run.reply is not None:
            run.reply.cancel()  # the iterator ends; the pump writes the end entry
        elif run.task is not None:
            run.task.cancel()
        if run.task is not None:
            with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(run.task), 2.0)
        return True

    # -- readers ----------------------------------------------------------------------------------
    async def attach(self, reply_id: str) -> None:
        """A response starts reading the reply.

        Args:
            reply_id: the reply's id.
        """
        await self.store.readers(reply_id, +1)
        run = self.runs.get(reply_id)
        if run is not None and run.abandon is not None:
            run.abandon.cancel()
            run.abandon = None

    async def detach(self, reply_id: str) -> None:
        """A response stopped reading (finished, or the client went away).

        Args:
            reply_id: the reply's id.
        """
        left = await self.store.readers(reply_id, -1)
        run = self.runs.get(reply_id)
        if left == 0 and run is not None and run.abandon is None:
            loop = asyncio.get_running_loop()
            run.abandon = loop.call_later(
                self.window, lambda: asyncio.ensure_future(self._abandon(reply_id))
            )

    async def _abandon(self, reply_id: str) -> None:
        run = self.runs.get(reply_id)
        if run is None:
            return
        run.abandon = None
        if await self.store.readers(reply_id) == 0:
            LOG.info("reply %s: no reader for %g s, cancelled", reply_id, self.window)
            await self.cancel(
                reply_id, reason="abandoned: no client came back within the resume window"
            )

    async def follow_cancels(self) -> None:
        """Stop the runs other gateway processes are asked to stop (a shared store that can
        pass such requests, e.g. Redis); returns at once for a store that cannot."""
        requests = getattr(self.store, "cancel_requests", None)
        if requests is None:
            return
        while True:
            try:
                async for rid in requests():
                    if rid in self.runs:
                        await self.cancel(
                            rid, reason="stopped by the client (through another gateway)"
                        )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the store is unreachable: say so, try again
                LOG.warning("gateway: cannot follow stop requests of other processes: %s", exc)
                await asyncio.sleep(1.0)

    async def close(self) -> None:
        """Cancel every run (the gateway stops)."""
        for rid in list(self.runs):
            await self.cancel(rid, reason="the gateway is stopping")
