"""Each agent as an A2A agent, through ``a2a-sdk``'s own server pieces.

``POST /a2a/{agent}`` is the JSON-RPC endpoint (``message/send``, ``message/stream``,
``tasks/get``, ``tasks/cancel``, ...) of an ``A2AStarletteApplication`` with the SDK's
``DefaultRequestHandler`` (:class:`~agent_stream.gateway.a2a_input.FollowUps`) and a task store
of the gateway's own; its card is at
``/a2a/{agent}/.well-known/agent-card.json`` (the SDK's well-known path under the agent's URL).
The domain root's ``/.well-known/agent-card.json``, where the spec has clients look first, is
the default agent's card (``--default-agent``), or the one agent's when the gateway serves one;
otherwise a 404 whose JSON body lists each agent's card path.

The agents take text: a ``message/send`` or ``message/stream`` whose message has no parts, no
text, or parts of another kind (file, data) is refused with JSON-RPC error -32602 (invalid
params) naming what was wrong, before a task starts; nothing is dropped silently.
The executor starts an ordinary gateway run (so limits, ``/healthz`` and ``DELETE
/v1/replies/{id}`` apply; the A2A task id is an alias) and feeds its log through the project's
:class:`~agent_stream.adapters.a2a.A2AEncoder`. ``tasks/cancel`` cancels the run at once; the
task ends ``canceled``. A dropped ``message/stream`` connection does not cancel it.

A ``contextId`` is a conversation: every task of one context (for one caller) asks in the same
envelope session, so the agent remembers the earlier tasks' questions and answers. The gateway
keeps the last :data:`MAX_CONTEXTS` contexts per agent; an older one starts afresh.

Human in the loop: a reply that asks the caller (a ``user_input`` message, e.g. a LangGraph
``interrupt``) ends its task ``input-required``, the question as the status message. A
``message/send`` or ``message/stream`` whose ``message.taskId`` names that task (its
``contextId``, or none) is the answer: it is asked in the same envelope session (so LangGraph
resumes with ``Command(resume=<its text>)``) and its stream continues the same task (``working``,
new artifacts, then ``completed`` or another question). Any other
``taskId`` is refused before anything is asked (:mod:`agent_stream.gateway.a2a_input`).

Every method that names a task answers for the caller's own tasks only (another API key's task
is ``-32001``, task not found), and the tasks kept are bounded (``max_tasks_per_key``,
``max_tasks``: finished ones forgotten least recently used first, a new task refused with
``-32000`` when all are open): :mod:`agent_stream.gateway.a2a_tasks`. A request a2a-sdk would
refuse as malformed (not JSON, not JSON-RPC, params of the wrong shape) is answered here with
the same JSON-RPC error, so a client's mistake logs no error
(:mod:`agent_stream.gateway.a2a_checks`). The body is read here once, by the project's strict
JSON reader (nested at most 64 levels: deeper is the same -32700 as text that is not JSON, where
the SDK's ``json.loads`` would fail with a 500), and handed on to the SDK already read.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message as ASGIMessage

from agent_stream.gateway.a2a_checks import (
    INVALID_PARAMS,
    PARSE_ERROR,
    check_message,
    check_request,
    rpc_error,
)
from agent_stream.gateway.a2a_input import (
    FOLLOW_UP_STATE,
    KEY_STATE,
    Asking,
    FollowUps,
    Waiting,
)
from agent_stream.gateway.a2a_tasks import OwnedTaskStore, TaskBook
from agent_stream.gateway.core import Gateway
from agent_stream.gateway.link import AgentRef
from agent_stream.gateway.middleware import HTTPError, caller, json_value, read_body
from agent_stream.gateway.runs import Busy
from agent_stream.gateway.store import StoreFull, parse_end
from agent_stream.gateway.views import CONTINUES
from agent_stream.recent import RecentMap

__all__ = ["GatewayExecutor", "check_message", "check_request", "routes"]

CARD_PATH = "/.well-known/agent-card.json"
OLD_CARD_PATH = "/.well-known/agent.json"  # the A2A 0.2 name, still read by older clients
TASK_ALIAS = "a2a-task:"
MAX_CONTEXTS = 4096  # A2A contexts remembered per agent (each: its envelope session)
Endpoint = Callable[[Request], Awaitable[Response]]


def _executor_base() -> type:
    from a2a.server.agent_execution import AgentExecutor

    base: type = AgentExecutor
    return base


class ContextSessions:
    """The envelope session of each A2A context, per caller (key).

    The least recently used are forgotten past ``limit``.

    Args:
        limit: the most (caller, context) pairs kept.
    """

    def __init__(self, limit: int = MAX_CONTEXTS) -> None:
        self.limit = limit
        self._sessions: OrderedDict[tuple[str, str], uuid.UUID] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def session(self, key: str, context_id: str) -> uuid.UUID:
        """The session of ``context_id`` for caller ``key`` (a new one the first time).

        Args:
            key: the caller (its API key, or its address when no keys are set).
            context_id: the A2A context's id.
        """
        k = (key, context_id)
        found = self._sessions.get(k)
        if found is None:
            found = self._sessions[k] = uuid.uuid4()
            while len(self._sessions) > self.limit:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(k)
        return found


class GatewayExecutor(_executor_base()):  # type: ignore[misc]
    """An A2A AgentExecutor asking one agent through the gateway's runs.

    Args:
        gw: the gateway whose runs ask the agent.
        agent: the agent the executor asks.
    """

    def __init__(self, gw: Gateway, agent: AgentRef) -> None:
        self.gw = gw
        self.agent = agent
        self.contexts = ContextSessions()
        # the tasks waiting for an answer: no more than the task store keeps
        self.asking = Asking(RecentMap(gw.config.max_tasks))

    async def execute(self, context: Any, event_queue: Any) -> None:
        """Ask the agent the task's message; stream its reply as the task's events.

        Args:
            context: a2a-sdk's request context (the message, task and context ids).
            event_queue: where the task's events go.
        """
        import asyncio

        from a2a.types import Task, TaskState

        from agent_stream.adapters.a2a import A2AEncoder
        from agent_stream.uagents import DeliveryError

        question = context.get_user_input()
        task_id, context_id = context.task_id, context.context_id
        state = getattr(getattr(context, "call_context", None), "state", None) or {}
        key = str(state.get(KEY_STATE, "a2a"))
        answering = state.get(FOLLOW_UP_STATE)
        # a follow-up (the handler let only the answer to a question through) continues the task
        prior = context.current_task if isinstance(answering, Waiting) else None
        enc = A2AEncoder(task_id=task_id, context_id=context_id, task=prior)
        if isinstance(answering, Waiting):
            session = answering.session
        elif context_id:
            session = self.contexts.session(key, str(context_id))
        else:
            session = uuid.uuid4()
        gw = self.gw
        options: dict[str, Any] = {"task_id": task_id, "context_id": context_id}
        if prior is not None:  # a replay of the reply continues the task as this stream does
            options[CONTINUES] = prior.model_dump(mode="json", by_alias=True, exclude_none=True)

        async def emit(evs: list[Any]) -> None:
            for ev in evs:
                if isinstance(ev, Task) and prior is None and context.message is not None:
                    ev.history = [context.message]  # a new task's history opens with the ask
                await event_queue.enqueue_event(ev)

        async def not_asked(why: str) -> None:
            if isinstance(answering, Waiting):  # the question stays open: answer again later
                self.asking.waiting.put(str(task_id), answering)
                await event_queue.enqueue_event(_still_asking(prior, why))
            else:
                await emit(enc.close(status="error", error=why))

        if len(question.encode("utf-8")) > gw.config.max_question_bytes:
            await not_asked(f"the question is over {gw.config.max_question_bytes} bytes")
            return
        try:
            run = await gw.runs.start(
                key=key,
                agent=self.agent,
                question=question,
                # the reply, like its task and every run, is its caller's alone
                meta={"format": "a2a", "options": options},
                aliases=(TASK_ALIAS + str(task_id),),
                reasoning=gw.config.reasoning,
                session=session,
            )
        except (DeliveryError, Busy, StoreFull) as exc:
            await not_asked(str(exc))
            return
        await gw.runs.attach(run.id)
        try:
            async for entry in gw.store.read(run.id):
                end = parse_end(entry)
                evs = (
                    enc.close(status=end.get("status") or "error", error=end.get("error"))
                    if end is not None
                    else enc.feed(gw.runs.parsed.message(entry))
                )
                await emit(evs)
                if end is not None or enc.finished:
                    break
        except asyncio.CancelledError:
            await emit(enc.close(status="cancelled"))
            raise
        finally:
            await gw.runs.detach(run.id)
        if enc.final_state == TaskState.input_required:
            self.asking.waiting.put(str(task_id), Waiting(key, session))

    async def cancel(self, context: Any, event_queue: Any) -> None:
        """Stop the task's reply (or its waiting for an answer) and mark it cancelled.

        Args:
            context: a2a-sdk's request context (the task's id).
            event_queue: where the task's events go.
        """
        from a2a.types import TaskState, TaskStatus, TaskStatusUpdateEvent

        self.asking.waiting.pop(str(context.task_id))
        rid = await self.gw.store.resolve(TASK_ALIAS + str(context.task_id))
        if rid is not None:
            await self.gw.runs.cancel(rid, reason="canceled by tasks/cancel")
        await event_queue.enqueue_event(
            TaskStatusUpdateEvent(
                task_id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.canceled),
                final=True,
            )
        )


def _still_asking(task: Any, why: str) -> Any:
    """The final status of a task whose answer could not be asked: still ``input-required``,
    saying why, the question's parts after it."""
    from a2a.types import Message as A2AMessage
    from a2a.types import Part, Role, TaskState, TaskStatus, TaskStatusUpdateEvent, TextPart

    asked = [m for m in task.history or [] if m.role == Role.agent]
    parts = [Part(root=TextPart(text=f"Your answer was not asked: {why}. Send it again."))]
    return TaskStatusUpdateEvent(
        task_id=task.id,
        context_id=task.context_id,
        final=True,
        status=TaskStatus(
            state=TaskState.input_required,
            message=A2AMessage(
                role=Role.agent,
                message_id=str(uuid.uuid4()),
                parts=parts + (list(asked[-1].parts) if asked else []),
                task_id=task.id,
                context_id=task.context_id,
            ),
        ),
    )


def _card(gw: Gateway, agent: AgentRef, url: str) -> Any:
    from a2a.types import AgentCapabilities, AgentCard, AgentSkill

    return AgentCard(
        name=agent.name,
        description=f"Fetch.ai agent {agent.address}, through agent_stream's "
        "gateway: streams reasoning, tool progress and text.",
        url=url,
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(
                id="chat",
                name="chat",
                description="Answer a question, streaming.",
                tags=["chat", "streaming"],
            )
        ],
    )


def _context_base() -> type:
    from a2a.server.apps.jsonrpc.jsonrpc_app import DefaultCallContextBuilder

    base: type = DefaultCallContextBuilder
    return base


class _Context(_context_base()):  # type: ignore[misc]
    """a2a-sdk's call context, plus the caller's key (set by the API-key middleware)."""

    def build(self, request: Request) -> Any:
        ctx = super().build(request)
        ctx.state[KEY_STATE] = caller(request)
        return ctx


def _replayed(request: Request, body: bytes) -> Request:
    """``request`` with its body read already: the SDK reads it again from here."""
    sent = False

    async def receive() -> ASGIMessage:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(request.scope, receive)


class _Apps:
    """One a2a-sdk application per agent, made on first use: (rpc endpoint, card endpoint)."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self._apps: dict[tuple[str, str, str], tuple[Endpoint, Endpoint]] = {}
        # every agent's tasks, bounded together
        self.book = TaskBook(gw.config.max_tasks_per_key, gw.config.max_tasks)

    def get(self, request: Request, agent: AgentRef, segment: str) -> tuple[Endpoint, Endpoint]:
        """The endpoints of ``agent``, served at ``/a2a/{segment}``."""
        from a2a.server.apps import A2AStarletteApplication

        request.state.format = "a2a"
        request.state.agent = agent.name
        key = (agent.name, agent.address, segment)
        if key not in self._apps:
            base = str(request.base_url).rstrip("/")
            url = f"{base}/a2a/{quote(segment, safe='')}"
            executor = GatewayExecutor(self.gw, agent)
            store = OwnedTaskStore(self.book, "\n".join(key))
            handler = FollowUps(executor, store, executor.asking)
            app = A2AStarletteApplication(
                agent_card=_card(self.gw, agent, url),
                http_handler=handler,
                context_builder=_Context(),
                max_content_length=self.gw.config.max_body_bytes,
            )
            eps = {
                r.path: r.endpoint
                for r in app.routes(agent_card_url="/card", rpc_url="/rpc")
                if isinstance(r, Route)
            }
            self._apps[key] = (eps["/rpc"], eps["/card"])
        return self._apps[key]

    def named(self, request: Request) -> tuple[Endpoint, Endpoint]:
        """The endpoints of the agent the path names (HTTPError 404 when there is none)."""
        segment = request.path_params["agent"]
        return self.get(request, self.gw.agent(segment), segment)


def _root_agent(gw: Gateway) -> AgentRef | Response:
    """The agent whose card the domain root serves, or the 404 saying where the cards are."""
    listed = [a for a in gw.agents.listed() if a.address]
    default = gw.config.default_agent
    if default:
        ref = gw.agents.pick(default)
        if ref is not None:
            return ref
    elif len(listed) == 1:
        return listed[0]
    cards = [f"/a2a/{quote(a.name, safe='')}{CARD_PATH}" for a in listed]
    if default:
        code, why = "no_agent", f"the default agent {default!r} is not reachable now"
    elif listed:
        code, why = (
            "ambiguous_agent",
            (
                f"this gateway serves {len(listed)} agents and has no "
                "default agent (--default-agent NAME)"
            ),
        )
    else:
        code, why = "no_agent", "no agent is reachable now"
    where = (
        f"; each agent's card is at /a2a/NAME{CARD_PATH}: {', '.join(cards)}"
        if cards
        else f"; each agent's card is at /a2a/NAME{CARD_PATH}"
    )
    return JSONResponse(
        {"error": {"code": code, "message": why + where, "cards": cards}}, status_code=404
    )


def routes(gw: Gateway) -> list[Route]:
    """``POST /a2a/{agent}``, its agent card, and the card at the domain root.

    Args:
        gw: the gateway the routes serve.
    """
    apps = _Apps(gw)

    async def rpc(request: Request) -> Response:
        data = await read_body(request, gw.config.max_body_bytes)
        endpoint = apps.named(request)[0]
        try:
            # the strict reader, depth-capped: a2a-sdk's json.loads would raise RecursionError
            # (a 500) on thousands of nested brackets; it reads only bodies that passed here
            body = json_value(data)
        except HTTPError as exc:  # as a2a-sdk answers a body that is not JSON: -32700, HTTP 200
            return rpc_error(None, PARSE_ERROR, f"Parse error: {exc.message}")
        wrong = check_message(body)
        if wrong is not None:
            reason, refused = wrong
            extra = {"refused_parts": refused} if refused else None
            return rpc_error(body, INVALID_PARAMS, f"Invalid params: {reason}", extra)
        malformed = check_request(body)
        if malformed is not None:
            return rpc_error(body, *malformed)
        return await endpoint(_replayed(request, data))

    async def card(request: Request) -> Response:
        return await apps.named(request)[1](request)

    async def root_card(request: Request) -> Response:
        request.state.format = "a2a"
        ref = _root_agent(gw)
        if isinstance(ref, Response):
            return ref
        return await apps.get(request, ref, ref.name)[1](request)

    return [
        Route("/a2a/{agent}", rpc, methods=["POST"]),
        Route("/a2a/{agent}" + CARD_PATH, card, methods=["GET"]),
        Route("/a2a/{agent}" + OLD_CARD_PATH, card, methods=["GET"]),
        Route(CARD_PATH, root_card, methods=["GET"]),
        Route(OLD_CARD_PATH, root_card, methods=["GET"]),
    ]
