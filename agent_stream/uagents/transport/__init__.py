"""The transport's room: what an envelope costs on its way in, and the send path on its way out.

Rules of this room:

- **In**: every payload is validated before it is queued (:mod:`._guard`, the inbox guard);
  the HTTP edge (:mod:`._http_edge`) refuses what would cost too much before uagents reads it
  (size, admission rates, slow headers); signatures are checked with libsecp256k1
  (:mod:`._signing`), accepting and refusing exactly what uagents does.
- **Out**, the send path, three layers: a reply's pump (in the responder's room) hands
  envelopes to its peer's **lane** (:mod:`._lanes`: one queue per destination, so a peer that
  hangs or refuses delays only itself), which posts them through the agent's **pool** of
  keep-alive HTTP connections (:mod:`._pool`), several envelopes in one post to a peer that
  takes batches.
- Nothing here patches uagents: every uagents internal is reached through
  :mod:`agent_stream.uagents._compat`.
"""

from __future__ import annotations

from agent_stream.uagents.transport._guard import GuardSettings
from agent_stream.uagents.transport._lanes import LaneLimits

__all__ = ["GuardSettings", "LaneLimits"]
