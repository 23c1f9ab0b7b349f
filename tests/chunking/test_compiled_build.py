"""Which build of the chunker ``agent_stream.chunking`` exports, and the build hook's fallback.

The compiled modules (Cython, ``hatch_build.py``) are chosen when they import;
``AGENT_STREAM_PURE_PYTHON`` forces the interpreted ones even where the compiled ones sit beside
them. With ``AGENT_STREAM_REQUIRE_SPEEDUPS=1`` (``make test`` sets it) a build that silently fell
back to the interpreted chunker fails here. Without Cython or a C compiler the build prints one
warning line and leaves no compiled module behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from chunker_impls import FAST, STALE

ROOT = Path(__file__).resolve().parents[2]
COMPILED = "agent_stream.chunking._compiled.chunker"
INTERPRETED = "agent_stream.chunking.chunker"

# What ``agent_stream.chunking`` chose in a fresh interpreter, and whether the compiled modules
# were imported at all.
PROBE = """
import sys, types
if "--fake" in sys.argv:  # a stand-in for the built module (no file), with a TextChunker
    fake = types.ModuleType("agent_stream.chunking._compiled.chunker")
    fake.TextChunker = type("TextChunker", (), {"__module__": fake.__name__})
    sys.modules[fake.__name__] = fake
import agent_stream.chunking as c
loaded = any(getattr(mod, "__file__", None) for name, mod in list(sys.modules.items())
             if name.startswith("agent_stream.chunking._compiled."))
print(c.IMPLEMENTATION, c.TextChunker.__module__, loaded, sep="|")
"""


def probe(pure_python: str | None, fake: bool = False) -> tuple[str, str, str]:
    """(IMPLEMENTATION, TextChunker's module, whether compiled modules were loaded) in a
    subprocess with AGENT_STREAM_PURE_PYTHON set to ``pure_python`` (None: unset); ``fake``: with
    a stand-in compiled chunker module."""
    env = {k: v for k, v in os.environ.items() if k != "AGENT_STREAM_PURE_PYTHON"}
    if pure_python is not None:
        env["AGENT_STREAM_PURE_PYTHON"] = pure_python
    argv = [sys.executable, "-c", PROBE, *(["--fake"] if fake else [])]
    out = subprocess.run(
        argv, capture_output=True, text=True, check=True, cwd=ROOT, env=env, timeout=60
    ).stdout
    implementation, module, loaded = out.strip().split("|")
    return implementation, module, loaded


@pytest.mark.skipif(
    os.environ.get("AGENT_STREAM_REQUIRE_SPEEDUPS") != "1",
    reason="only with AGENT_STREAM_REQUIRE_SPEEDUPS=1 (make test sets it)",
)
def test_the_compiled_chunker_was_built_and_is_used_when_required() -> None:
    implementation, module, _ = probe(None)
    assert (implementation, module) == ("compiled", COMPILED), (
        "AGENT_STREAM_REQUIRE_SPEEDUPS=1 but agent_stream.chunking uses the interpreted chunker: "
        "`make speedups` rebuilds it, `make speedups-verbose` shows why the build fell back"
    )
    assert not STALE, f"the compiled chunker is older than {STALE}: `make speedups`"


def test_the_compiled_chunker_is_chosen_when_it_was_built() -> None:
    implementation, module, _ = probe(None)
    if FAST is not None:
        assert (implementation, module) == ("compiled", COMPILED)
    else:
        assert (implementation, module) == ("python", INTERPRETED)


def test_a_compiled_chunker_module_is_chosen() -> None:
    assert probe(None, fake=True)[:2] == ("compiled", COMPILED)


@pytest.mark.parametrize("fake", [False, True])
@pytest.mark.parametrize("value", ["1", "yes"])
def test_agent_stream_pure_python_forces_the_interpreted_modules(value: str, fake: bool) -> None:
    """Not one compiled module is even loaded: they sit beside the source, under other names."""
    assert probe(value, fake) == ("python", INTERPRETED, "False")


def test_an_empty_agent_stream_pure_python_is_unset() -> None:
    assert probe("", fake=True)[:2] == ("compiled", COMPILED)
    assert probe("")[:2] == probe(None)[:2]


# Runs hatch_build.py's in-place build as ``make speedups`` does, in a copy of the tree, with
# Cython made unimportable (``--no-cython``) or the C compiler missing.
BUILD = """
import sys
if "--no-cython" in sys.argv:
    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "Cython":
                raise ImportError(f"No module named {name!r}", name=name)
    sys.meta_path.insert(0, Blocker())
import runpy
sys.argv = ["hatch_build.py"]
runpy.run_path("hatch_build.py", run_name="__main__")
"""


def _copy_tree(tmp_path: Path) -> Path:
    dest = tmp_path / "project"
    (dest / "agent_stream").mkdir(parents=True)
    shutil.copy(ROOT / "hatch_build.py", dest)
    shutil.copytree(
        ROOT / "agent_stream" / "chunking",
        dest / "agent_stream" / "chunking",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return dest


def _build(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BUILD, *args],
        cwd=project,
        text=True,
        capture_output=True,
        env={**os.environ, **env},
        timeout=600,
    )


def test_without_cython_the_build_warns_in_one_line_and_removes_old_modules(
    tmp_path: Path,
) -> None:
    project = _copy_tree(tmp_path)
    compiled = project / "agent_stream" / "chunking" / "_compiled"
    old = compiled / f"chunker{sysconfig.get_config_var('EXT_SUFFIX')}"
    old.write_bytes(b"an older build")
    proc = _build(project, "--no-cython")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "agent_stream: the compiled chunker was not built (Cython is not installed); "
        "the interpreted one is used"
    ]
    assert not old.exists()
    assert sorted(p.name for p in compiled.iterdir() if p.name != "__pycache__") == ["__init__.py"]


def test_without_a_c_compiler_the_build_warns_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("Cython")
    project = _copy_tree(tmp_path)
    proc = _build(project, CC="/nonexistent/cc")
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert line.startswith("agent_stream: the compiled chunker was not built (")
    assert "/nonexistent/cc" in line and line.endswith("; the interpreted one is used")
