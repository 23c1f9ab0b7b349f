"""AG-UI threads that wait for their caller: a paused run's interrupts, and the resume that
continues it.

Every ``/agui`` run asks in an envelope session of its own. When its reply ends completed having
asked its caller (a ``user_input``: an approval, a question; on the wire RUN_FINISHED with the
interrupt outcome), :class:`PausedThreads` keeps the thread's pause: the agent, the session and
the interrupts, under the caller (its API key, or its address without keys) and the
``threadId``, never the ``threadId`` alone, which a client picks. Only a thread's latest run
counts: a new run on the thread that is not a resume forgets the pause. The pause is found by
following the run's log to its end (:meth:`PausedThreads.watch`: encoded as its readers got it,
only when a ``user_input`` is in it), in this process (a resume sent to another gateway process
finds none); a resume sent as soon as RUN_FINISHED is read waits for that
(:meth:`PausedThreads.settle`).

A run whose ``RunAgentInput.resume`` answers every interrupt of its thread's pause
(:meth:`PausedThreads.claim`) is asked in that session, its question the answer the agent reads
as a typed one (:func:`~agent_stream.adapters.agui_interrupts.answer_text`), so the agent
resumes its paused run. The claim takes the pause (a second resume of it is refused); a run that
cannot start gives it back. Refused with HTTP 400 and an AG-UI ``RUN_ERROR`` body, nothing
asked: a resume on a thread with nothing paused (another caller's thread is one of those),
naming an interrupt the pause does not have (``unknown_interrupt``), leaving one unanswered
(``unanswered_interrupt``), naming one twice or with a payload that is no answer
(``invalid_resume``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_stream.adapters.agui_interrupts import BadResume, answer_text
from agent_stream.gateway.middleware import HTTPError
from agent_stream.gateway.store import ResumeStore, parse_end
from agent_stream.gateway.views import encoder_of
from agent_stream.message import USER_INPUT, Message
from agent_stream.recent import RecentMap

__all__ = ["MAX_THREADS", "SETTLE", "Paused", "PausedThreads"]

MAX_THREADS = 4096  # threads (per gateway process) whose latest run and pause are remembered
SETTLE = 5.0  # seconds a resume waits for the ended run's pause to be kept, at most

Thread = tuple[str, str]  # (caller, digest of the threadId)


@dataclass(frozen=True)
class Paused:
    """A thread's run that ended asking its caller.

    Attributes:
        agent: the agent's name.
        session: the envelope session the answer is asked in.
        interrupts: what it asked (``ag_ui.core.Interrupt``), as its RUN_FINISHED said.
    """

    agent: str
    session: uuid.UUID
    interrupts: tuple[Any, ...]


def _thread(key: str, thread_id: str) -> Thread:
    """The record's key: the caller and a digest of the thread id (a client's long id is not
    kept)."""
    return key, hashlib.sha256(thread_id.encode("utf-8", "surrogatepass")).hexdigest()


class PausedThreads:
    """The pauses of AG-UI threads, per caller, the latest :data:`MAX_THREADS` threads.

    Args:
        limit: threads remembered at most.
    """

    def __init__(self, limit: int = MAX_THREADS) -> None:
        self._latest: RecentMap[Thread, str] = RecentMap(limit)  # thread -> its latest run
        self._paused: RecentMap[Thread, Paused] = RecentMap(limit)
        self._watching: set[asyncio.Task[None]] = set()  # every follower running (held here)
        self._follower: RecentMap[Thread, asyncio.Task[None]] = RecentMap(limit)

    def __len__(self) -> int:
        return len(self._paused)

    def started(self, key: str, thread_id: str, reply_id: str) -> None:
        """A run started on the thread: it is the thread's latest; an older pause is forgotten.

        Args:
            key: the caller.
            thread_id: the AG-UI thread.
            reply_id: the run's reply id.
        """
        t = _thread(key, thread_id)
        self._latest.put(t, reply_id)
        self._paused.pop(t)

    async def settle(self, key: str, thread_id: str) -> None:
        """Wait until the thread's latest run has had its pause kept: a client may resume as
        soon as it reads RUN_FINISHED, a moment before the run's log ends (waits at most
        :data:`SETTLE` s: a run still going is no pause).

        Args:
            key: the caller.
            thread_id: the AG-UI thread.
        """
        task = self._follower.get(_thread(key, thread_id))
        if task is None or task.done():
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), SETTLE)

    def claim(self, key: str, thread_id: str, entries: Sequence[Any]) -> tuple[Paused, str]:
        """Take the thread's pause for ``entries``, which must answer each of its interrupts
        once; returns it and the answer to ask.

        Args:
            key: the caller.
            thread_id: the AG-UI thread.
            entries: the RunAgentInput's ``resume`` (``ag_ui.core.ResumeEntry``).

        Raises:
            HTTPError: 400: nothing of this caller's waits on the thread, or the entries do not
                answer exactly its interrupts, or one's payload is no answer.
        """
        t = _thread(key, thread_id)
        paused = self._paused.get(t)
        if paused is None:
            raise HTTPError(
                400,
                "unknown_interrupt",
                "no run of yours on this thread is waiting for an answer (a pause is answered "
                "once); send the run without resume",
            )
        asked = [i.id for i in paused.interrupts]
        named = [e.interrupt_id for e in entries]
        if len(set(named)) != len(named):
            raise HTTPError(400, "invalid_resume", "resume names an interrupt more than once")
        unknown = [n for n in named if n not in asked]
        if unknown:
            raise HTTPError(
                400,
                "unknown_interrupt",
                f"the thread's run is not waiting for interrupt {_shown(unknown[0])!r}",
            )
        left = [a for a in asked if a not in named]
        if left:
            raise HTTPError(
                400,
                "unanswered_interrupt",
                f"resume must answer every interrupt of the thread's run; not answered: "
                f"{', '.join(left)}",
            )
        try:
            answer = answer_text(paused.interrupts, entries)
        except BadResume as exc:
            raise HTTPError(400, "invalid_resume", str(exc)) from exc
        self._paused.pop(t)
        return paused, answer

    def give_back(self, key: str, thread_id: str, paused: Paused) -> None:
        """A claimed pause whose resume could not start: it waits again.

        Args:
            key: the caller.
            thread_id: the AG-UI thread.
            paused: the pause :meth:`claim` took.
        """
        self._paused.put(_thread(key, thread_id), paused)

    def watch(
        self,
        store: ResumeStore,
        reply_id: str,
        options: dict[str, Any],
        *,
        key: str,
        thread_id: str,
        agent: str,
        session: uuid.UUID,
    ) -> None:
        """Follow the run's log to its end; when it ended completed having asked, and is still
        the thread's latest run, keep its pause.

        Args:
            store: the resume store holding the run's log.
            reply_id: the run's reply id.
            options: its AG-UI encoder options (the interrupts are those its readers get).
            key: the caller.
            thread_id: the AG-UI thread.
            agent: the agent's name.
            session: the envelope session it asked in.
        """
        task = asyncio.create_task(
            self._follow(store, reply_id, options, _thread(key, thread_id), agent, session),
            name=f"agui pause of {reply_id}",
        )
        self._watching.add(task)
        task.add_done_callback(self._watching.discard)
        self._follower.put(_thread(key, thread_id), task)

    async def _follow(
        self,
        store: ResumeStore,
        reply_id: str,
        options: dict[str, Any],
        thread: Thread,
        agent: str,
        session: uuid.UUID,
    ) -> None:
        entries: list[str] = []
        asked = False
        status = None
        async for entry in store.read(reply_id):
            end = parse_end(entry)
            if end is not None:
                status = end.get("status")
                break
            entries.append(entry)
            asked = asked or USER_INPUT in entry
        if not asked or status != "completed" or self._latest.get(thread) != reply_id:
            return
        enc = encoder_of("agui", options)  # the interrupts as every reader of the run got them
        for entry in entries:
            enc.feed(Message.from_json(entry))
        enc.close(status="completed")
        interrupts = tuple(getattr(enc, "interrupts", ()))
        if interrupts:
            self._paused.put(thread, Paused(agent, session, interrupts))


def _shown(value: str, limit: int = 80) -> str:
    """``value`` as an error message shows it: a long one cut (the client sent it whole)."""
    return value if len(value) <= limit else value[:limit] + f"... ({len(value)} characters)"
