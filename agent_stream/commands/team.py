"""A team of local agents that delegate: a planner relaying a researcher and two specialists.

Each member is one process (``python -m agent_stream.commands.team --name NAME --port P ...``)
finding the others by name in the local directory. A member with ``--relay``/``--parallel``
peers is a *relayer*: it streams its plan, relays each ``--relay`` peer's reply in turn and the
``--parallel`` peers' replies at once (threads), each in a block labelled with the peer's name,
then streams a short summary. A member without peers is a *leaf*: the replay model (no key, no
network), or ``--tokens N`` plain answer tokens, or ``--fail-after N`` tokens and then an error.

Every member prints ``address: ...`` and ``endpoint: ...`` when it starts and one line
``STATS {json}`` when each reply it streams ends (peer, status, ChatMessages sent, seconds).
``agent-stream demo --team`` (:func:`agent_stream.commands.demo.run_team`) starts a planner,
a researcher and two specialists, asks the planner one question and renders the reply live.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from agent_stream.commands._args import port, rate, seconds
from agent_stream.relay import RelayError, RelayRefused
from agent_stream.sources.replay import ReplayModel, tokenize
from agent_stream.writer import Scope, StreamWriter

__all__ = ["build_parser", "main", "member_responder"]

FILLER = (
    "Relayed streams keep every token live across hops, and each agent only adds one "
    "send per chunk. "
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m agent_stream.commands.team", description="One member of a local agent team."
    )
    p.add_argument("--name", required=True, help="this agent's name in the local directory")
    p.add_argument("--port", type=port, required=True)
    p.add_argument("--seed", required=True)
    p.add_argument("--rate", type=rate, default=60.0, help="tokens per second (0: at once)")
    p.add_argument(
        "--tokens",
        type=int,
        default=0,
        help="leaf: answer with this many plain tokens instead of the replay model",
    )
    p.add_argument(
        "--fail-after",
        type=int,
        default=None,
        metavar="N",
        help="leaf: raise an error after N answer tokens",
    )
    p.add_argument(
        "--relay",
        action="append",
        default=[],
        metavar="NAME[=QUESTION]",
        help="relay this peer's reply (in turn; repeatable)",
    )
    p.add_argument(
        "--parallel",
        action="append",
        default=[],
        metavar="NAME[=QUESTION]",
        help="relay these peers' replies at once, one thread each (repeatable)",
    )
    p.add_argument("--max-hops", type=int, default=None, help="hop limit of delegations")
    p.add_argument(
        "--sub-timeout", type=seconds, default=60.0, help="seconds to wait for a relayed reply"
    )
    p.add_argument(
        "--sub-idle-timeout",
        type=seconds,
        default=None,
        help="seconds of silence after which a relayed reply is lost (default: the client's)",
    )
    p.add_argument("--no-reasoning", action="store_true", help="never share reasoning")
    return p


def _peer(spec: str) -> tuple[str, str | None]:
    name, sep, question = spec.partition("=")
    return name, (question if sep else None)


async def _stream(m: Any, text: str, rate: float) -> None:
    delay = 1.0 / rate if rate > 0 else 0.0
    for i, token in enumerate(tokenize(text)):
        await m.append(token)
        if delay:
            await asyncio.sleep(delay)
        elif i % 64 == 63:
            await asyncio.sleep(0)


def leaf_model(args: argparse.Namespace) -> Callable[[str, Scope], Awaitable[None]]:
    """The leaf's model: replay, N plain tokens, or an answer that fails after N tokens.

    Args:
        args: the parsed command line (``tokens``, ``fail_after``, ``rate``).
    """
    if not args.tokens and args.fail_after is None:
        return ReplayModel(rate=args.rate)

    async def plain(question: str, out: Scope) -> None:
        n = args.tokens or 10_000
        tokens = tokenize(FILLER * (n // 10 + 1))[:n]
        async with out.block("llm", label="Answer") as b, b.message("text") as m:
            for i, token in enumerate(tokens):
                if args.fail_after is not None and i >= args.fail_after:
                    raise RuntimeError(f"{args.name}: the model failed after {i} tokens")
                await m.append(token)
                if args.rate > 0:
                    await asyncio.sleep(1.0 / args.rate)
                elif i % 64 == 63:
                    await asyncio.sleep(0)

    return plain


_FOUND: dict[str, str] = {}


async def find_agent(name: str) -> str | None:
    """The address of a running local agent (remembered once found; None: not found).

    Args:
        name: the agent's name.
    """
    from agent_stream.uagents import LocalDirectory

    if name in _FOUND:
        return _FOUND[name]
    loop = asyncio.get_running_loop()
    found = await loop.run_in_executor(None, LocalDirectory().find, name)
    if found is not None:
        _FOUND[name] = found[0]
    return found[0] if found else None


def member_responder(args: argparse.Namespace, chat_ref: list[Any]) -> Any:
    """The responder of a team member (a leaf or a relayer, as ``args`` say).

    Args:
        args: the parsed command line.
        chat_ref: holds the member's StreamingChat once it is made.
    """
    from agent_stream.uagents import delegate

    if not args.relay and not args.parallel:
        model = leaf_model(args)

        async def answer(request: Any, out: StreamWriter) -> None:
            await model(request.text, out)

        return answer

    async def ask(scope: Scope, spec: str, request: Any) -> str:
        from agent_stream.uagents import AmbiguousName

        name, question = _peer(spec)
        why = f"no running agent named {name!r}"
        try:
            found = await find_agent(name)
        except AmbiguousName as exc:  # two members of one name: say so, ask neither
            found, why = None, str(exc)

        async def refused() -> Any:
            raise RelayRefused(why, "unknown_agent")

        source = (
            delegate(
                chat_ref[0],
                request,
                found,
                question or request.text,
                max_hops=args.max_hops,
                timeout=args.sub_timeout,
                idle_timeout=args.sub_idle_timeout,
            )
            if found is not None
            else refused()
        )
        try:
            t = await scope.relay(source, label=name.capitalize(), name=name)
        except RelayError as exc:
            if exc.status == "undelivered":
                _FOUND.pop(name, None)  # look it up again next time
            return f"{name} could not answer ({exc.status})"
        words = len(t.text().split())
        return f"{name} answered in {words} words"

    async def plan(request: Any, out: StreamWriter) -> None:
        names = [_peer(s)[0] for s in (*args.relay, *args.parallel)]
        async with out.block("llm", label="Plan") as b, b.message("thinking") as m:
            await _stream(
                m, f"I will ask {', '.join(names)} and put their answers together.", args.rate
            )
        notes = [await ask(out, spec, request) for spec in args.relay]
        if args.parallel:
            fns = [lambda t, s=spec: ask(t, s, request) for spec in args.parallel]
            notes += await out.parallel(*fns, labels=[_peer(s)[0] for s in args.parallel])
        async with out.block("llm", label="Summary") as b, b.message("text") as m:
            await _stream(m, "Summary: " + "; ".join(notes) + ".", args.rate)

    return plan


def main(argv: list[str] | None = None) -> int:
    """Run one team member until it is stopped.

    Args:
        argv: the command line without the program name (None: ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    args = build_parser().parse_args(argv)
    from agent_stream.uagents import (
        ReplyStats,
        StreamingChat,
        endpoint_for,
        local_agent,
        run_agent,
    )

    def stats(s: ReplyStats) -> None:
        print(
            "STATS "
            + json.dumps(
                {
                    "agent": args.name,
                    "peer": s.peer,
                    "status": s.status,
                    "chat_messages": s.chat_messages,
                    "seconds": round(s.duration, 4),
                }
            ),
            flush=True,
        )

    chat_ref: list[Any] = []
    chat = StreamingChat(
        member_responder(args, chat_ref),
        channels=None if args.no_reasoning else {"reasoning"},
        on_reply_end=stats,
    )
    chat_ref.append(chat)
    agent = local_agent(args.seed, args.port, name=args.name)
    agent.include(chat, publish_manifest=True)
    print(f"address: {agent.address}", flush=True)
    print(f"endpoint: {endpoint_for(args.port)}", flush=True)
    run_agent(agent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
