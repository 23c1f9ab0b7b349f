"""Session fixtures for gateway tests: one `serve` (replay model, reasoning), one echo agent and
one gateway in front of both, all real processes on 127.0.0.1, stopped at the end."""

from __future__ import annotations

from collections.abc import Iterator

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
