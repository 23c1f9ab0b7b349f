"""The framework examples run offline as written, and ``--app`` finds each one's agent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_stream.commands.app_loader import load_app
from agent_stream.sources.detect import kind_of_app

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = [
    ("langgraph_agent.py", "graph", "langgraph", "sunny and 24 °C in Paris"),
    ("pydantic_ai_agent.py", "agent", "pydantic-ai", "says the forecaster"),
    ("openai_agents_agent.py", "lead", "openai-agents", "low tide at noon"),
    ("anthropic_agent.py", "ask", "callable", "so the sky looks blue"),
    ("openai_responses_agent.py", "ask", "callable", "Io, Europa and Ganymede"),
]


@pytest.mark.parametrize(("file", "attr", "kind", "says"), EXAMPLES)
def test_example_answers_offline(
    file: str, attr: str, kind: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if not k.endswith("_API_KEY")}
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / file), "--once", "hello"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert says in out.stdout
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    assert kind_of_app(load_app(f"examples/{file}:{attr}")) == kind
