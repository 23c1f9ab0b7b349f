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
- the local directory (:class:`~agent_stream.uagents.local._directory.LocalDirectory`): a small JSON
  file where every running local agent lists itself while it runs, private to the user; an
  entry is used only when its process is alive and its endpoint answers.

Every agent built here is protected (:func:`agent_stream.uagents._protection.protect`: a malformed
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
import os
import signal
import socket
import sys
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from uagents import Agent, Context, Protocol
from uagents_core.identity import parse_identifier
from uagents_core.registration import AgentRegistrationPolicy

from agent_stream import telemetry
from agent_stream.seeds import warn_weak_seed
from agent_stream.uagents import _compat
from agent_stream.uagents._conflict import check_include
from agent_stream.uagents._protection import Protection, protect
from agent_stream.uagents._shutdown import stop_deadline
from agent_stream.uagents.local._directory import (
    DIRECTORY_ENV,
    DirectoryError,
    LocalDirectory,
    LocalResolver,
    bare,
    default_directory_path,
    serves,
)
from agent_stream.uagents.local._gc import IdleCollector, serving_thresholds
from agent_stream.uagents.transport._http_edge import AgentServer
from agent_stream.uagents.transport._lanes import isolate
from agent_stream.uagents.transport._pool import EnvelopePoster

__all__ = [
    "DIRECTORY_ENV",
    "LOCAL_HOST",
    "LocalAgent",
    "LocalDirectory",
    "LocalResolver",
    "NoRegistration",
    "PortInUse",
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
    "serve_agent",
]

LOCAL_HOST = "127.0.0.1"

T = TypeVar("T")


class NoRegistration(AgentRegistrationPolicy):  # type: ignore[misc]
    """A registration policy that registers nowhere (no Almanac, no ledger)."""

    async def register(
        self,
        agent_identifier: str,
        identity: Any,
        protocols: list[str],
        endpoints: list[Any],
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Register nowhere.

        Args:
            agent_identifier: the agent's address (unused).
            identity: the agent's identity (unused).
            protocols: the digests of its protocols (unused).
            endpoints: its endpoints (unused).
            metadata: its metadata (unused).
        """
        return None


# -- peers -----------------------------------------------------------------------------------------
def endpoint_for(port: int) -> str:
    """The local endpoint of an agent serving on ``port``: ``http://127.0.0.1:PORT/submit``.

    Args:
        port: the agent's port on 127.0.0.1.
    """
    return f"http://{LOCAL_HOST}:{port}/submit"


def parse_peer(spec: str) -> tuple[str, str]:
    """``"ADDRESS=URL"`` -> ``(address, url)``; ValueError saying what is wrong.

    Args:
        spec: ``ADDRESS=URL``, the URL http(s).

    Raises:
        ValueError: ``spec`` is not of that form.
    """
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
    """Several ``ADDRESS=URL`` specs as a ``{address: url}`` dict.

    Args:
        specs: the specs (None: none).

    Raises:
        ValueError: a spec is not of the form ``ADDRESS=URL``.
    """
    return dict(parse_peer(s) for s in specs or ())


# -- agents ----------------------------------------------------------------------------------------
class NetworkAgent(Agent):  # type: ignore[misc]
    """A networked Agent whose ``include`` refuses a second chat protocol with an error naming
    the fix (:class:`~agent_stream.uagents._conflict.ChatProtocolConflict`)."""

    def include(self, protocol: Protocol, publish_manifest: bool = False) -> None:
        """uagents' ``include``, refusing a second chat protocol with an error naming the fix.

        Args:
            protocol: the protocol to include.
            publish_manifest: publish its manifest to the Almanac.

        Raises:
            ChatProtocolConflict: ``protocol`` would be the agent's second chat protocol.
        """
        check_include(self, protocol)
        super().include(protocol, publish_manifest)


class LocalAgent(Agent):  # type: ignore[misc]
    """An Agent for local running, with no internet.

    Building it queries no ledger, starting and stopping it posts no status update, its server
    listens on 127.0.0.1 only, and publishing a protocol manifest does nothing (no Almanac).
    Takes ``Agent``'s arguments.

    Attributes:
        local_port: the 127.0.0.1 port it serves on (set by :func:`local_agent`).
    """

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
        """Publish nothing: there is no Almanac offline.

        Args:
            manifest: the protocol manifest (ignored).
        """
        return None

    def include(self, protocol: Protocol, publish_manifest: bool = False) -> None:
        """uagents' ``include``, refusing a second chat protocol with an error naming the fix
        (:class:`~agent_stream.uagents._conflict.ChatProtocolConflict`).

        Args:
            protocol: the protocol to include.
            publish_manifest: ignored: there is no Almanac offline (uagents would schedule a
                task to publish it, left never awaited by an agent that never runs).

        Raises:
            ChatProtocolConflict: ``protocol`` would be the agent's second chat protocol.
        """
        check_include(self, protocol)
        super().include(protocol, False)

    async def listening(self, timeout: float = 10.0) -> bool:
        """Wait until its HTTP server accepts connections (at most ``timeout`` seconds).

        Args:
            timeout: seconds to wait at most.

        Returns:
            Whether it accepts connections (False: not within ``timeout``, or it has no port).
        """
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


def local_agent(
    seed: str,
    port: int,
    *,
    name: str | None = None,
    peers: Mapping[str, str] | None = None,
    directory: LocalDirectory | bool | None = True,
    announce: bool = True,
    log_level: int | str = logging.WARNING,
    protection: Protection | None = None,
    advertise: str | None = None,
    **options: Any,
) -> LocalAgent:
    """A uagents Agent that runs with no internet, serving on ``http://127.0.0.1:PORT/submit``.

    The agent is protected (:func:`~agent_stream.uagents._protection.protect`).

    Args:
        seed: the agent's seed, required: the address derives from it (without one uagents
            would write ``private_keys.json`` into the current directory).
        port: the 127.0.0.1 port it serves on.
        name: the agent's name (None: uagents' default).
        peers: static ``{address: endpoint}`` peers.
        directory: the :class:`LocalDirectory` to resolve peers from (True: the default one,
            False/None: static peers only).
        announce: add the agent to the directory while it runs.
        log_level: the level of this agent's and uagents' loggers, whose output goes to stderr
            (other loggers are left alone).
        protection: the guard's limits and lanes' bounds (None: the defaults).
        advertise: the endpoint listed in the directory instead of its own (a load balancer in
            front of several replicas of this agent; the agent still waits for its own to serve).
        **options: more keyword arguments for ``Agent`` (e.g. ``handle_messages_concurrently``).

    Returns:
        The agent, not yet running (see :func:`run_agent`).

    Raises:
        ValueError: no seed.
    """
    if not seed:
        raise ValueError("local_agent: a seed is required")
    warn_weak_seed(seed, "local_agent")
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
    agent = LocalAgent(
        name=name,
        seed=seed,
        port=port,
        endpoint=[endpoint],
        resolve=LocalResolver(peers, book),
        registration_policy=NoRegistration(),
        **kwargs,
    )
    agent.local_port = port
    protect(agent, protection)
    if peers:
        agent.on_event("startup")(_Warming(isolate(agent).poster, peers).start)
    # (uagents' own log_level argument would call logging.basicConfig for the whole process)
    quiet_logs(log_level, agent.name)
    if book is not None and announce:
        listing = _Listing(book, agent.address, endpoint, name, advertise)
        _LISTINGS[agent] = listing
        agent.on_event("startup")(listing.announce)
        agent.on_event("shutdown")(listing.withdraw)
    return agent


class _Warming:
    """At start, a connection opened to each static peer, and whether it takes batches learned
    (:meth:`~agent_stream.uagents.transport._pool.EnvelopePoster.warm`), in the background: a
    gateway's first thousand questions then go at once, as batches, on a kept connection."""

    def __init__(self, poster: EnvelopePoster, peers: Mapping[str, str]) -> None:
        self.poster = poster
        self.peers = {bare(a): e for a, e in peers.items()}
        self.task: asyncio.Future[Any] | None = None  # held: the probes run unawaited

    async def start(self, ctx: Context) -> None:
        self.task = asyncio.gather(
            *(self.poster.warm(e, a) for a, e in self.peers.items()), return_exceptions=True
        )


_LISTINGS: weakref.WeakKeyDictionary[Agent, _Listing] = weakref.WeakKeyDictionary()
LOG = logging.getLogger("agent_stream.uagents")


async def _await_serving(address: str, endpoint: str, timeout: float = 10.0) -> bool:
    """Wait until ``endpoint`` serves ``address`` (uagents' readiness probe says ``ready``):
    a port that merely answers may be another agent's."""
    deadline = time.monotonic() + timeout
    while not await serves(address, endpoint, timeout=0.5):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.02)
    return True


class _Listing:
    """One agent's entry in the local directory: written once the agent's own server serves its
    endpoint, removed however the agent stops (shutdown handler, or :func:`run_agent`'s end).

    An agent advertising another endpoint (one replica of several behind a load balancer) shares
    the entry with the other replicas: it writes the entry again whenever it finds it gone (the
    replica that wrote it stopped or died), checking every ``KEEP_LISTED`` seconds."""

    KEEP_LISTED = 2.0

    def __init__(
        self,
        book: LocalDirectory,
        address: str,
        endpoint: str,
        name: str | None,
        advertise: str | None = None,
    ) -> None:
        self.book, self.address, self.endpoint, self.name = book, address, endpoint, name
        self.advertised = advertise or endpoint
        self._keeper: asyncio.Future[None] | None = None
        self.listed = False
        self.unique = True  # no other running agent answers to this name

    async def announce(self, ctx: Context) -> None:
        if not await _await_serving(self.address, self.endpoint):
            LOG.warning(
                "not listed in the local directory: %s does not serve %s",
                self.endpoint,
                self.address,
            )
            return
        loop = asyncio.get_running_loop()
        try:  # (blocking file and probe I/O off the loop: a peer may be in this process)
            others = (
                await loop.run_in_executor(None, self.book.named, self.name) if self.name else []
            )
            await loop.run_in_executor(
                None, self.book.register, self.address, self.advertised, self.name
            )
            self.listed = True
        except DirectoryError as exc:  # run anyway, unlisted; say why
            LOG.warning("%s", exc)
            return
        if self.advertised != self.endpoint:
            self._keeper = asyncio.ensure_future(self._keep_listed())
        others = [(a, e) for a, e in others if a != self.address]
        self.unique = not others
        if others:
            LOG.warning(
                "another running agent is also named %r (%s at %s): asking %r by name "
                "is refused until one stops; ask by address",
                self.name,
                others[0][0],
                others[0][1],
                self.name,
            )

    async def _keep_listed(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.KEEP_LISTED)
            try:
                if await loop.run_in_executor(None, self.book.entry, self.address) is None:
                    await loop.run_in_executor(
                        None, self.book.register, self.address, self.advertised, self.name
                    )
            except (DirectoryError, OSError) as exc:  # said once at start; keep serving
                LOG.debug("directory entry not refreshed: %s", exc)

    async def withdraw(self, ctx: Context | None = None) -> None:
        self.withdraw_now()

    def withdraw_now(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None
        if self.listed:
            self.listed = False
            with contextlib.suppress(DirectoryError, OSError):
                self.book.unregister(self.address, pid=os.getpid())


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


def network_agent_options(
    seed: str,
    *,
    network: str = "testnet",
    mailbox: bool = False,
    port: int | None = None,
    endpoint: str | None = None,
    name: str | None = None,
    **options: Any,
) -> dict[str, Any]:
    """The ``Agent(...)`` keyword arguments of a networked agent (pure; nothing is contacted).

    Almanac registration with uagents' default policy.

    Args:
        seed: the agent's seed, required (its address derives from it).
        network: "testnet" or "mainnet".
        mailbox: receive through an Agentverse mailbox (no public endpoint needed).
        port: the port its server listens on (None: uagents' default).
        endpoint: a public URL of this agent's ``/submit``, instead of a mailbox.
        name: the agent's name (None: uagents' default).
        **options: more keyword arguments for ``Agent``.

    Returns:
        The keyword arguments.

    Raises:
        ValueError: no seed, or an unknown network.
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
    internet. Protected (:func:`~agent_stream.uagents._protection.protect`).

    Args:
        seed: the agent's seed, required (its address derives from it).
        **kwargs: the other arguments of :func:`network_agent_options`.
    """
    warn_weak_seed(seed, "network_agent")
    agent = NetworkAgent(**network_agent_options(seed, **kwargs))
    protect(agent)
    return agent


def quiet_logs(level: int | str = logging.WARNING, *agent_names: str) -> None:
    """Send uagents' loggers (which print to stdout) to stderr; set them and the loggers of
    ``agent_names`` to ``level``. Other loggers are left alone.

    Args:
        level: the level to set.
        *agent_names: the names of the agents' loggers to set too.
    """
    for name in list(logging.Logger.manager.loggerDict):
        logger = logging.getLogger(name)
        for h in logger.handlers:
            if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stdout:
                h.setStream(sys.stderr)
    for name in ("dispenser", "resolver", "uagents", "uvicorn", "uvicorn.error", *agent_names):
        logging.getLogger(name).setLevel(level)


def port_free(port: int, host: str = LOCAL_HOST) -> bool:
    """Whether ``host:port`` can be listened on right now, as a server binds it (asyncio's
    way: connections of a server that stopped, still in TIME_WAIT, do not hold the port).

    Args:
        port: the port.
        host: the host (an IPv4 or IPv6 address, or a name).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        if os.name == "posix":  # (on Windows the option would let two servers share a port)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


# Ports free_port hands out: below Linux's default ephemeral range (32768-60999), so neither an
# outgoing connection nor another process's bind to port 0 takes one between its choice and the
# agent's bind; chosen at random, so processes choosing at once rarely choose alike.
_PORTS = range(20000, 32768)
_handed_out: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (below the ephemeral range, not one this
    process handed out before; the kernel's choice when none is found)."""
    import secrets

    for _ in range(64):
        candidate = secrets.choice(_PORTS)  # not the random module: tests seed it
        if candidate in _handed_out:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((LOCAL_HOST, candidate))
            except OSError:
                continue
        _handed_out.add(candidate)
        return candidate
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOCAL_HOST, 0))
        return int(s.getsockname()[1])


# -- running ---------------------------------------------------------------------------------------
class PortInUse(OSError):
    """The port an agent is to serve on is held by another process (nothing was started).

    Args:
        port: the port (None: unknown).
        name: the agent's name, for the message (None: not named).
    """

    def __init__(self, port: int | None, name: str | None = None) -> None:
        who = f"agent {name!r}" if name else "the agent"
        where = f"port {port} on {LOCAL_HOST}" if port is not None else "its port"
        super().__init__(f"{where} is in use: {who} cannot serve there (choose another port)")
        self.port = port


def _banner(agent: Agent) -> Callable[[Context], Awaitable[None]]:
    """A startup handler printing the agent's name, address and endpoint to stderr once its own
    server serves them, with the command that asks it."""

    async def show(ctx: Context) -> None:
        port = getattr(agent, "local_port", None)
        endpoint = endpoint_for(port) if port is not None else None
        if endpoint is not None and not await _await_serving(agent.address, endpoint):
            return
        listing = _LISTINGS.get(agent)
        if listing is not None and listing.listed and listing.name and listing.unique:
            how = f'agent-stream ask {listing.name} "your question"'
        elif endpoint is not None:
            how = f'agent-stream ask {agent.address} --endpoint {endpoint} "your question"'
        else:
            how = None
        lines = [f"agent {agent.name!r} is running", f"  address:  {agent.address}"]
        if endpoint is not None:
            lines.append(f"  endpoint: {endpoint}")
        if how:
            lines.append(f"  ask it:   {how}")
        print("\n".join(lines), file=sys.stderr, flush=True)

    return show


def serve_agent(
    agent: Agent,
    main: Callable[[Context], Awaitable[T]] | None = None,
    *,
    banner: bool | None = None,
) -> T | None:
    """:func:`run_agent`, raising :class:`PortInUse` when the agent's port is taken.

    Args:
        agent: the agent (a :func:`local_agent` is checked before anything starts).
        main: run once the agent has started; its result is returned (its exception raised).
        banner: print the agent's name, address and endpoint on stderr once it serves
            (default: when there is no ``main``, i.e. for an agent that serves others).

    Returns:
        What ``main`` returned (None without ``main``).

    Raises:
        PortInUse: the agent's port is held by another process (nothing was started).
    """
    outcome: dict[str, Any] = {}
    port = getattr(agent, "local_port", None)
    if port is not None and not port_free(port):
        raise PortInUse(port, agent.name)
    telemetry.configure(agent.name)  # each agent is its own service unless OTEL_* name one
    serving_thresholds()  # a thousand open replies must not spend their CPU in the collector

    stop = stop_deadline(agent)
    stop.reset()  # (an agent run again stops afresh)

    async def top() -> None:
        me = asyncio.current_task()
        assert me is not None
        loop = asyncio.get_running_loop()

        def stopping() -> None:  # the stop's one deadline counts from the signal
            stop.begin()
            me.cancel()

        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stopping)
        if banner or (banner is None and main is None):
            agent.on_event("startup")(_banner(agent))
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
                    stop.begin()
                    me.cancel()

            async def _start_main(ctx: Context) -> None:
                if port is not None:  # so that replies to what main sends can land here
                    await _await_serving(agent.address, endpoint_for(port))
                keep.append(asyncio.create_task(driver(ctx)))

            agent.on_event("startup")(_start_main)

        # young objects are collected while the agent is idle, not in its next burst of work
        collector = loop.create_task(IdleCollector().run())
        try:
            await agent.run_async()
        finally:
            collector.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await collector

    # The Agent created its tasks' loop when it was built (uagents' own ``Agent.run`` uses it).
    loop = _compat.agent_loop(agent)
    asyncio.set_event_loop(loop)
    stopped: BaseException | None = None
    try:
        task = loop.create_task(top())
        try:
            loop.run_until_complete(task)
        except asyncio.CancelledError:
            pass
        except (SystemExit, KeyboardInterrupt) as exc:
            # uvicorn exits the process when it cannot bind; a Ctrl-C can land before the
            # signal handlers. Either way the agent shuts down (handlers run, entry removed)
            # instead of leaving its tasks to die with the loop.
            stopped = exc
            stop.begin()
            task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(task)
    finally:
        listing = _LISTINGS.get(agent)
        if listing is not None:
            listing.withdraw_now()
        telemetry.shutdown()  # a short run's spans are exported before the process ends
        with contextlib.suppress(Exception):
            loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        asyncio.set_event_loop(None)
    if isinstance(stopped, SystemExit) and stopped.code == _STARTUP_FAILURE:
        raise PortInUse(port if port is not None else getattr(agent, "_port", None), agent.name)
    if isinstance(stopped, SystemExit):
        raise stopped
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


_STARTUP_FAILURE = 3  # uvicorn's exit status when its server cannot start (cannot bind)


def run_agent(
    agent: Agent,
    main: Callable[[Context], Awaitable[T]] | None = None,
    *,
    banner: bool | None = None,
) -> T | None:
    """Run ``agent`` in this process until Ctrl-C / SIGTERM, or until ``main`` returns.

    ``main(ctx)``, when given, starts once the agent has started; when it returns (or raises)
    the agent shuts down gracefully and its result is returned (its exception raised). A shutdown
    runs every shutdown handler, so streams in flight are ended and the directory entry removed,
    within one stop deadline counted from the signal (``STOP_BUDGET``, 1.5 s,
    :mod:`agent_stream.uagents._shutdown`): a peer that hangs is given up then.
    An agent that serves others (no ``main``; ``banner`` to choose) prints its name, address and
    endpoint on stderr once it serves them.

    Like ``uvicorn.run``, a port in use is one error line on stderr and exit status 1
    (``SystemExit(1)``); :func:`serve_agent` raises :class:`PortInUse` instead.

    uagents' ``run_async`` cancels every other task on the loop when it ends; that is why the
    agent runs as the loop's main task here and nothing awaits it. The process's garbage
    collector gets serving thresholds (:func:`~agent_stream.uagents.local._gc.serving_thresholds`)
    and collects young objects while the agent is idle
    (:class:`~agent_stream.uagents.local._gc.IdleCollector`).

    Args:
        agent: the agent (a :func:`local_agent` is checked before anything starts).
        main: run once the agent has started; its result is returned (its exception raised).
        banner: print the agent's name, address and endpoint on stderr once it serves
            (default: when there is no ``main``).

    Returns:
        What ``main`` returned (None without ``main``).

    Raises:
        SystemExit: the agent's port is in use (status 1).
    """
    try:
        return serve_agent(agent, main, banner=banner)
    except PortInUse as exc:
        print(f"ERROR: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
