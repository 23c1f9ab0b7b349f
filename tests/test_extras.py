"""Optional extras stay optional: without them, a clear error names the pip command."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_stream.cli import main
from agent_stream.errors import MissingDependency


def test_agui_without_its_package_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ag_ui", None)  # import ag_ui now fails
    monkeypatch.setitem(sys.modules, "ag_ui.core", None)
    monkeypatch.delitem(sys.modules, "agent_stream.adapters.agui", raising=False)
    f = tmp_path / "s.jsonl"
    f.write_text('{"type":"text","props":{"content":"hi"}}\n', encoding="utf-8")
    assert main(["convert", "--to", "agui", str(f)]) == 2
    err = capsys.readouterr().err
    assert "pip install 'agent-stream[agui]'" in err and "Traceback" not in err
    monkeypatch.delitem(sys.modules, "agent_stream.adapters.agui", raising=False)


def test_openai_source_without_its_package_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "openai" else real(name, *a)
    )
    from agent_stream.sources import make_source

    with pytest.raises(MissingDependency, match=r"agent-stream\[openai\]"):
        make_source("openai", base_url="http://127.0.0.1:9/v1")


def test_openai_wire_needs_no_extra() -> None:
    # the OpenAI SSE encoder is pure: it writes the format without the openai package
    from agent_stream.adapters.openai import encode_messages, frame_sse
    from agent_stream.message import text

    assert any('"content":"hi"' in frame_sse(i) for i in encode_messages([text("hi")]))
