"""A framework source without its package installed is a one-line error naming the extra."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from agent_stream.errors import MissingDependency


@pytest.mark.parametrize(
    ("module", "package", "extra"),
    [
        ("agent_stream.sources.langgraph", "langgraph", "langgraph"),
        ("agent_stream.sources.pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("agent_stream.sources.openai_agents", "agents", "openai-agents"),
    ],
)
def test_missing_framework_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, package: str, extra: str
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == package else real(name, *a)
    )
    mod = importlib.import_module(module)
    with pytest.raises(MissingDependency) as info:
        mod.responder(object())
    assert f"pip install 'agent-stream[{extra}]'" in str(info.value)
    assert "\n" not in str(info.value)


def test_sources_load_no_framework_until_asked() -> None:
    import subprocess
    import sys

    code = (
        "import sys, agent_stream.sources as s; f = s.responder_for;"
        "print(sorted(m for m in ('langgraph', 'pydantic_ai', 'agents', 'anthropic')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
