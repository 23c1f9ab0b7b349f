"""The uAgents side: stream an agent's replies over the Agent Chat Protocol, ask other agents,
run agents locally with no internet.

Rooms (each package states its own rules at its top; every module inside is private, and users
import from here):

- ``responder/``: answering. A reply's pump, open replies, caps, the responder's part of
  delivery, conversation memory and its stores, wrapping an existing chat handler.
- ``asker/``: asking. A :class:`Reply` being read, the asker's part of delivery, delegation.
- ``transport/``: protecting the way in (inbox guard, HTTP edge, signatures) and the send path
  out (a peer's lane, then the agent's connection pool).
- ``fleet/``: several replicas of one address sharing claims, ops and replay through Redis.
- ``local/``: agents on 127.0.0.1 with no internet, the local directory and its resolver.

Beside the rooms: :class:`StreamingChat` (``_streaming_chat``), the agent's one chat protocol,
which routes each ChatMessage to the responder or the asker; :class:`ChatSettings`, every limit
in one frozen object; :func:`protect`, which puts the transport's protection on one agent; and
``_compat``, the one seam into uagents' private names, checked at start; and ``_clock``, the one
clock every room reads time, sleeps and sets timers on (:class:`Clock`; ``ChatSettings.clock``,
``ChatClient(clock=...)``): a test passes a :class:`DrivenClock` and moves time itself. Only
network timeouts (a post, a Redis call) run on the event loop's own time.

One vocabulary: the **asker** sends a question, the **responder** streams the reply.

- :class:`StreamingChat`: streams the replies a responder writes to a
  :class:`~agent_stream.StreamWriter`, asks other agents (:meth:`StreamingChat.ask`);
  :meth:`StreamingChat.from_protocol` makes an existing chat handler stream.
- :func:`local_agent`, :func:`network_agent`, :func:`run_agent`: agents that run offline on
  127.0.0.1 (found by name through the :class:`LocalDirectory`) or on the network;
  :func:`local_resolver` lets a stock ``uagents.Agent`` answer local askers offline.
- :func:`delegate`: ask a sub-agent on behalf of a request (relay its reply into yours).
- :class:`SessionStore` / :func:`open_store`: where conversations are remembered
  (``request.history``), in memory, SQLite or Redis, within :class:`SessionLimits`.
- :class:`Fleet`: replicas of one address behind a load balancer (``serve --fleet``).
"""

from __future__ import annotations

from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.conversation import HistoryLimits
from agent_stream.uagents._clock import Clock, DrivenClock, LoopClock
from agent_stream.uagents._compat import UagentsCompatError
from agent_stream.uagents._conflict import ChatProtocolConflict
from agent_stream.uagents._protection import GuardSettings, LaneLimits, Protection, protect
from agent_stream.uagents._request import ChannelPolicy, ChatRequest, ReplyStats, Responder, Turn
from agent_stream.uagents._settings import (
    AGENTVERSE_QUOTA,
    ChatSettings,
    PeerQuota,
    PeerQuotas,
    ReplyLimits,
)
from agent_stream.uagents._streaming_chat import StreamingChat
from agent_stream.uagents.asker import DeliveryError, Reply, delegate
from agent_stream.uagents.fleet import Fleet
from agent_stream.uagents.local import (
    AmbiguousName,
    DirectoryError,
    LocalAgent,
    LocalDirectory,
    LocalResolver,
    PortInUse,
    endpoint_for,
    free_port,
    local_agent,
    local_resolver,
    network_agent,
    parse_peers,
    run_agent,
    serve_agent,
)
from agent_stream.uagents.responder import (
    PumpLimits,
    SessionLimits,
    SessionStore,
    open_store,
    wrap_chat_handler,
)

__all__ = [
    "AGENTVERSE_QUOTA",
    "AmbiguousName",
    "ChannelPolicy",
    "ChatProtocolConflict",
    "ChatRequest",
    "ChatSettings",
    "Clock",
    "DeliveryError",
    "DeliveryPolicy",
    "DirectoryError",
    "DrivenClock",
    "Fleet",
    "GuardSettings",
    "HistoryLimits",
    "LaneLimits",
    "LocalAgent",
    "LocalDirectory",
    "LocalResolver",
    "LoopClock",
    "PeerQuota",
    "PeerQuotas",
    "PortInUse",
    "Protection",
    "PumpLimits",
    "Reply",
    "ReplyLimits",
    "ReplyStats",
    "Responder",
    "SessionLimits",
    "SessionStore",
    "StreamingChat",
    "Turn",
    "UagentsCompatError",
    "delegate",
    "endpoint_for",
    "free_port",
    "local_agent",
    "local_resolver",
    "network_agent",
    "open_store",
    "parse_peers",
    "protect",
    "run_agent",
    "serve_agent",
    "wrap_chat_handler",
]
