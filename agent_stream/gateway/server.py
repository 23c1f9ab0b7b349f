"""Running the gateway: one process, one event loop, a uAgent client identity and an HTTP server.

The uAgent (agent_stream's :class:`~agent_stream.uagents.StreamingChat`, no responder) asks the
agents and listens for their replies on its own loopback endpoint; it lists itself in the local
directory as ``gateway`` so local agents can answer it. The HTTP server is uvicorn serving the
Starlette app, started from the agent's startup on the same loop; Ctrl-C / SIGTERM stop the HTTP
server first (open replies cancelled), then the agent.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import sys
from typing import Any

from agent_stream.gateway.config import GatewayConfig
from agent_stream.gateway.store import MemoryStore, ResumeStore

__all__ = ["GATEWAY_NAME", "make_store", "port_available", "run_gateway"]

GATEWAY_NAME = "gateway"


def make_store(config: GatewayConfig) -> ResumeStore:
    """The resume store ``--resume-store`` names.

    Args:
        config: the gateway's settings (``resume_store``, ``resume_window``).
    """
    if config.resume_store == "memory":
        return MemoryStore()
    from agent_stream.gateway.redis_store import RedisStore

    return RedisStore(config.resume_store, window=config.resume_window)


def port_available(host: str, port: int) -> bool:
    """Whether ``host:port`` can be listened on now.

    Args:
        host: the host to bind.
        port: the port.
    """
    from agent_stream.uagents.local._agents import port_free

    return port_free(port, host)


def _access_logging() -> None:
    log = logging.getLogger("agent_stream.gateway.access")
    if not log.handlers:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(asctime)s gateway: %(message)s"))
        log.addHandler(h)
    log.setLevel(logging.INFO)
    log.propagate = False


def run_gateway(
    config: GatewayConfig, *, agent_port: int = 0, seed: str | None = None, verbose: bool = False
) -> int:
    """Run until Ctrl-C / SIGTERM. Returns the exit status.

    Args:
        config: the gateway's settings.
        agent_port: the port of the gateway's own agent (0: a free one).
        seed: the seed of the gateway's agent (None: a random one, a new address each run).
        verbose: log at INFO rather than WARNING.
    """
    import uvicorn

    from agent_stream._header_timeout import protocol_class
    from agent_stream.gateway.app import Gateway, build_app
    from agent_stream.gateway.link import Agents, ChatLink, parse_agent_spec
    from agent_stream.uagents import (
        LocalDirectory,
        StreamingChat,
        free_port,
        local_agent,
        run_agent,
    )

    config.check()
    specs = [parse_agent_spec(s) for s in config.agents]
    directory = LocalDirectory()
    agents = Agents(specs, directory)
    chat = StreamingChat()
    level = logging.INFO if verbose else logging.WARNING
    agent = local_agent(
        seed or secrets.token_hex(32),
        agent_port or free_port(),
        name=GATEWAY_NAME,
        peers=agents.static_peers,
        directory=directory,
        log_level=level,
    )
    agents.exclude = agent.address
    agent.include(chat, publish_manifest=True)
    store = make_store(config)
    _access_logging()

    async def main(ctx: Any) -> int:
        gw = Gateway(config, agents, ChatLink(chat, agent, config.quiet_timeout), store)
        app = build_app(gw)
        server = uvicorn.Server(
            uvicorn.Config(
                app,
                host=config.host,
                port=config.port,
                log_config=None,
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=3,
                log_level=level,
                http=protocol_class(config.header_timeout, config.max_header_connections),
            )
        )

        async def announce() -> None:
            while not server.started and not server.should_exit:
                await asyncio.sleep(0.02)
            if server.started:
                host = f"[{config.host}]" if ":" in config.host else config.host
                print(f"gateway: http://{host}:{config.port}/", flush=True)
                print(f"agent: {agent.address}", flush=True)

        shout = asyncio.create_task(announce())
        cancels = asyncio.create_task(gw.runs.follow_cancels())
        try:
            await server.serve()
        finally:
            shout.cancel()
            cancels.cancel()
            await gw.close()
            await store.close()
        return 0 if server.started else 1

    result = run_agent(agent, main)
    return int(result) if result is not None else 0
