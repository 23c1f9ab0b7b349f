"""A real haproxy on 127.0.0.1 in front of a fleet's replicas, with an admin socket that puts a
replica in maintenance (test_fleet.py, test_fleet_lost.py); ``need_haproxy`` skips a test where
haproxy is not installed (fails it on CI)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from agents_harness import STARTUP_WITHIN, port_open_failed

from agent_stream.uagents.local._agents import free_port

HAPROXY = shutil.which("haproxy") or next(
    (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(p, os.X_OK)), None
)


def need_haproxy() -> str:
    if HAPROXY is None:
        if os.environ.get("CI"):
            pytest.fail("haproxy is not installed (`make system-deps` installs it)")
        pytest.skip("haproxy is not installed (Debian package haproxy; `make system-deps`)")
    return HAPROXY


class Haproxy:
    """A real haproxy in front of the replicas, with an admin socket."""

    def __init__(self, workdir: Path, backends: list[int]) -> None:
        self.port = free_port()
        self.sock = workdir / "haproxy.sock"
        servers = "\n".join(
            f"    server r{i} 127.0.0.1:{p} check inter 200ms fall 1 rise 1"
            for i, p in enumerate(backends)
        )
        cfg = workdir / "haproxy.cfg"
        cfg.write_text(
            f"""global
    maxconn 4096
    stats socket {self.sock} mode 600 level admin
defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    retries 3
    option redispatch 1
frontend agents
    bind 127.0.0.1:{self.port}
    default_backend fleet
backend fleet
    balance roundrobin
{servers}
"""
        )
        self.proc = subprocess.Popen(
            [need_haproxy(), "-db", "-f", str(cfg)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + STARTUP_WITHIN
        while port_open_failed(self.port) or not self.sock.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"haproxy did not start: {self.proc.stderr}")
            time.sleep(0.05)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/submit"

    def admin(self, command: str) -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(str(self.sock))
            s.sendall(command.encode() + b"\n")
            out = b""
            while chunk := s.recv(4096):
                out += chunk
        return out.decode()

    def state(self, index: int, state: str) -> None:
        out = self.admin(f"set server fleet/r{index} state {state}")
        assert out.strip() == "", out

    def wait_up(self, index: int, timeout: float = 10) -> None:
        """Wait until haproxy sends to replica ``index`` again (its status ``UP``)."""
        deadline = time.monotonic() + timeout
        while True:
            for row in self.admin("show stat").splitlines():
                cols = row.split(",")
                if cols[:2] == ["fleet", f"r{index}"] and cols[17] == "UP":
                    return
            assert time.monotonic() < deadline, f"haproxy did not put r{index} back up"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
