"""The local room: agents that run with no internet, found by name on this machine.

Rules of this room:

- A local agent listens on 127.0.0.1, never registers on the Almanac and never reports to
  Agentverse; its peers are found through the :class:`LocalDirectory` (a private file of the
  user's, ``0600``) or given as static peers.
- :class:`LocalResolver` is a uagents resolver reading that directory, for any agent.
- Every agent built here is protected (inbox guard, HTTP edge, lanes) before it runs.
"""

from __future__ import annotations

from agent_stream.uagents.local._agents import (
    LocalAgent,
    PortInUse,
    endpoint_for,
    free_port,
    local_agent,
    network_agent,
    parse_peers,
    run_agent,
    serve_agent,
)
from agent_stream.uagents.local._directory import (
    AmbiguousName,
    DirectoryError,
    LocalDirectory,
    LocalResolver,
    local_resolver,
)

__all__ = [
    "AmbiguousName",
    "DirectoryError",
    "LocalAgent",
    "LocalDirectory",
    "LocalResolver",
    "PortInUse",
    "endpoint_for",
    "free_port",
    "local_agent",
    "local_resolver",
    "network_agent",
    "parse_peers",
    "run_agent",
    "serve_agent",
]
