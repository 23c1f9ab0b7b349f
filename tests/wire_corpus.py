"""The conformance corpus (conformance/corpus.py) for unit tests: one set of tricky streams."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from agent_stream.message import Message

_PATH = Path(__file__).resolve().parents[1] / "conformance" / "corpus.py"
_spec = importlib.util.spec_from_file_location("conformance_corpus", _PATH)
assert _spec is not None and _spec.loader is not None
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)


def corpus() -> dict[str, list[Message]]:
    """Every corpus stream by name (fresh Messages each call)."""
    streams: dict[str, list[Message]] = _mod.corpus()
    return streams
