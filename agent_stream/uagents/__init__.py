"""The uAgents side: stream an agent's replies over the Agent Chat Protocol, ask other agents,
run agents locally with no internet.

- :class:`StreamingChat`: the agent's one chat ``Protocol``; streams the replies a responder
  writes to a :class:`~agent_stream.StreamWriter`, asks other agents (:meth:`StreamingChat.ask`);
  :meth:`StreamingChat.from_protocol` makes an existing chat handler stream.
- :class:`ChatSettings`: every limit of the plugin, one frozen object (:class:`PumpLimits`,
  :class:`ReplyLimits`, :class:`DeliveryPolicy`, :class:`Protection`).
- :class:`Reply`: a question's reply as it arrives (Messages, live Transcript, final Transcript).
- :func:`local_agent`, :func:`network_agent`, :func:`run_agent`: agents that run offline on
  127.0.0.1 (found by name through the :class:`LocalDirectory`) or on the network.
- :func:`protect`: the inbox guard, HTTP edge caps and per-peer send lanes, on one agent.
- :func:`delegate`: ask a sub-agent on behalf of a request (relay its reply into yours).
- :class:`SessionStore` / :func:`open_store`: where conversations are remembered
  (``request.history``), in memory, SQLite or Redis, within :class:`SessionLimits`.
- :class:`Fleet`: several processes serving one agent address behind a load balancer share
  question claims, control ops and replay buffers through Redis (``serve --fleet``).
"""

from __future__ import annotations

from agent_stream.adapters.chat.delivery import DeliveryPolicy
from agent_stream.uagents._compat import UagentsCompatError
from agent_stream.uagents.client import DeliveryError, Reply
from agent_stream.uagents.delegation import delegate
from agent_stream.uagents.directory import AmbiguousName, DirectoryError, LocalDirectory
from agent_stream.uagents.fleet import Fleet
from agent_stream.uagents.hardening import GuardSettings, LaneLimits, Protection, protect
from agent_stream.uagents.local import (
    LocalAgent,
    PortInUse,
    endpoint_for,
    local_agent,
    network_agent,
    parse_peers,
    run_agent,
    serve_agent,
)
from agent_stream.uagents.outgoing import PumpLimits
from agent_stream.uagents.plugin import StreamingChat
from agent_stream.uagents.request import ChannelPolicy, ChatRequest, ReplyStats, Responder, Turn
from agent_stream.uagents.retrofit import ChatProtocolConflict
from agent_stream.uagents.sessions import SessionLimits, SessionStore, open_store
from agent_stream.uagents.settings import ChatSettings, ReplyLimits
from agent_stream.uagents.wrap import wrap_chat_handler

__all__ = [
    "AmbiguousName",
    "ChannelPolicy",
    "ChatProtocolConflict",
    "ChatRequest",
    "ChatSettings",
    "DeliveryError",
    "DeliveryPolicy",
    "DirectoryError",
    "Fleet",
    "GuardSettings",
    "LaneLimits",
    "LocalAgent",
    "LocalDirectory",
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
    "local_agent",
    "network_agent",
    "open_store",
    "parse_peers",
    "protect",
    "run_agent",
    "serve_agent",
    "wrap_chat_handler",
]
