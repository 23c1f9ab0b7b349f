"""The compiled chunker (``_speedups``, built by hatch_build.py) is chosen when it was built, and
``AGENT_STREAM_PURE_PYTHON`` forces the pure-Python one.

With ``AGENT_STREAM_REQUIRE_SPEEDUPS=1`` (``make test`` sets it) a build that silently fell back
to pure Python fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What ``agent_stream.chunking`` chose in a fresh interpreter, and why _speedups did not import.
PROBE = """
import sys, types
if "--fake" in sys.argv:  # a stand-in for the built module, with a TextChunker
    fake = types.ModuleType("agent_stream.chunking._speedups")
    fake.TextChunker = type("TextChunker", (), {"__module__": fake.__name__})
    sys.modules[fake.__name__] = fake
import agent_stream.chunking as c
try:
    import agent_stream.chunking._speedups as s
    why = "imports" + ("" if hasattr(s, "TextChunker") else ", but has no TextChunker")
except ImportError as e:
    why = "does not import: " + str(e)
print(c.IMPLEMENTATION, c.TextChunker.__module__, why, sep="|")
"""


def probe(pure_python: str | None, fake: bool = False) -> tuple[str, str, str]:
    """(IMPLEMENTATION, TextChunker's module, the state of _speedups) in a subprocess with
    AGENT_STREAM_PURE_PYTHON set to ``pure_python`` (None: unset); ``fake``: with a stand-in
    _speedups module that has a TextChunker."""
    env = {k: v for k, v in os.environ.items() if k != "AGENT_STREAM_PURE_PYTHON"}
    if pure_python is not None:
        env["AGENT_STREAM_PURE_PYTHON"] = pure_python
    argv = [sys.executable, "-c", PROBE, *(["--fake"] if fake else [])]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT, env=env,
                         timeout=60).stdout
    implementation, module, why = out.strip().split("|")
    return implementation, module, why


def built_state() -> str:
    """"missing" (_speedups does not import), "placeholder" (it imports but defines no
    TextChunker: the .pyx is not written yet) or "built"."""
    try:
        from agent_stream.chunking import _speedups
    except ImportError:
        return "missing"
    return "built" if hasattr(_speedups, "TextChunker") else "placeholder"


@pytest.mark.skipif(os.environ.get("AGENT_STREAM_REQUIRE_SPEEDUPS") != "1",
                    reason="only with AGENT_STREAM_REQUIRE_SPEEDUPS=1 (make test sets it)")
def test_the_compiled_chunker_was_built_and_is_used_when_required() -> None:
    if built_state() == "placeholder":
        pytest.skip("agent_stream/chunking/_speedups.pyx is still a placeholder: the built "
                    "_speedups module imports but has no TextChunker")
    implementation, module, why = probe(None)
    assert implementation == "compiled", (
        f"AGENT_STREAM_REQUIRE_SPEEDUPS=1 but agent_stream.chunking uses the pure-Python chunker "
        f"(_speedups {why}); `make speedups` rebuilds it, `pip install -v -e .` shows why the "
        f"build fell back")
    assert module == "agent_stream.chunking._speedups"


def test_the_compiled_chunker_is_chosen_when_it_was_built() -> None:
    implementation, module, why = probe(None)
    if built_state() == "built":
        assert (implementation, module) == ("compiled", "agent_stream.chunking._speedups"), why
    else:  # not built, or the placeholder .pyx: the pure one
        assert (implementation, module) == ("python", "agent_stream.chunking.chunker"), why


def test_a_speedups_module_with_a_text_chunker_is_chosen() -> None:
    assert probe(None, fake=True) == ("compiled", "agent_stream.chunking._speedups", "imports")


@pytest.mark.parametrize("fake", [False, True])
@pytest.mark.parametrize("value", ["1", "yes"])
def test_agent_stream_pure_python_forces_the_pure_chunker(value: str, fake: bool) -> None:
    implementation, module, _ = probe(value, fake)
    assert (implementation, module) == ("python", "agent_stream.chunking.chunker")


def test_an_empty_agent_stream_pure_python_is_unset() -> None:
    assert probe("", fake=True)[:2] == ("compiled", "agent_stream.chunking._speedups")
    assert probe("")[:2] == probe(None)[:2]
