"""The HTTP server the clients read: each corpus stream in each wire, on 127.0.0.1, written in
small pieces (``PIECE`` bytes, so UTF-8 characters and SSE lines are split across writes).

Routes (all POST, the request body is read and, where it matters, obeyed):
  /openai/{stream}/chat/completions   OpenAI chunks (usage when stream_options asks for it)
  /agui/{stream}                      AG-UI events; for a human-in-the-loop stream, a RunAgentInput
                                      whose ``resume`` answers its interrupts gets its resumed reply
                                      (anything else naming interrupts: HTTP 400, a RUN_ERROR body)
  /aisdk/{stream}                     the AI SDK UI message stream (its v1 header); a request
                                      with ``x-ai-sdk-version: 5`` gets what ai 5 reads; a
                                      round trip's follow-up (the assistant message, its tool
                                      part ``approval-responded``) gets the paused reply's
                                      continuation, in the same message
  /a2a/{stream}                       A2A SendStreamingMessage (1.0) or message/stream (0.3)
                                      JSON-RPC responses (the request's id)
  /chat/{stream}                      Agent Chat Protocol ChatMessages, one JSON a line

Every wire is made by the format registry, ``agent_stream.commands.formats`` (what
``agent-stream convert`` writes), or an encoder, so the clients read exactly what the library
sends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
from collections.abc import Iterator
from typing import Any

from aiohttp import web

from agent_stream.message import Message

PIECE = 7


def _wire(fmt: str, msgs: list[Message], **opts: Any) -> tuple[str, list[str]]:
    """The wire text of ``msgs`` and the warnings the encoder printed."""
    err = io.StringIO()
    args = argparse.Namespace(**opts)
    with contextlib.redirect_stderr(err):
        from agent_stream.commands.formats import FORMATS

        if fmt not in ("openai", "agui", "aisdk", "chat"):
            raise ValueError(fmt)
        encode = FORMATS[fmt].encoder
        assert encode is not None
        text = "".join(encode(iter(msgs), args))
    return text, [ln.removeprefix("warning: ") for ln in err.getvalue().splitlines() if ln]


def _a2a(msgs: list[Message], rpc_id: Any, v1: bool) -> tuple[str, list[str]]:
    """The encoder's events as A2A 0.3 frames, or (``v1``) as the A2A 1.0 stream carries them."""
    from agent_stream import jsontext
    from agent_stream.adapters.a2a import A2AEncoder
    from agent_stream.adapters.a2a.encoder import frame_sse
    from agent_stream.adapters.a2a.versions import core_json
    from agent_stream.adapters.framing import run_encoder

    enc = A2AEncoder(context_id="conformance")
    events = run_encoder(enc, msgs)
    if v1:
        text = "".join(
            "data: "
            + jsontext.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": core_json(e)})
            + "\n\n"
            for e in events
        )
    else:
        text = "".join(frame_sse(e, rpc_id) for e in events)
    return text, [str(w) for w in enc.drain_warnings()]


def _interrupts(msgs: list[Message]) -> list[Any]:
    """The interrupts the AG-UI encoder ends ``msgs``'s run with (none: it did not pause)."""
    from agent_stream.adapters.agui import AGUIEncoder
    from agent_stream.adapters.framing import run_encoder

    enc = AGUIEncoder()
    list(run_encoder(enc, msgs))
    return list(enc.interrupts)


def _pieces(data: bytes) -> Iterator[bytes]:
    for i in range(0, len(data), PIECE):
        yield data[i : i + PIECE]


class WireServer:
    """Serves ``streams`` (name -> Messages); ``warnings[(wire, stream)]`` says what each
    encoder could not carry."""

    def __init__(
        self,
        streams: dict[str, list[Message]],
        round_trips: dict[str, tuple[list[Message], dict[bool, list[Message]]]] | None = None,
        resumed: dict[str, list[Message]] | None = None,
    ) -> None:
        self.round_trips = round_trips or {}
        self.streams = {**streams, **{n: p for n, (p, _) in self.round_trips.items()}}
        self.resumed = resumed or {}  # stream -> the reply to a resume of its interrupts
        self.warnings: dict[tuple[str, str], list[str]] = {}
        self.sent: dict[str, dict[str, str]] = {}  # stream -> wire -> the text sent
        self.url = ""
        self._runner: web.AppRunner | None = None
        app = web.Application()
        app.router.add_post("/openai/{stream}/chat/completions", self._openai)
        app.router.add_post("/agui/{stream}", self._agui)
        app.router.add_post("/aisdk/{stream}", self._aisdk)
        app.router.add_post("/a2a/{stream}", self._a2a)
        app.router.add_post("/chat/{stream}", self._chat)
        self.app = app

    async def start(self) -> str:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def _msgs(self, request: web.Request) -> list[Message]:
        name = request.match_info["stream"]
        if name not in self.streams:
            raise web.HTTPNotFound(text=f"no stream {name!r}")
        return self.streams[name]

    async def _send(
        self,
        request: web.Request,
        wire: str,
        text: str,
        warnings: list[str],
        headers: dict[str, str] | None = None,
    ) -> web.StreamResponse:
        name = request.match_info["stream"]
        self.warnings[(wire, name)] = warnings
        self.sent.setdefault(name, {})[wire] = text
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                **(headers or {}),
            }
        )
        await resp.prepare(request)
        for piece in _pieces(text.encode("utf-8")):
            await resp.write(piece)
            await asyncio.sleep(0)
        await resp.write_eof()
        return resp

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        text, warns = _wire(
            "openai",
            self._msgs(request),
            include_usage=usage,
            model=body.get("model") or "agent-stream",
        )
        return await self._send(request, "openai", text, warns)

    async def _agui(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()  # RunAgentInput
        msgs = self._msgs(request)
        resume = body.get("resume")
        if resume is not None:
            name = request.match_info["stream"]
            asked = sorted(i.id for i in _interrupts(msgs))
            named = sorted(str(e.get("interruptId")) for e in resume if isinstance(e, dict))
            if name not in self.resumed or not asked or named != asked:
                return web.json_response(
                    {
                        "type": "RUN_ERROR",
                        "message": "no such interrupt",
                        "code": "unknown_interrupt",
                    },
                    status=400,
                )
            msgs = self.resumed[name]
        text, warns = _wire("agui", msgs)
        return await self._send(request, "agui", text, warns)

    async def _aisdk(self, request: web.Request) -> web.StreamResponse:
        from agent_stream.adapters.aisdk import HEADERS, AISDKEncoder, frame_sse
        from agent_stream.adapters.framing import run_encoder
        from agent_stream.gateway.chat_approvals import VERSION_HEADER, ai_version, responses_of

        body = await request.json()  # {id, messages, trigger, messageId}
        options: dict[str, Any] = {"ai_version": ai_version(request.headers.get(VERSION_HEADER))}
        msgs = self._msgs(request)
        decisions = responses_of(body.get("messages"))
        name = request.match_info["stream"]
        if decisions and name in self.round_trips:  # the user decided: the reply goes on
            approved = all(x.approved for x in decisions)
            msgs = self.round_trips[name][1][approved]
            options["message_id"] = body["messageId"]
            options["reply_id"] = "answer"
            options["approvals"] = {x.tool_call_id: approved for x in decisions}
        enc = AISDKEncoder(**options)
        text = "".join(frame_sse(c) for c in run_encoder(enc, msgs))
        warns = [str(w) for w in enc.drain_warnings()]
        return await self._send(request, "aisdk", text, warns, HEADERS)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        text, warns = _wire("chat", self._msgs(request))
        return await self._send(
            request, "chat", text, warns, {"Content-Type": "application/x-ndjson"}
        )

    async def _a2a(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        method = body.get("method")
        if method not in ("message/stream", "SendStreamingMessage"):
            raise web.HTTPBadRequest(text="only SendStreamingMessage and message/stream are served")
        v1 = method == "SendStreamingMessage"
        if request.headers.get("A2A-Version", "0.3") != ("1.0" if v1 else "0.3"):
            raise web.HTTPBadRequest(text=f"{method} with A2A-Version {request.headers}")
        text, warns = _a2a(self._msgs(request), body.get("id"), v1)
        return await self._send(request, "a2a", text, warns)


class _Replayed:
    """A corpus stream as an agent's reply to the gateway: its Messages, then the status its
    stream_end says (none: the reply was lost)."""

    def __init__(self, msgs: list[Message]) -> None:
        self.msgs = msgs
        self.status: str | None = None
        self.chat_messages = 0

    async def __aiter__(self) -> Any:
        for m in self.msgs:
            self.chat_messages += 1
            yield m
            await asyncio.sleep(0)
        ends = [m for m in self.msgs if (m.props or {}).get("event") == "stream_end"]
        self.status = str((ends[-1].props or {}).get("status") or "error") if ends else "lost"

    def cancel(self) -> None:
        self.status = "cancelled"


class McpGateway:
    """The real gateway (its Starlette app on uvicorn, 127.0.0.1) whose agents are the corpus
    streams: the agent named NAME answers stream NAME, so ``/mcp``'s tool NAME replays it."""

    def __init__(self, streams: dict[str, list[Message]], folder: Any) -> None:
        self.streams = streams
        self.folder = folder
        self.url = ""
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None
        self._gw: Any = None

    async def ask(self, address: str, question: str, **_: Any) -> _Replayed:
        return _Replayed(self.streams[self._names[address]])

    async def start(self) -> str:
        import hashlib
        import logging

        import uvicorn

        # uagents (which the gateway asks through) sets up INFO logging on the root logger when
        # imported: the suite's output stays its report
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        import agent_stream.uagents  # noqa: F401

        root.handlers[:] = handlers
        root.setLevel(level)

        from agent_stream.gateway.app import Gateway, build_app
        from agent_stream.gateway.config import GatewayConfig
        from agent_stream.gateway.link import Agents
        from agent_stream.uagents import LocalDirectory
        from agent_stream.uagents.local._agents import free_port

        directory = LocalDirectory(self.folder / "agents.json")
        self._names: dict[str, str] = {}
        for name in self.streams:
            address = "agent1q" + hashlib.sha256(name.encode()).hexdigest()[:52]
            directory.register(address, f"http://127.0.0.1:1/{name}", name=name)
            self._names[address] = name
        self._gw = Gateway(GatewayConfig(max_replies_per_key=64), Agents([], directory), self)
        port = free_port()
        self._server = uvicorn.Server(
            uvicorn.Config(
                build_app(self._gw, with_a2a=False),
                host="127.0.0.1",
                port=port,
                log_config=None,
                access_log=False,
                lifespan="off",
            )
        )
        self._task = asyncio.create_task(self._server.serve())
        while not self._server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        await self._gw.close()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self._task, 10)
