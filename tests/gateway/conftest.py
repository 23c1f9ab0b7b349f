"""Session fixtures for gateway tests: one `serve` (replay model, reasoning), one echo agent and
one gateway in front of both, all real processes on 127.0.0.1, stopped at the end."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_harness import WINDOW, AgentProcess, Gateway, Harness, echo_agent, start_gateway


@pytest.fixture(scope="session")
def gw_harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    h = Harness(tmp_path_factory.mktemp("gateway"))
    try:
        yield h
    finally:
        h.stop_all()


@pytest.fixture(scope="session")
def gw_agents(gw_harness: Harness) -> dict[str, tuple[AgentProcess, str]]:
    """{"llm": (serve process, address), "echo": (echo agent process, address)}."""
    p, address, _ = gw_harness.serve("--rate", "0", "--reasoning")
    return {"llm": (p, address), "echo": echo_agent(gw_harness)}


@pytest.fixture(scope="session")
def gateway(gw_harness: Harness, gw_agents: dict[str, tuple[AgentProcess, str]]) -> Gateway:
    """`agent-stream gateway --agent llm --agent echo --resume-window 3`."""
    return start_gateway(
        gw_harness, "--agent", "llm", "--agent", "echo", "--resume-window", str(WINDOW)
    )


# The page tests' browser: Debian's chromium, headless, driven by Playwright (skipped, saying
# why, when either is missing).
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        pytest.skip(
            "no chromium on this machine (Debian package chromium; `make test` "
            "installs it with apt-get)"
        )
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (the test extra)"
    )
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield b
        finally:
            b.close()
