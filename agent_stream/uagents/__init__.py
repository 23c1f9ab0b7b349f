"""The uAgents edge: the streaming chat plugin, its client side, and local running helpers.

- :class:`StreamingChat`: the agent's one chat ``Protocol``; streams replies written with a
  :class:`~agent_stream.writer.StreamWriter` and asks other agents (:meth:`StreamingChat.ask`).
- :class:`Reply`: a question's reply as it arrives (Messages, live Transcript, final Transcript).
- :mod:`agent_stream.uagents.local`: running agents with no internet (:func:`offline`,
  :func:`local_agent`, :func:`run_agent`, the :class:`LocalDirectory` of running local agents).
"""

from __future__ import annotations

from agent_stream.uagents.client import DeliveryError, Reply
from agent_stream.uagents.local import (
    DIRECTORY_ENV,
    LocalAgent,
    LocalDirectory,
    LocalResolver,
    NoRegistration,
    default_directory_path,
    endpoint_for,
    free_port,
    is_offline,
    local_agent,
    network_agent,
    network_agent_options,
    offline,
    online,
    parse_peer,
    parse_peers,
    port_free,
    quiet_logs,
    run_agent,
)
from agent_stream.uagents.plugin import (
    ChannelPolicy,
    ChatRequest,
    ReplyStats,
    Responder,
    StreamingChat,
    wrap_chat_handler,
)

__all__ = [
    "DIRECTORY_ENV",
    "ChannelPolicy",
    "ChatRequest",
    "DeliveryError",
    "LocalAgent",
    "LocalDirectory",
    "LocalResolver",
    "NoRegistration",
    "Reply",
    "ReplyStats",
    "Responder",
    "StreamingChat",
    "default_directory_path",
    "endpoint_for",
    "free_port",
    "is_offline",
    "local_agent",
    "network_agent",
    "network_agent_options",
    "offline",
    "online",
    "parse_peer",
    "parse_peers",
    "port_free",
    "quiet_logs",
    "run_agent",
    "wrap_chat_handler",
]
