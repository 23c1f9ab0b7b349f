"""`agent-stream gateway`: serve agents to OpenAI, AG-UI, AI SDK and A2A clients and a browser."""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from agent_stream.commands._args import any_port, port, seconds, seed_refused
from agent_stream.errors import MissingDependency
from agent_stream.seeds import WeakSeedWarning

SEED_ENV = "AGENT_STREAM_GATEWAY_SEED"

EPILOG = """endpoints:
  POST /v1/chat/completions   OpenAI (stream true/false)     GET /v1/models
  POST /agui                  AG-UI RunAgentInput -> events (SSE)
  POST /api/chat              AI SDK UI message stream        GET /api/chat/{id}/stream (resume)
  POST /a2a/{agent}           A2A JSON-RPC (card: /a2a/{agent}/.well-known/agent-card.json;
                              /.well-known/agent-card.json: the default or only agent's)
  GET|POST /v1/stream         native Messages (SSE or JSONL; ?accept= picks another wire)
  DELETE /v1/replies/{id}     stop a reply                    GET /healthz     GET /  (the page)

examples:
  agent-stream gateway                                  every local agent, http://127.0.0.1:8080/
  agent-stream gateway --agent llm --port 9000
  agent-stream gateway --host 0.0.0.0 --api-key "$KEY" --cors-origin https://app.example.com

Safe by default: binds 127.0.0.1; another host needs at least one --api-key (or
$AGENT_STREAM_GATEWAY_KEYS, comma-separated), then every endpoint but /, /static and /healthz
wants `Authorization: Bearer KEY`. CORS only for the --cors-origin origins. A client that
reconnects with Last-Event-ID within --resume-window seconds gets what it missed; a dropped
connection does not stop the reply until that window has passed. A reply and an A2A task are
their caller's (key, or client address without keys): to anyone else they do not exist.
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``gateway`` command.

    Args:
        sub: the ``agent-stream`` subcommands.
    """
    p = sub.add_parser(
        "gateway",
        help="serve agents over HTTP to OpenAI, AG-UI, AI SDK and A2A clients and a web page",
        description="One process that asks agents over the chat protocol (as a local uAgent "
        "client) and streams each reply to HTTP clients in their own format, with resume.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="HTTP address (default: %(default)s)")
    p.add_argument("--port", type=port, default=8080, help="HTTP port (default: %(default)s)")
    p.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="NAME|ADDRESS[=ENDPOINT]",
        help="an agent clients may reach (repeatable; default: every agent in the local directory)",
    )
    p.add_argument(
        "--default-agent",
        default=None,
        metavar="NAME|ADDRESS",
        help="the agent a request naming none gets, whose A2A card is also at "
        "/.well-known/agent-card.json (default: the first; the root card only "
        "when there is one agent)",
    )
    p.add_argument(
        "--api-key",
        action="append",
        default=[],
        metavar="KEY",
        help="an accepted API key (repeatable; also $AGENT_STREAM_GATEWAY_KEYS)",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="an origin browsers may call from (repeatable; default: none)",
    )
    p.add_argument(
        "--resume-window",
        type=seconds,
        default=60.0,
        metavar="S",
        help="seconds a reply stays resumable, and keeps running with no client "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--resume-store",
        default="memory",
        metavar="memory|redis://...",
        help="where resumable replies are kept (default: %(default)s)",
    )
    p.add_argument(
        "--max-body-bytes",
        type=int,
        default=1 << 20,
        metavar="B",
        help="request body cap (default: %(default)s)",
    )
    p.add_argument(
        "--max-question-bytes",
        type=int,
        default=64 * 1024,
        metavar="B",
        help="question cap (default: %(default)s)",
    )
    p.add_argument(
        "--max-replies-per-key",
        type=int,
        default=8,
        metavar="N",
        help="replies at once per API key, or per client address without keys "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--max-replies",
        type=int,
        default=256,
        metavar="N",
        help="replies at once in all (default: %(default)s)",
    )
    p.add_argument(
        "--max-tasks-per-key",
        type=int,
        default=128,
        metavar="N",
        help="A2A tasks kept per API key, or per client address without keys: past it, "
        "finished tasks are forgotten, least recently used first, and a new task is refused "
        "while all are open (default: %(default)s)",
    )
    p.add_argument(
        "--max-tasks",
        type=int,
        default=2048,
        metavar="N",
        help="A2A tasks kept in all, the same way (default: %(default)s)",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        default=300.0,
        metavar="S",
        help="seconds a reply may take (default: %(default)s)",
    )
    p.add_argument(
        "--quiet-timeout",
        type=seconds,
        default=10.0,
        metavar="S",
        help="end a plain agent's reply once nothing has arrived for S seconds after its "
        "answer began (it also ends at the agent's EndSessionContent; default: %(default)s)",
    )
    p.add_argument(
        "--header-timeout",
        type=seconds,
        default=5.0,
        metavar="S",
        help="seconds a client has to send a request's headers; a slower one is cut off "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--max-header-connections",
        type=int,
        default=256,
        metavar="N",
        help="connections sending request headers at once; past it, the one sending them "
        "the longest is closed (default: %(default)s)",
    )
    p.add_argument(
        "--no-reasoning", action="store_true", help="do not ask agents for their reasoning"
    )
    p.add_argument(
        "--agent-port",
        type=any_port,
        default=0,
        metavar="P",
        help="the gateway uAgent's own port on 127.0.0.1 (default: a free one)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="uagents and uvicorn logs")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``agent-stream gateway``.

    Args:
        args: the parsed command line.

    Returns:
        The exit status.
    """
    seed = os.environ.get(SEED_ENV)
    if seed:
        seed_refused("gateway", seed)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401

        from agent_stream.gateway.config import GatewayConfig
        from agent_stream.gateway.server import port_available, run_gateway
    except (ImportError, MissingDependency) as exc:
        print(
            f"agent-stream gateway: {exc}; the gateway needs its extra: pip install "
            "'agent-stream[gateway]'",
            file=sys.stderr,
        )
        return 2
    config = GatewayConfig(
        host=args.host,
        port=args.port,
        agents=list(args.agent),
        default_agent=args.default_agent or None,
        api_keys=list(args.api_key),
        cors_origins=list(args.cors_origin),
        resume_window=args.resume_window,
        resume_store=args.resume_store,
        max_body_bytes=args.max_body_bytes,
        max_question_bytes=args.max_question_bytes,
        max_replies_per_key=args.max_replies_per_key,
        max_replies=args.max_replies,
        max_tasks_per_key=args.max_tasks_per_key,
        max_tasks=args.max_tasks,
        reply_timeout=args.timeout,
        quiet_timeout=args.quiet_timeout,
        header_timeout=args.header_timeout,
        max_header_connections=args.max_header_connections,
        reasoning=not args.no_reasoning,
    )
    try:
        config.check()
        from agent_stream.gateway.link import parse_agent_spec

        for spec in config.agents:
            parse_agent_spec(spec)
    except ValueError as exc:
        print(f"agent-stream gateway: {exc}", file=sys.stderr)
        return 2
    if not port_available(config.host, config.port):
        print(
            f"agent-stream gateway: {config.host}:{config.port} is in use (--port P)",
            file=sys.stderr,
        )
        return 2
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", WeakSeedWarning)  # said above, once
            return run_gateway(config, agent_port=args.agent_port, seed=seed, verbose=args.verbose)
    except OSError as exc:
        print(f"agent-stream gateway: {exc}", file=sys.stderr)
        return 1
