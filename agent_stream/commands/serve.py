"""`agent-stream serve`: run the streaming LLM agent (local by default, or on a Fetch network)."""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import warnings
from typing import Any

from agent_stream.commands._args import gather_window, port, rate, seed_refused
from agent_stream.errors import StreamError
from agent_stream.seeds import WeakSeedWarning

SEED_ENV = "AGENT_STREAM_SEED"

EPILOG = """examples:
  agent-stream serve                                   replay model, 127.0.0.1:8000, throwaway seed
  AGENT_STREAM_SEED=... agent-stream serve --port 8001 --rate 0
  agent-stream serve --model openai --base-url http://127.0.0.1:11434/v1 --model-name llama3.2
  agent-stream serve --sessions sqlite:chats.db        conversations survive a restart
  agent-stream serve --network testnet --mailbox       Almanac + Agentverse mailbox (needs internet)
  agent-stream serve --port 8001 --fleet redis://127.0.0.1:6379/0 --endpoint http://127.0.0.1:8000/submit
                                                       one replica of a fleet behind a load balancer

Local mode (the default) needs no internet: the agent registers nowhere and finds peers from
--peer entries and the local directory of running agents ($AGENT_STREAM_DIRECTORY, else
agents.json in <tmp>/agent-stream-<user>/), where it also lists itself while it runs.
The seed comes from --seed or $AGENT_STREAM_SEED; never put it in a repository.
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` command.

    Args:
        sub: the ``agent-stream`` subcommands.
    """
    p = sub.add_parser(
        "serve",
        help="run the streaming LLM agent (replay model by default: no key, no network)",
        description="Run the streaming LLM agent: answers any chat-protocol peer it can resolve, "
        "streaming thinking, tool calls and the answer. Prints its name, address and endpoint.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--port", type=port, default=8000, help="HTTP port (default: %(default)s)")
    p.add_argument(
        "--seed",
        default=None,
        help=f"the agent's seed (default: ${SEED_ENV}, else a throwaway one)",
    )
    p.add_argument(
        "--peer",
        action="append",
        default=[],
        metavar="ADDRESS=URL",
        help="a peer's endpoint (repeatable)",
    )
    p.add_argument(
        "--model",
        choices=("replay", "openai"),
        default=None,
        help="model source (default: replay, a bundled stand-in for a model)",
    )
    p.add_argument(
        "--app",
        default=None,
        metavar="MODULE:ATTR",
        help="serve an agent built on a framework instead of a model: a LangGraph "
        "graph, a pydantic-ai or OpenAI Agents SDK Agent, a callable returning a "
        "model stream, or a responder of your own, async def respond(request, out) "
        "(MODULE:ATTR or path/to/file.py:ATTR)",
    )
    p.add_argument(
        "--rate",
        type=rate,
        default=60.0,
        help="replay: tokens per second, 0 = as fast as possible (default: %(default)s)",
    )
    p.add_argument(
        "--base-url",
        default=None,
        help="openai: server URL (default: $OPENAI_BASE_URL); key from $OPENAI_API_KEY",
    )
    p.add_argument("--model-name", default=None, help="openai: model name (default: $OPENAI_MODEL)")
    p.add_argument("--name", default="llm", help="agent name (default: %(default)s)")
    p.add_argument(
        "--reasoning",
        action="store_true",
        help="share the model's reasoning (as metadata) with peers that ask for it",
    )
    p.add_argument(
        "--max-in-flight",
        type=int,
        default=None,
        metavar="N",
        help="flow control: at most N unacknowledged ChatMessages per reply",
    )
    p.add_argument(
        "--max-question-bytes",
        type=int,
        default=64 * 1024,
        metavar="B",
        help="a longer question is answered with an error (default: %(default)s)",
    )
    p.add_argument(
        "--max-replies-per-sender",
        type=int,
        default=4,
        metavar="N",
        help="replies at once to one asker; more get a 'busy' error (default: "
        "%(default)s; raise it for a gateway, which asks for all its users)",
    )
    p.add_argument(
        "--max-replies",
        type=int,
        default=64,
        metavar="N",
        help="replies at once in all; more get a 'busy' error (default: %(default)s)",
    )
    p.add_argument(
        "--trust",
        action="append",
        default=[],
        metavar="ADDRESS[=N]",
        help="a peer asking for many users (a gateway): N replies at once for it "
        "(default: --max-replies) and a high envelope rate (repeatable)",
    )
    p.add_argument(
        "--sessions",
        default=None,
        metavar="STORE",
        help="where conversations are kept: memory (default; with --fleet, its Redis), "
        "sqlite:PATH or redis://HOST:PORT/DB (the last two survive a restart)",
    )
    p.add_argument(
        "--fleet",
        default=None,
        metavar="redis://HOST:PORT/DB",
        help="serve this address with other replicas (same seed, behind a load balancer), "
        "sharing question claims, replay buffers and cancel/resend routing in this Redis",
    )
    p.add_argument(
        "--endpoint",
        default=None,
        metavar="URL",
        help="the endpoint to advertise (the load balancer's, for a fleet) instead of this "
        "process's own",
    )
    p.add_argument(
        "--lean-gather",
        type=gather_window,
        default=None,
        metavar="SECONDS",
        help="to agent_stream askers: how long released text may wait to go with later text "
        "in one ChatMessage, fewer and fuller envelopes (a message's first text never waits; "
        "0: each chunk as released; default: 1.75)",
    )
    p.add_argument(
        "--network",
        choices=("local", "testnet", "mainnet"),
        default="local",
        help="local (default: no internet) or a Fetch network (Almanac registration)",
    )
    p.add_argument(
        "--mailbox", action="store_true", help="networked: receive through an Agentverse mailbox"
    )
    p.add_argument(
        "--no-directory",
        action="store_true",
        help="local: neither list this agent in nor resolve peers from the directory",
    )
    p.add_argument(
        "--metrics-port",
        default=None,
        metavar="[HOST:]PORT",
        help="serve GET /metrics (Prometheus text format) on this port "
        "(host 127.0.0.1 unless given)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="uagents logs at INFO")
    p.set_defaults(func=run)


def seed_from(args: argparse.Namespace) -> tuple[str, bool]:
    """(seed, throwaway?): --seed, else $AGENT_STREAM_SEED, else a random one.

    Args:
        args: the parsed command line.
    """
    seed = args.seed or os.environ.get(SEED_ENV)
    if seed:
        return seed, False
    return secrets.token_hex(32), True


def make_model(args: argparse.Namespace) -> Any:
    """The model source the options ask for (openai is imported only when chosen).

    Args:
        args: the parsed command line.
    """
    from agent_stream.sources import make_source

    if args.model == "openai":  # None: replay, the default
        return make_source("openai", base_url=args.base_url, model=args.model_name)
    return make_source("replay", rate=args.rate)


def build(args: argparse.Namespace, seed: str) -> tuple[Any, Any, str]:
    """(agent, chat protocol, endpoint description) as the options say; nothing is started.

    Args:
        args: the parsed command line.
        seed: the agent's seed.
    """
    import dataclasses
    import logging

    from agent_stream.uagents import (
        ChatSettings,
        LocalDirectory,
        StreamingChat,
        endpoint_for,
        local_agent,
        network_agent,
        open_store,
        parse_peers,
        protect,
    )

    respond: Any
    if getattr(args, "app_object", None) is not None:
        from agent_stream.sources import responder_for

        respond = responder_for(args.app_object)
    else:
        model = make_model(args)
        takes_history = accepts_history(model)

        async def respond(request: Any, out: Any) -> None:
            if takes_history:
                await model(request.text, out, history=request.history)
            else:
                await model(request.text, out)

    if args.max_question_bytes < 1:
        raise ValueError("--max-question-bytes must be at least 1")
    if args.max_replies_per_sender < 1:
        raise ValueError("--max-replies-per-sender must be at least 1")
    if args.max_replies < 1:
        raise ValueError("--max-replies must be at least 1")
    trusted = parse_trust(args.trust, args.max_replies)
    settings = (
        ChatSettings()
        .with_pump(max_in_flight=args.max_in_flight)
        .with_caps(
            max_question_bytes=args.max_question_bytes,
            max_replies_per_sender=args.max_replies_per_sender,
            max_replies=args.max_replies,
            trusted=trusted,
        )
    )
    if trusted:  # their envelopes (acknowledgements, one per ChatMessage) at a gateway's rate
        settings = dataclasses.replace(
            settings,
            protection=dataclasses.replace(
                settings.protection,
                guard=dataclasses.replace(
                    settings.protection.guard, trusted_senders=frozenset(trusted)
                ),
            ),
        )
    fleet_url = getattr(args, "fleet", None)
    advertised = getattr(args, "endpoint", None)
    fleet = None
    if fleet_url:
        from agent_stream.uagents import Fleet

        fleet = Fleet(fleet_url, policy=settings.delivery)
    spec = getattr(args, "sessions", None) or fleet_url or "memory"
    store = open_store(spec, settings.sessions)
    from agent_stream.adapters.chat import LEAN_GATHER

    gather = getattr(args, "lean_gather", None)
    chat = StreamingChat(
        respond,
        channels={"reasoning"} if args.reasoning else None,
        settings=settings,
        lean_gather=LEAN_GATHER if gather is None else gather,
        sessions=store,
        fleet=fleet,
    )
    level = logging.INFO if args.verbose else logging.WARNING
    if args.network == "local":
        if args.mailbox:
            raise ValueError("--mailbox needs --network testnet or mainnet")
        directory = None if args.no_directory else LocalDirectory()
        if directory is not None:
            directory.check()  # refused (DirectoryError) before anything starts
        agent = local_agent(
            seed,
            args.port,
            name=args.name,
            peers=parse_peers(args.peer),
            directory=directory,
            log_level=level,
            advertise=advertised,
        )
        where = endpoint_for(args.port)
    else:
        agent = network_agent(
            seed,
            network=args.network,
            mailbox=args.mailbox,
            port=args.port,
            endpoint=advertised,
            name=args.name,
            log_level=level,
        )
        where = "Agentverse mailbox" if args.mailbox else f"port {args.port} (Almanac)"
    protect(agent, settings.protection)  # the limits of this command's options
    if fleet is not None:  # replicas share the address, so uagents' storage file: not theirs
        from agent_stream.uagents.fleet import use_replica_storage

        use_replica_storage(agent, str(args.port))
    agent.include(chat, publish_manifest=True)
    if fleet is not None:  # heartbeat and forwarding from the start, not the first message
        agent.on_event("startup")(chat.join)
    return agent, chat, where


def fleet_problem(url: str | None, endpoint: str | None) -> str | None:
    """What is wrong with ``--fleet`` / ``--endpoint``, before anything starts (None: nothing).

    Args:
        url: the ``--fleet`` value (None: not given).
        endpoint: the ``--endpoint`` value (None: not given).
    """
    if url is not None and not url.startswith(("redis://", "rediss://", "unix://")):
        return f"--fleet {url}: expected redis://HOST:PORT/DB"
    if endpoint is not None and not endpoint.startswith(("http://", "https://")):
        return f"--endpoint {endpoint}: expected an http(s) URL"
    return None


def sessions_problem(spec: str | None) -> str | None:
    """What is wrong with a ``--sessions`` value, before anything starts (None: nothing).

    Args:
        spec: the value (None: not given).
    """
    from pathlib import Path

    if spec is None or spec == "memory" or spec.startswith(("redis://", "rediss://", "unix://")):
        return None
    if spec.startswith("sqlite:"):
        path = spec[len("sqlite:") :]
        if not path:
            return "sqlite:PATH needs a file path"
        parent = Path(path).expanduser().resolve().parent
        return None if parent.is_dir() else f"directory {parent} does not exist"
    return "unknown session store: expected memory, sqlite:PATH or redis://HOST:PORT/DB"


def accepts_history(model: Any) -> bool:
    """Whether the model source takes the conversation's turns (a keyword ``history``).

    Args:
        model: the model source, a callable.
    """
    import inspect

    try:
        params = inspect.signature(model).parameters
    except (TypeError, ValueError):
        return False
    return "history" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


def parse_trust(specs: list[str], default: int) -> dict[str, int]:
    """``{address: replies at once}`` from ``--trust ADDRESS[=N]`` values.

    Args:
        specs: the values.
        default: the replies at once of an address given without ``=N``.

    Raises:
        ValueError: a value is not an agent address, or its N is not a positive integer.
    """
    from uagents_core.identity import is_valid_address

    trusted: dict[str, int] = {}
    for spec in specs:
        address, sep, count = spec.partition("=")
        address = address.strip()
        if not is_valid_address(address) or address.startswith("user"):
            raise ValueError(f"--trust {spec!r}: {address!r} is not an agent address")
        if not sep:
            trusted[address] = default
            continue
        if not count.strip().isdigit() or int(count) < 1:
            raise ValueError(f"--trust {spec!r}: N must be a positive integer")
        trusted[address] = int(count)
    return trusted


def name_taken(name: str, me: str | None = None) -> str | None:
    """What to say when another running agent of the directory answers to a name, else None.

    ``ask NAME`` is then refused as ambiguous.

    Args:
        name: the agent's name.
        me: this agent's address (a replica of the same fleet is not another agent).
    """
    from agent_stream.uagents import DirectoryError, LocalDirectory

    try:
        others = [(a, e) for a, e in LocalDirectory().named(name) if a != me]
    except DirectoryError:
        return None  # build() says why the directory is refused
    if not others:
        return None
    address, endpoint = others[0]
    return (
        f"an agent named {name!r} is already running ({address} at {endpoint}); "
        f"`ask {name}` is refused while both run: ask by address, or choose another --name"
    )


def run(args: argparse.Namespace) -> int:
    """Run ``agent-stream serve``.

    Args:
        args: the parsed command line.

    Returns:
        The exit status.
    """
    from agent_stream.uagents.local._agents import PortInUse, port_free, serve_agent

    args.app_object = None
    if args.app is not None:
        if args.model is not None:
            print(
                "agent-stream serve: --app serves the given agent; it cannot be given with --model",
                file=sys.stderr,
            )
            return 2
        from agent_stream.commands.app_loader import AppLoadError, load_app

        try:
            args.app_object = load_app(args.app)
        except AppLoadError as exc:
            print(f"agent-stream serve: {exc}", file=sys.stderr)
            return 2
    problem = sessions_problem(args.sessions)
    if problem is not None:
        print(f"agent-stream serve: --sessions {args.sessions}: {problem}", file=sys.stderr)
        return 2
    problem = fleet_problem(args.fleet, args.endpoint)
    if problem is not None:
        print(f"agent-stream serve: {problem}", file=sys.stderr)
        return 2
    if args.network == "local" and not port_free(args.port):
        print(
            f"agent-stream serve: port {args.port} on 127.0.0.1 is in use (--port P)",
            file=sys.stderr,
        )
        return 2
    seed, throwaway = seed_from(args)
    if throwaway:
        print(
            f"note: no seed given (--seed or ${SEED_ENV}); using a throwaway seed, so the "
            "address changes every run",
            file=sys.stderr,
            flush=True,
        )
    elif seed_refused("serve", seed, network=args.network != "local"):
        return 2
    if args.network == "local" and not args.no_directory:
        from uagents_core.identity import Identity

        taken = name_taken(args.name, str(Identity.from_seed(seed, 0).address))
        if taken is not None:
            print(f"agent-stream serve: warning: {taken}", file=sys.stderr, flush=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", WeakSeedWarning)  # said above, once
            agent, _chat, where = build(args, seed)
    except (ValueError, RuntimeError, StreamError, PermissionError, ImportError) as exc:
        print(f"agent-stream serve: {exc}", file=sys.stderr)
        return 2
    if args.app_object is not None:
        from agent_stream.sources.detect import describe

        model = f"{args.app} ({describe(args.app_object)})"
    elif args.model == "openai":
        model = f"openai ({args.model_name or 'default model'})"
    else:
        model = f"replay ({args.rate:g} tokens/s)" if args.rate else "replay (as fast as possible)"
    print(f"name: {args.name}", flush=True)
    print(f"address: {agent.address}", flush=True)
    print(f"endpoint: {where}", flush=True)
    if args.endpoint:
        print(f"advertised: {args.endpoint}", flush=True)
    if _chat.fleet is not None:
        print(f"replica: {_chat.fleet.replica}", flush=True)
    print(f"model: {model}", flush=True)
    if args.network == "local":
        reach = args.endpoint or where
        how = f"{args.name}" if not args.no_directory else f"{agent.address} --endpoint {reach}"
        print(f'ask it:  agent-stream ask {how} "your question"', file=sys.stderr, flush=True)
    if args.metrics_port is not None:
        from agent_stream.telemetry.http import parse_metrics_address, serve_metrics

        try:
            host, mport = parse_metrics_address(args.metrics_port)
            serve_metrics(host, mport)
        except (ValueError, OSError) as exc:
            print(f"agent-stream serve: --metrics-port: {exc}", file=sys.stderr)
            return 2
        print(f"metrics: http://{host}:{mport}/metrics", file=sys.stderr, flush=True)
    try:
        serve_agent(agent, banner=False)
    except PortInUse as exc:
        print(f"agent-stream serve: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"agent-stream serve: {exc}", file=sys.stderr)
        return 1
    return 0
