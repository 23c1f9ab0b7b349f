"""One chat protocol per agent: a clear error, naming the fix, when a second one is included.

uagents allows one ``Protocol(spec=chat_protocol_spec)`` per agent and refuses a second with a
bare ``RuntimeError("Unable to register duplicate model")``. An agent that already has a chat
handler streams by including ``StreamingChat.from_protocol(its_chat_protocol)`` instead;
:func:`check_include` says so before uagents refuses. The agents agent_stream builds
(:func:`~agent_stream.uagents.local_agent`, :func:`~agent_stream.uagents.network_agent`) run it
in their ``include``.
"""

from __future__ import annotations

import functools
from typing import Any

from uagents import Protocol
from uagents_core.contrib.protocols.chat import chat_protocol_spec

__all__ = ["ChatProtocolConflict", "check_include"]


class ChatProtocolConflict(RuntimeError):
    """A second chat protocol was included in an agent that has one."""


@functools.lru_cache(maxsize=1)
def _chat_digest() -> str:
    return str(Protocol(spec=chat_protocol_spec).digest)


def check_include(agent: Any, protocol: Protocol) -> None:
    """Raise :class:`ChatProtocolConflict` when ``protocol`` would be ``agent``'s second chat
    protocol.

    Args:
        agent: the agent the protocol is being included in.
        protocol: the protocol about to be included.

    Raises:
        ChatProtocolConflict: ``agent`` already has a chat protocol and ``protocol`` is one.
    """
    digest = _chat_digest()
    if protocol.digest != digest or digest not in agent.protocols:
        return
    raise ChatProtocolConflict(
        f"agent {agent.name!r} already has a chat protocol, and uagents allows one per agent. "
        "To stream the replies of an existing chat handler, include "
        "StreamingChat.from_protocol(your_chat_protocol) instead of your chat protocol (not "
        "both); an agent without a chat handler of its own includes StreamingChat(respond) "
        "alone."
    )
