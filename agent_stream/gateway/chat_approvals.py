"""AI SDK chats across requests: each chat's envelope session, the replies paused for a tool
approval, and the follow-up request that answers them.

Every request of one chat (its ``id``, per caller: :class:`ChatSessions`) asks in the same
envelope session, so the agent's paused run waits in the conversation the next request comes
in: a typed answer (what an ai 5 client, which gets a pause as a ``data-user_input`` part,
sends) resumes it as on the chat protocol, and anything typed instead of a decision answers
the pause too (anything but a yes refuses).

An ai 6 client's ``/api/chat`` reply that ends asking approvals (``tool-approval-request``
chunks, see :mod:`agent_stream.adapters.aisdk`) is remembered once it has ended completed: its
caller, agent, envelope session, message id, and each ``approvalId`` with its tool call.
``useChat`` answers with a request whose last message is that assistant message, its tool parts
``state: "approval-responded"`` with ``approval: {id, approved, reason?}``
(:func:`responses_of`). :meth:`ChatApprovals.take` hands that caller's pause over once, every
approval of it answered: the answer the agent reads is ``yes`` when all were approved, else the
first refusal's reason (``no`` without one); the chat protocol takes one answer per pause, so
a mixed decision refuses every call of it. An approval id that is unknown, answered already,
forgotten or another caller's resumes nothing: HTTP 404 ``unknown_approval``, one answer for
all, so an id is no capability. Pauses are kept in this process (the last
:data:`MAX_PAUSED`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_stream.gateway.middleware import HTTPError
from agent_stream.gateway.runs import Run
from agent_stream.gateway.store import ResumeStore
from agent_stream.gateway.views import events
from agent_stream.recent import RecentMap
from agent_stream.sources.approvals import is_yes

__all__ = [
    "MAX_CHATS",
    "MAX_PAUSED",
    "VERSION_HEADER",
    "ChatApprovals",
    "ChatSessions",
    "Decision",
    "Paused",
    "ai_version",
    "answer_text",
    "responses_of",
]

LOG = logging.getLogger("agent_stream.gateway")
MAX_PAUSED = 4096  # approvals waiting for an answer, every caller's together
MAX_CHATS = 4096  # chats whose session is remembered, every caller's together
MAX_RESPONSES = 64  # approval responses one follow-up may carry
MAX_ID = 256  # characters of an approval or tool call id
VERSION_HEADER = "x-ai-sdk-version"


def ai_version(value: str | None) -> int:
    """The AI SDK major a request says its client runs (its ``x-ai-sdk-version`` header: ``5``,
    ``6``, ``6.0.325``...; none: 6). A later major reads ai 6's stream.

    Args:
        value: the header's value (None: absent).

    Raises:
        HTTPError: 400, it names no major, or one before 5.
    """
    if value is None:
        return 6
    major = value.strip().removeprefix("v").split(".", 1)[0]
    if len(value) > 32 or not (major.isascii() and major.isdigit()) or int(major) < 5:
        raise HTTPError(
            400,
            "invalid_ai_sdk_version",
            f"{VERSION_HEADER} must name the AI SDK major the client runs (5 or 6), "
            f"not {value[:40]!r}",
        )
    return min(int(major), 6)


@dataclass
class ChatSessions:
    """The envelope session of each AI SDK chat, per caller; the least recently used are
    forgotten past :data:`MAX_CHATS` (that chat then starts afresh).

    Attributes:
        sessions: (caller, chat id) -> its session.
    """

    sessions: RecentMap[tuple[str, str], uuid.UUID] = field(
        default_factory=lambda: RecentMap(MAX_CHATS)
    )

    def session(self, key: str, chat_id: Any) -> uuid.UUID:
        """The session of the caller's chat (a new one the first time; a new one each time for
        a request without a chat id, or one over :data:`MAX_ID` characters).

        Args:
            key: the caller.
            chat_id: the request's ``id`` (None or not a string: none).
        """
        if not isinstance(chat_id, str) or not 0 < len(chat_id) <= MAX_ID:
            return uuid.uuid4()
        found = self.sessions.get((key, chat_id)) or uuid.uuid4()
        self.sessions.put((key, chat_id), found)
        return found


@dataclass(frozen=True)
class Decision:
    """One approval response of a follow-up.

    Attributes:
        approval_id: the ``approvalId`` it answers.
        tool_call_id: the tool call its part names.
        approved: the user's decision.
        reason: why, when the user said (None: not said).
    """

    approval_id: str
    tool_call_id: str
    approved: bool
    reason: str | None = None


@dataclass(frozen=True)
class Paused:
    """An ended reply waiting for its approvals.

    Attributes:
        key: its caller (API key digest, or client address).
        agent: the agent's name.
        session: the envelope session the answer is asked in.
        message_id: the assistant message the answer's reply continues.
        calls: each ``approvalId`` asked, and its tool call id.
    """

    key: str
    agent: str
    session: uuid.UUID
    message_id: str
    calls: Mapping[str, str]


def _part_decision(part: Any, i: int) -> Decision | None:
    """The decision of a UI message part (None: not a tool part answered for approval)."""
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if not isinstance(kind, str) or not (kind == "dynamic-tool" or kind.startswith("tool-")):
        return None
    if part.get("state") != "approval-responded":
        return None
    approval, cid = part.get("approval"), part.get("toolCallId")
    aid = approval.get("id") if isinstance(approval, dict) else None
    approved = approval.get("approved") if isinstance(approval, dict) else None
    reason = approval.get("reason") if isinstance(approval, dict) else None
    if (
        not isinstance(aid, str)
        or not isinstance(cid, str)
        or not isinstance(approved, bool)
        or not 0 < len(aid) <= MAX_ID
        or len(cid) > MAX_ID
        or not (reason is None or isinstance(reason, str))
    ):
        raise HTTPError(
            400,
            "invalid_approval",
            f"part {i} of the last message must carry toolCallId and approval "
            "{id: string, approved: boolean, reason?: string}",
        )
    return Decision(aid, cid, approved, reason[:4096] if reason else None)


def responses_of(messages: Any) -> list[Decision]:
    """The approval responses of a request's messages: the tool parts answered for approval in
    its last message, when that is an assistant message (none: it asks a question).

    Args:
        messages: the request's ``messages``.

    Raises:
        HTTPError: 400, a part answered for approval is malformed, or there are too many.
    """
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return []
    last = messages[-1]
    parts = last.get("parts")
    if last.get("role") != "assistant" or not isinstance(parts, list):
        return []
    found = [d for i, p in enumerate(parts) if (d := _part_decision(p, i)) is not None]
    if len(found) > MAX_RESPONSES:
        raise HTTPError(
            400, "invalid_approval", f"at most {MAX_RESPONSES} approval responses at once"
        )
    return found


def answer_text(decisions: list[Decision]) -> str:
    """What the agent reads: ``yes`` when every call was approved, else the first refusal's
    reason (``no`` when it gave none, or one that reads as a yes).

    Args:
        decisions: the pause's decisions.
    """
    for d in decisions:
        if not d.approved:
            return d.reason if d.reason and d.reason.strip() and not is_yes(d.reason) else "no"
    return "yes"


@dataclass
class ChatApprovals:
    """The gateway's AI SDK replies waiting for approvals, by (caller, approval id).

    Attributes:
        waiting: (caller, approval id) -> its pause.
    """

    waiting: RecentMap[tuple[str, str], Paused] = field(
        default_factory=lambda: RecentMap(MAX_PAUSED)
    )
    _watching: dict[asyncio.Task[None], tuple[str, Run]] = field(default_factory=dict, init=False)

    def put(self, paused: Paused) -> None:
        """Remember a pause (again, when its answer could not be asked).

        Args:
            paused: the pause.
        """
        for aid in paused.calls:
            self.waiting.put((paused.key, aid), paused)

    def take(self, key: str, decisions: list[Decision]) -> Paused:
        """The caller's pause these decisions answer, no longer waiting.

        Args:
            key: the caller.
            decisions: the follow-up's approval responses (at least one).

        Raises:
            HTTPError: 404, an approval id is not one of this caller's waiting ones; 400, they
                answer more than one pause, leave one of its approvals unanswered, or name
                another tool call than the one asked.
        """
        found = [(d, self.waiting.get((key, d.approval_id))) for d in decisions]
        for d, p in found:
            if p is None:
                raise HTTPError(
                    404,
                    "unknown_approval",
                    f"no reply of yours waits for approval {d.approval_id[:80]!r}: unknown, "
                    "answered already, or forgotten; nothing was resumed",
                )
        pauses = {id(p): p for _, p in found}
        if len(pauses) > 1:
            raise HTTPError(
                400, "invalid_approval", "the approvals answered belong to different replies"
            )
        paused = found[0][1]
        assert paused is not None
        for d, _ in found:
            if paused.calls[d.approval_id] != d.tool_call_id:
                raise HTTPError(
                    400,
                    "invalid_approval",
                    f"approval {d.approval_id[:80]!r} was asked for tool call "
                    f"{paused.calls[d.approval_id]!r}, not {d.tool_call_id[:80]!r}",
                )
        missing = set(paused.calls) - {d.approval_id for d in decisions}
        if missing:
            raise HTTPError(
                400,
                "unanswered_approval",
                f"the reply asked {len(paused.calls)} approvals; answer each (missing: "
                f"{', '.join(sorted(missing))[:200]})",
            )
        for aid in paused.calls:
            self.waiting.pop((key, aid))
        return paused

    def watch(self, store: ResumeStore, run: Run, options: dict[str, Any], paused: Paused) -> None:
        """Once ``run`` has ended completed, remember the approvals its wire asked.

        Args:
            store: the resume store holding the run's log.
            run: the run (its task still going).
            options: the AI SDK encoder options its wire is encoded with.
            paused: the pause it makes, its ``calls`` empty yet.
        """
        task = asyncio.create_task(self._after(store, run, options, paused))
        self._watching[task] = (paused.key, run)
        task.add_done_callback(lambda t: self._watching.pop(t, None))

    async def settle(self, key: str, timeout: float = 5.0) -> None:
        """Wait until the caller's replies that are ending have had their approvals kept: a
        client answers as soon as it has read the end, which may be before they are.

        Args:
            key: the caller.
            timeout: the most seconds waited.
        """
        ending = [t for t, (k, run) in self._watching.items() if k == key and run.status]
        if ending:
            await asyncio.wait(ending, timeout=timeout)

    async def _after(
        self, store: ResumeStore, run: Run, options: dict[str, Any], paused: Paused
    ) -> None:
        if run.task is None:
            return
        await asyncio.wait({run.task})
        if run.status != "completed":
            return
        calls: dict[str, str] = {}
        try:
            # most replies ask nothing: a look at the entries spares them an encoding
            if not [e async for e in store.read(run.id) if '"user_input"' in e]:
                return
            # the ended log, encoded as its client read it: the approvals it was asked
            async for _, chunk in events(store, run.id, "aisdk", options):
                if isinstance(chunk, dict) and chunk.get("type") == "tool-approval-request":
                    calls[chunk["approvalId"]] = chunk["toolCallId"]
        except Exception as exc:  # the log is gone (a store failure): nothing can be resumed
            LOG.warning("reply %s: its approvals were not kept: %s", run.id, exc)
            return
        if calls:
            self.put(Paused(paused.key, paused.agent, paused.session, paused.message_id, calls))
