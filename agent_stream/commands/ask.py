"""`agent-stream ask`: ask a chat-protocol agent one question and render the reply live."""

from __future__ import annotations

import argparse
import ast
import logging
import re
import secrets
import sys
import time
import uuid
import warnings
from typing import Any

from agent_stream.commands._args import client_args, quiet_timeout_arg, seconds, seed_refused
from agent_stream.commands._identity import SeedError, client_seed, session_id
from agent_stream.seeds import WeakSeedWarning

EPILOG = """examples:
  agent-stream ask agent1q... --endpoint http://127.0.0.1:8000/submit "How do agents stream?"
  agent-stream ask llm "How do agents stream?"        a local agent found in the directory
  agent-stream ask agent1q... --endpoint URL --json "question" > transcript.json
  agent-stream ask llm --session 3f0c...-... "and in Celsius?"   continue a conversation

A conversation is remembered per (asker, session): ask and chat ask as one persistent client
identity by default (a private seed made on first use, kept in client/seed beside the local
directory; --seed overrides), and --json / -v show the session id to continue with --session.

Exit status: 0 when the reply completed whole; 1 when it did not (error, cancelled, timeout,
lost: the responder went silent for --idle-timeout, ChatMessages missing after --gap-timeout)
or could not be delivered; 2 for bad arguments (unknown address or name, a name two running
agents share, busy port, a duration not above 0); 130 after Ctrl-C / SIGTERM (the responder is
told to stop; ask waits up to 2 s for it to confirm). On a terminal the reply is drawn as
markdown, wrapped to its width; piped, it is plain text.
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``ask`` command.

    Args:
        sub: the ``agent-stream`` subcommands.
    """
    p = sub.add_parser(
        "ask",
        help="ask an agent one question and render its reply as it streams",
        description="Send one question over the Agent Chat Protocol from a local client agent "
        "and render the reply live (blocks as sections, threads labelled, reasoning dimmed, "
        "tool calls as status lines, text as it streams).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "address",
        metavar="ADDRESS",
        help="the agent's address (or the name of a local agent in the directory)",
    )
    p.add_argument("question", help="the question")
    client_args(p)
    p.add_argument(
        "--session",
        type=session_arg,
        default=None,
        metavar="UUID",
        help="continue this conversation (an id the agent has not seen starts a new "
        "one; default: a new session)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the assembled Transcript (the `assemble` JSON) instead",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        default=120.0,
        help="seconds to wait for the whole reply (default: %(default)s)",
    )
    p.add_argument(
        "--idle-timeout",
        type=seconds,
        default=15.0,
        metavar="S",
        help="end the reply as lost when nothing (not even a keepalive) arrives for "
        "S seconds (default: %(default)s)",
    )
    p.add_argument(
        "--gap-timeout",
        type=seconds,
        default=None,
        metavar="S",
        help="give up a ChatMessage lost on the way (asked for again meanwhile) after S "
        "seconds: the reply goes on without it and does not complete (default: 20, the "
        "delivery budget)",
    )
    quiet_timeout_arg(p)
    p.add_argument(
        "--plain",
        action="store_true",
        help="send a plain question (no agent_stream metadata), as a Fetch.ai chat client "
        "does; an agent that answered plainly before is asked plainly anyway",
    )
    p.add_argument(
        "--no-reasoning", action="store_true", help="do not ask for the model's reasoning"
    )
    p.add_argument(
        "--no-directory",
        action="store_true",
        help="do not use the local directory (the agent must know this client by --peer)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="uagents logs at INFO, and the reply's delivery figures",
    )
    p.set_defaults(func=run)


WITHHELD_NOTE = (
    "(the agent withheld its reasoning: it shares reasoning only when it allows it, "
    "e.g. serve --reasoning)"
)


def session_arg(text: str) -> uuid.UUID:
    """``--session``: a UUID4, refused by argparse otherwise.

    Args:
        text: the option's value.

    Raises:
        argparse.ArgumentTypeError: it is not a UUID4.
    """
    try:
        return session_id(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def choose_seed(command: str, seed: str | None) -> str | None:
    """The client seed.

    ``seed`` (``--seed``, warned about by the caller), else this user's client identity, else
    (when another running client uses that identity) a throwaway one, with a note on stderr.
    None when the stored one cannot be used (said on stderr): exit 2.

    Args:
        command: the command's name, for the messages.
        seed: the ``--seed`` value (None: not given).
    """
    if seed:
        return seed
    try:
        mine = client_seed()
    except (SeedError, OSError) as exc:
        print(f"agent-stream {command}: {exc}", file=sys.stderr)
        return None
    if identity_busy(mine):
        print(
            f"note: this user's client identity is in use by another running client; "
            f"{command} asks as a throwaway one (its conversations start afresh)",
            file=sys.stderr,
            flush=True,
        )
        return secrets.token_hex(32)
    return mine


def identity_busy(seed: str) -> bool:
    """Whether another running process is listed in the local directory at a seed's address.

    Two clients at one address would get each other's replies.

    Args:
        seed: the client seed.
    """
    import os

    from uagents_core.identity import Identity

    from agent_stream.uagents import DirectoryError, LocalDirectory

    address = Identity.from_seed(seed, 0).address
    try:
        entry = LocalDirectory().entry(address)
    except (DirectoryError, OSError, ValueError):
        return False
    return entry is not None and entry.get("pid") != os.getpid()


def note_withheld(renderer: Any, reply: Any) -> None:
    """One dim line after the reply when the agent withheld a channel asked for.

    Args:
        renderer: what drew the reply.
        reply: the Reply.
    """
    if reply.transcript.withheld:
        from rich.text import Text

        renderer.console.print(Text(WITHHELD_NOTE, style="dim"))


def resolve_target(address: str, endpoint: str | None, use_directory: bool) -> tuple[str, str]:
    """(address, endpoint) of the agent to ask.

    Args:
        address: the agent's address or, with the directory, its name.
        endpoint: its endpoint (None: found in the local directory).
        use_directory: look it up in the local directory.

    Raises:
        ValueError: it cannot be found.
    """
    from uagents_core.identity import parse_identifier

    from agent_stream.uagents import AmbiguousName, DirectoryError, LocalDirectory

    _, _, bare = parse_identifier(address)
    if endpoint:
        if not bare:
            raise ValueError(f"{address!r} is not an agent address")
        return bare, endpoint
    if use_directory:
        try:
            found = LocalDirectory().find(address)
        except (DirectoryError, AmbiguousName) as exc:
            raise ValueError(str(exc)) from exc
        if found is not None:
            return found
    raise ValueError(
        f"no endpoint for {address!r}: give --endpoint URL (no running local "
        "agent by that address or name answers)"
    )


def client_setup(command: str, args: argparse.Namespace) -> tuple[str, str, int, str] | None:
    """The asking client's (agent address, agent endpoint, client port, client seed), from the
    options :func:`~agent_stream.commands._args.client_args` adds and ``address``; None when one
    is refused (said on stderr): exit 2.

    Args:
        command: the command's name, for the messages.
        args: the parsed command line.
    """
    from agent_stream.uagents.local._agents import free_port, port_free

    if args.seed:
        seed_refused(command, args.seed)
    try:
        target, endpoint = resolve_target(args.address, args.endpoint, not args.no_directory)
    except ValueError as exc:
        print(f"agent-stream {command}: {exc}", file=sys.stderr)
        return None
    port = args.port or free_port()
    if not port_free(port):
        print(f"agent-stream {command}: port {port} is in use", file=sys.stderr)
        return None
    seed = choose_seed(command, args.seed)
    if seed is None:
        return None
    return target, endpoint, port, seed


def ask_once(
    *,
    target: str,
    endpoint: str,
    question: str,
    port: int,
    seed: str,
    reasoning: bool,
    timeout: float,
    use_directory: bool,
    on_message: Any = None,
    verbose: bool = False,
    idle_timeout: float | None = None,
    session: uuid.UUID | None = None,
    gap_timeout: float | None = None,
    quiet_timeout: float = 10.0,
    plain: bool = False,
) -> Any:
    """Run a client agent until the reply to ``question`` is over; returns the Reply.

    The question goes in envelope session ``session`` (default: a new one; the Reply's
    ``session``). Ctrl-C / SIGTERM once the question is delivered cancels the reply (the
    responder is told) and the Reply is returned with ``interrupted`` set.

    Args:
        target: the address of the agent asked.
        endpoint: its endpoint.
        question: the question.
        port: the client agent's port.
        seed: the client agent's seed.
        reasoning: ask for the reasoning channel.
        timeout: seconds the whole reply may take.
        use_directory: the client agent finds its peers in the local directory.
        on_message: called with each Message as the reply streams (None: nothing).
        verbose: show uagents' delivery failures as they happen.
        idle_timeout: seconds the reply may stay silent (None: the default).
        session: the envelope session (None: a new one).
        gap_timeout: seconds a missing ChatMessage is waited for (None: the delivery
            policy's ``within``).
        quiet_timeout: seconds of quiet that end a plain agent's reply once its answer began.
        plain: send an untagged question (also when the directory remembers the agent as
            plain); the directory remembers whether the agent answered plainly.

    Raises:
        DeliveryError: the question could not be delivered.
    """
    import asyncio
    import contextlib
    import logging
    import signal

    from agent_stream.adapters.chat import ChatDecoder
    from agent_stream.uagents import DeliveryError, LocalDirectory, StreamingChat, local_agent
    from agent_stream.uagents._compat import context_with_session
    from agent_stream.uagents.local._agents import serve_agent

    chat = StreamingChat()
    interrupted = INTERRUPTED
    directory = LocalDirectory() if use_directory else None
    plain = plain or (directory is not None and directory.is_plain(target))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeakSeedWarning)  # the command says it, once
        agent = local_agent(
            seed,
            port,
            name="ask",
            peers={target: endpoint},
            directory=directory,
            log_level=logging.INFO if verbose else logging.WARNING,
        )
    agent.include(chat, publish_manifest=True)

    async def main(ctx: Any) -> Any:
        ctx = context_with_session(agent, session or uuid.uuid4())
        reply = await chat.ask(
            ctx,
            target,
            plain_question(question) if plain else question,
            channels={"reasoning"} if reasoning else (),
            timeout=timeout,
            idle_timeout=idle_timeout,
            settle=quiet_timeout,
            decoder=None if gap_timeout is None else ChatDecoder(gap_timeout=gap_timeout),
        )

        def interrupt() -> None:
            interrupted.add(reply)
            reply.cancel()

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, interrupt)
        async for msg in reply:
            if on_message is not None:
                on_message(msg)
        await reply
        if directory is not None and reply.chat_messages:
            directory.mark_plain(target, plain=not reply.tagged)  # how it answered, for next time
        return reply

    failures = DeliveryFailures(verbose)
    dispenser = logging.getLogger("dispenser")
    dispenser.addFilter(failures)
    try:
        return serve_agent(agent, main)
    except DeliveryError as exc:
        raise DeliveryError(failures.explain(str(exc))) from None
    finally:
        dispenser.removeFilter(failures)


_FAILED = re.compile(r"Failed to deliver message to \S+ @ \[[^\]]*\]: (.*)$", re.S)


class DeliveryFailures(logging.Filter):
    """Counts uagents' ``Failed to deliver`` log lines (one per attempt: a question to a dead
    endpoint is resent dozens of times) and keeps the last reason.

    Args:
        verbose: let the lines through (else they are only counted).
    """

    def __init__(self, verbose: bool) -> None:
        super().__init__()
        self.verbose = verbose
        self.count = 0
        self.reason: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        """Count a delivery failure; whether the record is logged.

        Args:
            record: a log record.
        """
        found = _FAILED.match(record.getMessage())
        if found is None:
            return True
        self.count += 1
        try:
            errors = ast.literal_eval(found.group(1))
            reason = "; ".join(map(str, errors)) if isinstance(errors, list) else str(errors)
        except (ValueError, SyntaxError):
            reason = found.group(1)
        self.reason = reason.replace(" ssl:default", "")
        return self.verbose

    def explain(self, message: str) -> str:
        """A message with the attempts counted and the last reason.

        Args:
            message: what failed.
        """
        if not self.count:
            return message
        hint = "" if self.verbose else " (-v shows each attempt)"
        return f"{message} after {self.count} attempts: {self.reason}{hint}"


def run(args: argparse.Namespace) -> int:
    """Run ``agent-stream ask``.

    Args:
        args: the parsed command line.

    Returns:
        The exit status.
    """
    from agent_stream.uagents import DeliveryError
    from agent_stream.uagents.local._agents import PortInUse

    client = client_setup("ask", args)
    if client is None:
        return 2
    target, endpoint, port, seed = client
    renderer = None
    if not args.json:
        from agent_stream.render_markdown import make_renderer

        renderer = make_renderer(reasoning=not args.no_reasoning)
    started = time.monotonic()
    try:
        reply = ask_once(
            target=target,
            endpoint=endpoint,
            question=args.question,
            port=port,
            seed=seed,
            reasoning=not args.no_reasoning,
            timeout=args.timeout,
            use_directory=not args.no_directory,
            on_message=renderer.feed if renderer is not None else None,
            verbose=args.verbose,
            idle_timeout=args.idle_timeout,
            session=args.session,
            gap_timeout=args.gap_timeout,
            quiet_timeout=args.quiet_timeout,
            plain=args.plain,
        )
    except DeliveryError as exc:
        if renderer is not None:
            renderer.stop()
        print(f"agent-stream ask: {exc}", file=sys.stderr)
        return 1
    except PortInUse as exc:
        print(f"agent-stream ask: {exc}", file=sys.stderr)
        return 2
    finally:
        if renderer is not None:
            renderer.stop()  # what is still drawn live is printed for good
    if reply is None:  # interrupted
        return 130
    if args.json:
        from agent_stream.commands.assemble import reply_json

        sys.stdout.write(reply_json(reply, session=reply.session) + "\n")
        sys.stdout.flush()
    else:
        assert renderer is not None
        renderer.close(summary_line(reply, started), ok=reply.completed)
        note_withheld(renderer, reply)
    for w in reply.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.verbose:
        print(f"delivery: {delivery_line(reply)}", file=sys.stderr)
        print(f"session: {reply.session}", file=sys.stderr)
    if reply in INTERRUPTED:
        print(f"agent-stream ask: interrupted (status {reply.status})", file=sys.stderr)
        return 130
    if not reply.completed:
        print(
            f"agent-stream ask: the reply did not complete (status {reply.status})", file=sys.stderr
        )
        return 1
    return 0


INTERRUPTED: set[Any] = set()  # replies whose ask was interrupted (Ctrl-C / SIGTERM)


def plain_question(text: str) -> Any:
    """A question as a Fetch.ai chat client sends it: StartSessionContent and the text, no
    agent_stream metadata.

    Args:
        text: the question.
    """
    from uagents_core.contrib.protocols.chat import ChatMessage, StartSessionContent, TextContent

    return ChatMessage(content=[StartSessionContent(), TextContent(text=text)])


def delivery_line(reply: Any) -> str:
    """`2 question resends · 1 duplicate dropped · 1 gap repaired · 3 keepalives · 0.80 s at
    risk`.

    Args:
        reply: the Reply.
    """
    return " · ".join(
        (
            f"{reply.question_resends} question resends",
            f"{reply.duplicates} duplicates dropped",
            f"{reply.gaps_repaired} gaps repaired ({reply.repair_requests} requests)",
            f"{reply.keepalives} keepalives",
            f"{reply.at_risk:.2f} s at risk",
        )
    )


def summary_line(reply: Any, started: float) -> str:
    """`completed · 14 ChatMessages · first text 0.41 s · 3.20 s`.

    Args:
        reply: the Reply.
        started: when the question was asked, ``time.monotonic()``.
    """
    parts = [reply.status or "?", f"{reply.chat_messages} ChatMessages"]
    if reply.first_text_at is not None:
        parts.append(f"first text {reply.first_text_at - reply.asked_at:.2f} s")
    if reply.ended_at is not None:
        parts.append(f"reply {reply.ended_at - reply.asked_at:.2f} s")
    ended_by = getattr(reply, "ended_by", None)
    if ended_by == "end_session":
        parts.append("the agent ended the session")
    elif ended_by == "quiet":
        parts.append(f"ended after {reply.quiet_period():g} s of quiet")
    usage = reply.transcript.stream_data.get("usage") if reply.transcript.stream_data else None
    if isinstance(usage, dict) and usage.get("completion_tokens"):
        parts.append(f"{usage['completion_tokens']} tokens")
    return " · ".join(parts)
