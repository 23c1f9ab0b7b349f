"""Running uagents agents with no internet: for development, tests and the demo.

A stock ``uagents.Agent`` talks to the outside world three ways that a machine with no internet
cannot answer: a blocking gRPC query to the Fetch ledger when it is *built*
(``uagents.agent.get_almanac_contract``), an HTTP status update retried for ~30 s when it *starts*
and *stops* (``uagents.agent.update_agent_status``), and Almanac registration / manifest
publishing in the background. It also serves HTTP on every interface (``0.0.0.0``).

A :class:`LocalAgent` does none of it, on its own instance only (other agents of the process stay
stock): it is built by a copy of ``Agent.__init__`` whose ledger-contract lookup gives None
(:func:`agent_stream.uagents._compat.agent_init_without_ledger`), it overrides the status
update with a no-op, and its server object listens on 127.0.0.1. :func:`local_agent` builds one
that registers nowhere, publishes no manifest, and finds its peers through a
:class:`LocalResolver`:

- static peers: ``{address: endpoint}`` given in code or as ``--peer ADDRESS=URL``
  (:func:`parse_peer`);
- the local directory (:class:`~agent_stream.uagents.directory.LocalDirectory`): a small JSON
  file where every running local agent lists itself while it runs, private to the user; an
  entry is used only when its process is alive and its endpoint answers.

Every agent built here is protected (:func:`agent_stream.uagents.hardening.protect`: a malformed
payload cannot silence it, and its chat sends go through one lane per peer, so a peer that
hangs delays only its own messages).

Example::

    from agent_stream.uagents import local_agent, run_agent

    agent = local_agent(seed="my secret seed", port=8001, name="llm")
    agent.include(chat, publish_manifest=True)   # a no-op publish for local agents
    run_agent(agent)                            # until Ctrl-C / SIGTERM

Networked agents (Almanac registration, Agentverse mailbox) are ordinary uagents agents:
:func:`network_agent` builds one, protected; it can run in the same process as local agents.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from uagents import Agent, Context
from uagents_core.identity import parse_identifier
from uagents_core.registration import AgentRegistrationPolicy

from agent_stream.uagents import _compat
from agent_stream.uagents.directory import (
    DIRECTORY_ENV,
    DirectoryError,
    LocalDirectory,
    LocalResolver,
    default_directory_path,
)
from agent_stream.uagents.edge import AgentServer
from agent_stream.uagents.hardening import Protection, protect

__all__ = [
    "DIRECTORY_ENV",
    "LOCAL_HOST",
    "LocalAgent",
    "LocalDirectory",
    "LocalResolver",
    "NoRegistration",
    "default_directory_path",
    "endpoint_for",
    "free_port",
    "local_agent",
    "network_agent",
    "network_agent_options",
    "parse_peer",
    "parse_peers",
    "port_free",
    "protect",
    "quiet_logs",
    "run_agent",
]

LOCAL_HOST = "127.0.0.1"

T = TypeVar("T")

class NoRegistration(AgentRegistrationPolicy):  # type: ignore[misc]
    """A registration policy that registers nowhere (no Almanac, no ledger)."""

    async def register(self, agent_identifier: str, identity: Any, protocols: list[str],
                       endpoints: list[Any], metadata: dict[str, Any] | None = None) -> None:
        return None


# -- peers -----------------------------------------------------------------------------------------
def endpoint_for(port: int) -> str:
    """The local endpoint of an agent serving on ``port``: ``http://127.0.0.1:PORT/submit``."""
    return f"http://{LOCAL_HOST}:{port}/submit"


def parse_peer(spec: str) -> tuple[str, str]:
    """``"ADDRESS=URL"`` -> ``(address, url)``; ValueError saying what is wrong."""
    address, sep, url = spec.partition("=")
    address, url = address.strip(), url.strip()
    if not sep or not address or not url:
        raise ValueError(f"peer {spec!r}: expected ADDRESS=URL")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"peer {spec!r}: the endpoint must be an http(s) URL")
    _, _, parsed = parse_identifier(address)
    if not parsed:
        raise ValueError(f"peer {spec!r}: {address!r} is not an agent address")
    return parsed, url


def parse_peers(specs: list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """Several ``ADDRESS=URL`` specs as a ``{address: url}`` dict."""
    return dict(parse_peer(s) for s in specs or ())


# -- agents ----------------------------------------------------------------------------------------
class LocalAgent(Agent):  # type: ignore[misc]
    """An Agent for local running, with no internet: building it queries no ledger, starting
    and stopping it posts no status update, its server listens on 127.0.0.1 only, and
    publishing a protocol manifest does nothing (no Almanac). Takes ``Agent``'s arguments.
    ``local_port``: the 127.0.0.1 port it serves on."""

    local_port: int | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _compat.agent_init_without_ledger()(self, *args, **kwargs)
        server = _compat.server_of(self)
        server.__class__ = AgentServer  # this agent's server only
        server.host = LOCAL_HOST

    async def _update_agent_status(self, active: bool) -> None:
        """No status update is posted to the Almanac API (uagents posts one at start and
        stop, retried for ~30 s when nothing answers)."""
        return None

    def setup(self) -> None:
        """uagents' ``setup``, after checking the uagents internals this agent relies on."""
        _compat.check_agent(self)
        super().setup()

    async def publish_manifest(self, manifest: dict[str, Any]) -> None:
        return None

    async def listening(self, timeout: float = 10.0) -> bool:
        """Wait until its HTTP server accepts connections (at most ``timeout`` seconds)."""
        if self.local_port is None:
            return False
        deadline = time.monotonic() + timeout
        while True:
            try:
                _, writer = await asyncio.open_connection(LOCAL_HOST, self.local_port)
            except OSError:
                if time.monotonic() >= deadline:
                    return False
                await asyncio.sleep(0.01)
                continue
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return True


def local_agent(seed: str, port: int, *, name: str | None = None,
                peers: Mapping[str, str] | None = None,
                directory: LocalDirectory | bool | None = True, announce: bool = True,
                log_level: int | str = logging.WARNING, protection: Protection | None = None,
                **options: Any) -> LocalAgent:
    """A uagents Agent that runs with no internet, serving on ``http://127.0.0.1:PORT/submit``.

    ``seed`` is required (the address derives from it; without one uagents would write
    ``private_keys.json`` into the current directory). ``peers``: static ``{address: endpoint}``.
    ``directory``: the :class:`LocalDirectory` to resolve peers from (True: the default one,
    False/None: static peers only); with ``announce`` the agent adds itself while it runs.
    ``log_level``: the level of this agent's and uagents' loggers, whose output goes to stderr
    (other loggers are left alone). Other keyword arguments go to
    ``Agent`` (e.g. ``handle_messages_concurrently``). The agent is protected
    (:func:`~agent_stream.uagents.hardening.protect`) with ``protection`` (None: the defaults).
    """
    if not seed:
        raise ValueError("local_agent: a seed is required")
    book = LocalDirectory() if directory is True else (directory or None)
    endpoint = endpoint_for(port)
    kwargs: dict[str, Any] = {
        "enable_agent_inspector": False,
        "report_events": False,
        "mark_inactive_on_shutdown": False,
        "publish_agent_details": False,
    }
    kwargs.update(options)
    kwargs.setdefault("loop", _current_loop())
    agent = LocalAgent(name=name, seed=seed, port=port, endpoint=[endpoint],
                       resolve=LocalResolver(peers, book),
                       registration_policy=NoRegistration(), **kwargs)
    agent.local_port = port
    protect(agent, protection)
    # (uagents' own log_level argument would call logging.basicConfig for the whole process)
    quiet_logs(log_level, agent.name)
    if book is not None and announce:

        async def _announce(ctx: Context) -> None:
            # Listed once it answers: peers use an entry only when its endpoint answers.
            await agent.listening()
            try:
                book.register(agent.address, endpoint, name)
            except DirectoryError as exc:  # run anyway, unlisted; say why
                logging.getLogger("agent_stream.uagents").warning("%s", exc)

        async def _withdraw(ctx: Context) -> None:
            with contextlib.suppress(DirectoryError):
                book.unregister(agent.address)

        agent.on_event("startup")(_announce)
        agent.on_event("shutdown")(_withdraw)
    return agent


def _current_loop() -> asyncio.AbstractEventLoop:
    """The running loop, else the thread's loop, else a new one (set as the thread's)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    try:
        return asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        return loop


def network_agent_options(seed: str, *, network: str = "testnet", mailbox: bool = False,
                          port: int | None = None, endpoint: str | None = None,
                          name: str | None = None, **options: Any) -> dict[str, Any]:
    """The ``Agent(...)`` keyword arguments of a networked agent (pure; nothing is contacted).

    Almanac registration with uagents' default policy, ``network`` "testnet" or "mainnet";
    ``mailbox=True`` receives through an Agentverse mailbox (no public endpoint needed);
    ``endpoint``: a public URL of this agent's ``/submit`` instead.
    """
    if not seed:
        raise ValueError("network_agent: a seed is required")
    if network not in ("testnet", "mainnet"):
        raise ValueError(f"network must be 'testnet' or 'mainnet', got {network!r}")
    kw: dict[str, Any] = {"name": name, "seed": seed, "network": network, "mailbox": mailbox}
    if port is not None:
        kw["port"] = port
    if endpoint is not None:
        kw["endpoint"] = [endpoint]
    kw.update(options)
    return kw


def network_agent(seed: str, **kwargs: Any) -> Agent:
    """A networked uagents Agent (see :func:`network_agent_options`).

    Building it queries the Fetch ledger, and running it registers in the Almanac: it needs the
    internet. Protected (:func:`~agent_stream.uagents.hardening.protect`).
    """
    agent = Agent(**network_agent_options(seed, **kwargs))
    protect(agent)
    return agent


def quiet_logs(level: int | str = logging.WARNING, *agent_names: str) -> None:
    """Send uagents' loggers (which print to stdout) to stderr; set them and the loggers of
    ``agent_names`` to ``level``. Other loggers are left alone."""
    for name in list(logging.Logger.manager.loggerDict):
        logger = logging.getLogger(name)
        for h in logger.handlers:
            if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stdout:
                h.setStream(sys.stderr)
    for name in ("dispenser", "resolver", "uagents", "uvicorn", "uvicorn.error", *agent_names):
        logging.getLogger(name).setLevel(level)


def port_free(port: int) -> bool:
    """Whether ``port`` on 127.0.0.1 can be listened on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((LOCAL_HOST, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOCAL_HOST, 0))
        return int(s.getsockname()[1])


# -- running ---------------------------------------------------------------------------------------
def run_agent(agent: Agent, main: Callable[[Context], Awaitable[T]] | None = None) -> T | None:
    """Run ``agent`` in this process until Ctrl-C / SIGTERM, or until ``main`` returns.

    ``main(ctx)``, when given, starts once the agent has started; when it returns (or raises)
    the agent shuts down gracefully and its result is returned (its exception raised). A shutdown
    runs every shutdown handler, so streams in flight are ended and the directory entry removed.

    uagents' ``run_async`` cancels every other task on the loop when it ends; that is why the
    agent runs as the loop's main task here and nothing awaits it.
    """
    outcome: dict[str, Any] = {}

    async def top() -> None:
        me = asyncio.current_task()
        assert me is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, me.cancel)
        if main is not None:
            keep: list[asyncio.Task[None]] = []

            async def driver(ctx: Context) -> None:
                try:
                    outcome["result"] = await main(ctx)
                except asyncio.CancelledError:
                    raise
                except BaseException as exc:
                    outcome["error"] = exc
                finally:
                    me.cancel()

            async def _start_main(ctx: Context) -> None:
                if isinstance(agent, LocalAgent):
                    await agent.listening()  # so that replies to what main sends can land
                keep.append(asyncio.create_task(driver(ctx)))

            agent.on_event("startup")(_start_main)

        await agent.run_async()

    # The Agent created its tasks' loop when it was built (uagents' own ``Agent.run`` uses it).
    loop = _compat.agent_loop(agent)
    asyncio.set_event_loop(loop)
    try:
        with contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt):
            loop.run_until_complete(top())
    finally:
        with contextlib.suppress(Exception):
            loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        asyncio.set_event_loop(None)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")
