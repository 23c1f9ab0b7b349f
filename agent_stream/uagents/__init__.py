"""The uAgents edge: the streaming chat plugin, its client side, and local running helpers.

- :class:`StreamingChat`: the agent's one chat ``Protocol``; streams replies written with a
  :class:`~agent_stream.writer.StreamWriter` and asks other agents (:meth:`StreamingChat.ask`).
- :class:`Reply`: a question's reply as it arrives (Messages, live Transcript, final Transcript).
- :mod:`agent_stream.uagents.local`: running agents with no internet (:func:`offline`,
  :func:`local_agent`, :func:`run_agent`); :mod:`~agent_stream.uagents.directory`: the
  :class:`LocalDirectory` of running local agents.
- :mod:`~agent_stream.uagents.guard` (a malformed payload cannot silence an agent) and
  :mod:`~agent_stream.uagents.lanes` (one send lane per peer), both put in place by
  :func:`protect`, which :func:`local_agent`, :func:`network_agent` and :class:`StreamingChat`
  call.
"""

from __future__ import annotations

from agent_stream.uagents.client import DeliveryError, Reply
from agent_stream.uagents.delegation import delegate
from agent_stream.uagents.directory import (
    DIRECTORY_ENV,
    DirectoryError,
    LocalDirectory,
    LocalResolver,
    default_directory_path,
)
from agent_stream.uagents.local import (
    LocalAgent,
    NoRegistration,
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
    protect,
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
    "DirectoryError",
    "LocalAgent",
    "LocalDirectory",
    "LocalResolver",
    "NoRegistration",
    "Reply",
    "ReplyStats",
    "Responder",
    "StreamingChat",
    "default_directory_path",
    "delegate",
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
    "protect",
    "quiet_logs",
    "run_agent",
    "wrap_chat_handler",
]
