"""HTTP ways in and out: a trace-continuing ASGI middleware, and the Prometheus endpoint.

- :class:`TraceMiddleware`: a SERVER span per HTTP request, continuing the request's W3C
  ``traceparent``/``tracestate`` headers when well formed (a malformed one starts a new trace,
  with a warning, and the request is answered as usual); the span is current while the app
  runs, so the questions the request asks are its children. Free when tracing is off.
- :func:`metrics_endpoint`: an ASGI app answering ``GET /metrics`` in the Prometheus text format.
- :func:`serve_metrics`: the same on a port of its own, from a daemon thread (``serve
  --metrics-port``).
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from agent_stream import telemetry
from agent_stream.telemetry.metrics import prometheus_text

__all__ = [
    "CONTENT_TYPE",
    "MetricsEndpoint",
    "TraceMiddleware",
    "metrics_endpoint",
    "parse_metrics_address",
    "serve_metrics",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            try:
                return str(value.decode("latin-1"))
            except Exception:
                return ""
    return None


class TraceMiddleware:
    """ASGI middleware: a span per HTTP request (see the module doc).

    Args:
        app: the ASGI application it wraps.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or not telemetry.tracing():
            await self.app(scope, receive, send)
            return
        from opentelemetry import context as otel_context
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind, Status, StatusCode

        from agent_stream.telemetry.spans import incoming_context

        parent = incoming_context(
            _header(scope, b"traceparent"), _header(scope, b"tracestate"), "HTTP traceparent"
        )
        method = str(scope.get("method") or "GET")
        path = str(scope.get("path") or "/")
        span = telemetry.tracer().start_span(
            method,
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": path[:512]},
        )
        status: list[int] = []

        async def send_traced(message: MutableMapping[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                status.append(int(message.get("status", 0)))
            await send(message)

        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            await self.app(scope, receive, send_traced)
        except BaseException:
            span.set_status(Status(StatusCode.ERROR))
            raise
        finally:
            otel_context.detach(token)
            route = getattr(scope.get("route"), "path", None)
            if isinstance(route, str):
                span.update_name(f"{method} {route}")
                span.set_attribute("http.route", route)
            if status:
                span.set_attribute("http.response.status_code", status[0])
                if status[0] >= 500:
                    span.set_status(Status(StatusCode.ERROR))
            span.end()


class MetricsEndpoint:
    """ASGI app: this process's metrics in the Prometheus text format (GET or HEAD).

    An instance, not a function, so that a router serves it as an ASGI app.
    """

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _metrics(scope, send)


metrics_endpoint = MetricsEndpoint()


async def _metrics(scope: Scope, send: Send) -> None:
    method = scope.get("method", "GET")
    if method not in ("GET", "HEAD"):
        await send(
            {
                "type": "http.response.start",
                "status": 405,
                "headers": [(b"allow", b"GET, HEAD"), (b"content-length", b"0")],
            }
        )
        await send({"type": "http.response.body", "body": b""})
        return
    body = prometheus_text().encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", CONTENT_TYPE.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/metrics":
            self.send_error(404, "only /metrics here")
            return
        body = prometheus_text().encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # scrapes are not news
        return


class _Server6(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6


def parse_metrics_address(value: str) -> tuple[str, int]:
    """The (host, port) of a metrics address.

    Args:
        value: ``[HOST:]PORT``; the host is 127.0.0.1 unless given, IPv6 hosts may be
            bracketed.

    Raises:
        ValueError: the port is missing or outside 1..65535.
    """
    host, sep, port = value.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"metrics port {value!r}: expected [HOST:]PORT with PORT in 1..65535")
    return host, int(port)


def serve_metrics(host: str, port: int) -> http.server.ThreadingHTTPServer:
    """Serve ``GET /metrics`` from a daemon thread.

    Args:
        host: the address to listen on (IPv4 or IPv6).
        port: the TCP port to listen on.

    Returns:
        The running server; call its ``shutdown()`` to stop it.

    Raises:
        OSError: the port is taken or the address cannot be bound.
    """
    cls = _Server6 if ":" in host else http.server.ThreadingHTTPServer
    server = cls((host, port), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="agent-stream-metrics", daemon=True).start()
    return server
