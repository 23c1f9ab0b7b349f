"""The gateway's ASGI app: every endpoint of a :class:`~agent_stream.gateway.core.Gateway`.

Routes in :mod:`.routes`, A2A in :mod:`.a2a`, MCP in :mod:`.mcp`, the page in :mod:`.page`.
Middleware, outermost first: the access log, CORS (only for ``--cors-origin`` origins; none by
default), API keys.
"""

from __future__ import annotations

import contextlib
import importlib

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_stream.adapters import registry
from agent_stream.gateway import page, routes
from agent_stream.gateway.core import Gateway, keepalive
from agent_stream.gateway.middleware import (
    AccessLog,
    ApiKeys,
    HTTPError,
    client_kind,
    error_response,
)
from agent_stream.telemetry.http import TraceMiddleware, metrics_endpoint

__all__ = ["Gateway", "build_app", "keepalive"]

# the response headers some wires add (the AI SDK's), which browsers may read
_WIRE_HEADERS = sorted({h for w in registry.wires() for h in w.headers})


def _errors(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPError)
    request.state.format = getattr(request.state, "format", client_kind(request.url.path))
    return error_response(
        client_kind(request.url.path), exc.status, exc.code, exc.message, exc.headers
    )


def _preload_wires() -> None:
    """Import every wire's encoder and framings now, not on its first reply: imported then,
    the OpenAI wire's modules held the gateway's thousand streams ~0.1 s just as their first
    texts came (all wires: ~0.2 s and ~7 MB, once, at start)."""
    for wire in registry.wires():
        wire.make_encoder()
        for framing in wire.frames:
            wire.frame(framing)
    # a streaming response's task group loads anyio's asyncio backend on its first use: ~40 ms
    # in which a thousand questions that had just come waited
    with contextlib.suppress(ImportError):
        importlib.import_module("anyio._backends._asyncio")


def build_app(gateway: Gateway, *, with_a2a: bool = True, with_mcp: bool = True) -> Starlette:
    """The ASGI app serving every endpoint of ``gateway``.

    Args:
        gateway: the agents, runs and resume store the endpoints share.
        with_a2a: serve A2A (``/a2a/{agent}`` and the agent cards; needs ``a2a-sdk``).
        with_mcp: serve MCP (``/mcp``, each agent a tool; needs ``mcp``).
    """
    _preload_wires()
    route_list = [
        *routes.routes(gateway),
        *page.routes(),
        Route("/metrics", metrics_endpoint, methods=["GET", "HEAD"]),
    ]
    if with_a2a:
        from agent_stream.gateway import a2a

        route_list = [*a2a.routes(gateway), *route_list]
    if with_mcp:
        from agent_stream.gateway import mcp

        route_list = [*mcp.routes(gateway), *route_list]
    # outermost: the request's span (continuing its traceparent) covers everything
    middleware = [Middleware(TraceMiddleware), Middleware(AccessLog, runs=gateway.runs)]
    if gateway.config.cors_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(gateway.config.cors_origins),
                allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
                allow_headers=[
                    "authorization",
                    "content-type",
                    "last-event-id",
                    "x-api-key",
                    "accept",
                    "mcp-session-id",
                    "mcp-protocol-version",
                    "x-ai-sdk-version",
                    # an A2A 1.0 client names its protocol version on every request
                    "a2a-version",
                ],
                expose_headers=["x-reply-id", "mcp-session-id", *_WIRE_HEADERS],
                max_age=600,
            )
        )
    middleware.append(Middleware(ApiKeys, keys=gateway.config.keys()))
    app = Starlette(
        routes=route_list, middleware=middleware, exception_handlers={HTTPError: _errors}
    )
    app.state.gateway = gateway
    return app
