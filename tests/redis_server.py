"""A real redis-server on 127.0.0.1 for the tests that need one (the ``redis_url`` fixture in
tests/conftest.py). Skipped, saying why, only where redis-server is not installed (Debian package
redis-server; `make test` installs it when missing)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agent_stream.uagents.local._agents import free_port

REDIS = shutil.which("redis-server")


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """Start redis-server on a free 127.0.0.1 port; yield its URL; stop it."""
    if REDIS is None:
        pytest.skip(
            "redis-server is not installed (Debian package redis-server; `make test` "
            "installs it with apt-get)"
        )
    port = free_port()
    proc = subprocess.Popen(
        [
            REDIS,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), 0.2):
                    break
            except OSError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
