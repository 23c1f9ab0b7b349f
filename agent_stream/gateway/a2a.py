"""Each agent as an A2A agent, through ``a2a-sdk``'s own server pieces.

``POST /a2a/{agent}`` is the JSON-RPC endpoint (``message/send``, ``message/stream``,
``tasks/get``, ``tasks/cancel``, ...) of an ``A2AStarletteApplication`` with the SDK's
``DefaultRequestHandler`` and ``InMemoryTaskStore``; its card is at
``/a2a/{agent}/.well-known/agent-card.json`` (the SDK's well-known path under the agent's URL).
The executor starts an ordinary gateway run (so limits, ``/healthz`` and ``DELETE
/v1/replies/{id}`` apply; the A2A task id is an alias) and feeds its log through the project's
:class:`~agent_stream.adapters.a2a.A2AEncoder`. ``tasks/cancel`` cancels the run at once; the
task ends ``canceled``. A dropped ``message/stream`` connection does not cancel it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_stream.gateway.app import Gateway
from agent_stream.gateway.link import AgentRef
from agent_stream.gateway.middleware import HTTPError
from agent_stream.gateway.store import parse_end
from agent_stream.message import Message

__all__ = ["GatewayExecutor", "routes"]

TASK_ALIAS = "a2a-task:"
KEY_STATE = "agent_stream_key"  # the caller's key (or address), for the per-key reply limit
Endpoint = Callable[[Request], Awaitable[Response]]


def _executor_base() -> type:
    from a2a.server.agent_execution import AgentExecutor

    base: type = AgentExecutor
    return base


class GatewayExecutor(_executor_base()):  # type: ignore[misc]
    """An A2A AgentExecutor asking one agent through the gateway's runs."""

    def __init__(self, gw: Gateway, agent: AgentRef) -> None:
        self.gw = gw
        self.agent = agent

    async def execute(self, context: Any, event_queue: Any) -> None:
        import asyncio

        from agent_stream.adapters.a2a import A2AEncoder
        from agent_stream.uagents import DeliveryError

        question = context.get_user_input()
        task_id, context_id = context.task_id, context.context_id
        enc = A2AEncoder(task_id=task_id, context_id=context_id)
        gw = self.gw
        if len(question.encode("utf-8")) > gw.config.max_question_bytes:
            for ev in enc.close(status="error", error="the question is over "
                                f"{gw.config.max_question_bytes} bytes"):
                await event_queue.enqueue_event(ev)
            return
        try:
            call = getattr(context, "call_context", None)
            key = str((getattr(call, "state", None) or {}).get(KEY_STATE, "a2a"))
            run = await gw.runs.start(
                key=key, agent=self.agent, question=question,
                meta={"format": "a2a", "options": {"task_id": task_id,
                                                   "context_id": context_id}},
                aliases=(TASK_ALIAS + str(task_id),), reasoning=gw.config.reasoning)
        except DeliveryError as exc:
            for ev in enc.close(status="error", error=str(exc)):
                await event_queue.enqueue_event(ev)
            return
        await gw.runs.attach(run.id)
        try:
            async for entry in gw.store.read(run.id):
                end = parse_end(entry)
                evs = (enc.close(status=end.get("status") or "error", error=end.get("error"))
                       if end is not None else enc.feed(Message.from_json(entry)))
                for ev in evs:
                    await event_queue.enqueue_event(ev)
                if end is not None or enc.finished:
                    break
        except asyncio.CancelledError:
            for ev in enc.close(status="cancelled"):
                await event_queue.enqueue_event(ev)
            raise
        finally:
            await gw.runs.detach(run.id)

    async def cancel(self, context: Any, event_queue: Any) -> None:
        from a2a.types import TaskState, TaskStatus, TaskStatusUpdateEvent

        rid = await self.gw.store.resolve(TASK_ALIAS + str(context.task_id))
        if rid is not None:
            await self.gw.runs.cancel(rid, reason="canceled by tasks/cancel")
        await event_queue.enqueue_event(TaskStatusUpdateEvent(
            task_id=context.task_id, context_id=context.context_id,
            status=TaskStatus(state=TaskState.canceled), final=True))


def _card(gw: Gateway, agent: AgentRef, url: str) -> Any:
    from a2a.types import AgentCapabilities, AgentCard, AgentSkill

    return AgentCard(
        name=agent.name, description=f"Fetch.ai agent {agent.address}, through agent_stream's "
        "gateway: streams reasoning, tool progress and text.",
        url=url, version="1.0.0", capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="chat", name="chat", description="Answer a question, streaming.",
                           tags=["chat", "streaming"])])


def _context_base() -> type:
    from a2a.server.apps.jsonrpc.jsonrpc_app import DefaultCallContextBuilder

    base: type = DefaultCallContextBuilder
    return base


class _Context(_context_base()):  # type: ignore[misc]
    """a2a-sdk's call context, plus the caller's key (set by the API-key middleware)."""

    def build(self, request: Request) -> Any:
        ctx = super().build(request)
        ctx.state[KEY_STATE] = getattr(request.state, "key", "a2a")
        return ctx


class _Apps:
    """One a2a-sdk application per agent, made on first use: (rpc endpoint, card endpoint)."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self._apps: dict[tuple[str, str], tuple[Endpoint, Endpoint]] = {}

    def get(self, request: Request) -> tuple[Endpoint, Endpoint]:
        from a2a.server.apps import A2AStarletteApplication
        from a2a.server.request_handlers import DefaultRequestHandler
        from a2a.server.tasks import InMemoryTaskStore

        request.state.format = "a2a"
        agent = self.gw.agent(request.path_params["agent"])
        request.state.agent = agent.name
        key = (agent.name, agent.address)
        if key not in self._apps:
            base = str(request.base_url).rstrip("/")
            url = f"{base}/a2a/{request.path_params['agent']}"
            handler = DefaultRequestHandler(agent_executor=GatewayExecutor(self.gw, agent),
                                            task_store=InMemoryTaskStore())
            app = A2AStarletteApplication(agent_card=_card(self.gw, agent, url),
                                          http_handler=handler, context_builder=_Context(),
                                          max_content_length=self.gw.config.max_body_bytes)
            eps = {r.path: r.endpoint for r in app.routes(agent_card_url="/card", rpc_url="/rpc")
                   if isinstance(r, Route)}
            self._apps[key] = (eps["/rpc"], eps["/card"])
        return self._apps[key]


def routes(gw: Gateway) -> list[Route]:
    """``POST /a2a/{agent}`` and its agent card."""
    apps = _Apps(gw)

    async def rpc(request: Request) -> Response:
        size = request.headers.get("content-length")
        if size is not None and size.isdigit() and int(size) > gw.config.max_body_bytes:
            raise HTTPError(413, "body_too_large",
                            f"the request body is over {gw.config.max_body_bytes} bytes")
        return await apps.get(request)[0](request)

    async def card(request: Request) -> Response:
        return await apps.get(request)[1](request)

    return [Route("/a2a/{agent}", rpc, methods=["POST"]),
            Route("/a2a/{agent}/.well-known/agent-card.json", card, methods=["GET"]),
            Route("/a2a/{agent}/.well-known/agent.json", card, methods=["GET"])]
