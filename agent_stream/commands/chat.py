"""`agent-stream chat`: a multi-turn conversation with a chat-protocol agent, in the terminal."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
import uuid
import warnings
from typing import Any

from agent_stream.commands._args import client_args, quiet_timeout_arg, seconds
from agent_stream.commands.ask import client_setup, note_withheld, session_arg, summary_line
from agent_stream.seeds import WeakSeedWarning

EPILOG = """examples:
  agent-stream chat llm                               a local agent found in the directory
  agent-stream chat agent1q... --endpoint http://127.0.0.1:8000/submit
  agent-stream chat llm --session 3f0c...-...         continue a conversation

At the prompt: a question is sent and its reply drawn live, as ask draws it; the agent remembers
the conversation (one session). Ctrl-C during a reply cancels it (the agent is told) and comes
back to the prompt; /new starts a new conversation; /exit or Ctrl-D leaves (exit 0), ending the
session (the agent forgets it). Up and down recall earlier questions. Like ask, chat talks as
this user's persistent client identity unless --seed is given.

Exit status: 0 when left with /exit or Ctrl-D (a reply that did not complete is said, and the
chat goes on); 2 for bad arguments (unknown address or name, busy port, a session id that is not
a UUID4, a client seed file that is not private); 130 after SIGTERM.
"""

PROMPT = "you> "


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``chat`` command.

    Args:
        sub: the ``agent-stream`` subcommands.
    """
    p = sub.add_parser(
        "chat",
        help="hold a conversation with an agent in the terminal, each reply streamed live",
        description="An interactive multi-turn chat over the Agent Chat Protocol: each question "
        "goes in one session, so the agent remembers the earlier turns; each reply is drawn "
        "live (blocks as sections, threads labelled, reasoning dimmed, tool calls as status "
        "lines).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "address",
        metavar="NAME_OR_ADDRESS",
        help="the agent's address (or the name of a local agent in the directory)",
    )
    client_args(p)
    p.add_argument(
        "--session",
        type=session_arg,
        default=None,
        metavar="UUID",
        help="continue this conversation (default: a new one)",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        default=120.0,
        help="seconds to wait for each whole reply (default: %(default)s)",
    )
    p.add_argument(
        "--idle-timeout",
        type=seconds,
        default=15.0,
        metavar="S",
        help="end a reply as lost when nothing arrives for S seconds (default: %(default)s)",
    )
    quiet_timeout_arg(p)
    p.add_argument(
        "--no-reasoning", action="store_true", help="do not ask for the model's reasoning"
    )
    p.add_argument(
        "--no-directory",
        action="store_true",
        help="do not use the local directory (the agent must know this client by --peer)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="uagents logs at INFO")
    p.set_defaults(func=run)


class Lines:
    """Where the questions come from: prompt_toolkit on a terminal (line editing, history),
    else plain lines of stdin (a script piping questions in)."""

    def __init__(self) -> None:
        self._session: Any = None
        if sys.stdin.isatty() and sys.stdout.isatty():
            from prompt_toolkit import PromptSession
            from prompt_toolkit.history import InMemoryHistory

            self._session = PromptSession(history=InMemoryHistory())

    async def read(self) -> str:
        """The next line; EOFError at the end (Ctrl-D); KeyboardInterrupt for Ctrl-C."""
        if self._session is not None:
            # Ctrl-C at the prompt is a key (raw mode), not a signal: the agent's own SIGINT
            # handler stays installed for the replies.
            text: str = await self._session.prompt_async(PROMPT, handle_sigint=False)
            return text
        print(PROMPT, end="", flush=True)
        line: str = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        if not line:
            raise EOFError
        return line.rstrip("\n")


class Conversation:
    """One chat's state: the client agent's plugin, the target and the current session.

    Args:
        agent: the client agent.
        chat: its StreamingChat.
        target: the address of the agent talked to.
        args: the parsed command line.
    """

    def __init__(self, agent: Any, chat: Any, target: str, args: argparse.Namespace) -> None:
        self.agent = agent
        self.chat = chat
        self.target = target
        self.args = args
        self.reply: Any = None  # the reply in flight
        self.cancelled = False
        self.new_session(args.session)

    def new_session(self, session: uuid.UUID | None = None) -> None:
        """Start a conversation afresh: questions go in a new envelope session.

        Args:
            session: the session's id (None: a new UUID4).
        """
        from agent_stream.uagents._compat import context_with_session

        self.session = session or uuid.uuid4()
        self.ctx = context_with_session(self.agent, self.session)

    card: dict[str, Any] | None = None  # the last reply's card: a number typed chooses in it

    def interrupt(self) -> None:
        """Ctrl-C: cancel the reply in flight (the responder is told); nothing otherwise."""
        if self.reply is not None and not self.reply.done:
            self.cancelled = True
            self.reply.cancel()

    async def end_session(self) -> None:
        """Tell the agent the conversation is over (EndSessionContent): it forgets it."""
        from uagents_core.contrib.protocols.chat import ChatMessage, EndSessionContent

        with contextlib.suppress(Exception):
            await self.chat.send(self.ctx, self.target, ChatMessage(content=[EndSessionContent()]))

    async def ask(self, question: str, console: Any) -> None:
        """Send a question in this session and draw its reply live.

        Args:
            question: the question.
            console: where the reply is drawn.
        """
        from agent_stream.render_markdown import make_renderer
        from agent_stream.uagents import DeliveryError

        renderer = make_renderer(console, reasoning=not self.args.no_reasoning)
        started = time.monotonic()
        self.cancelled = False
        channels = () if self.args.no_reasoning else {"reasoning"}
        asked: Any = card_answer(self.card, question, channels) or question
        self.card = None
        try:
            self.reply = await self.chat.ask(
                self.ctx,
                self.target,
                asked,
                channels=() if self.args.no_reasoning else {"reasoning"},
                timeout=self.args.timeout,
                idle_timeout=self.args.idle_timeout,
                settle=self.args.quiet_timeout,
            )
        except DeliveryError as exc:
            renderer.stop()
            print(f"agent-stream chat: {exc}", file=sys.stderr, flush=True)
            return
        reply = self.reply
        try:
            async for msg in reply:
                renderer.feed(msg)
                self.card = card_of(msg) or self.card
            await reply
        finally:
            renderer.stop()
            self.reply = None
        renderer.close(summary_line(reply, started), ok=reply.completed)
        note_withheld(renderer, reply)
        for w in reply.warnings:
            print(f"warning: {w}", file=sys.stderr, flush=True)
        if self.cancelled:
            print(f"(cancelled: status {reply.status})", file=sys.stderr, flush=True)


def card_of(msg: Any) -> dict[str, Any] | None:
    """The interactive card a Message shows (a ``card``, or a question carrying one), if any.

    Args:
        msg: a Message of the reply.
    """
    props = msg.props or {}
    if msg.type == "card" and not msg.delta:
        return dict(props)
    card = props.get("card") if msg.type == "user_input" else None
    return dict(card) if isinstance(card, dict) else None


def card_answer(card: dict[str, Any] | None, typed: str, channels: Any) -> Any:
    """The ChatMessage answering ``card`` when ``typed`` is the number of one of its choices
    (a card response with that button's own selection, as a chat front end sends it); None
    otherwise (the typed text is sent as it is, and answers as text).

    Args:
        card: the last reply's card (None: none).
        typed: what was typed.
        channels: the channels asked for.
    """
    import uuid as _uuid

    from uagents_core.contrib.protocols.chat import ChatMessage
    from uagents_core.contrib.protocols.chat.cards import create_card_response_content

    from agent_stream.adapters.chat.wire import request_tags
    from agent_stream.render import card_choices

    if card is None or not typed.strip().isdigit():
        return None
    choices = card_choices(card)
    n = int(typed.strip())
    if not 1 <= n <= len(choices):
        return None
    card_id = card.get("card_id")
    try:
        parsed = _uuid.UUID(str(card_id)) if card_id else None
    except ValueError:
        parsed = None
    response = create_card_response_content(card_id=parsed, selection=choices[n - 1][1])
    return ChatMessage(content=[request_tags(channels), response])


async def converse(conv: Conversation, name: str) -> int:
    """The prompt loop: questions until /exit or Ctrl-D.

    Args:
        conv: the conversation.
        name: what the prompt calls the agent.

    Returns:
        The exit status.
    """
    from agent_stream.render import make_console

    console = make_console()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, conv.interrupt)
    print(
        f"chatting with {name} ({conv.target}); session {conv.session}\n"
        "/new starts a new conversation, /exit or Ctrl-D leaves, Ctrl-C cancels a reply",
        flush=True,
    )
    lines = Lines()
    while True:
        try:
            text = await lines.read()
        except KeyboardInterrupt:
            continue  # Ctrl-C at the prompt clears the line, as shells do
        except EOFError:
            break
        question = text.strip()
        if not question:
            continue
        if question == "/exit":
            break
        if question == "/new":
            await conv.end_session()
            conv.new_session()
            print(f"new conversation: session {conv.session}", flush=True)
            continue
        await conv.ask(question, console)
    await conv.end_session()
    print(f"session {conv.session} ended", flush=True)
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``agent-stream chat``.

    Args:
        args: the parsed command line.

    Returns:
        The exit status.
    """
    import logging

    from agent_stream.uagents import LocalDirectory, StreamingChat, local_agent
    from agent_stream.uagents.local._agents import PortInUse, serve_agent

    client = client_setup("chat", args)
    if client is None:
        return 2
    target, endpoint, port, seed = client
    chat = StreamingChat()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WeakSeedWarning)  # said once above
        agent = local_agent(
            seed,
            port,
            name="chat",
            peers={target: endpoint},
            directory=LocalDirectory() if not args.no_directory else None,
            log_level=logging.INFO if args.verbose else logging.WARNING,
        )
    agent.include(chat, publish_manifest=True)

    async def main(_ctx: Any) -> int:
        return await converse(Conversation(agent, chat, target, args), args.address)

    try:
        code = serve_agent(agent, main)
    except PortInUse as exc:
        print(f"agent-stream chat: {exc}", file=sys.stderr)
        return 2
    return code if code is not None else 130
