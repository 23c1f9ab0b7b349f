"""The fleet's room: one agent address served by several replicas behind a load balancer.

Rules of this room:

- What a reply needs beyond the replica answering it is shared through Redis: question claims
  (one replica answers), forwarded acknowledgements and delivery ops, replay mirrors, liveness.
- Redis down or slow never stalls a reply: every call is bounded and a failure leaves the
  replica acting alone.
- A replica that died has its open replies ended ``lost`` for their askers by a survivor
  (:mod:`._lost`), once in the fleet.
- Everything read from Redis is validated and size-capped before it is acted on.
"""

from __future__ import annotations

from agent_stream.uagents.fleet._fleet import Fleet, use_replica_storage

__all__ = ["Fleet", "use_replica_storage"]
