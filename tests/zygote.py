"""A fork server for the test harness: agent processes without paying Python's imports each time.

Every agent process a test starts used to spend about a second of CPU importing uagents,
pydantic, aiohttp and agent_stream before doing anything, and the suite starts hundreds. The
zygote is one process per test worker that imports them once and then forks a child per request:
the child is a real, separate OS process (its own pid, stdin/stdout/stderr pipes, working
directory and environment, signals and exit status) that runs ``python -m agent_stream ...`` or
a peer script exactly as the interpreter would, only with those modules already imported.

Protocol, over a Unix socket, one connection per child: the harness sends one JSON request
(``argv``, ``cwd``, ``env``) with the child's three standard file descriptors attached
(SCM_RIGHTS); the zygote answers ``{"pid": N}`` and, when the child exits, ``{"exit": CODE}``
(CODE as :attr:`subprocess.Popen.returncode`: negative for a signal) before closing it.

Only the harness uses it (``tests/integration/agents_harness.py``); ``python tests/zygote.py
SOCKET`` runs the server, which exits when its standard input closes (its test worker is gone).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import runpy
import selectors
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# What every agent process imports before it does anything (a child imports the rest itself).
PRELOAD = (
    "agent_stream.cli",
    "agent_stream.commands.serve",
    "agent_stream.commands.ask",
    "agent_stream.commands.chat",
    "agent_stream.commands.demo",
    "agent_stream.uagents",
    "agent_stream.commands.gateway",
    "agent_stream.gateway.app",
    "agent_stream.gateway.server",
    "agent_stream.gateway.mcp",
    "mcp.server.streamable_http_manager",
    "mcp.server.lowlevel",
    "mcp_types",
    "a2a.types",
    "a2a.server",
    "a2a.client",
    "sse_starlette",
    "opentelemetry.trace",
    "uagents_core.contrib.protocols.chat.cards",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.lifespan.on",
    "rich.console",
    "rich.markdown",
    "uagents",
    "uagents_core.contrib.protocols.chat",
    "uvloop",
    "agent_stream.render",
    "agent_stream.render_markdown",
    "websockets.server",
)
# Modules that read the environment when imported: a child imports them itself, with its own.
NOT_PRELOADED = ("agent_stream.chunking",)

MAX_REQUEST = 1 << 20


# -- the server ----------------------------------------------------------------------------------


def serve(path: str) -> None:
    """Preload, listen on ``path``, fork a child per request until standard input closes."""
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    import gc

    preloaded = [name for name in NOT_PRELOADED if name in sys.modules]
    if preloaded:
        raise RuntimeError(f"the zygote must not import {preloaded}: they read the environment")
    gc.collect()
    gc.freeze()  # the preloaded heap stays shared with the children, out of their collections
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(sys.stdin, selectors.EVENT_READ, "parent")
    children: dict[int, socket.socket] = {}  # pidfd -> the connection that asked for it
    print("READY", flush=True)
    while True:
        for key, _ in sel.select():
            if key.data == "parent":
                if not sys.stdin.buffer.read1(1 << 16):
                    return
            elif key.data == "accept":
                conn, _ = listener.accept()
                with conn:
                    spawned = _spawn(conn, listener, sel, children)
                if spawned is not None:
                    pidfd, reply = spawned
                    children[pidfd] = reply
                    sel.register(pidfd, selectors.EVENT_READ, "child")
            else:
                pidfd = key.fd
                sel.unregister(pidfd)
                reply = children.pop(pidfd)
                status = os.waitid(os.P_PIDFD, pidfd, os.WEXITED)  # type: ignore[attr-defined]
                os.close(pidfd)
                code = _returncode(status)
                with contextlib.suppress(OSError):
                    reply.sendall(json.dumps({"exit": code}).encode() + b"\n")
                reply.close()


def _returncode(status: Any) -> int:
    if status is None:
        return 0
    if status.si_code == os.CLD_EXITED:
        return int(status.si_status)
    return -int(status.si_status)


def _spawn(
    conn: socket.socket,
    listener: socket.socket,
    sel: selectors.BaseSelector,
    children: dict[int, socket.socket],
) -> tuple[int, socket.socket] | None:
    """Read one request from ``conn`` and fork its child: (its pidfd, the connection to answer)."""
    data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None
    request = json.loads(data)
    reply = conn.dup()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        listener.close()
        sel.close()
        for other in children.values():
            other.close()
        for pidfd in children:
            with contextlib.suppress(OSError):
                os.close(pidfd)
        reply.close()
        conn.close()
        _child(request, fds)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    reply.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    return pidfd, reply


def _child(request: dict[str, Any], fds: list[int]) -> None:
    """Become ``python ARGV`` in ``cwd`` with ``env``, on the three file descriptors given."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # sys.stdin/stdout/stderr stay the objects they were (loggers made at import hold
        # them); they wrap file descriptors 0-2, which are the child's own now.
        for entry in reversed(os.environ.get("PYTHONPATH", "").split(os.pathsep)):
            if entry and entry not in sys.path:
                sys.path.insert(1, entry)
        code = _run(request["argv"])
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


def _run(argv: list[str]) -> int:
    """Run ``argv`` (``-m MODULE ARGS`` or ``SCRIPT ARGS``) as ``__main__``; its exit status."""
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = str(Path(argv[0]).resolve().parent)
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exit_:
        return _exit_status(exit_.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        return -signal.SIGINT
    return 0


def _exit_status(code: object) -> int:
    """The status ``sys.exit(code)`` gives a process (the interpreter's rules)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    with contextlib.suppress(BaseException):
        print(code, file=sys.stderr)
    return 1


# -- the harness's side --------------------------------------------------------------------------


def can_fork(args: Sequence[str]) -> bool:
    """Whether ``python ARGS`` can be forked from the zygote: ``-m agent_stream[.MODULE] ...``
    or a script path (anything with interpreter options runs as a fresh process)."""
    if not args:
        return False
    if args[0] == "-m":
        return len(args) > 1 and args[1].split(".")[0] == "agent_stream"
    return args[0].endswith(".py") and not args[0].startswith("-")


class Zygote:
    """The fork server of this test process, started at the first :meth:`popen`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None

    def _path(self) -> str:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                import tempfile

                self._dir = tempfile.mkdtemp(prefix="zygote-")
                path = os.path.join(self._dir, "sock")
                env = dict(os.environ)
                env["PYTHONUNBUFFERED"] = "1"
                pp = env.get("PYTHONPATH")
                env["PYTHONPATH"] = str(ROOT) + (os.pathsep + pp if pp else "")
                self._proc = subprocess.Popen(
                    [sys.executable, __file__, path],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    env=env,
                    cwd=self._dir,
                )
                assert self._proc.stdout is not None
                line = self._proc.stdout.readline()
                if line.strip() != b"READY":
                    raise RuntimeError(f"the test zygote did not start: {line!r}")
                atexit.register(self.close)
            assert self._dir is not None
            return os.path.join(self._dir, "sock")

    def popen(
        self, args: Sequence[str], cwd: Path, env: dict[str, str], stdin: bool
    ) -> ForkedProcess:
        """``python ARGS`` forked from the zygote, with piped stdout/stderr (and stdin)."""
        return ForkedProcess(self._path(), list(args), cwd, env, stdin)

    def close(self) -> None:
        """Stop the zygote (its children keep running: the harness stops them)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            assert proc.stdin is not None
            with contextlib.suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class ForkedProcess:
    """The part of :class:`subprocess.Popen` the harness uses, for a child of the zygote."""

    def __init__(
        self, path: str, args: list[str], cwd: Path, env: dict[str, str], stdin: bool
    ) -> None:
        self.args = args
        self.returncode: int | None = None
        self._exited = threading.Event()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        if stdin:
            in_r, in_w = os.pipe()
        else:
            in_r, in_w = os.open(os.devnull, os.O_RDONLY), -1
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            request = {"argv": args, "cwd": str(cwd), "env": env}
            socket.send_fds(sock, [json.dumps(request).encode()], [in_r, out_w, err_w])
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        self._sock = sock
        self._reader = sock.makefile("rb")
        self.pid = int(json.loads(self._reader.readline())["pid"])
        self.stdout = open(out_r, encoding="utf-8", errors="replace")  # noqa: SIM115
        self.stderr = open(err_r, encoding="utf-8", errors="replace")  # noqa: SIM115
        self.stdin = open(in_w, "w", encoding="utf-8") if stdin else None  # noqa: SIM115
        threading.Thread(target=self._wait_exit, daemon=True).start()

    def _wait_exit(self) -> None:
        line = self._reader.readline()
        code = int(json.loads(line)["exit"]) if line else -signal.SIGKILL
        self._reader.close()
        self._sock.close()
        self.returncode = code
        self._exited.set()

    def poll(self) -> int | None:
        """The exit status, or None while it runs."""
        return self.returncode if self._exited.is_set() else None

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the exit (``subprocess.TimeoutExpired`` after ``timeout`` seconds)."""
        if not self._exited.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` unless it has exited."""
        if not self._exited.is_set():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        """SIGTERM."""
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)


if __name__ == "__main__":
    serve(sys.argv[1])
