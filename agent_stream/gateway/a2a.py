"""Each agent as an A2A agent, A2A 1.0 and 0.3 on one URL, through ``a2a-sdk``'s own server.

``POST /a2a/{agent}`` is the JSON-RPC endpoint of a2a-sdk 1.x (``create_jsonrpc_routes`` with
its 0.3 compatibility layer): A2A 1.0 methods (``SendMessage``, ``SendStreamingMessage``,
``GetTask``, ``ListTasks``, ``CancelTask``, ``SubscribeToTask``; a client sends
``A2A-Version: 1.0``, and a 1.0 method under another version is ``-32009``) and the 0.3 ones
(``message/send``, ``message/stream``, ``tasks/get``, ``tasks/cancel``,
``tasks/resubscribe``), with the SDK's request handler (:class:`~agent_stream.gateway.a2a_input.
FollowUps`) and a task store of the gateway's own. Its card is at
``/a2a/{agent}/.well-known/agent-card.json``: ``supportedInterfaces`` lists the URL at 1.0 and
at 0.3 (a 1.x client picks 1.0), and the 0.3 fields (``url``, ``preferredTransport``,
``protocolVersion``) stay beside them for 0.3 clients. The domain root's
``/.well-known/agent-card.json``, where the spec has clients look first, is the default agent's
card (``--default-agent``), or the one agent's when the gateway serves one; otherwise a 404
whose JSON body lists each agent's card path.

The agents take text: a send whose message has no parts, no text, or parts of another kind
(file, data) is refused with JSON-RPC error -32602 (invalid params) naming what was wrong,
before a task starts; nothing is dropped silently.
The executor starts an ordinary gateway run (so limits, ``/healthz`` and ``DELETE
/v1/replies/{id}`` apply; the A2A task id is an alias) and feeds its log through the project's
:class:`~agent_stream.adapters.a2a.A2AEncoder`, whose events go out as 1.0 or 0.3 (a2a-sdk's
own mapping, :mod:`agent_stream.adapters.a2a.versions`). Cancelling a task cancels its run at
once; the task ends ``canceled``. A dropped stream does not cancel it.

A ``contextId`` is a conversation: every task of one context (for one caller) asks in the same
envelope session, so the agent remembers the earlier tasks' questions and answers. The gateway
keeps the last :data:`MAX_CONTEXTS` contexts per agent; an older one starts afresh.

Human in the loop: a reply that asks the caller (a ``user_input`` message, e.g. a LangGraph
``interrupt``) ends its task ``input-required``, the question as the status message (its text,
then a data part of the question's props: a card, a form, an interrupt's value). A send whose
``message.taskId`` names that task (its ``contextId``, or none) is the answer: it is asked in
the same envelope session (so LangGraph resumes with ``Command(resume=<its text>)``) and its
stream continues the same task (``working``, new artifacts, then ``completed`` or another
question). Any other ``taskId`` is refused before anything is asked
(:mod:`agent_stream.gateway.a2a_input`).

Every method that names a task answers for the caller's own tasks only (another API key's task
is ``-32001``, task not found; ``ListTasks`` lists the caller's own), and the tasks kept are
bounded (``max_tasks_per_key``, ``max_tasks``: finished ones forgotten least recently used
first, a new task refused with ``-32000`` when all are open): :mod:`agent_stream.gateway.
a2a_tasks`. A request a2a-sdk would refuse as malformed (not JSON, not JSON-RPC, params of the
wrong shape) is answered here with the same JSON-RPC error, so a client's mistake logs no error
(:mod:`agent_stream.gateway.a2a_checks`). The body is read here once, by the project's strict
JSON reader (nested at most 64 levels, and an A2A request at most
:data:`~agent_stream.gateway.a2a_checks.MAX_DEPTH`, what a task's protobuf types hold), and
handed on to the SDK already read.
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

from agent_stream import jsontext
from agent_stream.gateway.a2a_checks import (
    INVALID_PARAMS,
    MAX_DEPTH,
    PARSE_ERROR,
    check_message,
    check_request,
    rpc_error,
    starts_task,
)
from agent_stream.gateway.a2a_input import (
    FOLLOW_UP_STATE,
    KEY_STATE,
    TOO_MANY_TASKS,
    Asking,
    FollowUps,
    Waiting,
)
from agent_stream.gateway.a2a_tasks import TICKET_STATE, OwnedTaskStore, TaskBook, TooManyTasks
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
CANCEL_WAIT = 5.0  # seconds CancelTask waits for a cancelled reply to end its task itself
PROTOCOL_VERSIONS = ("1.0", "0.3")  # served on one URL, 1.0 first (a 1.x client's choice)
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
        self._running: dict[str, Any] = {}  # task id -> set when its execute() ends

    async def execute(self, context: Any, event_queue: Any) -> None:
        """Ask the agent the task's message; stream its reply as the task's events.

        Args:
            context: a2a-sdk's request context (the message, task and context ids).
            event_queue: where the task's events go.
        """
        import asyncio

        from a2a.compat.v0_3.conversions import to_compat_message, to_compat_task
        from a2a.compat.v0_3.types import Task, TaskState

        from agent_stream.adapters.a2a import A2AEncoder
        from agent_stream.adapters.a2a.versions import to_core
        from agent_stream.uagents import DeliveryError

        question = context.get_user_input()
        task_id, context_id = context.task_id, context.context_id
        state = getattr(getattr(context, "call_context", None), "state", None) or {}
        key = str(state.get(KEY_STATE, "a2a"))
        answering = state.get(FOLLOW_UP_STATE)
        # a follow-up (the handler let only the answer to a question through) continues the task
        current = context.current_task
        prior = (
            to_compat_task(current)
            if isinstance(answering, Waiting) and current is not None
            else None
        )
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
            asked = to_compat_message(context.message) if context.message is not None else None
            kept = prior.model_copy(
                update={"history": [*(prior.history or []), *([asked] if asked else [])]}
            )
            options[CONTINUES] = kept.model_dump(mode="json", by_alias=True, exclude_none=True)

        async def emit(evs: list[Any]) -> None:
            for ev in evs:
                if isinstance(ev, Task):
                    if prior is not None:
                        continue  # the SDK keeps the task: the stream goes on with its updates
                    if context.message is not None:  # a new task's history opens with the ask
                        ev.history = [to_compat_message(context.message)]
                await event_queue.enqueue_event(to_core(ev))

        async def not_asked(why: str) -> None:
            if isinstance(answering, Waiting) and prior is not None:
                # the question stays open: answer again later
                self.asking.waiting.put(str(task_id), answering)
                await event_queue.enqueue_event(to_core(_still_asking(prior, why)))
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
        done = self._running[str(task_id)] = asyncio.Event()
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
        finally:
            done.set()
            self._running.pop(str(task_id), None)
            await gw.runs.detach(run.id)
        if enc.final_state == TaskState.input_required:
            self.asking.waiting.put(str(task_id), Waiting(key, session))

    async def cancel(self, context: Any, event_queue: Any) -> None:
        """Stop the task's reply (or its waiting for an answer) and mark it cancelled.

        A running reply is cancelled and its stream ends ``canceled`` through the encoder
        (open artifacts closed); a task waiting for an answer ends ``canceled`` at once.

        Args:
            context: a2a-sdk's request context (the task's id).
            event_queue: where the task's events go.
        """
        import asyncio

        from a2a.types import TaskState, TaskStatus, TaskStatusUpdateEvent

        tid = str(context.task_id)
        self.asking.waiting.pop(tid)
        running = self._running.get(tid)
        rid = await self.gw.store.resolve(TASK_ALIAS + tid)
        if rid is not None:
            await self.gw.runs.cancel(rid, reason="canceled by CancelTask")
        if running is not None:
            try:  # the reply's own end (canceled) is the task's last event
                await asyncio.wait_for(running.wait(), CANCEL_WAIT)
                return
            except asyncio.TimeoutError:
                pass
        await event_queue.enqueue_event(
            TaskStatusUpdateEvent(
                task_id=context.task_id,
                context_id=context.context_id or "",
                status=TaskStatus(state=TaskState.TASK_STATE_CANCELED),
            )
        )


def _still_asking(task: Any, why: str) -> Any:
    """The final status of a task whose answer could not be asked: still ``input-required``,
    saying why, the question's parts after it."""
    from a2a.compat.v0_3.types import Message as A2AMessage
    from a2a.compat.v0_3.types import (
        Part,
        Role,
        TaskState,
        TaskStatus,
        TaskStatusUpdateEvent,
        TextPart,
    )

    asked = [m for m in task.history or [] if m.role == Role.agent]
    if not asked and task.status.message is not None:
        asked = [task.status.message]
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
    """The agent's card: its 1.0 and 0.3 interfaces (one URL); a2a-sdk adds the 0.3 fields
    (``url``, ``preferredTransport``, ``protocolVersion``) from the 0.3 one when it serves it."""
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

    return AgentCard(
        name=agent.name,
        description=f"Fetch.ai agent {agent.address}, through agent_stream's "
        "gateway: streams reasoning, tool progress and text.",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=v)
            for v in PROTOCOL_VERSIONS
        ],
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
    from a2a.server.routes.common import DefaultServerCallContextBuilder

    base: type = DefaultServerCallContextBuilder
    return base


class _Context(_context_base()):  # type: ignore[misc]
    """a2a-sdk's call context, plus the caller's key (set by the API-key middleware) and the
    room given to a new task (see ``routes``)."""

    def build(self, request: Request) -> Any:
        ctx = super().build(request)
        ctx.state[KEY_STATE] = caller(request)
        ticket = getattr(request.state, "a2a_ticket", None)
        if ticket is not None:
            ctx.state[TICKET_STATE] = ticket
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


class _Agent:
    """One agent's a2a-sdk pieces: the JSON-RPC endpoint, the card endpoint, the task store."""

    def __init__(self, rpc: Endpoint, card: Endpoint, store: OwnedTaskStore) -> None:
        self.rpc = rpc
        self.card = card
        self.store = store


class _Apps:
    """One a2a-sdk application per agent, made on first use."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self._apps: dict[tuple[str, str, str], _Agent] = {}
        # every agent's tasks, bounded together
        self.book = TaskBook(gw.config.max_tasks_per_key, gw.config.max_tasks)

    def get(self, request: Request, agent: AgentRef, segment: str) -> _Agent:
        """The endpoints of ``agent``, served at ``/a2a/{segment}``."""
        from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes

        request.state.format = "a2a"
        request.state.agent = agent.name
        key = (agent.name, agent.address, segment)
        if key not in self._apps:
            base = str(request.base_url).rstrip("/")
            url = f"{base}/a2a/{quote(segment, safe='')}"
            card = _card(self.gw, agent, url)
            executor = GatewayExecutor(self.gw, agent)
            store = OwnedTaskStore(self.book, "\n".join(key))
            handler = FollowUps(executor, store, executor.asking, card)
            rpc = create_jsonrpc_routes(
                handler, "/rpc", context_builder=_Context(), enable_v0_3_compat=True
            )
            cards = create_agent_card_routes(card, card_url="/card")
            self._apps[key] = _Agent(rpc[0].endpoint, cards[0].endpoint, store)
        return self._apps[key]

    def named(self, request: Request) -> _Agent:
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
        app = apps.named(request)
        try:
            # the strict reader, depth-capped: a2a-sdk's json.loads would raise RecursionError
            # (a 500) on thousands of nested brackets; it reads only bodies that passed here
            body = json_value(data)
        except HTTPError as exc:  # as a2a-sdk answers a body that is not JSON: -32700, HTTP 200
            return rpc_error(None, PARSE_ERROR, f"Parse error: {exc.message}")
        if jsontext.too_deep(data, MAX_DEPTH):
            return rpc_error(
                body,
                INVALID_PARAMS,
                f"Invalid params: the request nests over {MAX_DEPTH} levels deep, more than an "
                "A2A task can hold",
            )
        wrong = check_message(body)
        if wrong is not None:
            reason, refused = wrong
            extra = {"refused_parts": refused} if refused else None
            return rpc_error(body, INVALID_PARAMS, f"Invalid params: {reason}", extra)
        malformed = check_request(body)
        if malformed is not None:
            return rpc_error(body, *malformed)
        ticket = None
        if starts_task(body):  # room for the new task, before anything is asked
            try:
                ticket = app.store.book.admit(caller(request))
            except TooManyTasks as exc:
                return rpc_error(body, TOO_MANY_TASKS, str(exc), {"code": "too_many_tasks"})
            request.state.a2a_ticket = ticket
        try:
            response = await app.rpc(_replayed(request, data))
        except BaseException:
            if ticket is not None:
                app.store.book.release(ticket)
            raise
        if ticket is not None and isinstance(response, JSONResponse):
            app.store.book.release(ticket)  # answered: the task was saved, or never made
        return response

    async def card(request: Request) -> Response:
        return await apps.named(request).card(request)

    async def root_card(request: Request) -> Response:
        request.state.format = "a2a"
        ref = _root_agent(gw)
        if isinstance(ref, Response):
            return ref
        return await apps.get(request, ref, ref.name).card(request)

    return [
        Route("/a2a/{agent}", rpc, methods=["POST"]),
        Route("/a2a/{agent}" + CARD_PATH, card, methods=["GET"]),
        Route("/a2a/{agent}" + OLD_CARD_PATH, card, methods=["GET"]),
        Route(CARD_PATH, root_card, methods=["GET"]),
        Route(OLD_CARD_PATH, root_card, methods=["GET"]),
    ]
