"""The gateway: any OpenAI, AG-UI, AI SDK or A2A client, and a browser, talks to any agent.

``agent-stream gateway`` (:mod:`agent_stream.commands.gateway`) runs one process that is both a
uAgent client identity (asking agents over the chat protocol with agent_stream's tags) and an
HTTP server (Starlette on uvicorn). Each HTTP request becomes one run (:mod:`.runs`) whose
Messages go into a resume store (:mod:`.store`, :mod:`.redis_store`); each response re-encodes
that log in its client's wire (:mod:`.views`), so a client that reconnects resumes where it was,
and a dropped connection never stops a reply before the resume window has passed.

Public: :class:`GatewayConfig` (the settings), :func:`run_gateway` (run it: a uAgent client
and the HTTP server, until Ctrl-C), :func:`build_app` (the ASGI app of a :class:`Gateway`, to
serve it yourself). Needs the ``gateway`` extra: ``pip install 'agent-stream[gateway]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_stream.gateway.config import GatewayConfig

if TYPE_CHECKING:
    from agent_stream.gateway.app import build_app
    from agent_stream.gateway.core import Gateway
    from agent_stream.gateway.server import run_gateway

__all__ = ["Gateway", "GatewayConfig", "build_app", "run_gateway"]

# Loaded on first use, so importing the package (for its config) needs no Starlette.
_LAZY = {
    "build_app": "agent_stream.gateway.app",
    "Gateway": "agent_stream.gateway.core",
    "run_gateway": "agent_stream.gateway.server",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
