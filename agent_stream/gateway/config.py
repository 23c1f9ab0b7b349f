"""The gateway's settings, and the safety rules checked before anything starts."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field

__all__ = ["KEYS_ENV", "GatewayConfig", "is_loopback"]

KEYS_ENV = "AGENT_STREAM_GATEWAY_KEYS"  # comma-separated API keys, added to --api-key


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only.

    Args:
        host: a host name or IP address.
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class GatewayConfig:
    """Everything ``agent-stream gateway`` is told (defaults are the documented ones).

    Attributes:
        host: the address to bind; other than loopback it needs at least one API key.
        port: the HTTP port.
        agents: the agents clients may reach (``--agent``; empty: every local agent).
        default_agent: what a request naming no agent gets (and the root A2A card).
        api_keys: the keys a client must send as ``Authorization: Bearer KEY``.
        cors_origins: the origins allowed to call the gateway from a browser.
        resume_window: seconds a reply is kept for a client to resume after it ends or
            disconnects.
        resume_store: ``memory`` or a ``redis://`` URL where replies are kept for resume.
        max_body_bytes: a request body's size.
        max_question_bytes: a question's size.
        max_replies_per_key: replies at once per API key (per client address without keys).
        max_replies: replies at once in all.
        reply_timeout: seconds a reply may take in all.
        quiet_timeout: seconds of quiet that end a plain agent's reply (one that does not use
            agent_stream) once its answer began; it also ends at the agent's EndSessionContent.
        max_tasks_per_key: A2A tasks kept per API key (per client address without keys), for
            ``tasks/get`` and follow-ups; past it a new task makes room by forgetting finished
            tasks, least recently used first, and is refused (JSON-RPC -32000) when all are
            working or input-required. Also the MCP sessions one caller may have open at
            ``/mcp`` (past it, an ``initialize`` is refused with HTTP 429).
        max_tasks: A2A tasks kept in all, every agent's and caller's together (the same rule);
            also the MCP sessions open at once at ``/mcp`` (past it, a new one is refused with
            HTTP 503; a session idle for 10 minutes, or the resume window if longer, is closed).
        header_timeout: seconds a client has to send a request's headers, from connecting (or
            from the first byte of a later request on a kept-alive connection); then the
            connection is closed (slow clients, slowloris).
        max_header_connections: connections sending request headers at once; past it, a new
            one closes the one sending them the longest.
        reasoning: whether the agents' reasoning is asked for and passed on.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    agents: list[str] = field(default_factory=list)
    default_agent: str | None = None  # what a request naming no agent gets (and the root card)
    api_keys: list[str] = field(default_factory=list)
    cors_origins: list[str] = field(default_factory=list)
    resume_window: float = 60.0
    resume_store: str = "memory"
    max_body_bytes: int = 1 << 20
    max_question_bytes: int = 64 * 1024
    max_replies_per_key: int = 8
    max_replies: int = 256
    reply_timeout: float = 300.0
    quiet_timeout: float = 10.0
    max_tasks_per_key: int = 128
    max_tasks: int = 2048
    header_timeout: float = 5.0
    max_header_connections: int = 256
    reasoning: bool = True

    def keys(self) -> list[str]:
        """--api-key values and those of $AGENT_STREAM_GATEWAY_KEYS."""
        env = [k.strip() for k in os.environ.get(KEYS_ENV, "").split(",") if k.strip()]
        return [*self.api_keys, *env]

    def check(self) -> None:
        """Check that the settings are safe and possible.

        Raises:
            ValueError: they are not (the message says which and why).
        """
        if not is_loopback(self.host) and not self.keys():
            raise ValueError(
                f"binding {self.host} serves other machines: give at least one "
                f"--api-key (or ${KEYS_ENV}); without keys the gateway binds "
                "127.0.0.1 only"
            )
        if "*" in self.cors_origins:
            raise ValueError(
                "--cors-origin '*' is refused: list the origins that may call the gateway"
            )
        if self.resume_window <= 0:
            raise ValueError("--resume-window must be positive")
        if not self.header_timeout > 0:
            raise ValueError("--header-timeout must be positive")
        if not self.quiet_timeout > 0:
            raise ValueError("--quiet-timeout must be positive")
        if not (
            self.resume_store == "memory"
            or self.resume_store.startswith(("redis://", "rediss://", "unix://"))
        ):
            raise ValueError("--resume-store: 'memory' or a redis:// URL")
        for name in (
            "max_body_bytes",
            "max_question_bytes",
            "max_replies_per_key",
            "max_replies",
            "max_tasks_per_key",
            "max_tasks",
            "max_header_connections",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
