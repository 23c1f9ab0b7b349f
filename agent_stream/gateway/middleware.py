"""Errors in each client's own format, API-key auth, body caps and the access log."""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_stream.errors import InvalidJSON
from agent_stream.jsontext import MAX_DEPTH, loads

__all__ = [
    "AccessLog",
    "ApiKeys",
    "HTTPError",
    "caller",
    "client_kind",
    "error_response",
    "json_value",
    "read_body",
    "read_json",
]

ACCESS = logging.getLogger("agent_stream.gateway.access")

# Paths anyone may read without a key: the page, its assets, the liveness probe and the A2A
# agent cards (a client reads the card to learn how to authenticate).
PUBLIC = (
    "/",
    "/healthz",
    "/favicon.ico",
    "/.well-known/agent-card.json",
    "/.well-known/agent.json",
)
PUBLIC_PREFIXES = ("/static/",)


class HTTPError(Exception):
    """An error to answer in the client's format.

    Args:
        status: the HTTP status.
        code: the error's code, for the client.
        message: what the client is told.
        headers: more response headers (e.g. ``Retry-After``).
    """

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers


def client_kind(path: str) -> str:
    """Which client's error format a path speaks: openai, agui, aisdk, a2a, mcp or native.

    Args:
        path: the request's path.
    """
    if path.startswith("/v1/chat/") or path == "/v1/models":
        return "openai"
    if path.startswith("/agui"):
        return "agui"
    if path.startswith("/api/chat"):
        return "aisdk"
    if path.startswith("/a2a/"):
        return "a2a"
    if path == "/mcp":
        return "mcp"
    return "native"


_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


def error_response(
    kind: str, status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> Response:
    """A JSON error the client of ``kind`` understands.

    Args:
        kind: the client's kind (see :func:`client_kind`).
        status: the HTTP status.
        code: the error's code.
        message: what the client is told.
        headers: more response headers.
    """
    body: dict[str, Any]
    if kind == "openai":
        body = {
            "error": {
                "message": message,
                "type": _OPENAI_TYPES.get(status, "api_error"),
                "param": None,
                "code": code,
            }
        }
    elif kind == "agui":  # AG-UI's own error event, as JSON
        body = {"type": "RUN_ERROR", "message": message, "code": code}
    elif kind == "aisdk":  # the UI message stream's error chunk
        body = {"type": "error", "errorText": message, "code": code}
    elif kind == "a2a":  # a JSON-RPC error
        rpc = {401: -32001, 404: -32001, 413: -32600, 429: -32000}.get(status, -32603)
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": rpc, "message": message, "data": {"code": code}},
        }
    elif kind == "mcp":  # a JSON-RPC error, as the MCP SDK answers one without a request id
        rpc = -32603 if status >= 500 else -32600
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": rpc, "message": message, "data": {"code": code}},
        }
    else:
        body = {"error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


def _declared_over(declared: str | None, limit: int) -> bool:
    """Whether a ``Content-Length`` of ASCII digits says more than ``limit`` bytes (any other
    value is left to the server; ``int`` is never given thousands of digits or ``"²"``)."""
    if declared is None or not (declared.isascii() and declared.isdigit()):
        return False
    digits = declared.lstrip("0")
    return len(digits) > 18 or int(digits or "0") > limit


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, at most ``limit`` bytes (HTTPError 413 otherwise).

    Args:
        request: the HTTP request.
        limit: the most bytes read.

    Raises:
        HTTPError: 413, the body is over ``limit``.
    """
    if _declared_over(request.headers.get("content-length"), limit):
        raise HTTPError(413, "body_too_large", f"the request body is over {limit} bytes")
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise HTTPError(413, "body_too_large", f"the request body is over {limit} bytes")
    return bytes(body)


async def read_json(request: Request, limit: int) -> Any:
    """The request's JSON body, at most ``limit`` bytes (HTTPError 413 / 400 otherwise).

    Args:
        request: the HTTP request.
        limit: the most bytes read.

    Raises:
        HTTPError: 413, the body is over ``limit``; 400 ``bad_json``, it is not strict JSON
            or nests deeper than ``MAX_DEPTH`` levels (see :func:`json_value`).
    """
    body = await read_body(request, limit)
    return json_value(body or b"null")


def json_value(body: bytes) -> Any:
    """The JSON value of a request body, read by the project's strict reader
    (:func:`agent_stream.jsontext.loads`): nested at most ``MAX_DEPTH`` levels, so a deeply
    nested body is a client's 400 like any other, never a ``RecursionError``.

    Args:
        body: the request body.

    Raises:
        HTTPError: 400 ``bad_json``, saying what is wrong: bad syntax or UTF-8, nested too deep
            (over ``MAX_DEPTH`` levels), a number out of range, NaN, a lone surrogate.
    """
    try:
        return loads(body, InvalidJSON, max_depth=MAX_DEPTH)
    except InvalidJSON as exc:
        reason = str(exc).removeprefix("not JSON: ")
        raise HTTPError(400, "bad_json", f"the request body is not JSON: {reason}") from None


def bearer(scope: Scope) -> str | None:
    """The Bearer token (or ``x-api-key``) of a request.

    Args:
        scope: the ASGI scope.
    """
    for k, v in scope.get("headers", ()):
        if k == b"authorization":
            text = bytes(v).decode("latin-1")
            if text[:7].lower() == "bearer ":
                return text[7:].strip()
        elif k == b"x-api-key":
            return bytes(v).decode("latin-1").strip()
    return None


def caller(request: Request) -> str:
    """Whose request this is, as :class:`ApiKeys` put it: a digest of its API key when keys are
    set, else ``addr:<client address>``. The replies and A2A tasks it starts are its alone.

    Args:
        request: the HTTP request.
    """
    return str(getattr(request.state, "key", "local"))


class ApiKeys:
    """ASGI middleware: with keys set, every non-public path needs one (401 otherwise). Puts
    ``scope["state"]["key"]``: the key, or the client's address when no keys are set.

    Args:
        app: the ASGI app it guards.
        keys: the API keys accepted (empty: none is needed).
    """

    def __init__(self, app: ASGIApp, keys: Sequence[str]) -> None:
        self.app = app
        self.keys = [k.encode() for k in keys]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        path = scope.get("path", "")
        token = bearer(scope)
        if self.keys:
            ok = token is not None and any(
                hmac.compare_digest(token.encode(), k) for k in self.keys
            )
            public = (
                path in PUBLIC
                or path.startswith(PUBLIC_PREFIXES)
                or (path.startswith("/a2a/") and path.endswith("/.well-known/agent-card.json"))
            )
            if not ok and not public and scope.get("method") != "OPTIONS":
                state["format"] = client_kind(path)
                resp = error_response(
                    client_kind(path),
                    401,
                    "unauthorized",
                    "a valid API key is required (Authorization: Bearer KEY)",
                    {"www-authenticate": "Bearer"},
                )
                await resp(scope, receive, send)
                return
            # the per-key reply limit counts by key; the log never sees a key
            state["key"] = (
                "key:" + hashlib.sha256((token or "").encode()).hexdigest()[:16] if ok else "public"
            )
        else:
            client = scope.get("client") or ("?", 0)
            state["key"] = f"addr:{client[0]}"
        await self.app(scope, receive, send)


class AccessLog:
    """ASGI middleware: one line per request when its response ends: method, path, agent,
    format, status, bytes, ChatMessages, time to first byte, duration (and the reply id).

    Args:
        app: the ASGI app it logs.
        runs: the gateway's runs (for each reply's ChatMessages).
    """

    def __init__(self, app: ASGIApp, runs: Any) -> None:
        self.app = app
        self.runs = runs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.monotonic()
        seen: dict[str, Any] = {"status": 0, "bytes": 0, "first": None}
        state = scope.setdefault("state", {})

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
            elif message["type"] == "http.response.body":
                body = message.get("body", b"")
                if body and seen["first"] is None:
                    seen["first"] = time.monotonic()
                seen["bytes"] += len(body)
            await send(message)

        try:
            await self.app(scope, receive, wrapped)
        finally:
            end = time.monotonic()
            rid = state.get("reply")
            run = self.runs.get(rid) if rid else None
            first = seen["first"]
            ACCESS.info(
                "%s %s agent=%s format=%s status=%s bytes=%d chat_messages=%s ttfb_ms=%s "
                "ms=%.1f reply=%s",
                scope.get("method"),
                scope.get("path"),
                state.get("agent", "-"),
                state.get("format", "-"),
                seen["status"] or "-",
                seen["bytes"],
                run.chat_messages if run is not None else "-",
                f"{(first - t0) * 1000:.1f}" if first is not None else "-",
                (end - t0) * 1000,
                rid or "-",
            )
