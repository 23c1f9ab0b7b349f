"""Protection for one uagents agent: the inbox guard, the HTTP edge caps and per-peer send lanes.

Stock uagents (0.26) can be silenced by one malformed payload (:mod:`.transport._guard` explains
why), reads and verifies any envelope whatever its size or rate (:mod:`.transport._http_edge`),
and sends every envelope of an agent through one queue that a hanging peer blocks
(:mod:`.transport._lanes`).
:func:`protect` fixes all three **for the agent it is given**, and for nothing else in the
process: no uagents class or module is changed.

- the guard becomes that agent's own ``handle_message`` (an instance attribute, which Python
  finds before the class's method);
- the agent's server object becomes an :class:`~.transport._http_edge.AgentServer` (uagents'
  ``ASGIServer`` subclassed, so that ``__call__`` can apply the caps: Python looks ``__call__``
  up on the class, so an instance attribute would not do). The object keeps its identity and
  state and only its class changes, so uvicorn, which serves the object it was handed at start,
  applies the caps from the next request on, also when the agent already runs. (Agents run in a
  ``Bureau`` are served by the Bureau's own server: they get the guard and lanes only.)
- the guard tells a :class:`~.local.LocalResolver`'s directory who sent a verified envelope
  (:meth:`~.local.LocalDirectory.heard`: a busy peer's slow readiness probe is not "gone");
- the agent signs with libsecp256k1 and its server verifies with it
  (:mod:`.transport._signing`);
- the agent gets a :class:`~.transport._lanes.PeerDispenser`: chat-protocol envelopes go
  through per-peer lanes, the agent's other protocols keep uagents' own sending unless
  ``every_protocol``.

Every uagents private name used for this is in :mod:`._compat`, checked by :func:`protect`
(and by a local agent when it starts): a uagents that renamed one fails loudly, naming it.

Example::

    from agent_stream.uagents._protection import Protection, protect
    from agent_stream.uagents.transport._guard import GuardSettings

    agent = Agent(name="mine", seed="...", port=8001)
    protect(agent, Protection(guard=GuardSettings(max_queued=256)))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from uagents import Agent

from agent_stream.uagents import _compat
from agent_stream.uagents._clock import LOOP_CLOCK, Clock
from agent_stream.uagents.transport import _signing as signing
from agent_stream.uagents.transport._guard import AgentGuard, GuardSettings
from agent_stream.uagents.transport._http_edge import AgentServer, Edge
from agent_stream.uagents.transport._lanes import LaneLimits, PeerDispenser, isolate

__all__ = ["GuardSettings", "LaneLimits", "Protection", "guard_of", "is_protected", "protect"]

A = TypeVar("A", bound=Agent)
_ATTR = "_agent_stream_guard"  # where an agent keeps its AgentGuard (an attribute of ours)


@dataclass(frozen=True)
class Protection:
    """How :func:`protect` protects an agent.

    The guard's limits (inbox and HTTP edge) and the send lanes' bounds
    (``LaneLimits(every_protocol=True)`` puts every send in lanes).

    Attributes:
        guard: the inbox guard's and the HTTP edge's limits.
        lanes: the bounds of the per-destination send lanes.
    """

    guard: GuardSettings = field(default_factory=GuardSettings)
    lanes: LaneLimits = field(default_factory=LaneLimits)


def guard_of(agent: Any) -> AgentGuard | None:
    """The :class:`~.guard.AgentGuard` of a protected agent (its ``stats``), else None.

    Args:
        agent: the agent (any object: None when it is not a protected agent).
    """
    guard = getattr(agent, "__dict__", {}).get(_ATTR)
    return guard if isinstance(guard, AgentGuard) else None


def is_protected(agent: Any) -> bool:
    """Whether :func:`protect` was applied to ``agent``.

    Args:
        agent: the agent to look at.
    """
    return guard_of(agent) is not None


@runtime_checkable
class PeerDirectory(Protocol):
    """What protection tells a resolver's directory (the local directory is one): a sender's
    envelope was verified, an envelope was delivered to a peer."""

    def heard(self, address: str) -> None: ...

    def delivered(self, address: str, endpoint: str) -> None: ...


def protect(agent: A, settings: Protection | None = None, *, clock: Clock = LOOP_CLOCK) -> A:
    """Protect ``agent`` (a ``uagents.Agent``) and only it; returns it. Idempotent.

    Inbox guard, HTTP edge caps and send lanes, before the agent runs or while it runs.

    Args:
        agent: the agent to protect.
        settings: the limits (None: the defaults of :class:`Protection`). Given again to a
            protected agent, they replace its limits (rate limits start afresh).
        clock: the runtime's clock (the first protection's stays).

    Returns:
        ``agent``, protected.

    Raises:
        UagentsCompatError: the installed uagents lacks an internal this needs.
    """
    _compat.check_agent(agent)
    current = guard_of(agent)
    if current is not None:
        if settings is not None:  # new limits for the same protection
            current.configure(settings.guard)
            dispenser = _compat.dispenser_of(agent)
            if isinstance(dispenser, PeerDispenser):
                dispenser.limits = settings.lanes
        return agent
    settings = settings or Protection()
    guard = AgentGuard(agent, settings.guard, clock)
    agent.__dict__[_ATTR] = guard
    agent.handle_message = guard.wrap(agent.handle_message)
    server = _compat.server_of(agent)
    if not isinstance(server, AgentServer):
        server.__class__ = AgentServer  # this agent's server object only
    server.edge = Edge(guard)
    lanes = isolate(agent, settings.lanes, clock)
    directory = getattr(_compat.resolver_of(agent), "directory", None)
    if isinstance(directory, PeerDirectory):
        # a peer that just sent a verified envelope runs: its slow probe means busy, not gone
        guard.on_sender.append(directory.heard)
        # a delivery is as good an answer as the directory's readiness probe: a peer busy
        # with many conversations is not dropped because a probe was slow
        if directory.delivered not in lanes.on_delivered:
            lanes.on_delivered.append(directory.delivered)
    signing.speed_up(agent)
    return agent
