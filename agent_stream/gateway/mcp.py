"""Every agent as an MCP tool at ``/mcp`` (streamable HTTP), through the ``mcp`` SDK's own server.

``/mcp`` is the SDK's :class:`~mcp.server.streamable_http_manager.StreamableHTTPSessionManager`
over a low-level :class:`~mcp.server.lowlevel.Server`: it speaks both eras of the protocol (the
``initialize`` handshake with ``Mcp-Session-Id`` sessions, and 2026-07-28's self-contained
requests), and answers malformed JSON-RPC, unknown methods and unsupported protocol versions
with the protocol's own errors. Its task group runs in a task of its own, started by the first
request and stopped with the gateway (:meth:`~agent_stream.gateway.core.Gateway.close`).

``tools/list``: one tool per agent the gateway reaches (its name, made of the characters a tool
name may hold; a description; input ``{"question": string, "session"?: string}``).
``tools/call`` starts an ordinary gateway run (so the API key, the per-key limits, ``/healthz``
and ``DELETE /v1/replies/{id}`` apply) and reads its log through the project's multi-channel
encoder: a caller that sent a progress token gets ``notifications/progress`` on the call's own
stream (each piece of text as it arrives, and one line per step: ``[tool call NAME] ARGS``,
``[tool result NAME] ...``, ``[sub-agent NAME]``, ``[status] ...``, ``[error] ...``); the result
is the answer's text, ``isError`` when the reply did not complete (the agent's error, a refusal,
a limit). A ``notifications/cancelled`` for the call (or, at 2026-07-28, closing its stream)
cancels the agent's reply at once.

``session`` names a conversation: every call of one caller to one agent with the same session
asks in the same envelope session, so the agent remembers the earlier turns (the last
:data:`MAX_SESSIONS` are kept); without it, each call is a conversation of its own.

The caller is the API key (or the client address without keys): an MCP session is bound to the
caller that opened it (another key using its id is answered as for an unknown session), and a
caller holds at most ``max_tasks_per_key`` sessions at once (:mod:`.mcp_sessions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from agent_stream.gateway.core import Gateway
from agent_stream.gateway.link import AgentRef
from agent_stream.gateway.mcp_sessions import SessionBook
from agent_stream.gateway.middleware import (
    HTTPError,
    caller,
    error_response,
    json_value,
    read_body,
)
from agent_stream.gateway.views import event_batches
from agent_stream.recent import RecentMap

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp_types import CallToolRequestParams, CallToolResult, ListToolsResult

__all__ = ["MAX_SESSIONS", "McpTools", "routes", "tool_name"]

PATH = "/mcp"
MAX_SESSIONS = 4096  # (caller, agent, session) conversations remembered, least recent forgotten
MAX_SESSION_CHARS = 200
SESSION_IDLE = 600.0  # seconds an idle MCP session is kept (the resume window, if longer)
STEP_CHARS = 500  # a step's arguments or result, shortened to this in its progress line
# the wire the tool reads the reply in: every channel but reasoning
CHANNELS = "text,tool,structured,status,error"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
_TEXT_EVENTS = ("message.delta", "message.snapshot", "refusal.delta", "refusal.snapshot")
_TOOL_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


def tool_name(agent: AgentRef) -> str:
    """The MCP tool name of ``agent``: its name, each character a tool name may not hold
    (anything but letters, digits, ``_``, ``-``, ``.``) as ``_``, at most 128 characters.

    Args:
        agent: the agent.
    """
    return _TOOL_CHARS.sub("_", agent.name)[:128] or "agent"


def _short(value: Any, limit: int = STEP_CHARS) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Answer:
    """What one reply says, read from its multi-channel events: the answer's text, the progress
    lines, and how it ended."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}  # message id -> its text, in the order they came
        self.tools: dict[str, str] = {}  # tool call id -> its name
        self.calling: dict[str, list[str]] = {}  # tool call id -> [name, arguments so far]
        self.agents: dict[str, str] = {}  # open sub-agent block id -> its name
        self.status: str | None = None
        self.error: str | None = None
        self.errors: list[str] = []

    def feed(self, ev: dict[str, Any]) -> list[tuple[str | None, str]]:
        """The progress lines of one event: (the text's message, or None for a step; the line),
        text pieces as they are."""
        kind, data = ev.get("type"), ev.get("data") or {}
        if kind == "tool_call.arguments.delta":
            call = self.calling.get(str(data.get("tool_call_id")))
            if call is not None:
                call[1] += str(data.get("delta") or "")
            return []
        # a tool call is said once its arguments came: when anything else comes
        lines = [f"[tool call {n}] {_short(a)}".rstrip() for n, a in self.calling.values()]
        self.calling.clear()
        steps: list[tuple[str | None, str]] = [(None, x) for x in lines]
        if kind in _TEXT_EVENTS:
            # message ids are unique within a thread: parallel threads may each have an M1
            mid = f"{data.get('thread_id', '')}/{data.get('message_id', '')}"
            return steps + [(mid, x) for x in self._text(mid, str(kind), data)]
        return steps + [(None, x) for x in self._step(str(kind), data)]

    def _text(self, mid: str, kind: str, data: dict[str, Any]) -> list[str]:
        if kind in ("message.delta", "refusal.delta"):
            piece = str(data.get("content", ""))
            self.texts[mid] = self.texts.get(mid, "") + piece
            return [piece] if piece else []
        whole = str(data.get("content", ""))
        self.texts[mid] = whole
        return [whole] if whole else []

    def _step(self, kind: str, data: dict[str, Any]) -> list[str]:
        if kind == "tool_call.started":
            cid = str(data.get("tool_call_id"))
            self.tools[cid] = str(data.get("name"))
            self.calling[cid] = [str(data.get("name")), ""]
            return []
        if kind == "structured" and data.get("message_type") == "tool_result":
            props = data.get("props") or {}
            name = props.get("name") or self.tools.get(str(props.get("call_id")), "tool")
            return [f"[tool result {name}] {_short(props.get('content'))}"]
        if kind == "block.start" and data.get("type") == "agent":
            name = str(data.get("agent_name") or data.get("label") or "agent")
            self.agents[str(data.get("block_id"))] = name
            return [f"[sub-agent {name}]"]
        if kind == "block.end" and str(data.get("block_id")) in self.agents:
            name = self.agents.pop(str(data.get("block_id")))
            return [f"[sub-agent {name} {data.get('status') or 'ended'}]"]
        if kind == "status" and data.get("message") and not data.get("done"):
            return [f"[status] {_short(data.get('message'))}"]
        if kind == "error":
            message = str(data.get("message") or data.get("code") or "error")
            self.errors.append(message)
            return [f"[error] {message}"]
        if kind == "stream.end":
            self.status = str(data.get("status") or "error")
            self.error = str(data["error"]) if data.get("error") else None
        return []

    @property
    def text(self) -> str:
        return "\n\n".join(t for t in self.texts.values() if t)

    @property
    def failed(self) -> bool:
        return self.status != "completed"

    def why(self) -> str:
        """What went wrong, for an ``isError`` result."""
        if self.error:
            return self.error
        if self.errors:
            return self.errors[-1]
        return f"the reply ended {self.status or 'before its end'}"


def _error(text: str) -> CallToolResult:
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class McpTools:
    """The tools of one gateway: ``tools/list`` and ``tools/call`` handlers.

    Args:
        gw: the gateway whose agents are the tools and whose runs ask them.
    """

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.sessions: RecentMap[tuple[str, str, str], uuid.UUID] = RecentMap(MAX_SESSIONS)

    def _agents(self) -> dict[str, AgentRef]:
        out: dict[str, AgentRef] = {}
        for a in self.gw.agents.listed():
            if a.address:
                out.setdefault(tool_name(a), a)
        return out

    def input_schema(self) -> dict[str, Any]:
        """Every tool's input schema."""
        return {
            "type": "object",
            "properties": {
                "question": {
                    "type": "string",
                    "description": "What to ask the agent.",
                    "minLength": 1,
                },
                "session": {
                    "type": "string",
                    "description": "A conversation's name: calls with the same session continue "
                    "one conversation with the agent (none: a new one each call).",
                    "minLength": 1,
                    "maxLength": MAX_SESSION_CHARS,
                },
            },
            "required": ["question"],
            "additionalProperties": False,
        }

    def schema_of(self, name: str) -> dict[str, Any] | None:
        """The input schema of the tool ``name`` (None: no such tool), for the SDK's check of a
        2026-07-28 call's ``Mcp-Param-*`` headers.

        Args:
            name: the tool's name.
        """
        return self.input_schema() if name in self._agents() else None

    async def list_tools(self, ctx: Any, params: Any) -> ListToolsResult:
        """``tools/list``: one tool per agent reachable now.

        Args:
            ctx: the SDK's request context.
            params: the request's params (no pagination: every tool at once).
        """
        from mcp_types import ListToolsResult, Tool

        schema = self.input_schema()
        tools = [
            Tool(
                name=name,
                title=a.name,
                description=f"Ask the Fetch.ai agent {a.name} ({a.address}) a question, through "
                "agent_stream's gateway; its reply streams as progress (text, tool calls, "
                "sub-agents) and its answer is the result.",
                input_schema=schema,
            )
            for name, a in self._agents().items()
        ]
        return ListToolsResult(tools=tools)

    def _arguments(self, arguments: Any) -> tuple[str, str | None] | str:
        """(question, session) of a call's arguments, or what is wrong with them."""
        if not isinstance(arguments, dict):
            return "the arguments must be an object: {question, session?}"
        unknown = sorted(set(arguments) - {"question", "session"})
        if unknown:
            return f"unknown argument(s): {', '.join(unknown)}; give question and session"
        question, session = arguments.get("question"), arguments.get("session")
        if not isinstance(question, str) or not question.strip():
            return "give the question: a non-empty string"
        size = len(question.encode("utf-8"))
        if size > self.gw.config.max_question_bytes:
            return f"the question is {size} bytes; the limit is {self.gw.config.max_question_bytes}"
        if session is not None and (
            not isinstance(session, str) or not 0 < len(session) <= MAX_SESSION_CHARS
        ):
            return f"session must be a string of 1 to {MAX_SESSION_CHARS} characters"
        return question, session

    def _session(self, key: str, agent: AgentRef, name: str) -> uuid.UUID:
        k = (key, agent.address, name)
        found = self.sessions.get(k)
        if found is None:
            found = uuid.uuid4()
        self.sessions.put(k, found)
        return found

    async def call_tool(self, ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        """``tools/call``: ask the agent, stream its reply as progress, answer its text.

        Args:
            ctx: the SDK's request context (its ``request``: the HTTP request).
            params: the tool's name and arguments.

        Raises:
            MCPError: -32602, no tool of that name.
        """
        import anyio
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_PARAMS, CallToolResult, TextContent

        agent = self._agents().get(params.name)
        if agent is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name[:200]}")
        args = self._arguments(params.arguments if params.arguments is not None else {})
        if isinstance(args, str):
            return _error(args)
        question, session_name = args
        request = ctx.request
        key = caller(request)
        session = self._session(key, agent, session_name) if session_name else None
        gw = self.gw
        options = {"channels": CHANNELS}
        try:
            run = await gw.start(
                request,
                agent=agent.address,
                question=question,
                fmt="channels",
                options=options,
                # with a session, the agent's own memory of it; else a conversation of its own
                history=None if session is not None else (),
                session=session,
            )
        except HTTPError as exc:
            return _error(exc.message)
        request.state.format = "mcp"
        answer = _Answer()
        sent = 0
        await gw.runs.attach(run.id)
        try:
            async for batch in event_batches(
                gw.store, run.id, "channels", options, parsed=gw.runs.parsed
            ):
                lines: list[str] = []
                last: str | None = None  # the message of the last line (None: a step)
                for _, ev in batch:
                    for mid, line in answer.feed(ev):
                        # pieces of one text that came together go as one notification
                        if mid is not None and mid == last:
                            lines[-1] += line
                        else:
                            lines.append(line)
                        last = mid
                for line in lines:
                    sent += 1
                    await ctx.session.report_progress(sent, message=line)
        except BaseException:
            # cancelled (notifications/cancelled, a closed stream, the gateway stopping):
            # the agent's reply stops now
            with anyio.CancelScope(shield=True):
                await gw.runs.cancel(run.id, reason="cancelled by the MCP client")
                await gw.runs.detach(run.id)
            raise
        await gw.runs.detach(run.id)
        if answer.failed:
            said = answer.text
            return _error(f"{said}\n\n{answer.why()}" if said else answer.why())
        return CallToolResult(content=[TextContent(type="text", text=answer.text)])


class _Endpoint:
    """``/mcp``: the SDK's session manager, its task group started by the first request.

    Args:
        gw: the gateway the tools ask through.
        manager: the SDK's streamable HTTP session manager.
    """

    def __init__(self, gw: Gateway, manager: StreamableHTTPSessionManager) -> None:
        self.gw = gw
        self.manager = manager
        self.book = SessionBook(gw.config.max_tasks_per_key, manager.session_idle_timeout or 0)
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        gw.closing.append(self.close)

    async def _serve(self) -> None:
        async with self.manager.run():
            self._ready.set()
            await self._stop.wait()

    async def close(self) -> None:
        """Stop the manager (every MCP session ends)."""
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 5.0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
        from mcp.server.auth.provider import AccessToken

        if self._task is None:
            self._task = asyncio.create_task(self._serve(), name="gateway mcp sessions")
        if not self._ready.is_set():
            ready = asyncio.ensure_future(self._ready.wait())
            await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
            if not ready.done():
                ready.cancel()
                self._task.result()  # it failed: say why
        state = scope.setdefault("state", {})
        state["format"] = "mcp"
        origin = Headers(scope=scope).get("origin")
        if origin is not None and not _allowed_origin(origin, self.gw.config.cors_origins):
            message = f"origin {origin[:200]!r} may not use /mcp (allow it with --cors-origin)"
            await error_response("mcp", 403, "origin_not_allowed", message)(scope, receive, send)
            return
        key = str(state.get("key", "local"))
        sid = Headers(scope=scope).get("mcp-session-id")
        if scope.get("method") == "POST":
            # the gateway's own body cap, answered as a JSON-RPC error (the SDK's is plain text)
            try:
                body = await read_body(Request(scope, receive), self.gw.config.max_body_bytes)
            except HTTPError as exc:
                await error_response("mcp", exc.status, exc.code, exc.message)(scope, receive, send)
                return
            receive = _replayed(body, receive)
            if sid is None and _opens_session(body) and self.book.full(key):
                message = (
                    f"at most {self.book.per_key} MCP sessions at once per API key: "
                    "close one (DELETE /mcp) or let it idle out"
                )
                await error_response("mcp", 429, "busy", message, {"retry-after": "2"})(
                    scope, receive, send
                )
                return
        # the SDK binds each MCP session to the caller that opened it
        scope["user"] = AuthenticatedUser(AccessToken(token="", client_id=key, scopes=[]))
        await self.manager.handle_request(scope, receive, self._watched(key, sid, scope, send))

    def _watched(self, key: str, sid: str | None, scope: Scope, send: Send) -> Send:
        """``send``, noting in the book the sessions its responses open and close."""

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = int(message["status"])
                if sid is None:
                    given = Headers(raw=list(message.get("headers") or ())).get("mcp-session-id")
                    if given is not None and status < 400:
                        self.book.opened(key, given)
                elif status == 404 or (scope.get("method") == "DELETE" and status < 300):
                    self.book.closed(sid, key)
                else:
                    self.book.named(key, sid)
            await send(message)

        return watched


def _opens_session(body: bytes) -> bool:
    """Whether a POST without a session id is an ``initialize`` (what opens a session)."""
    try:
        data = json_value(body)
    except HTTPError:
        return False  # the SDK answers it
    return isinstance(data, dict) and data.get("method") == "initialize"


def _allowed_origin(origin: str, allowed: list[str]) -> bool:
    """Whether a browser page of ``origin`` may call: a ``--cors-origin``, or a page served from
    the loopback interface. A page of any other site is refused, so that a site whose name
    resolves to 127.0.0.1 (DNS rebinding) cannot reach the agents."""
    if origin in allowed:
        return True
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and parts.hostname in LOOPBACK_HOSTS


def _replayed(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body already read: handed on once, then the real messages (a
    disconnect, which cancels a 2026-07-28 call)."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def server(tools: McpTools) -> Server[Any]:
    """The SDK's low-level server answering with ``tools``.

    Args:
        tools: the handlers.
    """
    from mcp.server.lowlevel import Server

    from agent_stream import __version__

    return Server(
        "agent-stream-gateway",
        version=__version__,
        instructions="Each tool is a Fetch.ai agent: call it with a question.",
        get_tool_input_schema=tools.schema_of,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
    )


def routes(gw: Gateway) -> list[Route]:
    """``/mcp`` (``POST``, ``GET`` and ``DELETE``, as streamable HTTP has them).

    Args:
        gw: the gateway the route serves.
    """
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(
        app=server(McpTools(gw)),
        max_request_body_size=gw.config.max_body_bytes,
        session_idle_timeout=max(gw.config.resume_window, SESSION_IDLE),
        max_sessions=gw.config.max_tasks,
    )
    return [Route(PATH, _Endpoint(gw, manager), methods=["GET", "POST", "DELETE"])]
