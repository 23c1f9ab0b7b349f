"""The gateway: any OpenAI, AG-UI, AI SDK or A2A client, and a browser, talks to any agent.

``agent-stream gateway`` (:mod:`agent_stream.commands.gateway`) runs one process that is both a
uAgent client identity (asking agents over the chat protocol with agent_stream's tags) and an
HTTP server (Starlette on uvicorn). Each HTTP request becomes one run (:mod:`.runs`) whose
Messages go into a resume store (:mod:`.store`, :mod:`.redis_store`); each response re-encodes
that log in its client's wire (:mod:`.views`), so a client that reconnects resumes where it was,
and a dropped connection never stops a reply before the resume window has passed.

Needs the ``gateway`` extra: ``pip install 'agent-stream[gateway]'``.
"""

from __future__ import annotations

from agent_stream.gateway.config import GatewayConfig

__all__ = ["GatewayConfig"]
