"""The local agent directory and the resolver that reads it.

A small JSON file where every running local agent writes ``{address: {"endpoint", "name",
"pid", "started"}}`` when it starts and removes its entry when it stops; agents started in any
order find each other through it. The file is ``$AGENT_STREAM_DIRECTORY`` when set, else
``agents.json`` in ``<temp dir>/agent-stream-<user>/``.

Trust: whoever can write the file decides where this user's agents send their questions and
replies. So the directory holding it is created 0700 and the file 0600, and both are refused
(:class:`DirectoryError`, saying what is wrong and how to fix it) when owned by someone else or
writable by group or others. An entry is used only when its process is alive, its ``started``
is not in the future, and its endpoint answers a readiness probe (``HEAD /submit`` with
``x-uagents-address``, as uagents serves it) within ``probe_timeout`` (1 s; a positive answer
is remembered ``probe_ttl``, 10 s). Entries of dead processes are pruned on every write.

Busy, not gone: a probe that *times out* still counts as a positive answer when that agent is
evidently running -- it answered a probe before (or accepted an envelope:
:meth:`LocalDirectory.delivered`) with no refusal since, or it sent this agent a verified
envelope less than ``probe_ttl`` ago (:meth:`LocalDirectory.heard`; a protected agent's inbox
guard reports the sender of every envelope handed to it from an agent address, whose signature
uagents verified). An agent streaming to a crowd answers its probes late, and a peer asking
this agent questions must get its acknowledgements and replies. A refused probe, a wrong answer
or a wrong ``x-uagents-status`` still means the endpoint does not serve that address, and ends
both kinds of evidence; ``user...`` addresses (unsigned) and forged senders (refused by uagents
before the guard sees them) are never heard from.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import http.client
import json
import logging
import os
import stat
import tempfile
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp
from uagents.resolver import RulesBasedResolver
from uagents_core.identity import is_user_address, parse_identifier

__all__ = [
    "DIRECTORY_ENV",
    "AmbiguousName",
    "DirectoryError",
    "LocalDirectory",
    "LocalResolver",
    "default_directory_path",
    "local_resolver",
    "serves",
]

DIRECTORY_ENV = "AGENT_STREAM_DIRECTORY"
FUTURE_SLACK = 60.0  # seconds a ``started`` may lie ahead of this clock (clock skew)
REREAD_AFTER = 1.0  # seconds an unchanged-looking file (same inode, size, times) is trusted unread
SETTLED = 0.05  # seconds a file's times must lie in the past to tell a later write from it
MAX_HEARD = 1024  # senders remembered as heard from (least recently heard forgotten first)

LOG = logging.getLogger("agent_stream.uagents")


class DirectoryError(PermissionError):
    """The local directory cannot be trusted (owned by someone else, writable by others)."""


class AmbiguousName(LookupError):
    """Several running agents answer to one name.

    Args:
        name: the name asked for.
        matches: the ``(address, endpoint)`` of each agent of that name.
    """

    def __init__(self, name: str, matches: list[tuple[str, str]]) -> None:
        listed = "; ".join(f"{a} at {e}" for a, e in matches)
        super().__init__(
            f"{len(matches)} running agents are named {name!r}: {listed}; ask one by its address"
        )
        self.name = name
        self.matches = matches


def bare(destination: str) -> str:
    """The address in an agent identifier (``prefix://address``), else ``destination``.

    Args:
        destination: an address or an agent identifier.
    """
    _, _, address = parse_identifier(destination)
    return address or destination


def default_directory_path() -> Path:
    """``$AGENT_STREAM_DIRECTORY``, else ``<temp dir>/agent-stream-<user>/agents.json``."""
    env = os.environ.get(DIRECTORY_ENV)
    if env:
        return Path(env)
    try:
        user = getpass.getuser()
    except Exception:  # no user name (some containers)
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"agent-stream-{user}" / "agents.json"


def alive(pid: Any) -> bool:
    """Whether process ``pid`` exists.

    Args:
        pid: the process id (anything else than a positive int: False).
    """
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _untrusted(path: Path, what: str) -> str | None:
    """Why ``path`` (which exists) cannot be trusted, else None."""
    if not hasattr(os, "getuid"):  # pragma: no cover - not POSIX: no owners to check
        return None
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        return f"the {what} {path} is a symbolic link"
    if st.st_uid != os.getuid():
        return (
            f"the {what} {path} is owned by uid {st.st_uid}, not by you (uid "
            f"{os.getuid()}); remove it or set ${DIRECTORY_ENV} to a file of your own"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        fix = "chmod 700" if what == "directory" else "chmod 600"
        return (
            f"the {what} {path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}); "
            f"{fix} {path}"
        )
    return None


def _probe_request(endpoint: str) -> tuple[str, int, str] | None:
    url = urllib.parse.urlsplit(endpoint)
    if url.scheme != "http" or not url.hostname:
        return None
    return url.hostname, url.port or 80, url.path or "/"


def _ready(status: int, header: str | None) -> bool:
    return 200 <= status < 300 and header in (None, "ready")


async def serves(address: str, endpoint: str, timeout: float = 1.0) -> bool:
    """Whether ``endpoint`` serves the agent ``address`` now: uagents' readiness probe
    (``HEAD`` with ``x-uagents-address``) answered ``ready``, not merely a port that answers.

    Args:
        address: the agent's address.
        endpoint: its ``http://`` endpoint URL.
        timeout: seconds the probe may take.
    """
    if _probe_request(endpoint) is None:
        return False
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as s,
            s.head(endpoint, headers={"x-uagents-address": address}, allow_redirects=False) as resp,
        ):
            return resp.status // 100 == 2 and resp.headers.get("x-uagents-status") == "ready"
    except Exception:  # refused, timed out, not HTTP: it does not serve it
        return False


class LocalDirectory:
    """The local agent directory: a JSON file of running local agents (see the module doc).

    Format: ``{"agents": {ADDRESS: {"endpoint": URL, "name": NAME, "pid": PID,
    "started": UNIX_TIME, "plain": true}}}`` (``plain`` only for an agent that answers
    untagged). Writers lock a sibling ``.lock`` file (POSIX) and replace the file atomically;
    readers never see a half-written file.

    Args:
        path: the directory file (None: the default path, see the module doc).
        probe_timeout: seconds a readiness probe of an endpoint may take.
        probe_ttl: seconds a positive answer is remembered.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        probe_timeout: float = 1.0,
        probe_ttl: float = 10.0,
    ) -> None:
        self.path = Path(path) if path is not None else default_directory_path()
        self.probe_timeout = probe_timeout
        self.probe_ttl = probe_ttl
        self._answered: dict[tuple[str, str], float] = {}  # (address, endpoint) -> when
        self._verified: set[tuple[str, str]] = set()  # answered once and never refused since
        self._heard: OrderedDict[str, float] = OrderedDict()  # address -> when it last sent
        self._probing: dict[tuple[str, str], asyncio.Future[bool]] = {}
        self._parsed: dict[str, dict[str, Any]] = {}
        self._parsed_from: bytes | None = None
        self._read_as: tuple[int, ...] | None = None  # the file's stat when it was last read
        self._read_at = 0.0
        self.parses = 0  # times the file's bytes were parsed (only when they changed)
        self.reads = 0  # times the file was read (when it changed, else once a REREAD_AFTER)

    def __repr__(self) -> str:
        return f"LocalDirectory({str(self.path)!r})"

    # -- trust -----------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise :class:`DirectoryError` when the directory or the file cannot be trusted."""
        for p, what in ((self.path.parent, "directory"), (self.path, "file")):
            try:
                reason = _untrusted(p, what)
            except FileNotFoundError:
                continue
            if reason is not None:
                raise DirectoryError(f"local agent directory refused: {reason}")

    # -- reading ---------------------------------------------------------------------------------
    def _read(self) -> dict[str, dict[str, Any]]:
        """The file's well-formed entries; trust is checked every time, and the file read
        again unless its stat (inode, size, times) is the one it had when last read, its
        modification time then already SETTLED seconds old (a write after that read has a
        later one, however coarse the file system's clock), and REREAD_AFTER has not passed;
        parsed again only when its bytes changed. A crowd of sends to a peer found here reads
        it about once a second."""
        self.check()
        try:
            st = self.path.stat()
        except OSError:
            return {}
        now = time.monotonic()
        seen = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if seen == self._read_as and now - self._read_at < REREAD_AFTER:
            return dict(self._parsed)
        try:
            raw = self.path.read_bytes()
        except OSError:
            return {}
        self.reads += 1
        settled = time.time() - st.st_mtime > SETTLED
        self._read_as, self._read_at = (seen if settled else None), now
        if raw != self._parsed_from:
            self._parsed = self._parse(raw)
            self._parsed_from = raw
        return dict(self._parsed)

    def _parse(self, raw: bytes) -> dict[str, dict[str, Any]]:
        self.parses += 1
        try:
            data = json.loads(raw.decode("utf-8"))
        except ValueError:  # not UTF-8 or not JSON
            return {}
        agents = data.get("agents") if isinstance(data, dict) else None
        if not isinstance(agents, dict):
            return {}
        return {
            a: e
            for a, e in agents.items()
            if isinstance(a, str) and isinstance(e, dict) and isinstance(e.get("endpoint"), str)
        }

    def entry(self, address: str) -> dict[str, Any] | None:
        """:meth:`entries`' entry for ``address`` (its process alive, ``started`` not in the
        future), checking that one entry only.

        Args:
            address: the agent's address.
        """
        entry = self._read().get(address)
        if entry is None or not alive(entry.get("pid")):
            return None
        started = entry.get("started", 0)
        if not isinstance(started, (int, float)) or started > time.time() + FUTURE_SLACK:
            return None
        return entry

    def entries(self) -> dict[str, dict[str, Any]]:
        """Entries of running processes whose ``started`` is not in the future (endpoints are
        not probed here)."""
        latest = time.time() + FUTURE_SLACK
        return {
            a: e
            for a, e in self._read().items()
            if alive(e.get("pid"))
            and isinstance(e.get("started", 0), (int, float))
            and e.get("started", 0) <= latest
        }

    def answers(self, address: str, endpoint: str) -> bool:
        """Whether ``endpoint`` serves ``address`` now (a blocking readiness probe; one that
        times out counts when the agent is busy, not gone: see the module doc).

        Args:
            address: the agent's address.
            endpoint: its listed endpoint.
        """
        if self._fresh(address, endpoint):
            return True
        target = _probe_request(endpoint)
        if target is None:
            return False
        host, port, path = target
        conn = http.client.HTTPConnection(host, port, timeout=self.probe_timeout)
        try:
            conn.request("HEAD", path, headers={"x-uagents-address": address})
            resp = conn.getresponse()
            ok = _ready(resp.status, resp.getheader("x-uagents-status"))
        except TimeoutError:
            ok = self._busy(address, endpoint)
        except (OSError, http.client.HTTPException):  # refused, not HTTP: it does not answer
            ok = False
        finally:
            conn.close()
        return self._remember(address, endpoint, ok)

    async def answers_async(self, address: str, endpoint: str) -> bool:
        """:meth:`answers` without blocking the event loop. Concurrent calls for one endpoint
        share one probe (a crowd of sends after the positive answer expired asks once).

        Args:
            address: the agent's address.
            endpoint: its listed endpoint.
        """
        if self._fresh(address, endpoint):
            return True
        if _probe_request(endpoint) is None:
            return False
        key = (address, endpoint)
        probe = self._probing.get(key)
        if probe is None or probe.get_loop() is not asyncio.get_running_loop():
            probe = asyncio.ensure_future(self._probe_async(address, endpoint))
            self._probing[key] = probe
            probe.add_done_callback(lambda _f: self._probing.pop(key, None))
        return await asyncio.shield(probe)

    def delivered(self, address: str, endpoint: str) -> None:
        """An envelope to ``address`` was just accepted at ``endpoint`` (HTTP 200): as good an
        answer as the readiness probe's, remembered ``probe_ttl`` the same way.

        Args:
            address: the destination's address.
            endpoint: the endpoint that accepted it.
        """
        self._remember(address, endpoint, True)

    def heard(self, address: str) -> None:
        """A verified envelope of ``address`` just arrived: that agent runs, so for
        ``probe_ttl`` a probe of its listed endpoint that times out counts as an answer (it
        is busy, not gone; a refusal or a wrong answer still does not). ``user...`` addresses
        (never signed) are ignored; the last MAX_HEARD senders are remembered.

        Args:
            address: the sender's address, as uagents verified it.
        """
        if type(address) is not str or not address or is_user_address(address):
            return
        heard = self._heard
        heard[address] = time.monotonic()
        heard.move_to_end(address)
        if len(heard) > MAX_HEARD:
            heard.popitem(last=False)

    def _heard_lately(self, address: str) -> bool:
        when = self._heard.get(address)
        return when is not None and time.monotonic() - when < self.probe_ttl

    def _busy(self, address: str, endpoint: str) -> bool:
        """Whether a probe of ``endpoint`` that timed out still counts as an answer.

        Busy, not gone: an endpoint that served this address (no refusal since), or whose
        agent just sent us a verified envelope, and now answers slowly (an agent streaming to
        a crowd, or this process's own loop busy) is still its own.
        """
        return (address, endpoint) in self._verified or self._heard_lately(address)

    async def _probe_async(self, address: str, endpoint: str) -> bool:
        timeout = aiohttp.ClientTimeout(total=self.probe_timeout)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.head(
                    endpoint, headers={"x-uagents-address": address}, allow_redirects=False
                ) as resp,
            ):
                ok = _ready(resp.status, resp.headers.get("x-uagents-status"))
        except asyncio.TimeoutError:
            ok = self._busy(address, endpoint)
        except Exception:  # refused, not HTTP: it does not answer
            ok = False
        return self._remember(address, endpoint, ok)

    def _fresh(self, address: str, endpoint: str) -> bool:
        when = self._answered.get((address, endpoint))
        return when is not None and time.monotonic() - when < self.probe_ttl

    def _remember(self, address: str, endpoint: str, ok: bool) -> bool:
        if ok:
            if len(self._answered) > 1024:
                self._answered.clear()
            if len(self._verified) > 1024:
                self._verified.clear()
            self._answered[(address, endpoint)] = time.monotonic()
            self._verified.add((address, endpoint))
        else:
            self._answered.pop((address, endpoint), None)
            self._verified.discard((address, endpoint))
            self._heard.pop(address, None)  # evidence older than a refusal no longer counts
        return ok

    def lookup(self, destination: str) -> str | None:
        """The endpoint of a running agent by address (or identifier) that answers, else None.

        Args:
            destination: the agent's address or identifier.
        """
        address = bare(destination)
        entry = self.entries().get(address)
        if entry is None or not self.answers(address, entry["endpoint"]):
            return None
        return str(entry["endpoint"])

    def find(self, name_or_address: str) -> tuple[str, str] | None:
        """``(address, endpoint)`` of a running agent that answers, by address or by name.

        Args:
            name_or_address: the agent's address (or identifier), or its name.

        Returns:
            Its address and endpoint, or None when no running agent answers.

        Raises:
            AmbiguousName: several running agents of that name answer.
        """
        entries = self.entries()
        address = bare(name_or_address)
        if address in entries:
            endpoint = entries[address]["endpoint"]
            return (address, endpoint) if self.answers(address, endpoint) else None
        matches = self.named(name_or_address)
        if len(matches) > 1:
            raise AmbiguousName(name_or_address, matches)
        return matches[0] if matches else None

    def named(self, name: str) -> list[tuple[str, str]]:
        """``(address, endpoint)`` of every running agent called ``name`` that answers, the
        latest started first.

        Args:
            name: the agents' name.
        """
        named = sorted(
            (
                (e.get("started", 0), a, e["endpoint"])
                for a, e in self.entries().items()
                if e.get("name") == name
            ),
            reverse=True,
        )
        return [(a, str(e)) for _, a, e in named if self.answers(a, e)]

    # -- writing ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.check()
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        with open(fd, "a+") as fh:
            try:
                import fcntl
            except ImportError:  # pragma: no cover - not POSIX: best effort
                yield
                return
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _write(self, agents: Mapping[str, Any]) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"agents": dict(agents)}, indent=1, sort_keys=True))
        os.replace(tmp, self.path)

    def register(
        self, address: str, endpoint: str, name: str | None = None, pid: int | None = None
    ) -> None:
        """Add (or refresh) this agent's entry; dead entries are pruned on the way.

        Args:
            address: the agent's address (or identifier).
            endpoint: the URL it serves on.
            name: its name (None: unnamed).
            pid: the process serving it (None: this one).
        """
        with self._locked():
            agents = self.entries()
            agents[bare(address)] = {
                "endpoint": endpoint,
                "name": name,
                "pid": pid if pid is not None else os.getpid(),
                "started": time.time(),
            }
            self._write(agents)

    def mark_plain(self, address: str, plain: bool = True) -> None:
        """Remember whether an agent answers untagged (it does not use agent_stream): later
        questions to a plain agent go untagged. Nothing happens for an agent not listed.

        Args:
            address: the agent's address (or identifier).
            plain: it answered untagged (False: it answered tagged).
        """
        with self._locked():
            agents = self.entries()
            entry = agents.get(bare(address))
            if entry is None or bool(entry.get("plain")) == plain:
                return
            if plain:
                entry["plain"] = True
            else:
                entry.pop("plain", None)
            self._write(agents)

    def is_plain(self, address: str) -> bool:
        """Whether the agent was remembered as answering untagged (:meth:`mark_plain`).

        Args:
            address: the agent's address (or identifier).
        """
        entry = self.entry(bare(address))
        return bool(entry and entry.get("plain"))

    def unregister(self, address: str, pid: int | None = None) -> None:
        """Remove an agent's entry (and dead ones; nothing happens when there is nothing to).

        With ``pid``, the entry goes only when that process wrote it (an agent of the same seed
        in another process keeps its own).

        Args:
            address: the agent's address (or identifier).
            pid: remove the entry only when this process wrote it (None: whoever did).
        """
        with self._locked():
            agents = self.entries()
            entry = agents.get(bare(address))
            if entry is not None and (pid is None or entry.get("pid") == pid):
                del agents[bare(address)]
            if self._read() != agents:
                self._write(agents)

    def prune(self) -> int:
        """Remove the entries of dead processes now; returns how many went."""
        with self._locked():
            agents, everything = self.entries(), self._read()
            if len(agents) != len(everything):
                self._write(agents)
            return len(everything) - len(agents)


class LocalResolver(RulesBasedResolver):  # type: ignore[misc]
    """Resolves static peers first, then the local directory (read on every lookup, parsed
    again when it changed; an entry only when its process is alive and its endpoint answers).

    Args:
        peers: static ``{address: endpoint}`` peers.
        directory: the directory to look in after them (None: static peers only).
    """

    def __init__(
        self, peers: Mapping[str, str] | None = None, directory: LocalDirectory | None = None
    ) -> None:
        super().__init__({bare(a): u for a, u in (peers or {}).items()})
        self.directory = directory
        self._warned = False

    def add_peer(self, address: str, endpoint: str) -> None:
        """Add or replace a static peer.

        Args:
            address: the peer's address (or identifier).
            endpoint: its URL.
        """
        self._rules[bare(address)] = endpoint

    async def resolve(self, destination: str) -> tuple[str | None, list[str]]:
        """The endpoint of ``destination``: a static peer's, else the directory's.

        Args:
            destination: the address or identifier to resolve.

        Returns:
            ``(address, endpoints)``, or ``(None, [])`` when it is not found.
        """
        address = bare(destination)
        found = self._rules.get(address)
        if found is None and self.directory is not None:
            found = await self._from_directory(address)
        if found is None:
            return None, []
        return address, [found] if isinstance(found, str) else list(found)

    async def _from_directory(self, address: str) -> str | None:
        assert self.directory is not None
        try:
            entry = self.directory.entry(address)
        except DirectoryError as exc:
            if not self._warned:
                self._warned = True
                LOG.warning("%s", exc)
            return None
        if entry is None:
            return None
        endpoint = str(entry["endpoint"])
        return endpoint if await self.directory.answers_async(address, endpoint) else None


def local_resolver(
    peers: Mapping[str, str] | None = None, directory: LocalDirectory | str | None = None
) -> LocalResolver:
    """A uagents resolver backed by the local directory, for any ``uagents.Agent``:
    ``Agent(..., resolve=local_resolver())`` answers local askers (``agent-stream ask``, other
    local agents) with no internet, where uagents' default resolver looks them up on the
    Almanac.

    Args:
        peers: static ``{address: endpoint}`` peers, looked up first.
        directory: the directory (or its path; None: the default one, as ``agent-stream``
            uses it).
    """
    if not isinstance(directory, LocalDirectory):
        directory = LocalDirectory(directory)
    return LocalResolver(peers, directory)
