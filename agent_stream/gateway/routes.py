"""The HTTP endpoints (except A2A and the page): OpenAI, AG-UI, AI SDK, native, replies, health.

Each request becomes one run (:mod:`.runs`) and its response reads the run's log in the client's
format (:mod:`.views`). A request with ``Last-Event-ID: <reply id>:<n>`` (or
``?last_event_id=``) asks nothing: it resumes that reply after event n, in the format the reply
was started in.

A reply is its caller's (API key, or client address without keys): resuming, reading or stopping
another caller's reply is answered as for an unknown id, and the names a client picks (an AG-UI
run id, an AI SDK chat id) are looked up among its own replies only.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agent_stream.adapters import registry
from agent_stream.conversation import ROLES, Turn
from agent_stream.errors import WireError
from agent_stream.gateway.agui_threads import PausedThreads
from agent_stream.gateway.answers import answered_session, card_response_of
from agent_stream.gateway.chat_approvals import (
    VERSION_HEADER,
    ChatApprovals,
    ChatSessions,
    Decision,
    Paused,
    ai_version,
    answer_text,
    responses_of,
)
from agent_stream.gateway.core import Gateway, own_alias
from agent_stream.gateway.middleware import HTTPError, caller, read_json
from agent_stream.gateway.questions import from_aisdk, from_openai, from_turns, text_of
from agent_stream.gateway.runs import new_reply_id
from agent_stream.gateway.views import NATIVE, events

__all__ = ["routes"]

CHAT_ALIAS = "aisdk-chat:"
RUN_ALIAS = "agui-run:"


def _gw(request: Request) -> Gateway:
    gw: Gateway = request.app.state.gateway
    return gw


async def _body(request: Request) -> dict[str, Any]:
    data = await read_json(request, _gw(request).config.max_body_bytes)
    if not isinstance(data, dict):
        raise HTTPError(400, "bad_request", "the request body must be a JSON object")
    return data


async def _resume(request: Request, fmt: str) -> Response | None:
    """The reply the request's ``Last-Event-ID`` names, streamed again after that event in the
    format it was asked in; None when it names none. The request's format (the access log's)
    is the route's ``fmt`` until then."""
    request.state.format = fmt
    gw = _gw(request)
    target = await gw.resume_target(request)
    if target is None:
        return None
    rid, after, meta = target
    request.state.format = meta.get("format")
    return gw.stream(rid, meta, after=after, sse=bool(meta.get("sse", True)))


# -- OpenAI ---------------------------------------------------------------------------------------
async def chat_completions(request: Request) -> Response:
    """``POST /v1/chat/completions``: ``stream`` true (SSE) or false (one chat.completion).

    Args:
        request: the HTTP request.
    """
    resumed = await _resume(request, "openai")
    if resumed is not None:
        return resumed
    gw = _gw(request)
    body = await _body(request)
    question = from_openai(body.get("messages"))
    model = body.get("model") if isinstance(body.get("model"), str) else None
    stream = bool(body.get("stream"))
    so = body.get("stream_options")
    include_usage = bool(so.get("include_usage")) if isinstance(so, dict) else False
    rid = new_reply_id()
    ref = gw.agent(model)
    # a chat.completion object always carries the usage, when the agent said it
    options = {
        "model": model or ref.name,
        "include_usage": include_usage or not stream,
        "completion_id": f"chatcmpl-{rid}",
        "created": int(time.time()),
    }
    run = await gw.start(
        request,
        agent=ref.name,
        question=question.text,
        fmt="standard",
        options=options,
        aliases=(f"chatcmpl-{rid}",),
        reply_id=rid,
        history=question.history,
    )
    meta = {"format": "standard", "options": options}
    if stream:
        return gw.stream(run.id, meta)
    return await _completion(gw, run.id, options)


async def _completion(gw: Gateway, rid: str, options: dict[str, Any]) -> Response:
    """Read the whole reply and answer one ``chat.completion`` object."""
    content: list[str] = []
    reasoning: list[str] = []
    finish: str | None = None
    usage: Any = None
    await gw.runs.attach(rid)
    try:
        async for _, item in events(gw.store, rid, "standard", options):
            data = item.data() if hasattr(item, "data") else None
            if not isinstance(data, dict):
                continue
            if "error" in data:
                err = data["error"]
                return JSONResponse(
                    {
                        "error": {
                            "message": err.get("message"),
                            "type": "api_error",
                            "param": None,
                            "code": err.get("code"),
                        }
                    },
                    status_code=502,
                    headers={"x-reply-id": rid},
                )
            if data.get("usage"):
                usage = data["usage"]
            for ch in data.get("choices") or ():
                d = ch.get("delta") or {}
                if isinstance(d.get("content"), str):
                    content.append(d["content"])
                if isinstance(d.get("reasoning_content"), str):
                    reasoning.append(d["reasoning_content"])
                finish = ch.get("finish_reason") or finish
    finally:
        await gw.runs.detach(rid)
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    out: dict[str, Any] = {
        "id": options["completion_id"],
        "object": "chat.completion",
        "created": options["created"],
        "model": options["model"],
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish or "stop"}
        ],
    }
    if usage is not None:
        out["usage"] = usage
    return JSONResponse(out, headers={"x-reply-id": rid})


async def models(request: Request) -> Response:
    """``GET /v1/models``: the agents clients may name.

    Args:
        request: the HTTP request.
    """
    request.state.format = "openai"
    data = [
        {"id": a.name, "object": "model", "created": 0, "owned_by": a.address}
        for a in _gw(request).agents.listed()
        if a.address
    ]
    return JSONResponse({"object": "list", "data": data})


# -- AG-UI ----------------------------------------------------------------------------------------
def _agui_threads(request: Request) -> PausedThreads:
    """The app's AG-UI thread pauses (made on first use)."""
    state = request.app.state
    threads: PausedThreads | None = getattr(state, "agui_threads", None)
    if threads is None:
        threads = state.agui_threads = PausedThreads()
    return threads


async def agui(request: Request) -> Response:
    """``POST /agui``: a RunAgentInput in, AG-UI events out (SSE, ``\\n`` line ends). A run that
    asks its caller ends with the interrupt outcome; a RunAgentInput whose ``resume`` answers
    them continues it (:mod:`.agui_threads`).

    Args:
        request: the HTTP request.
    """
    from ag_ui.core import RunAgentInput
    from pydantic import ValidationError

    resumed = await _resume(request, "agui")
    if resumed is not None:
        return resumed
    body = await _body(request)
    try:
        run_input = RunAgentInput.model_validate(body)
    except ValidationError as exc:
        raise HTTPError(400, "invalid_input", f"not a RunAgentInput: {exc}") from exc
    key, thread = caller(request), run_input.thread_id
    threads = _agui_threads(request)
    options = {"thread_id": thread, "run_id": run_input.run_id}
    aliases = (own_alias(key, RUN_ALIAS + run_input.run_id),)
    gw = _gw(request)
    if run_input.resume:  # answers to the thread's paused run: asked in its session
        await threads.settle(key, thread)
        paused, answer = threads.claim(key, thread, run_input.resume)
        agent, session = paused.agent, paused.session
        try:
            run = await gw.start(
                request,
                agent=agent,
                question=answer,
                fmt="agui",
                options=options,
                aliases=aliases,
                session=session,
            )
        except BaseException:
            threads.give_back(key, thread, paused)
            raise
    else:
        turns = [(str(m.role), text_of(getattr(m, "content", None))) for m in run_input.messages]
        question = from_turns(turns)
        fp = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
        named = request.query_params.get("agent") or fp.get("agent") or body.get("agent")
        session = uuid.uuid4()
        run = await gw.start(
            request,
            agent=named,
            question=question.text,
            fmt="agui",
            options=options,
            aliases=aliases,
            history=question.history,
            session=session,
        )
        agent = run.agent.name
    threads.started(key, thread, run.id)
    threads.watch(
        gw.store, run.id, options, key=key, thread_id=thread, agent=agent, session=session
    )
    return gw.stream(run.id, {"format": "agui", "options": options})


# -- AI SDK ---------------------------------------------------------------------------------------
async def aisdk_chat(
    request: Request, approvals: ChatApprovals, sessions: ChatSessions
) -> Response:
    """``POST /api/chat``: ``useChat``'s default transport; the UI message stream out.

    ``x-ai-sdk-version: 5`` asks for what ai 5 reads (no approval chunks); without it the
    client is taken for ai 6. Every request of one chat asks in the chat's envelope session. A
    request whose last message answers a paused reply's approvals (:mod:`.chat_approvals`)
    continues that reply's message instead of asking a question.

    Args:
        request: the HTTP request.
        approvals: the gateway's replies waiting for approvals.
        sessions: the gateway's chats' sessions.
    """
    resumed = await _resume(request, "aisdk")
    if resumed is not None:
        return resumed
    version = ai_version(request.headers.get(VERSION_HEADER))
    body = await _body(request)
    decisions = responses_of(body.get("messages")) if version >= 6 else []
    if decisions:
        return await _approved(request, body, approvals, decisions)
    question = from_aisdk(body.get("messages"))
    agent = request.query_params.get("agent") or body.get("agent")
    rid = new_reply_id()
    options: dict[str, Any] = {"message_id": f"msg-{rid}"}
    if version < 6:
        options["ai_version"] = version
    gw = _gw(request)
    session = sessions.session(caller(request), body.get("id"))
    run = await gw.start(
        request,
        agent=agent if isinstance(agent, str) else None,
        question=question.text,
        fmt="aisdk",
        options=options,
        aliases=_chat_alias(request, body),
        reply_id=rid,
        history=question.history,
        session=session,
    )
    if version >= 6:
        approvals.watch(
            gw.store, run, options, Paused(run.key, run.agent.name, session, f"msg-{rid}", {})
        )
    return gw.stream(run.id, {"format": "aisdk", "options": options})


def _chat_alias(request: Request, body: dict[str, Any]) -> tuple[str, ...]:
    """The caller's own alias of the request's chat id (none without one)."""
    chat_id = body.get("id")
    if isinstance(chat_id, str) and chat_id:
        return (own_alias(caller(request), CHAT_ALIAS + chat_id),)
    return ()


async def _approved(
    request: Request, body: dict[str, Any], approvals: ChatApprovals, decisions: list[Decision]
) -> Response:
    """The follow-up answering a paused reply's approvals: the answer asked in its session,
    the reply continuing its message (the pause stays when the answer cannot be asked)."""
    await approvals.settle(caller(request))
    paused = approvals.take(caller(request), decisions)
    answer = answer_text(decisions)
    approved = answer == "yes"  # the agent takes one answer: a refusal refuses every call
    rid = new_reply_id()
    options: dict[str, Any] = {
        "message_id": paused.message_id,
        "reply_id": rid,
        "approvals": {cid: approved for cid in paused.calls.values()},
    }
    gw = _gw(request)
    try:
        run = await gw.start(
            request,
            agent=paused.agent,
            question=answer,
            fmt="aisdk",
            options=options,
            aliases=_chat_alias(request, body),
            reply_id=rid,
            session=paused.session,
        )
    except BaseException:
        approvals.put(paused)
        raise
    # the continued reply may ask again
    approvals.watch(gw.store, run, options, replace(paused, calls={}))
    return gw.stream(run.id, {"format": "aisdk", "options": options})


async def aisdk_resume(request: Request) -> Response:
    """``GET /api/chat/{id}/stream``: the chat's running reply from its start (or after
    ``Last-Event-ID``); 204 when no reply of that chat is running.

    Args:
        request: the HTTP request.
    """
    resumed = await _resume(request, "aisdk")
    if resumed is not None:
        return resumed
    gw = _gw(request)
    # another caller's chat is answered as a chat with no reply running
    found = await gw.owned(
        request, own_alias(caller(request), CHAT_ALIAS + request.path_params["id"])
    )
    if found is None or await gw.store.ended(found[0]):
        return Response(status_code=204)
    rid, meta = found
    request.state.reply = rid
    request.state.agent = meta.get("agent", "-")
    return gw.stream(rid, meta)


# -- native and accept routing --------------------------------------------------------------------
def _known(accept: str) -> str:
    """``accept`` when it names a wire of the registry (HTTPError 400 otherwise)."""
    try:
        registry.resolve(accept)
    except WireError as exc:
        raise HTTPError(400, "unknown_accept", str(exc)) from exc
    return accept


def _accept(request: Request) -> tuple[str, bool]:
    """(format, sse) from ``?accept=``/``?format=`` or the Accept header: any ``accept`` value
    of the wire registry, else the native stream (SSE, or JSON lines when asked for)."""
    q = request.query_params.get("accept")
    if q:
        return _known(q), True
    header = request.headers.get("accept", "")
    names = [p.split(";")[0].strip().lower() for p in header.split(",")]
    known = set(registry.accept_names())
    for n in names:
        if n in known:
            return n, True
    jsonl = request.query_params.get("format") == "jsonl" or (
        "application/x-ndjson" in names and "text/event-stream" not in names
    )
    return NATIVE, not jsonl


async def native(request: Request) -> Response:
    """``GET /v1/stream?agent=&q=`` or ``POST /v1/stream {"agent", "question", "history"}``
    (``history``: the conversation before the question, ``[{"role", "text"}, ...]``; ``answers``:
    the id of a reply this answers, asked in its session, with an optional ``card_response``,
    see :mod:`.answers`).

    Args:
        request: the HTTP request.
    """
    fmt, sse = _accept(request)
    resumed = await _resume(request, fmt)
    if resumed is not None:
        return resumed
    history: tuple[Turn, ...] = ()
    gw = _gw(request)
    session, card = None, None
    if request.method == "POST":
        body = await _body(request)
        agent, question = body.get("agent"), body.get("question")
        history = history_of(body.get("history"))
        if body.get("accept"):
            fmt = _known(str(body["accept"]))
        card = card_response_of(body.get("card_response"))
        session = await answered_session(gw, request, body.get("answers"), card)
        if card is not None and question is None:
            question = ""
    else:
        agent, question = request.query_params.get("agent"), request.query_params.get("q")
    if not isinstance(question, str) or not (question.strip() or card is not None):
        raise HTTPError(400, "no_question", 'give the question (q= or "question")')
    options: dict[str, Any] = {}
    run = await gw.start(
        request,
        agent=agent if isinstance(agent, str) else None,
        question=question,
        fmt=fmt,
        options=options,
        sse=sse,
        history=history,
        session=session,
        card_response=card,
    )
    return gw.stream(run.id, {"format": fmt, "options": options, "sse": sse}, sse=sse)


def history_of(raw: Any) -> tuple[Turn, ...]:
    """A native request's ``history`` (absent: none); HTTPError 400 when it is not a list of
    ``{"role": "user" | "assistant" | "system", "text": str}``. Its size is the agent's to
    judge (an oversized one is ignored there, the question still answered).

    Args:
        raw: the request's ``history`` value (None: absent).

    Raises:
        HTTPError: 400, it is not a list of such turns.
    """
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise HTTPError(400, "invalid_history", "'history' must be a list of {role, text}")
    turns = []
    for i, item in enumerate(raw):
        if (
            not isinstance(item, dict)
            or set(item) != {"role", "text"}
            or item["role"] not in ROLES
            or not isinstance(item["text"], str)
        ):
            raise HTTPError(
                400,
                "invalid_history",
                f'history[{i}] must be {{"role": user|assistant|system, "text": string}}',
            )
        turns.append(Turn(item["role"], item["text"]))
    return tuple(turns)


# -- replies, health ------------------------------------------------------------------------------
async def reply_stop(request: Request) -> Response:
    """``DELETE /v1/replies/{id}``: stop a reply now (id: the reply id, an AG-UI run id, an AI
    SDK chat id or a chat.completion id). A reply another gateway process runs (a shared Redis
    store) is stopped there: 202 ``cancelling``. Another caller's reply is 404, as an unknown
    one.

    Args:
        request: the HTTP request.
    """
    gw = _gw(request)
    name = request.path_params["id"]
    found = await gw.owned(request, *_names(request, name))
    if found is None:
        raise HTTPError(404, "unknown_reply", f"no reply {name!r}")
    rid = found[0]
    request.state.reply = rid
    if await gw.runs.cancel(rid):
        run = gw.runs.get(rid)
        return JSONResponse({"id": rid, "status": run.status if run else "cancelled"})
    if await gw.store.ended(rid):
        run = gw.runs.get(rid)
        return JSONResponse({"id": rid, "status": run.status if run else "ended"})
    request_cancel = getattr(gw.store, "request_cancel", None)
    if request_cancel is None:
        raise HTTPError(409, "elsewhere", f"reply {rid} runs in another gateway process")
    await request_cancel(rid)  # the process running it stops it; its stream says cancelled
    return JSONResponse({"id": rid, "status": "cancelling"}, status_code=202)


async def reply_stats(request: Request) -> Response:
    """``GET /v1/replies/{id}``: status, ChatMessages, time to first text, total (the id as
    for ``DELETE``; another caller's reply is 404, as an unknown one).

    Args:
        request: the HTTP request.
    """
    gw = _gw(request)
    name = request.path_params["id"]
    found = await gw.owned(request, *_names(request, name))
    run = gw.runs.get(found[0]) if found is not None else None
    if run is None or run.key != caller(request):
        # the name asked for, never the reply it finds: another caller's reply is not hinted at
        raise HTTPError(404, "unknown_reply", f"no reply {name!r} in this process")
    return JSONResponse(run.stats())


def _names(request: Request, name: str) -> tuple[str, ...]:
    """What ``name`` in ``/v1/replies/{id}`` may be: a reply id (or a chat.completion or A2A
    task id), or the caller's own AG-UI run id or AI SDK chat id."""
    me = caller(request)
    return (name, own_alias(me, RUN_ALIAS + name), own_alias(me, CHAT_ALIAS + name))


async def healthz(request: Request) -> Response:
    """``GET /healthz``: alive, and how many replies are open.

    Args:
        request: the HTTP request.
    """
    gw = _gw(request)
    return JSONResponse(
        {
            "status": "ok",
            "open_replies": gw.runs.open_count,
            "agents": len([a for a in gw.agents.listed() if a.address]),
            "resume_store": "memory" if gw.config.resume_store == "memory" else "redis",
            "resume_window_s": gw.config.resume_window,
        }
    )


def routes(gw: Gateway) -> list[Route]:
    """Every route of this module.

    Args:
        gw: the gateway the routes serve.
    """
    return [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/agui", agui, methods=["POST"]),
        Route(
            "/api/chat",
            partial(aisdk_chat, approvals=ChatApprovals(), sessions=ChatSessions()),
            methods=["POST"],
        ),
        Route("/api/chat/{id}/stream", aisdk_resume, methods=["GET"]),
        Route("/v1/stream", native, methods=["GET", "POST"]),
        Route("/v1/replies/{id}", reply_stop, methods=["DELETE"]),
        Route("/v1/replies/{id}", reply_stats, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
    ]
